"""Contradictions by slot: one frame, one value refilled.

Two claims contradict when they say the same thing about the same subject
and attribute (the *frame*: every content word but one place) and differ in
the value held in that one place (the *slot*), whatever the value is made of:

* a value proper: a clock time ("5:30" / "8:00", "7am" / "9 pm"), a date
  ("14 March" / "4 April"), a year, an amount or a count with its unit
  ("2000 pounds" / "3500 pounds": a four-digit number followed by a unit is a
  quantity, not a year), a plain number;
* a name ("lives in Porto" / "lives in Lisbon", "her manager is Sam" / "...
  Priya"), when the name is not the subject (it does not open the frame:
  "Marta is a nurse" / "Ana is a nurse" are two people);
* a plain word, when WordNet says the two are alternatives of one kind or
  opposites ("dark" / "light", "blue" / "red") and the frame holds one value
  (a copula before the slot, "is blue" / "is red", or a verb of liking:
  "prefers dark mode" / "prefers light mode"): "plays guitar" / "plays piano"
  can both be true, so they are not flagged.

Words that only report a change ("moved", "switched", "now", "since",
"currently") are not part of the frame: "Now takes the 7:40 train" /
"Takes the 8:10 train" is one frame. Polarity is compared elsewhere
(:func:`.rules.contradiction`'s negation branch): here both sides must have
the same. Where any of this is unsure, the rule says nothing.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from memvault.store.consolidation import lexicon, paraphrase, spelling
from memvault.store.consolidation.text import (
    CHANGE_STEMS,
    MONTHS,
    NEGATORS,
    STOP_WORDS,
    TEMPORAL_STEMS,
    WEEKDAYS,
    contracted_negation,
    features,
    fold,
    near,
    stem,
    word_lists,
)

_MONTH = "|".join(sorted((m for m in MONTHS if m != "may"), key=len, reverse=True)) + "|May"
_ORD = r"(?:st|nd|rd|th)?"
_PATTERNS = [
    # 7:40, 7.40pm, 7am, 7 p.m.
    ("time", re.compile(r"\b(\d{1,2})(?:[:.](\d{2}))?\s*([ap])\.?m\b\.?", re.I)),
    ("time", re.compile(r"\b(\d{1,2}):(\d{2})\b()")),
    # 14 March, 14th of March, March 14(th)
    ("date", re.compile(rf"\b(\d{{1,2}}){_ORD}(?:\s+of)?\s+({_MONTH})\b", re.I)),
    ("date", re.compile(rf"\b({_MONTH})\s+(\d{{1,2}}){_ORD}\b(?!\s*(?:[:.]\d|[ap]\.?m\b))", re.I)),
    # £2,000, $35.50, €1.5k
    ("amount", re.compile(r"[£$€¥]\s?(\d[\d,]*(?:\.\d+)?)\s*([km]?)\b", re.I)),
    ("number", re.compile(r"\b(\d[\d,]*(?:\.\d+)?)\b")),
]
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_YEAR = re.compile(r"^(?:19|20)\d\d$")
#: Stems of the verbs of liking (a slot after them holds one value).
_LIKING = word_lists()["liking_verbs"]
_COPULA = word_lists()["copulas"]
#: Stems of verbs whose object a person holds one of at a time ("supports Benfica").
_ONE_VALUE = word_lists()["one_value_verbs"]
_PREPOSITIONS = word_lists()["prepositions"]


@dataclass(frozen=True)
class Tok:
    """One aligned unit of a claim: a content word (its stem) or a value."""

    key: str  # what aligns: the stem, or "<kind>:<canonical value>"
    kind: str  # word | name | time | date | amount | number | year | month | weekday
    raw: str
    after_copula: bool = False
    #: Right after a preposition (articles and possessives between): "lives in Porto", "commutes by bus".
    after_preposition: bool = False


def value_spans(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end, kind, canonical value) of the values in ``text``, left to right, not overlapping."""
    taken: list[tuple[int, int, str, str]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if any(s < m.end() and m.start() < e for s, e, _, _ in taken):
                continue
            taken.append((m.start(), m.end(), kind, _canonical(kind, m)))
    return sorted(taken)


def _canonical(kind: str, m: re.Match[str]) -> str:
    g = m.groups()
    if kind == "time":
        hour, minute, half = int(g[0]), int(g[1] or 0), (g[2] or "").lower()
        if half == "p" and hour < 12:
            hour += 12
        elif half == "a" and hour == 12:
            hour = 0
        return f"{hour:02d}:{minute:02d}"
    if kind == "date":
        day, month = (g[0], g[1]) if g[0].isdigit() else (g[1], g[0])
        return f"{MONTHS[month.lower()]:02d}-{int(day):02d}"
    number = g[0].replace(",", "")
    scale = {"k": 1e3, "m": 1e6}.get((g[1] if kind == "amount" else "").lower(), 1)
    return f"{float(number) * scale:g}"


@lru_cache(maxsize=65536)
def tokens(text: str) -> tuple[Tok, ...]:
    """The claim's content words and values, in order (stop words, negations and
    words of change or time out)."""
    out: list[Tok] = []
    spans = value_spans(text)
    pos = 0
    copula = prep = False
    for start, end, kind, value in [*spans, (len(text), len(text), "", "")]:
        for m in _WORD.finditer(text, pos, start):
            raw = m.group()
            folded = fold(raw)
            if folded in _COPULA:
                copula = True
                continue
            if folded in _PREPOSITIONS:
                prep = True
                continue
            if not folded or folded in NEGATORS or contracted_negation(raw) or folded in STOP_WORDS:
                continue
            s = stem(folded)
            if s in CHANGE_STEMS or s in TEMPORAL_STEMS:
                continue
            tok = _word_token(raw, folded, s, m.start() > 0, copula, prep)
            if out and tok.kind == out[-1].kind == "name" and not (copula or prep):
                # one name of several words ("Dr Lopes", "Parque das Nações"): where its first word stands
                tok = Tok(tok.key, tok.kind, tok.raw, out[-1].after_copula, out[-1].after_preposition)
            out.append(tok)
            copula = prep = False
        if kind:
            if kind == "number" and _YEAR.match(value) and not _unit_follows(text, end):
                kind = "year"
            out.append(Tok(f"{kind}:{value}", kind, text[start:end], copula, prep))
            copula = prep = False
        pos = end
    return tuple(out)


def _word_token(raw: str, folded: str, s: str, inside: bool, copula: bool, prep: bool) -> Tok:
    if folded in MONTHS and (folded != "may" or raw[0].isupper()):
        return Tok(f"month:{MONTHS[folded]}", "month", raw, copula, prep)
    day = folded.removesuffix("s")
    if day in WEEKDAYS:
        return Tok(f"weekday:{day}", "weekday", raw, copula, prep)
    # A capital inside the text, or inside the word ("macOS", "iPhone"): a name.
    kind = "name" if (inside and any(c.isupper() for c in raw)) or any(c.isupper() for c in raw[1:]) else "word"
    return Tok(s, kind, raw, copula, prep)


def _unit_follows(text: str, end: int) -> bool:
    """Whether a content word follows a number directly ("2000 pounds", "2000 steps"): a quantity, not a year."""
    m = _WORD.match(text[end:].lstrip())
    return m is not None and fold(m.group()) not in STOP_WORDS and fold(m.group()).lower() not in MONTHS


_VALUE_KINDS = {"time": "time", "date": "date", "month": "date", "year": "date", "weekday": "date",
                "amount": "amount", "number": "number"}


def contradiction(text_a: str, text_b: str) -> tuple[str, str] | None:
    """(kind, reason) when the two claims hold different values in one slot of
    one frame (module docstring), else None. Polarity is the caller's."""
    if paraphrase.swapped_roles(text_a, text_b):
        return "order", "the same words with the roles swapped"
    ta, tb = tokens(text_a), tokens(text_b)
    update = _update(text_a, text_b, ta, tb)
    if update is not None:
        return update
    ka, kb = Counter(t.key for t in ta), Counter(t.key for t in tb)
    if sum((ka - kb).values()) > 2 or sum((kb - ka).values()) > 2:
        return None  # more apart than one slot of two words (below): said before aligning, which costs
    ops = difflib.SequenceMatcher(None, [t.key for t in ta], [t.key for t in tb], autojunk=False).get_opcodes()
    changed = [op for op in ops if op[0] != "equal"]
    if len(changed) != 1 or changed[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = changed[0]
    ra, rb = ta[i1:i2], tb[j1:j2]
    frame = [t for op in ops if op[0] == "equal" for t in ta[op[1]:op[2]]]
    if not any(t.kind == "word" for t in frame) or len(ra) > 2 or len(rb) > 2:
        return None
    kinds_a = {_VALUE_KINDS.get(t.kind) for t in ra}
    kinds_b = {_VALUE_KINDS.get(t.kind) for t in rb}
    if None not in kinds_a and kinds_a == kinds_b and len(kinds_a) == 1:
        kind = kinds_a.pop() or "number"
        return kind, f"same subject, different {kind}: {_said(ra)} / {_said(rb)}"
    if i1 == 0 or j1 == 0 or ta[i1 - 1].kind == "name":
        return None  # the slot is (or names) the subject: another person or thing, not another value
    if not _one_value(ra[0], rb[0], frame):
        return None  # a direct object can have several values: "speaks French" / "speaks Portuguese"
    if _abbreviated(text_a, text_b, ra, rb):
        return None  # one spells out the other: "NYC" / "New York City"
    if all(t.kind == "name" for t in ra + rb):
        if any(near(fold(x.raw), fold(y.raw)) for x in ra for y in rb):
            return None  # two spellings of one name ("Hibs" / "Hibernian")
        return "value", f"same subject, different value: {_said(ra)} / {_said(rb)}"
    if len(ra) == len(rb) == 1 and ra[0].kind == rb[0].kind == "word":
        x, y = fold(ra[0].raw), fold(rb[0].raw)
        if lexicon.antonyms(x, y) or lexicon.cohyponyms(x, y, depth=2):
            return "value", f"same subject, different value: {ra[0].raw} / {rb[0].raw}"
    return None


def one_value_words(text: str) -> frozenset[str]:
    """The stems of ``text`` that stand where one value goes (:func:`_one_value`):
    after a copula or a preposition, or anywhere in a frame of liking."""
    toks = tokens(text)
    if any(t.key in _LIKING for t in toks):
        return frozenset(t.key for t in toks)
    return frozenset(t.key for t in toks if t.after_copula or t.after_preposition)


def _abbreviated(text_a: str, text_b: str, ra: tuple[Tok, ...], rb: tuple[Tok, ...]) -> bool:
    """Whether a word of one slot is an acronym the other text spells out."""
    short_a = spelling.abbreviations(text_a, text_b)
    short_b = spelling.abbreviations(text_b, text_a)
    return any(fold(t.raw) in short_a for t in ra) or any(fold(t.raw) in short_b for t in rb)


def _update(text_a: str, text_b: str, ta: tuple[Tok, ...], tb: tuple[Tok, ...]) -> tuple[str, str] | None:
    """A change statement that is nothing but its new value ("Moved to Lisbon",
    "Switched to Helix") against a claim holding another value of that kind in
    a frame of its own ("Lives in Porto", "Uses Vim as her editor")."""
    for changed_text, mine, theirs in ((text_a, ta, tb), (text_b, tb, ta)):
        mine = tuple(t for t in mine if _VALUE_KINDS.get(t.kind) != "date")  # when it changed is no value
        if not features(changed_text).changes or len(mine) != 1 or mine[0].kind != "name":
            continue
        names = [t for t in theirs if t.kind == "name"]
        if len(names) == 1 and len(theirs) > 1 and not near(fold(names[0].raw), fold(mine[0].raw)):
            return "value", f"changed: {names[0].raw} / {mine[0].raw}"
    return None


def _one_value(a: Tok, b: Tok, frame: list[Tok]) -> bool:
    """Whether the slot holds one value at a time: after a copula ("is blue"),
    after a preposition ("lives in Porto", "commutes by bus"), or in a frame of
    liking ("prefers dark mode")."""
    return ((a.after_copula and b.after_copula) or (a.after_preposition and b.after_preposition)
            or any(t.key in _LIKING or t.key in _ONE_VALUE for t in frame))


def _said(toks: tuple[Tok, ...]) -> str:
    return " ".join(t.raw for t in toks)
