"""A claim's frame: whom it is about, what is said of them, and with what value.

Short memories are one or two clauses of a few words ("Partner is named
Rui", "Left Siemens and now works at Bosch", "Her father is 67"), so a
shallow parse is enough, and it is deterministic string work (no model):

* the **subject** is the noun phrase before the predicate, or the person
  whose memory it is when the claim opens with its verb ("Supports
  Benfica") or a personal pronoun ("I", "she", "User"); its names and
  head nouns are kept (:class:`Subject`);
* each **clause** (split at ";", ":" before a clause, "and" / "but" / a
  comma before a verb) has a predicate (its verb's stem, "be" for a copula,
  the participle of a passive or perfect: "is named", "has visited"), a
  polarity, and the content words after it, each with the preposition that
  governs it ("lives *in* Porto") and its kind: word, name, or a value (a
  time, a date, an amount, a number: :func:`.slots.value_spans`);
* a clause **ends** what its object names when its verb is a verb of
  ending ("left", "quit", "sold", "stopped", "cancelled", "gave up",
  "completed") or its object follows "from" after a verb of change
  ("switched from", "moved ... from") or "instead of";
* a clause is a **one-off event** when its verb is in the simple past and
  it is no copula ("Visited Lisbon in 2019", "Had a flu jab in October").

What the parse cannot place it leaves out; the rules that read frames
(:mod:`.conflicts`) say nothing where a frame is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from memvault.store.consolidation import lexicon
from memvault.store.consolidation.text import (
    MONTHS,
    NEGATORS,
    STOP_WORDS,
    WEEKDAYS,
    contracted_negation,
    fold,
    is_value_word,
    stem,
    word_lists,
)

_LISTS = word_lists()
COPULAS = _LISTS["copulas"] | {"'s", "'re", "'m", "m", "re"}
#: Auxiliaries and modals: the verb after them is the predicate.
AUXILIARIES = _LISTS["auxiliaries"]
PREPOSITIONS = _LISTS["prepositions"] | _LISTS["more_prepositions"]
#: Verbs whose object ends ("left Siemens", "sold the car", "gave up the cello").
END_STEMS = _LISTS["end_stems"]
#: Verbs of change ("moved", "switched", "stopped"): a change of state, never a one-off event.
CHANGE_STEMS = _LISTS["change_stems"]
#: Verbs of replacement: their "from" object ends, their "to" object begins ("switched from Vim to Helix").
REPLACE_STEMS = _LISTS["replace_stems"]
#: Words that deny nothing of their own in a negated clause ("any", "at all", "ever").
NPI = _LISTS["negative_polarity"]
PRONOUNS = frozenset({"i", "im", "ive", "id", "ill", "she", "he", "they", "we", "user", "you"})
_DETERMINERS = _LISTS["possessives"] | frozenset({"the", "a", "an", "this", "that", "these", "those", "our", "users"})
_CLAUSE_SPLIT = re.compile(r"\s*(?:;|—|–|\s-\s|:(?=\s+(?:she|he|they|i|we|it|her|his|their)\b))\s*", re.I)
_TOKEN = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*(?:(?<=s)['’](?!\w))?|[:,]")


@dataclass(frozen=True)
class Word:
    """One word of a clause: as written, folded, stemmed, its kind, the
    preposition before it (or ""), and the canonical value of a value."""

    raw: str
    folded: str
    stem: str
    kind: str  # word | name | time | date | amount | number | year | month | weekday
    prep: str = ""
    value: str = ""


@dataclass(frozen=True)
class Subject:
    """Whom or what a claim is about: names and head nouns (folded), the
    owner's words ("partner" in "her partner's workplace"); empty: the user."""

    names: frozenset[str] = frozenset()
    nouns: tuple[str, ...] = ()  # folded content words of the noun phrase, in order (the owner's, if any)
    attribute: tuple[str, ...] = ()  # what of the owner the claim is about: "name" in "her partner's name"

    @property
    def user(self) -> bool:
        """Whether the claim is about the person whose memory it is (or a thing of theirs, ``attribute``)."""
        return not self.names and not self.nouns


@dataclass(frozen=True)
class Clause:
    """One predicate of a claim and what follows it."""

    verb: str  # stem of the predicate head ("live", "name", "be", "have")
    lemma: str  # the predicate head as WordNet writes it ("live", "name"; "be" for a copula)
    copula: bool
    negative: bool
    words: tuple[Word, ...]
    ended: tuple[Word, ...] = ()  # what the clause says has ended
    update: bool = False  # "now", "switched to", "instead": a new state over an old one
    past_event: bool = False  # a simple past, not a copula: a one-off event
    subject: Subject = Subject()
    never: bool = False  # "never": the denial covers the past too


@dataclass(frozen=True)
class Claim:
    """A parsed claim: its subject and clauses."""

    text: str
    subject: Subject
    clauses: tuple[Clause, ...]


@lru_cache(maxsize=65536)
def _verb_form(folded: str) -> str | None:
    """The verb ``folded`` is an inflected form of (-s, -ed, an irregular
    past), when WordNet knows that verb; else None."""
    if is_value_word(folded):
        return None
    irregular = _LISTS_IRREGULAR.get(folded)
    if irregular:
        return irregular
    for ending, repl in (("ies", "y"), ("es", ""), ("s", ""), ("ied", "y"), ("ed", "e"), ("ed", ""), ("d", "")):
        if folded.endswith(ending) and len(folded) > len(ending) + 1:
            base = folded[: len(folded) - len(ending)] + repl
            if base.endswith(("ss", "us", "is")) and ending == "s":
                continue
            if any(s.startswith("v") for s in lexicon.get_senses(base)):
                return base
    if folded.endswith("ed") and len(folded) > 5 and folded[-3] == folded[-4]:  # "stopped", "dropped"
        base = folded[:-3]
        if any(s.startswith("v") for s in lexicon.get_senses(base)):
            return base
    return None


@lru_cache(maxsize=65536)
def _only_verb(folded: str) -> bool:
    """Whether WordNet knows ``folded`` as a verb and never as a noun ("quit", "live")."""
    senses = lexicon.get_senses(folded)
    return not is_value_word(folded) and any(s.startswith("v") for s in senses) and not any(
        s.startswith("n") for s in senses)


def _irregular_table() -> dict[str, str]:
    import tomllib

    from memvault.store.consolidation.text import WORDS_FILE

    with WORDS_FILE.open("rb") as fh:
        data = tomllib.load(fh)
    forms = data["irregular_verbs"]["forms"].split() + data["more_past_forms"]["forms"].split()
    return dict(f.split(":", 1) for f in forms)


_LISTS_IRREGULAR = _irregular_table()
_PAST_IRREGULAR = frozenset(_LISTS_IRREGULAR)


def _tokens(text: str) -> list[tuple[str, str, str]]:
    """(raw, kind, value) of ``text``: values (times, dates, amounts,
    numbers) as one token each, words, and the punctuation that splits clauses."""
    from memvault.store.consolidation.slots import _unit_follows, value_spans

    out: list[tuple[str, str, str]] = []
    pos = 0
    for start, end, kind, value in [*value_spans(text), (len(text), len(text), "", "")]:
        out += [(m.group(), "p" if m.group() in ":," else "w", "") for m in _TOKEN.finditer(text, pos, start)]
        if kind:
            if kind == "number" and re.fullmatch(r"(?:19|20)\d\d", value) and not _unit_follows(text, end):
                kind = "year"  # "in 2019"; "2000 pounds" is an amount
            out.append((text[start:end], kind, value))
        pos = end
    return out


def _word(raw: str, kind: str, value: str, first: bool, prep: str) -> Word:
    folded = fold(raw)
    if kind != "w":
        return Word(raw, folded, value, kind, prep, value)
    if folded in MONTHS and (folded != "may" or raw[0].isupper()):
        return Word(raw, folded, f"month:{MONTHS[folded]}", "month", prep, str(MONTHS[folded]))
    day = folded.removesuffix("s")
    if day in WEEKDAYS:
        return Word(raw, folded, f"weekday:{day}", "weekday", prep, day)
    name = (not first and raw[:1].isupper()) or any(c.isupper() for c in raw[1:])
    return Word(raw, folded, stem(folded), "name" if name else "word", prep)


@lru_cache(maxsize=65536)
def parse(text: str) -> Claim:
    """The frame of ``text`` (module docstring)."""
    clauses: list[Clause] = []
    subject = Subject()
    first_subject: Subject | None = None
    for part in _CLAUSE_SPLIT.split(text.strip().rstrip(".!")):
        for piece in _coordinated(_tokens(part)):
            if piece[0][0] == "who" and clauses:
                # "has a sister who lives in ...": the relative clause is the sister's
                person = [w for w in clauses[-1].words if w.kind == "word" and lexicon.person(w.folded)]
                subject = Subject(nouns=(person[-1].folded,)) if person else subject
                piece = piece[1:]
            clause = _clause(piece, subject, first=not clauses, previous_verb=clauses[-1].verb if clauses else "")
            if clause is None:
                continue
            subject = clause.subject
            if first_subject is None:
                first_subject = subject
            clauses.append(clause)
    return Claim(text, first_subject or Subject(), tuple(clauses))


def _coordinated(tokens: list[tuple[str, str, str]]) -> list[list[tuple[str, str, str]]]:
    """A clause split where "and", "but", "who", "while" or a comma come
    right before a verb form (or an adverb and one): "Left Siemens and now
    works at Bosch" is two clauses, "Mum and Dad live in Kuopio" one."""
    out: list[list[tuple[str, str, str]]] = [[]]
    said = False  # whether the piece so far has a predicate
    for i, tok in enumerate(tokens):
        folded = fold(tok[0])
        if said and folded in ("and", "but", "who", "while", ",") and _verb_ahead(tokens, i + 1):
            out.append([tok] if folded == "who" else [])
            said = False
            continue
        out[-1].append(tok)
        said = said or _verb_ahead(tokens, i)
    return [o for o in out if o]


def _verb_ahead(tokens: list[tuple[str, str, str]], i: int) -> bool:
    while i < len(tokens) and fold(tokens[i][0]) in _LISTS["clause_adverbs"] | PRONOUNS | {"and"}:
        i += 1
    if i >= len(tokens) or tokens[i][1] != "w":
        return False
    folded = fold(tokens[i][0])
    if folded in COPULAS or folded in AUXILIARIES or folded in NEGATORS or contracted_negation(tokens[i][0]):
        return True
    return _verb_form(folded) is not None or _only_verb(folded)


def _clause(tokens: list[tuple[str, str, str]], previous: Subject, first: bool,
            previous_verb: str = "") -> Clause | None:
    """One clause: its subject (``previous`` when it has none of its own), predicate and words."""
    toks = [t for t in tokens if t[0] != ","]
    if not toks:
        return None
    anchor, subject = _predicate_start(toks, previous, first)
    if anchor < 0:
        if not previous_verb:
            return None
        anchor = 0  # "..., never in the morning": the verb of the clause before
    negative = False
    update = False
    copula = False
    verb = ""
    past = False
    i = anchor
    # Auxiliaries, negations, adverbs and the copula before the predicate's own word.
    aux = ""
    been = False
    lemma = ""
    never = any(fold(t[0]) == "never" for t in toks)
    while i < len(toks):
        raw, kind, _ = toks[i]
        folded = fold(raw)
        if kind != "w":
            break
        if folded in NEGATORS or contracted_negation(raw):
            if folded == "no" and not _no_longer(toks, i):
                break  # "has no children": "no" goes with the noun (the words' polarity, below)
            negative = not negative
            copula = copula or folded in ("isnt", "arent", "wasnt", "werent", "aint")
            i += 2 if folded == "no" else 1
            continue
        if folded in COPULAS or raw == ":":
            copula = True
            been = been or folded == "been"
            i += 1
            continue
        if folded in AUXILIARIES:
            aux = folded
            past = past or folded in ("did", "had")
            i += 1
            continue
        if folded in _LISTS["clause_adverbs"]:
            update = update or stem(folded) in _LISTS["update_adverbs"]
            i += 1
            continue
        break
    if not copula and not aux and i < len(toks) and (fold(toks[i][0]) in ("a", "an") or _adjective_only(
            fold(toks[i][0])) and _verb_form(fold(toks[i][0])) is None) and not _has_predicate(toks[i:]):
        copula = True  # "Allergic to penicillin", "Not allergic", "A quiet introvert": the copula left out
    if i < len(toks) and toks[i][1] == "w":
        raw = toks[i][0]
        folded = fold(raw)
        base = _verb_form(folded)
        verbal = any(s.startswith("v") for s in lexicon.get_senses(folded))
        adjective = any(s[0] in "as" for s in lexicon.get_senses(folded))  # "is married", "is retired"
        if copula and not adjective and (base is not None and folded.endswith(("ed", "en")) or folded in _PAST_IRREGULAR):
            lemma = base or _LISTS_IRREGULAR.get(folded, folded)
            verb, copula = stem(lemma), False  # "is named", "is based"
            i += 1
        elif aux in ("has", "have", "had", "having") and not copula and not _participle(folded):
            pass  # "has blue eyes": "has" is the verb (below)
        elif not copula and not is_value_word(folded) and (
                base is not None or _only_verb(folded) or i == anchor or aux and verbal or negative and verbal):
            lemma = base or folded
            verb = stem(lemma)
            past = past or (folded.endswith("ed") or folded in _PAST_IRREGULAR) and anchor == i
            i += 1
    if not verb and not copula and aux in ("has", "have", "had", "having", "do", "does", "did"):
        lemma = verb = "have" if aux.startswith("ha") else "do"  # "has no children", "doesn't have any"
    if not verb and not copula and previous_verb:
        lemma = verb = previous_verb  # "showers at night, never in the morning": the verb said once
    if copula and not verb:
        lemma = verb = "be"
    if not verb:
        return None
    if copula and been and i < len(toks) and (
            fold(toks[i][0]).endswith("ing") or fold(toks[i][0]) == "to"):
        lemma, verb, copula = "go", "go", False  # "has been skiing", "has never been to Japan": went
    if verb == "go" and i < len(toks) and fold(toks[i][0]).endswith("ing"):
        lemma = fold(toks[i][0])
        verb = stem(lemma)  # "goes running": runs
        i += 1
    words: list[Word] = []
    ended: list[Word] = []
    prep = ""
    ending = verb in END_STEMS or (verb == "give" and any(fold(t[0]) == "up" for t in toks[i : i + 1]))
    for k in range(i, len(toks)):
        raw, kind, value = toks[k]
        folded = fold(raw)
        if kind == "w" and (folded in NEGATORS or contracted_negation(raw)):
            negative = not negative
            continue
        if kind == "w" and folded in _LISTS["subordinators"]:
            prep = folded  # "prefers a window seat *when* flying": what follows is no object
            ending = False
            continue
        if kind == "w" and folded in PREPOSITIONS:
            prep = folded
            if folded == "from" and verb in REPLACE_STEMS:
                ending = True
            elif folded == "to" and ending and verb in REPLACE_STEMS:
                ending = False
            continue
        if kind == "w" and folded == "instead" and k + 1 < len(toks) and fold(toks[k + 1][0]) == "of":
            ending, update = True, True
            continue
        if kind == "w" and (folded in STOP_WORDS or folded in _LISTS["clause_adverbs"]):
            update = update or stem(folded) in _LISTS["update_adverbs"]
            continue
        w = _word(raw, kind, value, first=first and k == 0, prep=prep)
        if w.stem in _LISTS["update_adverbs"]:
            update = True
            continue
        words.append(w)
        if folded in _LISTS["past_time"]:
            ending = False  # "quit smoking last month": when, not what
        after_value = k > 0 and (toks[k - 1][1] != "w" or is_value_word(fold(toks[k - 1][0])))
        if ending and not (w.kind == "word" and w.folded.endswith("ly")) and not after_value:
            ended.append(w)  # not "entirely", not the unit of "one year"
    if verb in CHANGE_STEMS and any(w.prep == "to" for w in words):
        update = True
    folded_all = {fold(t[0]) for t in toks}
    if folded_all & _LISTS["past_time"] and "since" not in folded_all:
        past = True  # "last month", "two years ago": said of a past moment
    if verb in END_STEMS and verb != "give" and not ended:
        ended = []
    return Clause(verb, lemma, copula, negative, tuple(words), tuple(ended), update, past and not copula, subject,
                  never)


@lru_cache(maxsize=65536)
def _participle(folded: str) -> bool:
    """Whether ``folded`` reads as a past participle ("visited", "worn", "been")."""
    return folded in _PAST_IRREGULAR or folded.endswith(("ed", "en")) and _verb_form(folded) is not None


def _no_longer(toks: list[tuple[str, str, str]], i: int) -> bool:
    return i + 1 < len(toks) and fold(toks[i + 1][0]) == "longer"


def _predicate_start(toks: list[tuple[str, str, str]], previous: Subject, first: bool) -> tuple[int, Subject]:
    """Where the predicate begins, and the clause's subject: the noun phrase
    before it; the user after a personal pronoun or when the clause opens with
    its verb; ``previous`` for a clause of a coordination without a subject."""
    head = fold(toks[0][0])
    if head in PRONOUNS or head == "users" and len(toks) > 1 and fold(toks[1][0]) in PRONOUNS:
        return (1, Subject()) if head != "users" else (2, Subject())
    if _opens_with_verb(toks):
        return 0, previous if not first else Subject()
    names: set[str] = set()
    nouns: list[str] = []
    owner: tuple[frozenset[str], tuple[str, ...]] | None = None

    def subject() -> Subject:
        if owner is None or not owner[0] and not owner[1]:  # "User's car": the car
            return Subject(frozenset(names), tuple(nouns))
        return Subject(owner[0], owner[1], tuple(nouns))

    for i, (raw, kind, _) in enumerate(toks):
        folded = fold(raw)
        after_determiner = i > 0 and fold(toks[i - 1][0]) in _DETERMINERS
        if i > 0 and (folded in COPULAS or raw == ":" or folded in AUXILIARIES or folded in NEGATORS
                      or contracted_negation(raw)):
            return i, subject()
        if i > 0 and kind == "w" and folded not in _DETERMINERS and folded not in PREPOSITIONS and not after_determiner and (
                _verb_form(folded) is not None and not _noun_here(toks, i) or _only_verb(folded)):
            return i, subject()
        if folded in PRONOUNS and i > 0:  # a relative clause inside the subject ("The food she loves most is ...")
            continue
        if kind == "w" and folded not in _DETERMINERS and folded not in STOP_WORDS and folded not in PREPOSITIONS \
                and folded not in _LISTS["clause_adverbs"]:  # a word of the subject
            if raw[:1].isupper() and (i > 0 or not any(lexicon.get_senses(b) for b in lexicon.bases(folded))) \
                    or any(c.isupper() for c in raw[1:]):
                names.add(folded)
            else:
                nouns.append(folded)
        if owner is None and re.search(r"(?:['’]s|s['’])$", raw):
            # "Her partner's name", "User's car", "parents' home": what follows is the owner's
            if folded in _LISTS["owner_words"] or folded == "users":
                names.discard(folded)
                if folded in nouns:
                    nouns.remove(folded)
            owner = (frozenset(names), tuple(nouns))
            names, nouns = set(), []
    return -1, previous  # no predicate: a note without a verb ("Dentist appointment on 3 March")


def _noun_here(toks: list[tuple[str, str, str]], i: int) -> bool:
    """Whether the word at ``i`` reads as a noun of the subject: a noun followed
    by a copula, an auxiliary or a verb form ("Her parents' home is ...")."""
    if i + 1 >= len(toks):
        return False
    nxt = fold(toks[i + 1][0])
    return nxt in COPULAS or nxt in AUXILIARIES or toks[i + 1][0] == ":" or (
        _verb_form(nxt) is not None and not any(s.startswith("v") for s in lexicon.get_senses(fold(toks[i][0]))))


def _opens_with_verb(toks: list[tuple[str, str, str]]) -> bool:
    """Whether the clause opens with its predicate ("Supports ...", "Is a
    parent", "Never been ...", "Doesn't drink ...", "No longer sings ...",
    "Left Sonora ...", "Now works ..."), or is a predicate without its
    copula ("Allergic to penicillin", "A quiet introvert")."""
    k = 0
    while k < len(toks) and toks[k][1] == "w":
        raw = toks[k][0]
        folded = fold(raw)
        if folded == "no" and k + 1 < len(toks) and fold(toks[k + 1][0]) == "longer":
            return True
        if folded in NEGATORS and folded != "no" or contracted_negation(raw) or folded in COPULAS \
                or folded in AUXILIARIES:
            return True
        if folded in _LISTS["clause_adverbs"]:
            k += 1
            continue
        if folded in ("a", "an") or _adjective_only(folded) and _verb_form(folded) is None:
            return not _has_predicate(toks[k + 1:])
        if lexicon.person(folded) or folded in _DETERMINERS:
            return False
        return _verb_form(folded) is not None or _only_verb(folded)
    return False


@lru_cache(maxsize=65536)
def _adjective_only(folded: str) -> bool:
    """Whether WordNet knows ``folded`` as an adjective and as nothing else ("allergic", "engaged")."""
    senses = lexicon.get_senses(folded)
    return bool(senses) and all(s[0] in "as" for s in senses)


def _has_predicate(toks: list[tuple[str, str, str]]) -> bool:
    """Whether a verb, copula or auxiliary follows (a subject noun phrase, not a bare predicate)."""
    for i, (raw, kind, _) in enumerate(toks):
        folded = fold(raw)
        if kind != "w":
            continue
        if folded in COPULAS or folded in AUXILIARIES or raw == ":":
            return True
        prev = fold(toks[i - 1][0]) if i else ""
        if prev not in _DETERMINERS and (_verb_form(folded) is not None and folded.endswith("s") or _only_verb(folded)):
            return True
    return False


@lru_cache(maxsize=65536)
def subject_same(a: Subject, b: Subject) -> bool:
    """Whether two subjects name one person or thing: both the user, or the
    same names (a name only one of them has is another person, unless the
    other names nobody), and head nouns that agree (one person named
    another way, "mum" / "mother"; a thing's words the same)."""
    if a.user or b.user:
        return a.user and b.user
    if a.names and b.names:
        return bool(a.names & b.names) and not (a.names ^ b.names and a.nouns and b.nouns)
    ha, hb = _head(a), _head(b)
    if not ha or not hb:
        return False  # a name against a thing or role: "Olu" / "the desktop"
    return _same_noun(ha, hb) and not _modifiers_differ(a, b)


def attribute_same(a: Subject, b: Subject) -> bool:
    """Whether two subjects of one owner are about the same of its things
    ("her partner's birthday" is not "her partner's workplace")."""
    if not a.attribute and not b.attribute:
        return True
    if not a.attribute or not b.attribute:
        return False
    return _same_noun(a.attribute[-1], b.attribute[-1])


def _head(s: Subject) -> str:
    nouns = [n for n in s.nouns if n not in _LISTS["owner_words"]]
    return nouns[-1] if nouns else ""


def _same_noun(x: str, y: str) -> bool:
    if x == y or stem(x) == stem(y):
        return True
    from memvault.store.consolidation.paraphrase import same_person

    return same_person(x, y) or lexicon.synonyms(x, y)


def _modifiers_differ(a: Subject, b: Subject, strict: bool = False) -> bool:
    """Whether the words before the heads differ in a way that makes two
    things ("summer tyres" / "winter tyres", "bedroom window" / "kitchen
    window"); ``strict``: also a word only one side has ("work phone" /
    "phone"). Words that pick one of a kind ("favourite", "main") are no
    such word."""
    skip = {stem(n) for n in _LISTS["owner_words"]} | _LISTS["liking_verbs"] | _LISTS["one_of_a_kind"]
    ma = {stem(n) for n in a.nouns[:-1]} - skip
    mb = {stem(n) for n in b.nouns[:-1]} - skip
    if strict:
        return ma != mb
    return bool(ma and mb and not (ma & mb))
