"""Which two words WordNet calls synonyms or opposites.

The bundled MiniLM rates "dislikes sparkling water" / "Doesn't like fizzy
water" no closer than a sentence with one slot refilled ("Ana lives in
Benfica" / "Ana works in Benfica"), so the duplicate rule needs to know that
"sparkling" and "fizzy" say one thing. The knowledge comes from Princeton
WordNet 3.0, cut down to a table of plain words (``lexicon/wordnet.tsv.gz``,
built by ``bench/lexicon_build.py``; licence in ``lexicon/LICENSE-WordNet``).

Two words are **synonyms** (:func:`synonyms`) when, among each word's most
frequent senses, one sense of one word holds a word that a sense of the
other holds, or its head when that sense is an adjective satellite ("fizzy"
is a satellite of "effervescent", and "sparkling, effervescent" is a sense
of "sparkling"), and WordNet does not call them antonyms. Words are looked
up as written and under WordNet's own inflection rules ("cycles": cycle,
"rode": ride).

Two words are **alternatives of one kind** (:func:`cohyponyms`) when a kept
sense of each sits under one hypernym ("tea" / "coffee": beverage), or both
are satellites of one adjective head ("green" / "orange": chromatic), and
they are not synonyms: swapped in one slot they state another value.

The table loads on the first question (0.1 s) and stays in memory (about 9 MB).
"""

from __future__ import annotations

import bisect
import gzip
import logging
import re
import threading
import zlib
from array import array
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).with_name("lexicon") / "wordnet.tsv.gz"

log = logging.getLogger("memvault.consolidate")

#: WordNet's detachment rules (morphy): an ending and what replaces it.
_ENDINGS = (
    ("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
    ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", ""),
    ("er", ""), ("est", ""), ("er", "e"), ("est", "e"),
)


class _Table:
    """The table as one sorted block of lines, searched by halving: about
    9 MB held for its 238k lines, where dictionaries took 43 MB for 178k."""

    def __init__(self, blob: bytes) -> None:
        self.blob = blob if not blob or blob.endswith(b"\n") else blob + b"\n"
        self.ends = array("I", (m.start() for m in re.finditer(b"\n", self.blob)))
        self.starts = array("I", [0])
        self.starts.extend(e + 1 for e in self.ends[:-1])

    def _line(self, i: int) -> bytes:
        return self.blob[self.starts[i] : self.ends[i]]

    def get(self, kind: str, key: str) -> tuple[str, ...]:
        """The values of the ``kind`` line for ``key`` (empty when there is none)."""
        prefix = f"{kind}\t{key}\t".encode()
        i = bisect.bisect_left(range(len(self.ends)), prefix, key=self._line)
        if i < len(self.ends) and self._line(i).startswith(prefix):
            return tuple(self._line(i)[len(prefix):].decode("ascii").split(" "))
        return ()


_lock = threading.Lock()
_loaded: _Table | None = None


def _table() -> _Table:
    global _loaded
    with _lock:
        if _loaded is None:
            try:
                _loaded = _Table(gzip.decompress(TABLE.read_bytes()))
            except (OSError, EOFError, zlib.error) as exc:  # a broken install: the rules work without it
                log.warning("cannot read the WordNet table %s (%s); duplicates are judged without it", TABLE, exc)
                _loaded = _Table(b"")
        return _loaded


def use(blob: bytes | None) -> None:
    """Answer from another table (its uncompressed text; None: the bundled
    one again). For benchmarks and tests that compare tables."""
    global _loaded
    with _lock:
        _loaded = None if blob is None else _Table(blob)
    for cached in (bases, get_senses, _words, _antonyms, _parents, _grandparents, person, _parent_words,
                   ancestor_words):
        cached.cache_clear()


@lru_cache(maxsize=65536)
def bases(word: str) -> tuple[str, ...]:
    """The WordNet words a folded word may be an inflection of (itself included)."""
    t = _table()
    found = dict.fromkeys(w for w in (word, *t.get("X", word)) if get_senses(w))
    for ending, replacement in _ENDINGS:
        if word.endswith(ending) and len(word) > len(ending) + 1:
            base = word[: len(word) - len(ending)] + replacement
            if get_senses(base):
                found[base] = None
    return tuple(found)


@lru_cache(maxsize=65536)
def get_senses(word: str) -> tuple[str, ...]:
    """The synsets kept for a WordNet word (empty: not a word of the table)."""
    return _table().get("S", word)


@lru_cache(maxsize=65536)
def _words(word: str) -> tuple[frozenset[str], frozenset[str]]:
    """The words of ``word``'s senses, and those plus their satellites' heads."""
    t = _table()
    own: set[str] = set()
    wide: set[str] = set()
    for base in bases(word):
        for sid in get_senses(base):
            own.update(t.get("M", sid))
        for head in t.get("H", base):
            wide.update(t.get("M", head))
    return frozenset(own), frozenset(own | wide)


def antonyms(a: str, b: str) -> bool:
    """Whether WordNet lists two folded words as opposites in any sense ("well" / "badly")."""
    ba, bb = bases(a), bases(b)
    return any(y in _antonyms(x) or x in _antonyms(y) for x in ba for y in bb)


@lru_cache(maxsize=65536)
def _antonyms(word: str) -> frozenset[str]:
    return frozenset(_table().get("A", word))


@lru_cache(maxsize=65536)
def _parents(word: str) -> frozenset[str]:
    """The hypernyms of ``word``'s kept senses, and the heads of its adjective satellites."""
    t = _table()
    out: set[str] = set()
    for base in bases(word):
        for sid in get_senses(base):
            out.update(t.get("P", sid))
        out.update(t.get("H", base))
    return frozenset(out)


@lru_cache(maxsize=65536)
def person(word: str) -> bool:
    """Whether the most frequent noun sense of a folded word (or of a base it
    inflects) is a kind of person ("husband", "boss", "brother", "grandmother"): the
    table's ``N`` lines, worked out from all of WordNet's hypernyms when the
    table was built (``bench/lexicon_build.py``)."""
    t = _table()
    return any(t.get("N", base) for base in bases(word))


def kind_of(a: str, b: str) -> bool:
    """Whether a kept sense of folded word ``a`` has a hypernym that ``b`` is
    a word of ("dad": father)."""
    return b in _parent_words(a)


@lru_cache(maxsize=65536)
def _parent_words(word: str) -> frozenset[str]:
    """The words of the hypernyms of ``word``'s kept senses."""
    t = _table()
    return frozenset(w for parent in _parents(word) for w in t.get("M", parent))


def cohyponyms(a: str, b: str, depth: int = 1) -> bool:
    """Whether two folded words are alternatives of one kind: senses under
    one hypernym ("tea" / "coffee"), or adjectives of one head ("green" /
    "orange"), and not synonyms. ``depth`` 2 also takes a shared grandparent
    ("tennis" / "rugby": both field games under "sport")."""
    if a == b:
        return False
    pa, pb = _parents(a), _parents(b)
    if depth > 1:
        pa, pb = pa | _grandparents(a), pb | _grandparents(b)
    if not (pa & pb):
        return False
    return not synonyms(a, b)


@lru_cache(maxsize=65536)
def _grandparents(word: str) -> frozenset[str]:
    """The hypernyms of :func:`_parents`."""
    t = _table()
    return frozenset(g for p in _parents(word) for g in t.get("P", p))


def synonyms(a: str, b: str) -> bool:
    """Whether two folded words say the same thing (module docstring)."""
    if a == b:
        return True
    own_a, wide_a = _words(a)
    own_b, wide_b = _words(b)
    if not (own_a & wide_b or own_b & wide_a):
        return False
    return not antonyms(a, b)


@lru_cache(maxsize=65536)
def ancestor_words(word: str, depth: int = 3) -> frozenset[str]:
    """The words of the hypernyms of ``word``'s kept senses, up to ``depth``
    steps up ("wine": alcohol, beverage, liquid...): what it is a kind of."""
    t = _table()
    frontier = set(_parents(word))
    seen: set[str] = set(frontier)
    for _ in range(depth - 1):
        frontier = {p for sid in frontier for p in t.get("P", sid)} - seen
        seen |= frontier
    return frozenset(w for sid in seen for w in t.get("M", sid))
