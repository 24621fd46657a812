"""Values of one kind apart in two claims: a date, a time, a count, an amount.

:func:`value_conflict` finds two claims that would say the same but for
such values stated in other words (the duplicate rule's weighing of a
rewording, :mod:`.paraphrase`); :func:`values_apart` tells the frame rules
(:mod:`.conflicts`) whether two texts' values differ at all. Both set aside
quantities in other units, other people, and two routines
(:func:`two_routines`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

from memvault.store.consolidation import lexicon
from memvault.store.consolidation.text import STOP_WORDS, fold, near, stem, word_lists

if TYPE_CHECKING:
    from memvault.store.consolidation.text import Features

_LISTS = word_lists()

#: Currency words read as their symbol, so an amount written either way has one unit.
_CURRENCY = {"euro": "€", "euros": "€", "eur": "€", "pound": "£", "pounds": "£", "gbp": "£", "dollar": "$",
             "dollars": "$", "usd": "$", "yen": "¥"}


def value_conflict(older: str, newer: str, sim: float | None, threshold: float) -> tuple[str, str] | None:
    """Two claims that would say the same but for values of one kind (a
    date, a time, a count, an amount with its unit) stated in other words.
    Said the way the duplicate rule weighs a rewording
    (:func:`.paraphrase.difference`, :mod:`.paraphrase` margins around
    ``threshold``), with the values and the words that report a change
    ("now", "moved") set aside; the same people and units; neither's values a
    part of the other's (a narrower claim). Only weekdays apart is a routine
    moved only when it is said to be weekly. Without vectors: nothing."""
    from memvault.store.consolidation import paraphrase
    from memvault.store.consolidation.text import CHANGE_STEMS, TEMPORAL_STEMS, features, value_reading

    if sim is None or sim < threshold + paraphrase.EXPLAINED:
        return None
    va, vb = value_reading(older), value_reading(newer)
    if va == vb or not va or not vb or va <= vb or vb <= va:
        return None
    da, db = va - vb, vb - va
    shared = _value_kinds(da) & _value_kinds(db)
    if not shared or len(da) >= 2 and len(db) >= 2:
        return None  # values of other kinds, or two places apart: another thing ("10k in 52" / "5k in 24")
    fa, fb = features(older), features(newer)
    if fa.negative != fb.negative:
        return None
    if two_routines(shared == {"weekday"}, fa, fb):
        return None
    if _units_apart(older, newer) or _people_apart(older, newer):
        return None
    d = paraphrase.difference(older, newer, fa, fb)
    quiet = CHANGE_STEMS | TEMPORAL_STEMS
    only_a = [w for w in d.only_a if w not in quiet]
    only_b = [w for w in d.only_b if w not in quiet]
    if paraphrase._about_someone_else(older, tuple(only_a)) or paraphrase._about_someone_else(newer, tuple(only_b)):
        return None
    added = len(only_a) + len(only_b) if not (only_a and only_b) else 0
    if added and (d.trailing or added > d.shared):
        return None  # a narrower or another claim
    if d.blocks == 1 and only_a and only_b or any(
            paraphrase._alternatives(x, y) or lexicon.cohyponyms(x, y) for x, y in d.refilled):
        return None  # another thing in one place: "birthday" / "wedding anniversary"
    unexplained = len(only_a) + len(only_b)
    margin = (paraphrase.EXPLAINED if unexplained == 0 else paraphrase.LIGHT_CHANGE
              if unexplained <= paraphrase.LIGHT_WORDS and not d.refilled else paraphrase.HEAVY_CHANGE)
    if sim < threshold + margin:
        return None
    kind = "date" if shared & {"month", "year", "weekday"} else "time" if "time" in shared else "number"
    return kind, f"same subject, different {kind}: {', '.join(sorted(da))} / {', '.join(sorted(db))}"


def _value_kinds(values: frozenset[str]) -> set[str]:
    out = set()
    for v in values:
        if v.startswith("i:t"):
            out.add("time")
        elif v.startswith("i:"):
            out.add("ident")
        elif v[0] == "m" and v[1:].isdigit():
            out.add("month")
        elif v[0] == "y" and v[1:].isdigit():
            out.add("year")
        elif v[0].isdigit():
            out.add("number")
        else:
            out.add("weekday")
    return out


@lru_cache(maxsize=65536)
def _people(text: str) -> frozenset[str]:
    """The people a text names: names written with a capital inside it, and person nouns."""
    from memvault.store.consolidation.text import words as text_words

    out = set()
    for i, raw in enumerate(text_words(text)):
        folded = fold(raw)
        capital = raw[:1].isupper() and folded not in STOP_WORDS and not any(c.isdigit() for c in raw)
        if lexicon.person(folded) and folded not in _LISTS["owner_words"] or capital and (
                i > 0 or not any(lexicon.get_senses(b) for b in lexicon.bases(folded))):
            out.add(folded)
    return frozenset(out)


def _people_apart(a: str, b: str) -> bool:
    """Whether a person only one text names makes them about two people."""
    from memvault.store.consolidation.paraphrase import same_person

    pa, pb = _people(a), _people(b)
    def one(x: str, y: str) -> bool:
        return x == y or near(x, y) or same_person(x, y) or lexicon.synonyms(x, y)

    return any(not any(one(x, y) for y in pb) for x in pa) or any(not any(one(x, y) for x in pa) for y in pb)


@lru_cache(maxsize=65536)
def _units(text: str) -> frozenset[str]:
    """The unit of each quantity: the currency of an amount, the word right after a number ("km", "houseplants")."""
    from memvault.store.consolidation.slots import value_spans

    out = set()
    for start, end, kind, _ in value_spans(text):
        if kind == "amount":
            out.add(text[start:end].strip()[0])
        elif kind == "number":
            m = re.match(r"\s*([^\W\d_]+)", text[end:])
            if m:
                w = fold(m.group(1))
                if w not in STOP_WORDS:
                    out.add(_CURRENCY.get(w, w))
    return frozenset(out)


def _units_apart(a: str, b: str) -> bool:
    """Whether the quantities are counted in units that differ ("16 GB" / "1.3 kg")."""
    from memvault.store.consolidation import spelling

    ua, ub = _units(a), _units(b)
    if not ua or not ub:
        return False
    for x in ua:
        for y in ub:
            if x == y or stem(x) == stem(y) or lexicon.synonyms(x, y):
                return False
            if spelling.spelled_out(spelling.token_of(x), b) or spelling.spelled_out(spelling.token_of(y), a):
                return False
    return True




def values_apart(older: str, newer: str) -> bool:
    """Whether two texts state values that differ, however written, counted
    in one unit, and not only weekdays unless said to be weekly, nor a
    weekday routine against a weekend one."""
    from memvault.store.consolidation.text import features, value_reading

    va, vb = value_reading(older), value_reading(newer)
    if va == vb or _units_apart(older, newer):
        return False
    return not two_routines(_value_kinds(va - vb) | _value_kinds(vb - va) <= {"weekday"},
                            features(older), features(newer))


def two_routines(only_weekdays: bool, fa: "Features", fb: "Features") -> bool:
    """Whether two claims whose values differ describe two routines, not one
    changed: ``only_weekdays`` apart while neither says it is weekly ("does
    yoga on Tuesdays" / "... on Saturdays": two habits unless once a week), or
    one on weekdays and the other at weekends."""
    if only_weekdays and not ({"week", "weekli"} & (fa.stems | fb.stems)):
        return True
    parts = [{"weekday", "weekend"} & {w.removesuffix("s") for w in f.folded} for f in (fa, fb)]
    return bool(parts[0] and parts[1] and parts[0] != parts[1])
