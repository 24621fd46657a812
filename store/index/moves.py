"""Taking a vanished note and a new one for one note renamed and edited.

The indexer pairs moves by front-matter id, then by identical bytes. A note
renamed *and* edited while memvault was not running matches neither; like
git's rename detection, it is paired when enough of its words are shared.
"""

from __future__ import annotations

import re
from collections import Counter

#: Share of words a vanished note and a new one must have in common to be
#: taken for one note renamed and edited (git's rename threshold is 50%).
MOVE_SIMILARITY = 0.5
#: Bonus of a pair whose file names are equal (moved to another folder).
SAME_NAME_BONUS = 0.2
#: Compare every vanished note with every new one up to this many pairs;
#: beyond that only notes with the same file name are compared.
MOVE_PAIRS_MAX = 10_000

_WORD_RE = re.compile(r"\w+")


def word_counts(text: str) -> Counter[str]:
    """The words of ``text``, lower-cased, with their counts."""
    return Counter(w.lower() for w in _WORD_RE.findall(text))


def overlap(a: Counter[str], b: Counter[str]) -> float:
    """Words in common, as a share of both texts (difflib's quick_ratio on words)."""
    total = sum(a.values()) + sum(b.values())
    return 2 * sum((a & b).values()) / total if total else 0.0


def file_name(path: str) -> str:
    """The lower-cased last component of a vault path."""
    return path.rsplit("/", 1)[-1].lower()


def pair_edited_moves(new: list[tuple[str, str]], old: dict[str, str]) -> list[tuple[int, str]]:
    """Pairs (index into ``new``, old path) of new notes ((path, text)) and
    vanished ones (path -> text) that are one note renamed and edited, best
    pairs first, each note used once."""
    everything = len(new) * len(old) <= MOVE_PAIRS_MAX
    old_words = {p: word_counts(text) for p, text in old.items()}
    scored: list[tuple[float, str, int]] = []
    for i, (path, text) in enumerate(new):
        name = file_name(path)
        words = word_counts(text)
        for p, counts in old_words.items():
            same_name = file_name(p) == name
            if not (everything or same_name):
                continue
            score = overlap(words, counts) + (SAME_NAME_BONUS if same_name else 0.0)
            if score >= MOVE_SIMILARITY:
                scored.append((score, p, i))
    pairs: list[tuple[int, str]] = []
    used_new: set[int] = set()
    used_old: set[str] = set()
    for _, p, i in sorted(scored, key=lambda s: (-s[0], s[1], s[2])):
        if i in used_new or p in used_old:
            continue
        used_new.add(i)
        used_old.add(p)
        pairs.append((i, p))
    return pairs
