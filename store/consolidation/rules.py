"""The pair rules: duplicate, contradiction, recurrence. Deterministic, explained.

Each rule looks at two memories (their :class:`~.text.Features`, type, scope,
creation time) and, when there are vectors, their cosine similarity, and
answers with a reason a person can read, or None.

**Duplicate** (:func:`duplicate`): same type and scope, and either the same
normalised text, or nothing that tells them apart and a cosine similarity
at least what the words that differ call for (:func:`.paraphrase.judge`:
from the threshold - 0.20 when every differing word is another spelling, an
acronym, a light verb, to + 0.05 for one slot refilled). Nothing apart: the
same numbers, dates, weekdays and identifiers (an acronym read as what it
spells: "NC500" / "North Coast 500"); the
same polarity ("eats pork" / "does not eat pork" are not one claim; "not
well" / "badly" is one, a negated word and its antonym); no name
in one that the other lacks (another person, a subject only one of them
names, a narrower claim: "a nurse" / "a nurse in Braga"; an acronym the other
spells out is no name: "PR" / "pull request"); and, for episodic memories, the
same event: both name the same month and year, or were written within
:data:`EPISODE_DAYS` days of each other (two Thursday climbing sessions a week
apart are a habit to promote, not a duplicate). Without vectors only the
normalised text counts.

**Contradiction** (:func:`contradiction`): same scope, both claims about how
things are (semantic or identity memories, facts), about the same subject (the
same names, at least one content word in common, nothing else on either side
but words that report a change or when), and one difference of value:

* ``number`` / ``date``: the numbers or dates differ, in one place only
  ("has 2 cats" / "has 3 cats"; "5 km in 24 minutes" vs "10 km in 52" is two
  places: a different race);
* ``negation``: one says "not" ("does not have a driving licence" / "has a
  driving licence", "stopped drinking alcohol" / "drinks alcohol socially"),
  and the negated side adds no words of its own ("does not like running in
  the rain" is narrower than "likes running", not its opposite);
* ``place`` / ``value``: a name in one place differs ("lives in Alfama" /
  "lives in Benfica", "main browser is Chrome" / "uses Firefox as her main
  browser"); a plain word that differs ("mentor" / "manager") is not enough.

With vectors the pair must also be at least :attr:`Thresholds.contradiction`
similar. The newer claim is the later-created one.

**Recurrence** (:func:`recurrence`): two episodic memories of the same scope
about the same recurring thing on different days: similar (cosine, or shared
words without vectors), no dates of their own (a dated event happened once),
the same weekday when both name one, and the same names.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

from memvault.store.consolidation import conflicts, frames, paraphrase, slots, spelling, values_apart
from memvault.store.consolidation.text import (
    LIGHT_STEMS,
    TEMPORAL_STEMS,
    Features,
    features,
    names_in,
    near,
    stem,
    unmatched,
    value_reading,
    word_lists,
)

#: Two episodic memories written this many days apart are two events.
EPISODE_DAYS = 1.5
#: Memory types whose claims can contradict each other (facts count as semantic).
CLAIM_TYPES = frozenset({"semantic", "identity"})


@dataclass(frozen=True)
class Thresholds:
    """Cosine similarity thresholds, calibrated on ``tests/fixtures/consolidation/dev.json``
    (see ``bench/bench_consolidate_quality.py`` and the README)."""

    #: ``add`` names live memories from this similarity minus 0.20 up (``similar_to``); the plain baseline.
    duplicate: float = 0.70
    #: ``consolidate`` merges groups whose every pair is at least this similar.
    merge: float = 0.75
    #: A contradiction candidate must be at least this similar (when there are vectors).
    contradiction: float = 0.45
    #: Two episodes of one habit are at least this similar.
    recurrence: float = 0.55
    #: Without vectors: shared content words (Jaccard) for two episodes of one habit.
    recurrence_words: float = 0.34


@dataclass(frozen=True)
class Memo:
    """What the rules see of one memory or fact."""

    id: str
    type: str
    scope: str
    text: str
    created: datetime
    f: Features


@dataclass
class NameBook:
    """The store's names: words written with a capital inside some text and
    never in lower case there (``known``), and those of them that also begin a
    text (``subjects``: people and things memories are about, "Ana lives...")."""

    known: frozenset[str] = frozenset()
    subjects: frozenset[str] = frozenset()
    _names: dict[str, frozenset[str]] = field(default_factory=dict)

    def names(self, f: Features) -> frozenset[str]:
        """The names of one text (:func:`.text.names_in` with this book), remembered."""
        found = self._names.get(f.norm)
        if found is None:
            found = self._names[f.norm] = names_in(f, self.known)
        return found

    @classmethod
    def of(cls, features: Iterable[Features]) -> "NameBook":
        """The name book of a set of texts."""
        capital: set[str] = set()
        lower: set[str] = set()
        firsts: set[str] = set()
        for f in features:
            capital |= f.capitals
            lower |= (f.folded - f.capitals - {f.first})
            if f.first_capital:
                firsts.add(f.first)
        known = frozenset(capital - lower)
        return cls(known, frozenset(known & firsts))


def _different_names(a: Features, b: Features, book: NameBook, *, strict: bool = True) -> bool:
    """Whether the names make them about different people or things.

    Strict (duplicates): any name only one of them spells: another person
    ("Tiago" / "Marta"), a subject only one names ("Isla is ..." / "Is ..."),
    a narrower claim ("a nurse" / "a nurse in Braga"). Not strict (episodes
    of a habit, which name the odd detail): another name in the same place, a
    subject only one names, or a person of the store only one mentions."""
    ua = unmatched(book.names(a), b.folded)
    ub = unmatched(book.names(b), a.folded)
    if strict:
        return bool(ua or ub)
    if (ua and ub) or a.first in ua or b.first in ub:
        return True
    return bool((ua | ub) & book.subjects)


def apart(a: Memo, b: Memo, book: NameBook) -> str | None:
    """Why two memories cannot say the same thing (None: nothing tells them apart)."""
    fa, fb = a.f, b.f
    if fa.values != fb.values and not _spelled_out(a, b) and value_reading(a.text) != value_reading(b.text):
        return "different numbers or dates"
    if fa.negative != fb.negative and paraphrase.opposite_word(a.text, b.text, fa, fb) is None:
        return "one is negated"
    ua = unmatched(book.names(fa), fb.folded)
    ub = unmatched(book.names(fb), fa.folded)
    if ua:  # the rare case, so the costlier look at acronyms only here
        ua -= spelling.abbreviations(a.text, b.text)
    if ub:
        ub -= spelling.abbreviations(b.text, a.text)
    if ua or ub:
        return "different names"
    if a.type == "episodic":
        same_date = fa.dated and (fa.months, fa.years) == (fb.months, fb.years)
        if not same_date and abs((a.created - b.created).total_seconds()) > EPISODE_DAYS * 86400:
            return "different episodes"
    return None


def _spelled_out(a: Memo, b: Memo) -> bool:
    """Whether the values are the same once an identifier the other text
    spells out is read as its number ("NC500" / "North Coast 500"), or as
    no value when its digits count letters ("i18n" / "internationalization")."""

    def read(m: Memo, other: Memo) -> set[str]:
        values = set(m.f.values)
        if not m.f.idents:
            return values
        for w in spelling.abbreviations(m.text, other.text):
            if f"i:{w}" in values:
                values.discard(f"i:{w}")
                digits = "".join(c for c in w if c.isdigit()).lstrip("0") or "0"
                if digits in other.f.values:  # NC500: 500; i18n counts letters, no value
                    values.add(digits)
        return values

    return read(a, b) == read(b, a)


def duplicate(a: Memo, b: Memo, sim: float | None, threshold: float, book: NameBook) -> str | None:
    """Why ``b`` duplicates ``a`` (None: it does not). ``sim`` is None without vectors."""
    if a.type != b.type or a.scope != b.scope:
        return None
    if a.f.norm == b.f.norm:
        return "same normalised text"
    if sim is None or sim < threshold - paraphrase.FLOOR:
        return None
    if apart(a, b, book) is not None:
        return None
    return paraphrase.judge(a.text, b.text, a.f, b.f, sim, threshold)


def _residual(f: Features, other: Features) -> set[str]:
    """Content stems of ``f`` the other text lacks, without words of change,
    time or light verbs."""
    return set(f.stems - other.stems) - f.changes - TEMPORAL_STEMS - LIGHT_STEMS


def _kinds(values: frozenset[str]) -> set[str]:
    """The kinds of values in a set: month, year, weekday, identifier, number."""
    return {"month" if v[0] == "m" and v[1:].isdigit() else "year" if v[0] == "y" and v[1:].isdigit()
            else "ident" if v.startswith("i:") else "number" if v[0].isdigit() else "weekday" for v in values}


def contradiction(a: Memo, b: Memo, sim: float | None, threshold: float, book: NameBook) -> tuple[str, str] | None:
    """(kind, reason) when ``a`` and ``b`` contradict each other, else None:
    the word rule below, else one value refilled in one frame (:mod:`.slots`)."""
    if a.scope != b.scope or a.type not in CLAIM_TYPES or b.type not in CLAIM_TYPES:
        return None
    fa, fb = a.f, b.f
    if fa.norm == fb.norm:
        return None
    found = None
    if (sim is None or sim >= threshold) and fa.possessives == fb.possessives:
        # (whose thing it is must not differ: "her sister's flat" / "her flat")
        found = _by_slots(a, b, book)
    if found is None:
        # What the frames say needs no similarity: who, what, and a change or denial of it.
        older, newer = (a, b) if (a.created, a.id) <= (b.created, b.id) else (b, a)
        found = conflicts.conflict(older.text, newer.text)
        if found is None and not (adds(fa) or adds(fb) or two_events(a.text, b.text)):
            found = values_apart.value_conflict(older.text, newer.text, sim, VALUE_SIMILARITY)
    return found


def _by_slots(a: Memo, b: Memo, book: NameBook) -> tuple[str, str] | None:
    """One value refilled in one frame (:mod:`.slots`), else the word rule (:func:`_by_words`)."""
    fa, fb = a.f, b.f
    # The slot rule first: it names the kind of value (a time, not "numbers 9 / 10, 30").
    # More than three content words apart on a side is more than one slot,
    # unless one side reports a change ("Moved to Lisbon"): the slot rule is
    # then not asked (the plan judges tens of thousands of pairs).
    few = len(_residual(fa, fb)) <= 3 and len(_residual(fb, fa)) <= 3
    found = slots.contradiction(a.text, b.text) if fa.negative == fb.negative and (few or fa.changes or fb.changes) else None
    if found is None and fa.stems & fb.stems:
        found = _by_words(a, b, book)
    if found is not None and found[0] in _VALUE_KINDS and (two_events(a.text, b.text) or adds(fa) or adds(fb)):
        return None  # two one-off events (a trip in 2019 and one in 2024), or one that adds ("also")
    return found


#: Two claims holding values of one kind in other words (:func:`.values_apart.value_conflict`)
#: are about one thing from this similarity up.
VALUE_SIMILARITY = 0.75


#: Words that place a claim in the past ("ago", "last").
PAST_TIME = word_lists()["past_time"]
#: Words that mark an addition (``addition_markers``).
ADDITION = word_lists()["addition_markers"]
#: Kinds of the rules above that compare values of one slot.
_VALUE_KINDS = frozenset({"date", "time", "number", "amount", "value", "place"})


def two_events(text_a: str, text_b: str) -> bool:
    """Whether one text tells a dated one-off event ("Visited Lisbon in
    2019", "Had a flu jab in October", a dated note without a verb:
    "Dentist appointment on 3 March"): what happened on another day is
    another event, never a contradiction. Not when one side ends what the
    other states, or reports a change ("moved to Lisbon")."""
    ea, eb = _event(text_a), _event(text_b)
    if ea[1] != eb[1] or ea[2] or eb[2]:
        return False
    return ea[0] or eb[0]


@lru_cache(maxsize=65536)
def _event(text: str) -> tuple[bool, bool, bool]:
    """(a dated one-off event, says something ended, reports a change):
    an event has every clause a simple past (or no verb at all), and a
    date, month, year, weekday or "ago" / "last ..." said."""
    clauses = frames.parse(text).clauses
    f = features(text)
    dated = bool(f.folded & PAST_TIME) or any(w.kind in ("year", "month", "date", "weekday", "time")
                                               for c in clauses for w in c.words)
    if not clauses:
        dated = f.dated or bool(f.weekdays) or any(kind in ("date", "time") for _, _, kind, _ in slots.value_spans(text))
    event = dated and all(c.past_event for c in clauses)
    return event, any(c.ended for c in clauses), any(c.verb in frames.CHANGE_STEMS for c in clauses)


def adds(f: Features) -> bool:
    """Whether a claim says it adds to another ("also", "too", "another"): it never replaces one."""
    return bool(f.folded & ADDITION)


def _by_words(a: Memo, b: Memo, book: NameBook) -> tuple[str, str] | None:
    """The word rule of the module docstring (values, negation, names)."""
    fa, fb = a.f, b.f
    ra, rb = _residual(fa, fb), _residual(fb, fa)
    if len(ra) > 3 or len(rb) > 3:
        return None  # more than one thing differs (no branch below allows it): cheap to tell first
    # A claim that says when it became true ("since July 2026", "moved ... in
    # June 2026") where the other names no date: the date is not the value.
    change_a = bool(fa.changes) or (fa.dated and not fb.dated)
    change_b = bool(fb.changes) or (fb.dated and not fa.dated)
    va = fa.values - (fa.dates if fa.dated and not fb.dated else frozenset())
    vb = fb.values - (fb.dates if fb.dated and not fa.dated else frozenset())
    if fa.negative == fb.negative and va == vb and (not ra or not rb):
        return None  # no value, polarity or name in one place differs
    names = unmatched(book.names(fa), fb.folded), unmatched(book.names(fb), fa.folded)
    if fa.negative != fb.negative:
        rneg, rpos = (ra, rb) if fa.negative else (rb, ra)
        if va != vb or names[0] or names[1] or rneg or len(rpos) > 1:
            return None
        if paraphrase.opposite_word(a.text, b.text, fa, fb) is not None:  # "never early" / "late": agreed
            return None
        return "negation", "one says the opposite of the other (a negation)"
    if va != vb:
        da, db = va - vb, vb - va
        if not da or not db or not (_kinds(da) & _kinds(db)):
            return None  # one only adds a value (a narrower claim), or values of different kinds
        if len(da) >= 2 and len(db) >= 2:
            return None  # two values differ: another thing ("5k in 24 min" / "10k in 52 min")
        renamed = ra and rb and _all_names(ra | rb, fa, fb, book) and len(ra) <= 2 and len(rb) <= 2
        if not renamed:
            if names[0] or names[1] or (ra and rb):
                return None
            if len(ra) + len(rb) > (2 if change_a or change_b else 0):
                return None
        kind = "date" if any(v[0] in "my" for v in da | db) else "number"
        return kind, f"same subject, different {kind}: {', '.join(sorted(da))} / {', '.join(sorted(db))}"
    # One slot differs, and it is a name: a place or a value.
    if not ra or not rb or len(ra) > 3 or len(rb) > 3 or not _all_names(ra | rb, fa, fb, book):
        return None
    if all(any(near(x, y) for y in rb) for x in ra):
        return None  # two spellings of one name ("Hibs" / "Hibernian")
    if fa.first in names[0] or fb.first in names[1]:
        return None  # whose claim it is differs ("Miso's vet" / "Pico's vet")
    short = {stem(w) for w in spelling.abbreviations(a.text, b.text) | spelling.abbreviations(b.text, a.text)}
    if (ra | rb) & short:
        return None  # one spells out the other: "NYC" / "New York City"
    if not (slots.one_value_words(a.text) & ra and slots.one_value_words(b.text) & rb):
        return None  # a direct object can have several values: "speaks French" / "speaks Portuguese"
    kind = "place" if word_lists()["place_stems"] & (fa.stems | fb.stems) else "value"
    return kind, f"same subject, different {kind}: {', '.join(sorted(ra))} / {', '.join(sorted(rb))}"


def _all_names(stems: set[str], fa: Features, fb: Features, book: NameBook) -> bool:
    """Whether every one of ``stems`` is a name (written with a capital) in one of the texts."""
    capitals = fa.capitals | fb.capitals | book.names(fa) | book.names(fb)
    return all(any(near(s, c) or c.startswith(s) for c in capitals) for s in stems)


def recurrence(a: Memo, b: Memo, sim: float | None, thresholds: Thresholds, book: NameBook) -> bool:
    """Whether two episodic memories are occurrences of one recurring thing."""
    if a.type != "episodic" or b.type != "episodic" or a.scope != b.scope:
        return False
    fa, fb = a.f, b.f
    if fa.years or fb.years:
        return False  # an event of a given year happened once
    if fa.weekdays and fb.weekdays and fa.weekdays != fb.weekdays:
        return False
    if sim is not None:
        if sim < thresholds.recurrence:
            return False
    else:
        union = fa.stems | fb.stems
        if not union or len(fa.stems & fb.stems) / len(union) < thresholds.recurrence_words:
            return False
    return not _different_names(fa, fb, book, strict=False)
