"""Snippets from a bounded window of a trace's text, computed in Python.

FTS5's ``snippet()`` and ``highlight()`` walk every instance of every
phrase in the whole document to score candidate windows: a word with 30,000
hits in one note made one search take 6 s, and a 1.4 MB memory made every
search for its words take minutes. Here the cost is bounded by constants,
whatever the note's size or number of hits:

1. the query's terms go through the index's own tokenizer (porter over
   unicode61, diacritics folded), so a snippet marks exactly the stems FTS5
   matched ("deploying" marks "deploys");
2. where each term first occurs (up to :data:`OCCURRENCES` times) is found
   by a plain substring search in the first :data:`SCAN_CHARS` characters,
   lower-cased: C speed, no tokenizing;
3. the window of :data:`WINDOW_CHARS` around the place where most distinct
   terms meet is tokenized, and the run of :data:`SNIPPET_TOKENS` tokens
   holding the most distinct terms (the earliest of equals) is quoted, its
   terms marked.

A term whose written form differs from every stem-sharing spelling in the
text (a diacritic the query lacks) is still marked inside the window, but
cannot move the window to it: the window then falls back to the text's
opening.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

import apsw

#: Tokens a snippet shows (FTS5's snippet() was given the same).
SNIPPET_TOKENS = 16
MARK_START, MARK_END = "**", "**"
ELLIPSIS = "…"
#: Characters of a trace searched for its terms: a note longer than this is
#: quoted from its first SCAN_CHARS (about 1 ms of substring search).
SCAN_CHARS = 1 << 20
#: Characters around the chosen place that are tokenized.
WINDOW_CHARS = 4096
#: Places per term considered when choosing where the terms meet.
OCCURRENCES = 16
#: Words starting with a term's key checked for being the term, at most.
TRIES = 256
#: The tokenizer of ``traces_fts`` (index migration 1).
TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])

# A raw FTS5 query's operators and column filters are no terms to mark.
_RAW_NOISE = re.compile(r"\b(?:AND|OR|NOT|NEAR)\b|\{[^}]*\}\s*:|\b\w+\s*:|[()^+]")
_RAW_TERM = re.compile(r'"((?:[^"]|"")*)"(\*?)|([^\s"]+)')


@dataclass(frozen=True)
class Term:
    """One query term: its stem as the index holds it, a prefix term (``retry*``),
    and the lower-case text to look for first (the typed word cut to what it
    shares with its stem: "deploying" looks for "deplo")."""

    stem: str
    prefix: bool
    key: str

    def matches(self, token: str) -> bool:
        """Whether an indexed token is this term."""
        return token.startswith(self.stem) if self.prefix else token == self.stem


def _tokenizer(con: apsw.Connection) -> apsw.FTS5Tokenizer:
    name, args = TOKENIZER
    return con.fts5_tokenizer(name, args)


def _tokens(tok: apsw.FTS5Tokenizer, text: str, query: bool = False) -> list[tuple[int, int, str]]:
    """(byte start, byte end, token) of ``text`` as FTS5 tokenizes it."""
    flag = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT
    # Offsets included (the default): each entry is (start, end, token, *colocated).
    return [(int(t[0]), int(t[1]), str(t[2])) for t in tok(text.encode("utf-8"), flag, None) if len(t) >= 3]


def _common_prefix(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return a[:n]


def query_terms(con: apsw.Connection, match: str) -> list[Term]:
    """The distinct terms of an FTS5 expression (a quoted natural query or a
    raw one): operators, column filters and parentheses left out."""
    tok = _tokenizer(con)
    out: dict[tuple[str, bool], Term] = {}
    for m in _RAW_TERM.finditer(_RAW_NOISE.sub(" ", match)):
        text = m.group(1).replace('""', '"') if m.group(1) is not None else m.group(3).rstrip("*")
        prefix = bool(m.group(2)) or (m.group(3) or "").endswith("*")
        raw = text.encode("utf-8")
        for b0, b1, stem in _tokens(tok, text, query=True):
            word = raw[b0:b1].decode("utf-8", "replace").lower()
            key = _common_prefix(word, stem)
            out.setdefault((stem, prefix), Term(stem, prefix, key if len(key) >= 3 else word))
    return list(out.values())


def _places(con: apsw.Connection, low: str, terms: Sequence[Term]) -> list[list[int]]:
    """For each term, where it occurs in ``low`` (at most OCCURRENCES places):
    a word starting with its key that the tokenizer reads as the term, found
    among at most TRIES such words (so "w17" skips "w1710", boundedly)."""
    tok = _tokenizer(con)
    out: list[list[int]] = []
    for term in terms:
        spots: list[int] = []
        for tries, m in enumerate(re.finditer(r"(?<![^\W_])" + re.escape(term.key) + r"[^\W_]*", low)):
            if len(spots) >= OCCURRENCES or tries >= TRIES:
                break
            if any(term.matches(t[2]) for t in _tokens(tok, m.group(0))):
                spots.append(m.start())
        out.append(spots)
    return out


def _centre(places: list[list[int]]) -> int | None:
    """The place where most distinct terms occur within half a window of
    each other (the earliest of equals); None when no term occurs."""
    best, best_n = None, 0
    half = WINDOW_CHARS // 2
    for spots in places:
        for at in spots:
            n = sum(1 for other in places if other and _near(other, at, half))
            if n > best_n or (n == best_n and best is not None and at < best):
                best, best_n = at, n
    return best


def _near(spots: list[int], at: int, dist: int) -> bool:
    i = bisect.bisect_left(spots, at - dist)
    return i < len(spots) and spots[i] <= at + dist


def snippet(con: apsw.Connection, terms: Sequence[Term], text: str, tokens: int = SNIPPET_TOKENS) -> str | None:
    """``tokens`` tokens of ``text`` around where ``terms`` meet, each term
    marked, ``…`` where the text goes on; None when no term occurs in the
    scanned part of the text."""
    head = text[:SCAN_CHARS]
    centre = _centre(_places(con, head.lower(), terms)) if terms else None
    if centre is None:
        return None
    start = max(0, centre - WINDOW_CHARS // 2)
    stop = min(len(text), start + WINDOW_CHARS)
    window = text[start:stop]
    raw = window.encode("utf-8")
    toks = _tokens(_tokenizer(con), window)
    hit = [next((n for n, t in enumerate(terms) if t.matches(tok[2])), -1) for tok in toks]
    if not toks or max(hit) < 0:
        return None
    first = _best_run(hit, tokens)
    last = min(len(toks), first + tokens)
    # The text before the first token (and after the last) belongs to the
    # snippet when nothing precedes (follows) it: "- " or a closing ".".
    a = 0 if start == 0 and first == 0 else toks[first][0]
    b = len(raw) if stop == len(text) and last == len(toks) else toks[last - 1][1]
    parts: list[str] = []
    pos = a
    for (b0, b1, _), n in zip(toks[first:last], hit[first:last]):
        parts.append(raw[pos:b0].decode("utf-8", "replace"))
        word = raw[b0:b1].decode("utf-8", "replace")
        parts.append(f"{MARK_START}{word}{MARK_END}" if n >= 0 else word)
        pos = b1
    parts.append(raw[pos:b].decode("utf-8", "replace"))
    body = " ".join("".join(parts).split())
    return (ELLIPSIS if a > 0 or start > 0 else "") + body + (ELLIPSIS if b < len(raw) or stop < len(text) else "")


def _best_run(hit: list[int], width: int) -> int:
    """The first index of the run of ``width`` tokens holding the most distinct
    terms (``hit[i]`` is the term token ``i`` is, or -1), earliest of equals;
    a run is begun at a term when it can be, so the snippet opens on it."""
    counts: dict[int, int] = {}
    best, best_n = 0, -1
    for i, n in enumerate(hit):
        if n >= 0:
            counts[n] = counts.get(n, 0) + 1
        out = i - width
        if out >= 0 and hit[out] >= 0:
            counts[hit[out]] -= 1
            if not counts[hit[out]]:
                del counts[hit[out]]
        if i >= min(width, len(hit)) - 1 and len(counts) > best_n:
            best, best_n = max(0, i - width + 1), len(counts)
    # Start two tokens before the run's first term, so it reads in context
    # (but show a full run where the text ends).
    first_term = next((i for i in range(best, min(len(hit), best + width)) if hit[i] >= 0), best)
    return max(best, min(first_term - 2, len(hit) - width))


def opening(text: str, words: int = SNIPPET_TOKENS) -> str:
    """The first words of a text (a snippet for a trace no term of the query is in)."""
    parts = text[: words * 40].split()
    return " ".join(parts[:words]) + (" " + ELLIPSIS if len(parts) > words else "")
