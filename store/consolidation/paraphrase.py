"""Whether two similar texts say the same: the words only one side has.

MiniLM rates a sentence and the same sentence with one slot refilled ("Ana
lives in Benfica" / "Ana works in Benfica", "Favourite colour is green" /
"... orange") as close as a true paraphrase, and rates some paraphrases
("Is a Hibs supporter" / "Supports Hibernian") well below its threshold. What
tells them apart is in the words: a paraphrase rewrites a sentence, or says a
word another way (another spelling, an acronym, a negative verb for a
negation); a one-slot change keeps the sentence and swaps one filler.

:func:`difference` aligns the two texts' content words (Snowball stems, stop
words out) and sets aside every differing word that is *explained*:

* a spelling of a word the other side has ("greyscale" / "grayscale",
  "teacher" / "teaches", "seasick" / "sick", "Hibs" / "Hibernian": a shared
  prefix of four letters, or one word inside the other);
* an acronym of words the other side spells out ("PR" / "pull request",
  "NC500" / "North Coast 500");
* a light verb ("uses", "takes", "has"), a verb of liking ("likes" /
  "prefers" / "enjoys"), and a negative verb when both sides are negative
  ("avoids eating" / "does not eat"): polarity is compared elsewhere, so the
  word itself adds nothing;
* a unit written as one capital after a number ("30°C"), a hedge ("around
  11pm"); numbers and dates are left to the caller, which compares values;
* WordNet synonyms ("sparkling" / "fizzy", :mod:`.lexicon`), pair by pair;
  one person named another way ("dad" / "father": :func:`same_person`);
* a word negated on one side and its WordNet antonym on the other ("not
  well" / "badly"): :func:`opposite_word`, the one negation said twice.

What is left is *unexplained*: words that change what is said unless the
rest of the sentence was rewritten around them. :func:`judge` turns it into a
decision (see there).

Everything is deterministic string work on the two texts.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache

from memvault.store.consolidation import lexicon
from memvault.store.consolidation.spelling import (
    Token,
    coded_words,
    folded_words,
    glued,
    same_spelling,
    spelled_out,
    token_of,
)
from memvault.store.consolidation.text import (
    NEGATIVE_STEMS,
    NEGATORS,
    STOP_WORDS,
    Features,
    contracted_negation,
    fold,
    is_value_word,
    stem,
    weekday_abbreviation,
    word_lists,
    words,
)

#: Verbs that carry little meaning of their own: a paraphrase swaps them
#: freely ("uses a keyboard" / "types on a keyboard", "takes notes in" /
#: "uses ... for notes"). Unlike the contradiction rule's light words, "work"
#: and "live" are not here: "lives in Benfica" / "works in Benfica" differ.
LIGHT = word_lists()["light_verbs"]
#: Verbs of liking: the relation both sides state, in other words ("likes
#: dark themes" / "prefers dark mode"); polarity is compared elsewhere.
PREFERENCE = word_lists()["liking_verbs"]
#: Hedges and clock units that qualify a value without changing it
#: ("around 11pm" / "about 11 pm").
HEDGES = word_lists()["hedges"]
#: Adverbs that set a new state against a former one ("now takes the bus",
#: "the bus instead of the train"): a text with one updates, never restates,
#: a text without.
UPDATE = word_lists()["update_adverbs"]


@lru_cache(maxsize=65536)
def content_tokens(text: str) -> tuple[Token, ...]:
    """The content words of ``text`` in order: no stop words, negations or
    numbers (values and polarity are compared by the caller)."""
    out = []
    previous = ""
    for raw in words(text):
        folded = fold(raw)
        after, previous = previous, folded
        if not folded or folded in STOP_WORDS or folded in NEGATORS or contracted_negation(raw):
            continue
        if folded == "stand" and after in ("cant", "cannot", "not"):
            continue  # "can't stand": a negative verb, its polarity compared elsewhere
        if folded in HEDGES or is_value_word(folded) or (len(folded) == 1 and not raw.isupper()) or (
                weekday_abbreviation(raw) and folded not in STOP_WORDS):
            continue  # numbers, dates, "4th", "6am" (compared as values); "e.g."
        out.append(Token(raw, folded, stem(folded)))
    return tuple(out)


@lru_cache(maxsize=65536)
def _numbers(text: str) -> tuple[str, ...]:
    return tuple(w for w in words(text) if w.isdigit())


@dataclass(frozen=True)
class Difference:
    """The content words only one side has, after the explained ones are set aside."""

    only_a: tuple[str, ...]  # unexplained stems of a
    only_b: tuple[str, ...]
    blocks: int  # places where the aligned content words differ
    trailing: bool  # one text is the other plus words at its end ("... in the rain")
    shared: int  # content stems both have
    explained: int  # differing words set aside as another spelling, an acronym, a light or negative verb
    words_a: tuple[str, ...] = ()  # the unexplained words of a, folded as written
    words_b: tuple[str, ...] = ()
    #: (word of a, word of b), folded, for each place where one unexplained
    #: word stands for one unexplained word, whatever else is explained
    #: there ("a nurse in" / "a teacher in").
    refilled: tuple[tuple[str, str], ...] = ()

    @property
    def unexplained(self) -> int:
        """How many differing words nothing explains."""
        return len(self.only_a) + len(self.only_b)


#: Negators that deny the word after them (see :func:`negated_words`).
_WORD_NEGATORS = frozenset({"not", "never", "cannot", "cant"})


@lru_cache(maxsize=65536)
def negated_words(text: str) -> frozenset[str]:
    """The content words "not", "never" or a "n't" stand right before ("plays,
    not well": well; "is never early": early). Only the very next word: in
    "does not have a younger sister" the negation is of "have", a stop word,
    and "younger" is not what it denies ("has an older sister" is no
    paraphrase). "no", "without" and the like deny a thing, not a quality
    ("has no younger brother"), so they never count here."""
    out = set()
    pending = False
    for raw in words(text):
        folded = fold(raw)
        if folded in _WORD_NEGATORS or contracted_negation(raw):
            pending = True
            continue
        if pending and folded and folded not in STOP_WORDS:
            out.add(folded)
        pending = False
    return frozenset(out)


def opposite_word(text_a: str, text_b: str, fa: Features, fb: Features) -> tuple[str, str] | None:
    """(negated word, its opposite) when the polarity two texts differ in is
    one word negated on one side and its WordNet antonym on the other ("not
    well" / "badly", "not early" / "late"): the same claim. None otherwise."""
    if fa.negative == fb.negative:
        return None
    negated, other = (text_a, fb) if fa.negative else (text_b, fa)
    for word in sorted(negated_words(negated) - other.folded):
        for candidate in sorted(other.folded):
            if lexicon.antonyms(word, candidate):
                return word, candidate
    return None


def _synonym_pairs(da: list[Token], db: list[Token], gone: set[tuple[str, int]]) -> set[tuple[str, int]]:
    """The differing words WordNet synonyms explain, pair by pair."""
    paired: set[tuple[str, int]] = set()
    for i in range(len(da)):
        for j in range(len(db)):
            if ("a", i) not in gone and ("b", j) not in gone and lexicon.synonyms(da[i].folded, db[j].folded):
                paired.update((("a", i), ("b", j)))
    return paired


def difference(text_a: str, text_b: str, fa: Features, fb: Features) -> Difference:
    """Align the content words of two texts and explain what differs (module docstring)."""
    ta, tb = content_tokens(text_a), content_tokens(text_b)
    sa, sb = {t.stem for t in ta}, {t.stem for t in tb}
    da = [t for t in ta if t.stem not in sb]
    db = [t for t in tb if t.stem not in sa]
    gone: set[tuple[str, int]] = set()  # explained words, as (side, index in da / db)
    for side, mine, other, other_text in (("a", da, db, text_b), ("b", db, da, text_a)):
        theirs = "b" if side == "a" else "a"
        for i, t in enumerate(mine):
            spelled = spelled_out(t, other_text)
            if spelled is not None:
                gone.add((side, i))
                gone.update((theirs, j) for j, o in enumerate(other) if o.folded in spelled)
            elif glued(t.folded, other_text):
                gone.add((side, i))
                gone.update((theirs, j) for j, o in enumerate(other) if o.folded in t.folded)  # "wi", "fi"
        for raw in coded_words(text_a if side == "a" else text_b):  # a value, not a content word: "i18n", "NC500"
            spelled = spelled_out(token_of(raw), other_text) or ()
            gone.update((theirs, j) for j, o in enumerate(other) if o.folded in spelled)
    for i, x in enumerate(da):
        for j, y in enumerate(db):
            if same_spelling(x.folded, y.folded) or same_spelling(x.stem, y.stem) or same_person(x.folded, y.folded):
                gone.update((("a", i), ("b", j)))
    both_negative = fa.negative and fb.negative
    opposite = opposite_word(text_a, text_b, fa, fb)
    if opposite is not None:  # "not well" / "badly": the pair of words is the one negation, said twice
        for side, mine in (("a", da), ("b", db)):
            gone.update((side, i) for i, t in enumerate(mine) if t.folded in opposite)
    for side, mine in (("a", da), ("b", db)):
        for i, t in enumerate(mine):
            if t.stem in LIGHT or t.stem in PREFERENCE or (both_negative and t.stem in NEGATIVE_STEMS):
                gone.add((side, i))
            elif len(t.raw) == 1 and t.raw.isupper():
                gone.add((side, i))  # a unit after a number ("30°C"), an initial
                other = db if side == "a" else da
                theirs = "b" if side == "a" else "a"
                gone.update((theirs, j) for j, o in enumerate(other) if o.raw[:1].isupper() and o.folded[:1] == t.folded)
    gone |= _synonym_pairs(da, db, gone)
    only_a = tuple(t.stem for i, t in enumerate(da) if ("a", i) not in gone)
    only_b = tuple(t.stem for j, t in enumerate(db) if ("b", j) not in gone)
    # Where the two orders of content words differ: one place only is one
    # slot refilled, or words added at one place.
    ops = difflib.SequenceMatcher(None, [t.stem for t in ta], [t.stem for t in tb], autojunk=False).get_opcodes()
    changed = [op for op in ops if op[0] != "equal"]
    trailing = len(changed) == 1 and changed[0][0] in ("insert", "delete") and (
        changed[0][2] == len(ta) and changed[0][4] == len(tb))
    explained = len(da) + len(db) - len(only_a) - len(only_b)
    words_a = tuple(t.folded for i, t in enumerate(da) if ("a", i) not in gone)
    words_b = tuple(t.folded for j, t in enumerate(db) if ("b", j) not in gone)
    left_a, left_b = {t.stem for t in ta if t.stem in only_a}, {t.stem for t in tb if t.stem in only_b}
    refilled = []
    for op, i1, i2, j1, j2 in changed:
        ua = [t.folded for t in ta[i1:i2] if t.stem in left_a]
        ub = [t.folded for t in tb[j1:j2] if t.stem in left_b]
        if op == "replace" and len(ua) == len(ub) == 1:  # the other words of the place explained
            refilled.append((ua[0], ub[0]))
    return Difference(only_a, only_b, len(changed), trailing, len(sa & sb), explained, words_a, words_b,
                      tuple(refilled))

def swapped_roles(text_a: str, text_b: str) -> bool:
    """Whether the two texts say the same words with two parts trading places
    around one joining word that is not a coordinator: the roles swapped
    ("prefers cats to dogs" / "dogs to cats", "rates the Beatles above the
    Rolling Stones" / "the Rolling Stones above the Beatles"). Parts joined by
    "and" / "or" trade places freely ("Miso and Tofu"), and a phrase moved to
    another end of the sentence ("On weekdays, wakes up" / "Wakes up on
    weekdays") has no joining word between the same parts on both sides. A
    copula joins two names of one thing ("Favourite band is Radiohead" /
    "Radiohead is her favourite band")."""
    ta, tb = _role_tokens(text_a), _role_tokens(text_b)
    sa, sb = [t.stem for t in ta], [t.stem for t in tb]
    if len(sa) != len(sb) or sa == sb or sorted(sa) != sorted(sb):
        return False
    lo = 0
    while sa[lo] == sb[lo]:
        lo += 1
    hi = len(sa)
    while sa[hi - 1] == sb[hi - 1]:
        hi -= 1
    mid_a, mid_b = sa[lo:hi], sb[lo:hi]
    n = len(mid_a)
    for i in range(1, n):  # mid_a = X + P + Y and mid_b = Y + P + X, P the joining words ("more than")
        for j in range(i, n):
            x, p, y = mid_a[:i], mid_a[i:j], mid_a[j:]
            if mid_b != y + p + x:
                continue
            pivot_a = _pivot(_between(text_a, ta[lo + i - 1], ta[lo + j]))
            pivot_b = _pivot(_between(text_b, tb[lo + len(y) - 1], tb[lo + len(y) + len(p)]))
            symmetric = word_lists()["coordinators"] | word_lists()["copulas"]  # "X and Y", "X is Y"
            if pivot_a and pivot_a == pivot_b and not set(pivot_a.split()) <= symmetric:
                return True  # "and then" orders what it joins; "and" alone does not
    return False


def _pivot(between: str) -> str:
    """The joining words of two swapped parts, without a preposition that
    opens the second part when more words remain ("rather than at night" /
    "rather than in the morning": "rather than"; "to" alone stays)."""
    ws = between.split()
    while len(ws) > 1 and ws[-1] in word_lists()["prepositions"]:
        ws.pop()
    return " ".join(ws)


@lru_cache(maxsize=65536)
def _role_tokens(text: str) -> tuple[Token, ...]:
    """:func:`content_tokens` with the personal pronouns that fill a role
    ("Priya mentors him" / "He mentors Priya"), each as its subject
    form. "her" counts as a pronoun only where no noun follows it: last, or
    before a preposition, a coordinator or a form of be ("her only sister"
    is a possessive)."""
    pronouns = dict(f.split(":", 1) for f in word_lists()["personal_pronouns"])
    after_object = word_lists()["prepositions"] | word_lists()["coordinators"] | word_lists()["copulas"]
    ws = words(text)
    content = iter(content_tokens(text))
    wanted = {t.folded for t in content_tokens(text)}
    out: list[Token] = []
    for k, raw in enumerate(ws):
        folded = fold(raw)
        if folded in pronouns:
            following = fold(ws[k + 1]) if k + 1 < len(ws) else ""
            if folded != "her" or not following or following in after_object:
                out.append(Token(raw, folded, "@" + pronouns[folded]))
        elif folded in wanted:
            token = next(content, None)
            if token is not None:
                out.append(token)
    return tuple(out)


def _between(text: str, left: Token, right: Token) -> str:
    """The folded words between two content words of ``text`` (their first places)."""
    ws = [fold(w) for w in words(text)]
    try:
        i = ws.index(left.folded)
        j = ws.index(right.folded, i + 1)
    except ValueError:
        return ""
    return " ".join(w for w in ws[i + 1:j] if w not in word_lists()["possessives"] and w not in ("a", "an", "the"))


def _owner_changed(f: Features, other: Features) -> bool:
    """Whether a name written with a possessive inside one text ("... Omar's
    landlord") stands in the other without it: who owns what has changed. A
    first word's "'s" may be "is" ("Daughter's in Year 4") and is left alone."""
    owners = {w for w in f.capitals if stem(w) in f.possessives}  # inside the text: "Dog's name is ..." opens it
    return any(stem(w) in other.stems and stem(w) not in other.possessives for w in owners)


@lru_cache(maxsize=262144)
def same_person(x: str, y: str) -> bool:
    """Whether two folded words, one a person noun, name one person: WordNet
    synonyms ("kids" / "children") or one the plainer word for the other ("dad" is
    a kind of "mother", "dad" of "father"). Siblings under one hypernym
    ("brother" / "sister", "mother" / "grandmother") are not."""
    if x == y or not (lexicon.person(x) or lexicon.person(y)):
        return False
    return lexicon.synonyms(x, y) or lexicon.kind_of(x, y) or lexicon.kind_of(y, x)


def _alternatives(x: str, y: str) -> bool:
    """Whether two folded words are other values of one kind (WordNet): two
    person nouns ("nurse" / "teacher": another person or role), or opposites.
    Alternatives under one hypernym are not enough here: "evening" / "night"
    and "pulls" / "tugs" are, and say one thing in a rewritten sentence."""
    return (lexicon.person(x) and lexicon.person(y)) or lexicon.antonyms(x, y)


@lru_cache(maxsize=65536)
def _owned(text: str) -> frozenset[str]:
    """The stems of the words right after a possessive determiner ("her daughter")."""
    ws = folded_words(text)
    return frozenset(stem(w) for previous, w in zip(ws, ws[1:]) if previous in word_lists()["possessives"])


def _about_someone_else(text: str, stems: tuple[str, ...]) -> bool:
    """Whether a word only one side has names who the claim is about: a
    person noun that opens the claim ("Husband doesn't eat gluten", "Boss
    is ...": WordNet's person nouns; a person noun further on is an object or
    a role, "the estuary server runs ..."), a compound such as
    "brother-in-law", or a thing or person owned ("her daughter", "his son":
    right after a possessive determiner): the claim is about someone or
    something else."""
    if not stems:
        return False
    if re.search(r"\w-in-law\b", text, re.I):
        return True
    owned = _owned(text)
    tokens = content_tokens(text)
    return any((k == 0 and lexicon.person(t.folded)) or t.stem in owned
               for k, t in enumerate(tokens) if t.stem in stems)


#: How far below (or above) the configured threshold each kind of pair may
#: be (see :func:`judge`). Fitted on tests/fixtures/consolidation/dev.json
#: only, by a grid over these four values (bench/bench_consolidate_quality.py
#: --grid): every setting from -0.30 to -0.10 for EXPLAINED, -0.15 to -0.10
#: for LIGHT_CHANGE and 0.03 to 0.05 for HEAVY_CHANGE gives dev its best
#: recall at precision >= 0.95; the values are the cautious end of each
#: range but EXPLAINED, the middle (no pair on dev with every differing word
#: explained is not a duplicate, down to a cosine of 0.3).
EXPLAINED = -0.20
LIGHT_CHANGE = -0.10
HEAVY_CHANGE = 0.05
#: The most :func:`judge` ever goes below the threshold (callers pre-filter with it).
FLOOR = -EXPLAINED
#: Unexplained words a light change may have.
LIGHT_WORDS = 2


def judge(text_a: str, text_b: str, fa: Features, fb: Features, sim: float, threshold: float) -> str | None:
    """Why two texts with nothing else apart (values, polarity, names: the
    caller checks them) say the same at cosine ``sim`` (None: they do not).

    First, one text that is the other with words added at its end ("likes
    running" / "... in the rain"), or with more words added than the two
    share ("Is Portuguese" / "Native language is Portuguese"), is a narrower
    or another claim. Otherwise the cosine must reach ``threshold`` plus:

    * :data:`EXPLAINED` (-0.20) when every differing word is explained
      ("Is a Hibs supporter" / "Supports Hibernian", 0.55);
    * :data:`LIGHT_CHANGE` (-0.10) for at most :data:`LIGHT_WORDS`
      unexplained words that are not one slot refilled ("Rides a steel
      touring bike" / "His bike is a steel-framed tourer");
    * :data:`HEAVY_CHANGE` (+0.05) for more, or where one unexplained word
      stands for another in one place while the rest is rewritten ("scared of
      the vacuum" / "afraid of thunderstorms": synonyms explain the verb, not
      the object).

    Never: a text that is the other with words added at its end ("likes
    running" / "... in the rain"), or with more words added than the two
    share (a narrower or another claim); a person only one side names
    ("Husband doesn't eat gluten" / "Doesn't eat gluten", "Brother" /
    "Brother-in-law": WordNet's person nouns); one slot refilled
    with one word in an otherwise unchanged sentence ("Ana lives in Benfica"
    / "Ana works in Benfica", "green" / "orange"), which MiniLM rates as
    close as a paraphrase; the same words with their roles swapped ("prefers
    cats to dogs" / "dogs to cats").
    """
    if _owner_changed(fa, fb) or _owner_changed(fb, fa):
        return None  # a name owns the thing on one side only: "Omar is her landlord" / "She is Omar's landlord"
    if bool(fa.folded & UPDATE) != bool(fb.folded & UPDATE):
        return None  # one sets a new state against a former one: an update ("Now takes the bus"), not a restatement
    d = difference(text_a, text_b, fa, fb)
    if _about_someone_else(text_a, d.only_a) or _about_someone_else(text_b, d.only_b):
        return None  # a person only one side names: "Husband doesn't eat gluten" / "Doesn't eat gluten"
    added = len(d.only_a) + len(d.only_b) if not (d.only_a and d.only_b) else 0
    if added and (d.trailing or added > d.shared):
        return None  # a narrower or another claim: "likes running" / "... in the rain"
    swap = d.blocks == 1 and bool(d.only_a) and bool(d.only_b)
    if swap:
        return None  # one slot refilled: another value or relation ("rents" / "owns", "the hoover" / "thunder")
    if any(_alternatives(x, y) for x, y in d.refilled):
        return None  # in one place, another person or role, or the opposite ("a nurse" / "a teacher"), whatever else differs
    if d.unexplained == 0 and swapped_roles(text_a, text_b):
        return None  # the same words with their roles swapped: "prefers cats to dogs" / "dogs to cats"
    if d.unexplained == 0:
        need, kind = threshold + EXPLAINED, "every differing word explained"
    elif d.unexplained <= LIGHT_WORDS and not d.refilled:
        need, kind = threshold + LIGHT_CHANGE, f"{d.unexplained} unexplained words"
    else:
        need, kind = threshold + HEAVY_CHANGE, f"{d.unexplained} unexplained words"
    if sim < need:
        return None
    return f"similarity {sim:.3f} >= {need:.2f} ({kind}), same values, polarity and names"
