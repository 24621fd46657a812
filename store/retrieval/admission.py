"""What a recall block lets in by default: what was said and remembered,
notes that beat it, identity that answers.

``context`` (and the prompt hook) recall by default (``what = "auto"``) the
memories and facts, and the turns of ingested conversations, ranked together
by one score (:func:`~memvault.store.retrieval.rank.rank`); an ordinary note
joins only when it scores above every one of them
(:func:`notes_that_beat`), so a block is not padded with notes that merely
share a word, and a vault of notes alone still gets its best passages.

Identity memories and facts (who the person is) join a block only when they
are themselves relevant (ranked among the candidates like any memory), when
they are pinned (front-matter ``pinned: true``), or when the message asks
about the person themself (:func:`asks_about_self`): "who am I?" names the
person and nothing else. An unrelated message gets no identity lines, and
"who is my manager?" gets the memory that answers, by its score, not every
identity line before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from memvault.store.retrieval.keyword import STOPWORDS, query_words

#: The value of ``what`` that recalls memories, facts and turns, and notes that beat them.
AUTO = "auto"
#: The first person singular: the words by which a message speaks of the person who writes it.
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})


def notes_that_beat(cands: Sequence[Any], limit: int) -> list[Any]:
    """``cands`` (ranked, best first) without the ordinary notes that score
    below the best memory, fact or turn among them (all notes stay when
    there is none), at most ``limit``."""
    def score(c: Any) -> float:
        return float(c.score or c.bm25 or 0.0)

    best = max((score(c) for c in cands if c.kind != "note"), default=None)
    kept = [c for c in cands if c.kind != "note" or best is None or score(c) > best]
    return kept[:limit]


def asks_about_self(message: str) -> bool:
    """Whether ``message`` asks about the person who writes it and nothing
    else: it speaks in the first person and, first person and stop words
    aside, has no word left ("who am I?", "me?")."""
    words = [w.lower() for w in query_words(message)]
    return bool(FIRST_PERSON.intersection(words)) and all(w in FIRST_PERSON or w in STOPWORDS for w in words)


def pinned(con: apsw.Connection, items: Sequence[Any]) -> list[Any]:
    """Those of ``items`` (each with an ``id``) whose front-matter says ``pinned: true``, in order."""
    if not items:
        return []
    marks = ",".join("?" * len(items))
    ids = {r[0] for r in con.execute(
        f"SELECT id FROM traces WHERE id IN ({marks}) AND json_valid(metadata) "
        "AND json_extract(metadata, '$.frontmatter.pinned') = 1", [i.id for i in items])}
    return [i for i in items if i.id in ids]
