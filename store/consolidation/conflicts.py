"""Contradictions read from two claims' frames (:mod:`.frames`).

Each test here compares clauses about one subject (:func:`.frames.subject_same`)
and says why they cannot both hold now, or nothing:

* **change**: the newer claim ends what the older one states ("Works at
  Siemens" / "Left Siemens and now works at Bosch", "Smokes" / "Stopped
  smoking", "Plays the cello" / "Gave up the cello", "Uses Emacs" /
  "Switched from Emacs to Helix"): a verb of ending whose object is the
  older claim's object (a name or a noun; for "stop" / "quit" / "give up",
  also its activity), the older claim a positive state, not an event;
* **negation**, with its scope: one clause denies what the other asserts
  and says no more than it ("Has no tattoos" / "Has a small tattoo on her
  ankle", "Has never ridden a horse" / "Rode horses as a teenager", "Isn't
  a member of any church" / "Is a member of the Lutheran church"; "Doesn't
  drink alcohol" / "Drinks red wine": WordNet calls wine a kind of alcohol).
  A denial narrower than the claim ("Never camps in winter" / "Likes
  camping") is compatible. Words that widen a denial without saying
  anything ("any", "at all", "ever") are not counted. A present denial
  against a past event is no contradiction ("Doesn't smoke" / "Smoked a
  cigar at a wedding"); "never" covers the past;
* **attitude**: fear or aversion against liking of one thing ("Is afraid of
  dogs" / "Adores dogs", "Avoids anything spicy" / "Loves spicy food");
* **name**: a naming ("is named", "is called", "X's name is") or a
  residence ("lives in", "is based in", "X's home is in") of one subject
  holding another name.

Two one-off events (simple past, no copula) never contradict here: two
trips, two concerts, two check-ups are two events.
"""

from __future__ import annotations

from functools import lru_cache

from memvault.store.consolidation import lexicon
from memvault.store.consolidation.frames import Clause, Subject, Word, attribute_same, parse, subject_same
from memvault.store.consolidation.text import NEGATIVE_STEMS, fold, near, stem, word_lists
from memvault.store.consolidation.values_apart import values_apart

_LISTS = word_lists()
LIKING = _LISTS["liking_verbs"]
AVERSION = _LISTS["aversion_stems"] | NEGATIVE_STEMS
RESIDENCE = _LISTS["residence_stems"]
LIGHT = _LISTS["light_verbs"] | {"have", "do"}
NPI = _LISTS["negative_polarity"]
#: Words after these are no object of the clause: a comparison's other side, a clause of time or condition.
_ASIDE = frozenset({"over", "than", "rather"}) | _LISTS["subordinators"]
#: Verbs of ending whose object may be an activity ("stopped smoking", "quit drinking").
_ASPECTUAL = frozenset({"stop", "quit", "give", "ceas", "finish", "complet", "graduat"})


@lru_cache(maxsize=65536)
def marks(text: str) -> frozenset[str]:
    """What a claim's frame could contradict by (cheap to compare first):
    "ended", "negative", "naming", "residence", "feeling"."""
    out = set()
    for c in clauses(text):
        if c.ended:
            out.add("ended")
        if negative(c):
            out.add("negative")
        if naming(c):
            out.add("naming")
        if residence(c):
            out.add("residence")
        if ({c.verb} | {w.stem for w in c.words}) & (AVERSION | LIKING):
            out.add("feeling")
        if c.verb in TENURE:
            out.add("tenure")
        if not c.subject.user and not c.subject.names and any(w.kind == "name" for w in c.words):
            out.add("thing")
        if _state_words(c)[1]:
            out.add("state")
        if any(w.kind in _VALUE_FAMILY for w in c.words):
            out.add("value")
    return frozenset(out)


def may_conflict(older: str, newer: str) -> bool:
    """Whether :func:`conflict` could find anything: a change or a denial on
    one side, or a naming, residence or feeling on both."""
    ma, mb = marks(older), marks(newer)
    return bool((ma | mb) & {"ended", "negative"} or ma & mb & {"naming", "residence", "feeling", "tenure", "thing",
                                                                   "state", "value"})


def conflict(older: str, newer: str) -> tuple[str, str] | None:
    """(kind, reason) when the frames of two claims contradict (module docstring), else None."""
    if not may_conflict(older, newer):
        return None
    apart: list[bool] = []  # whether values differ (asked once, only when a pair of clauses gets there)
    for ca in clauses(older):
        for cb in clauses(newer):
            if not subject_same(ca.subject, cb.subject):
                found = _ended_name(ca, cb) or _ended_name(cb, ca)
            elif not attribute_same(ca.subject, cb.subject):
                found = _renamed(ca, cb)
            else:
                found = (_ended(ca, cb) or _ended(cb, ca) or _denied(ca, cb) or _attitude(ca, cb)
                         or _renamed(ca, cb) or _thing_value(ca, cb) or _tenure(ca, cb) or _opposed_state(ca, cb)
                         or _measured_apart(ca, cb, older, newer, apart))
            if found is not None:
                return found
    return None


@lru_cache(maxsize=65536)
def clauses(text: str) -> tuple[Clause, ...]:
    """The clauses of a claim (:func:`.frames.parse`) as the rules read them (:func:`_experiencer`)."""
    return tuple(_experiencer(c) for c in parse(text).clauses)


def _experiencer(c: Clause) -> Clause:
    """"Thunderstorms frighten her" as "she fears thunderstorms": a verb of
    feeling whose object is the person (a pronoun, left out) and whose
    subject is what is felt about. And "has green eyes" as "her eyes are
    green": a quality of a part the person has."""
    from dataclasses import replace

    if c.verb == "have" and c.subject.user and not negative(c) and len(c.words) >= 2 and not c.words[-1].prep \
            and c.words[-1].kind == "word" and all(w.kind == "word" and _adjective(w.folded) and not w.prep
                                                   for w in c.words[:-1]):
        return replace(c, verb="be", lemma="be", copula=True, words=c.words[:-1],
                       subject=Subject(nouns=(c.words[-1].folded,)))
    if c.words or c.subject.user or c.subject.names or c.verb not in AVERSION | LIKING:
        return c
    felt = tuple(Word(n, n, stem(n), "word") for n in c.subject.nouns)
    return replace(c, words=felt, subject=Subject())


def _ended_name(old: Clause, new: Clause) -> tuple[str, str] | None:
    """A change of one of the user's things named by its name ("Home
    broadband is from Elisa" / "She dropped Elisa"): one subject the user,
    the other a thing of theirs, what ended a name the old claim holds."""
    if not (old.subject.user or new.subject.user) or not new.ended or not _state(old):
        return None
    ended = [w for w in new.ended if w.kind == "name"]
    if ended and all(_match(w, old, verb=False) for w in ended):
        return "change", f"ended: {' '.join(w.raw for w in ended)}"
    return None


def _match(word: Word, clause: Clause, *, verb: bool = True) -> bool:
    """Whether ``word`` is said in ``clause``: the same word or name (another
    spelling of it), a synonym, or a kind of it ("wine" for "alcohol"); with
    ``verb``, also the clause's predicate ("stopped smoking" / "smokes")."""
    for w in clause.words:
        if w.prep in _ASIDE:
            continue  # "prefers tea over coffee", "... when flying": not what the clause holds
        if _same_word(word, w):
            return True
    if verb and clause.verb and (word.stem == clause.verb or _spelled_like(word.stem, clause.verb)):
        return True
    return False


@lru_cache(maxsize=262144)
def _same_word(x: Word, y: Word) -> bool:
    if x.kind != "word" and x.kind != "name" or y.kind != "word" and y.kind != "name":
        return x.stem == y.stem
    if x.stem == y.stem or x.folded == y.folded:
        return True
    if x.kind == "name" or y.kind == "name":
        return near(x.folded, y.folded)
    return _spelled_like(x.stem, y.stem) or lexicon.synonyms(x.folded, y.folded) or _kind_of(y.folded, x.folded)


def _spelled_like(x: str, y: str) -> bool:
    """One word built on the other ("carpentry" / "carpenter", "smoking" / "smoke"): five letters alike at the start."""
    if "-" in x or "-" in y:
        return x == y  # "alcohol-free" is no form of "alcohol"
    n = 0
    for cx, cy in zip(x, y):
        if cx != cy:
            break
        n += 1
    return n >= 5 or (n >= 4 and min(len(x), len(y)) == n)


@lru_cache(maxsize=65536)
def _kind_of(narrow: str, broad: str) -> bool:
    """Whether WordNet makes ``narrow`` a kind of ``broad`` within three steps ("wine": alcohol)."""
    return broad in lexicon.ancestor_words(narrow, 3)


def negative(c: Clause) -> bool:
    """A clause's polarity: its negations, and a verb or adjective that says
    "not" by itself ("avoids", "is intolerant", "lacks")."""
    return c.negative != (c.verb in _DENYING or any(w.stem in _DENYING for w in c.words))


#: Stems that say "not" by themselves ("stop" and "quit" end something instead: :func:`_ended`).
_DENYING = NEGATIVE_STEMS - {"quit", "stop"}


def _state(c: Clause) -> bool:
    """A positive state or habit: not denied, not an event, not itself a change."""
    return not negative(c) and not c.past_event and not c.ended


def _ended(old: Clause, new: Clause) -> tuple[str, str] | None:
    """``new`` ends what ``old`` states (module docstring: change): every
    word of what ended is said in ``old``, one of them as its object (an
    activity too after "stop", "quit", "give up": "stopped smoking"); an
    activity ("driving") is a verb, never the noun spelled alike."""
    if not new.ended or not _state(old) or new.negative:
        return None
    # A span of time (a kind of period by WordNet: "having completed one year") says how long, not what ended.
    ended = [w for w in new.ended if w.kind == "name" or w.kind == "word" and not _kind_of(w.folded, "period")]
    if not ended or all(w.folded.endswith("ing") and stem(w.folded) in LIGHT for w in ended):
        return None  # "stopped going": going where?
    for w in ended:
        if w.folded.endswith("ing") and w.kind == "word":
            if not (w.stem == old.verb or _spelled_like(w.stem, old.verb)):
                return None
        elif not _match(w, old):
            return None
    activity = new.verb in _ASPECTUAL
    if activity or any(_match(w, old, verb=False) for w in ended if not w.folded.endswith("ing")):
        return "change", f"ended: {' '.join(w.raw for w in ended)}"
    return None


def _core(c: Clause) -> list[Word]:
    """What a denial denies: its verb's object and qualifiers, without the
    words that only widen it ("any", "ever", "at all")."""
    return [w for w in c.words if w.folded not in NPI and w.kind in ("word", "name")]


def _denied(a: Clause, b: Clause) -> tuple[str, str] | None:
    """One clause denies all the other asserts, and no more (module docstring: negation)."""
    if negative(a) == negative(b):
        return None
    neg, pos = (a, b) if negative(a) else (b, a)
    if pos.ended or neg.ended or (pos.past_event and not neg.never):
        return None
    core = _core(neg)
    if not core or not _same_verb(neg, pos):
        return None
    if all(_match(w, pos) for w in core):
        return "negation", "one denies what the other states"
    return None


def _same_verb(neg: Clause, pos: Clause) -> bool:
    """Whether the denial's verb is the assertion's: the same, another form
    or a synonym; a light verb ("has", "is", "uses") against a light verb;
    or a verb of liking on the asserting side ("enjoys a glass of wine")."""
    if neg.copula or pos.copula:
        return neg.copula and pos.copula  # "is a member" / "isn't a member"; not "is the eldest" / "has no children"
    if neg.verb == pos.verb or _spelled_like(neg.verb, pos.verb) or lexicon.synonyms(neg.lemma, pos.lemma):
        return True
    if neg.verb in LIGHT:
        return pos.verb in LIGHT
    return pos.verb in LIKING


def _attitude(a: Clause, b: Clause) -> tuple[str, str] | None:
    """Aversion against liking of one thing (module docstring: attitude)."""
    def feeling(c: Clause) -> str:
        stems = {c.verb} | {w.stem for w in c.words}
        if stems & AVERSION and not c.negative:
            return "against"
        if stems & LIKING and not negative(c):
            return "for"
        return ""

    fa, fb = feeling(a), feeling(b)
    if not fa or not fb or fa == fb:
        return None
    against, liking = (a, b) if fa == "against" else (b, a)
    core = [w for w in _core(against) if w.stem not in AVERSION and w.stem not in LIKING]
    if core and all(_match(w, liking) for w in core):
        return "habit", "an aversion against a liking of one thing"
    return None


def _names(c: Clause) -> list[Word]:
    return [w for w in c.words if w.kind == "name"]


def naming(c: Clause) -> bool:
    """"Is named", "is called", "X's name is"."""
    return c.verb in ("name", "call") or c.copula and (c.subject.attribute[-1:] == ("name",)
                                                       or any(w.stem == "name" for w in c.words[:1]))


def residence(c: Clause) -> bool:
    """"Lives in", "is based in", "X's home is in"."""
    return c.verb in RESIDENCE or c.copula and (any(stem(n) in RESIDENCE for n in c.subject.attribute[-1:])
                                                 or any(w.stem in RESIDENCE for w in c.words[:1]))


def _short_for(x: Word, y: Word) -> bool:
    """Whether one name is a short form of the other's words ("NYC" / "New York City")."""
    from memvault.store.consolidation import spelling

    return spelling.spelled_out(spelling.token_of(x.raw), y.raw) is not None or spelling.spelled_out(
        spelling.token_of(y.raw), x.raw) is not None


def _joined(names: list[Word]) -> Word:
    """A run of names read as one ("New York City")."""
    raw = " ".join(w.raw for w in names)
    return Word(raw, fold(raw), stem(fold(raw)), "name")


def _renamed(a: Clause, b: Clause) -> tuple[str, str] | None:
    """A naming or a residence of one subject holding another name (module docstring: name)."""
    if a.negative or b.negative or a.past_event and b.past_event:
        return None
    for test, kind in ((naming, "value"), (residence, "place")):
        if test(a) and test(b):
            na, nb = _names(a), _names(b)
            if na and nb and not any(near(x.folded, y.folded) or _short_for(x, y) for x in na for y in nb) \
                    and not _short_for(_joined(na), _joined(nb)):
                return kind, f"same subject, different {kind}: {na[0].raw} / {nb[0].raw}"
    return None


@lru_cache(maxsize=65536)
def slot_keys(text: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The keys a claim is filed under to find its rivals
    (:func:`.candidates.slot_pairs`): (symmetric keys: the subject and
    relation of a naming, a residence or a move, a copula about a thing;
    probe keys: the words and names a change or a denial is about; target
    keys: the words and names a positive claim holds, and the kinds its
    nouns are, by WordNet)."""
    symmetric: set[str] = set()
    probe: set[str] = set()
    target: set[str] = set()
    for c in clauses(text):
        who = _subject_key(c.subject)
        if naming(c):
            symmetric.add(f"{who}|name")
        if residence(c) or c.verb == "move":
            symmetric.add(f"{who}|live")
        elif c.copula and not c.subject.user:
            symmetric.add(f"{who}|be")
        denied = negative(c)
        if c.ended or denied:
            for w in (c.ended or _core(c)):
                if w.kind == "name":
                    probe.add(f"n|{w.folded}")
                elif w.kind == "word":
                    probe.add(f"{who}|{w.stem}")
            if denied and c.verb not in LIGHT:
                probe.add(f"{who}|{c.verb}")
        else:
            for w in c.words:
                if w.kind == "name":
                    target.add(f"n|{w.folded}")
                elif w.kind == "word":
                    target.add(f"{who}|{w.stem}")
                    target.update(f"{who}|{stem(x)}" for x in lexicon.ancestor_words(w.folded, 3) if " " not in x)
            if c.verb not in LIGHT:
                target.add(f"{who}|{c.verb}")
    return frozenset(symmetric), frozenset(probe), frozenset(target)


def _subject_key(s: Subject) -> str:
    """Who a clause is about, as a key: "" for the user, else a name or the head noun's stem."""
    if s.user:
        return ""
    if s.names:
        return sorted(s.names)[0]
    return stem(s.nouns[-1]) if s.nouns else ""


TENURE = _LISTS["tenure_stems"]


def _thing_value(a: Clause, b: Clause) -> tuple[str, str] | None:
    """One thing (a definite thing, not a person) said to hold another name
    by one verb: "The desktop runs Fedora" / "... runs Windows 10", "Her
    phone is a Pixel 6" / "... is an iPhone 13"."""
    s = a.subject
    if s.user or s.names or not s.nouns or lexicon.person(s.nouns[-1]) or a.verb != b.verb:
        return None
    from memvault.store.consolidation.frames import _modifiers_differ

    if _modifiers_differ(a.subject, b.subject, strict=True):
        return None  # "her phone" / "her work phone": two things
    if negative(a) or negative(b) or a.past_event or b.past_event:
        return None
    na, nb = _names(a), _names(b)
    if not na or not nb or a.words[0].kind != "name" and not a.copula or b.words[0].kind != "name" and not b.copula:
        return None
    if any(near(x.folded, y.folded) or _short_for(x, y) for x in na for y in nb):
        return None
    rest_a = {w.stem for w in a.words if w.kind == "word"}
    rest_b = {w.stem for w in b.words if w.kind == "word"}
    if rest_a != rest_b:
        return None  # "a Brooks saddle" / "Schwalbe tyres": names of two things
    return "value", f"same subject, different value: {na[0].raw} / {nb[0].raw}"


def _tenure(a: Clause, b: Clause) -> tuple[str, str] | None:
    """One thing held another way: "Rents her flat" / "Owns her flat", "Leases the car" / "Owns the car"."""
    if a.verb == b.verb or a.verb not in TENURE or b.verb not in TENURE or negative(a) or negative(b):
        return None
    objects_a = {w.stem for w in a.words[:2] if w.kind == "word" and not w.prep}
    objects_b = {w.stem for w in b.words[:2] if w.kind == "word" and not w.prep}
    if objects_a and objects_a & objects_b:
        return "status", f"held another way: {a.lemma} / {b.lemma}"
    return None


def _state_words(c: Clause) -> tuple[str, list[Word]]:
    """(what, the words said of it) of a clause that ascribes a quality: "the
    car is red" (car: red), "is an introvert" (the user: introvert), "has
    blue eyes" (eyes: blue)."""
    if c.copula:
        return (c.subject.nouns[-1] if c.subject.nouns else ""), [w for w in c.words if not w.prep]
    return "", []


def _opposed_state(a: Clause, b: Clause) -> tuple[str, str] | None:
    """One thing said to be two things that exclude each other: opposites
    ("introvert" / "extrovert", "left-handed" / "right-handed") or two
    values of one kind of quality ("blue" / "brown" eyes, a "red" / "blue"
    car), nothing else the same kind of word said apart."""
    if negative(a) or negative(b):
        return None
    ta, wa = _state_words(a)
    tb, wb = _state_words(b)
    if not wa or not wb or not (ta == tb or ta and tb and stem(ta) == stem(tb)):
        return None
    if a.subject.user != b.subject.user:
        return None
    shared = {w.stem for w in wa} & {w.stem for w in wb}
    for x in wa:
        for y in wb:
            if x.stem in shared or y.stem in shared or x.kind != "word" or y.kind != "word":
                continue
            if _opposites(x.folded, y.folded) or (_adjective(x.folded) and _adjective(y.folded)
                                                 and lexicon.cohyponyms(x.folded, y.folded)):
                return "exclusive", f"cannot be both: {x.raw} / {y.raw}"
    return None


def _opposites(x: str, y: str) -> bool:
    """WordNet antonyms, also of compounds with one head ("left-handed" / "right-handed")."""
    if lexicon.antonyms(x, y):
        return True
    px, py = x.split("-"), y.split("-")
    return len(px) == len(py) == 2 and px[1] == py[1] and lexicon.antonyms(px[0], py[0])


@lru_cache(maxsize=65536)
def _adjective(word: str) -> bool:
    return any(s[0] in "as" for b in lexicon.bases(word) for s in lexicon.get_senses(b))


_VALUE_FAMILY = {"time": "time", "date": "date", "month": "date", "year": "date", "weekday": "date",
                 "amount": "number", "number": "number"}


def _measured_apart(a: Clause, b: Clause, older: str, newer: str, apart: list[bool]) -> tuple[str, str] | None:
    """:func:`_measured` when the two texts' values differ (:func:`.values_apart.values_apart`, read once into ``apart``)."""
    if not (any(w.kind in _VALUE_FAMILY for w in a.words) and any(w.kind in _VALUE_FAMILY for w in b.words)):
        return None
    if not apart:
        apart.append(values_apart(older, newer))
    return _measured(a, b) if apart[0] else None


def _measured(a: Clause, b: Clause) -> tuple[str, str] | None:
    """One thing of one subject measured or dated twice: the same subject, a
    word in common that says what is measured (the subject itself for a
    thing: "passport"; else a noun: "birthday", "size", "tall"), and values of
    one kind that differ in one place ("Flight to Oslo leaves at 07:40" /
    "Her Oslo flight now leaves at 13:15"). Not two events, nor qualifiers
    that are alternatives ("cold weather" / "hot weather")."""
    if negative(a) != negative(b) or a.past_event or b.past_event:
        return None
    va = [w for w in a.words if w.kind in _VALUE_FAMILY]
    vb = [w for w in b.words if w.kind in _VALUE_FAMILY]
    if not va or not vb:
        return None
    fam_a = {_VALUE_FAMILY[w.kind] for w in va}
    fam_b = {_VALUE_FAMILY[w.kind] for w in vb}
    shared = fam_a & fam_b
    if len(shared) != 1:
        return None
    family = shared.pop()
    xa = {w.stem for w in va if _VALUE_FAMILY[w.kind] == family}
    xb = {w.stem for w in vb if _VALUE_FAMILY[w.kind] == family}
    if xa == xb or xa <= xb or xb <= xa or len(xa - xb) > 1 or len(xb - xa) > 1:
        return None  # the same, narrower, or two places apart
    if {w.stem for w in va} - xa != {w.stem for w in vb} - xb:
        return None  # another value of another kind said apart too: another thing
    wa = [w for w in a.words if w.kind == "word" and w.prep not in _ASIDE]
    wb = [w for w in b.words if w.kind == "word" and w.prep not in _ASIDE]
    said = any(_same_word(x, y) for x in wa for y in wb)
    if not said and (a.subject.user or not a.subject.nouns):
        return None
    from memvault.store.consolidation.frames import _modifiers_differ

    if _modifiers_differ(a.subject, b.subject, strict=True):
        return None  # "the regional final" / "the national final": two things
    only_a = [x for x in wa if not any(_same_word(x, y) for y in wb)]
    only_b = [y for y in wb if not any(_same_word(x, y) for x in wa)]
    if only_a and only_b:
        return None  # something else said apart: "astronomy evening" / "science fair"
    if not (a.copula or b.copula or a.verb == b.verb or lexicon.synonyms(a.lemma, b.lemma)):
        return None  # "cycles 60 miles" / "walks 20 miles": two activities
    return family, f"same subject, different {family}: {', '.join(sorted(xa))} / {', '.join(sorted(xb))}"
