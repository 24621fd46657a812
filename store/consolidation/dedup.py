"""Write-time deduplication: is a new memory certainly one already known?

A guess never drops a write. :func:`find_duplicate` refuses a new memory only
when it is the same claim *by construction* as a live memory of the same type
and scope:

1. the same text up to spaces and case (the index's content key, one lookup);
2. the same *claim key* (:func:`claim_key`): case-folded, punctuation as
   spaces, white space collapsed, and each word's number inflection taken off
   ("Likes cats." / "likes cat"), nothing else: tense, word order, negation,
   every word is kept, so two claims that read differently are never one.

Anything merely similar is stored, and :func:`find_similar` says what it
resembles: the live memories of the same type and scope closest to it (cosine
of the stored vectors when the store has vectors of the configured model,
else the share of content words in common), so an agent or a person can
``update`` or ``merge`` it. Merging likely paraphrases is consolidation's job
(:mod:`.rules`, reversible).

The new text's vector comes from the embedding cache when that text was
embedded before; otherwise the model is loaded, which happens only when the
store has vectors of the configured model at all, and the new vector is kept
in the cache: it is the vector of the new memory's one chunk, so a second
``add`` right after (no embedding pass in between, no daemon) compares with
it. Without vectors no model is loaded.
"""

from __future__ import annotations

import math
import operator
import re
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memvault.store.consolidation.text import features, fold, normalise, words
from memvault.store.db.rows import rows as fetch_rows
from memvault.store.index.classify import memory_key
from memvault.store.memories import rows as mem

if TYPE_CHECKING:
    import apsw

    from memvault.store.context import StoreContext
    from memvault.store.embedding.model import ModelSpec

#: Asks a process whose model is loaded (the running daemon) to put the
#: vectors of these texts into the embedding cache; whether it did.
VectorsElsewhere = Callable[[list[str]], bool]

#: How many neighbours an ``add`` reports at most.
SIMILAR_LIMIT = 3
#: At most this many neighbours without a vector yet are embedded by an ``add``.
MISSING_LIMIT = 32
#: Blocks of up to this many vectors are compared without numpy (see :func:`_cosines`).
PLAIN_COSINES = 512
#: Without vectors: the least share of content words in common (Jaccard) to be reported as similar.
SIMILAR_WORDS = 0.5
#: Plural / third-person endings: sibilant + "es" ("watches", "boxes"), consonant + "ies" ("parties").
_ES = re.compile(r"(?:s|x|z|ch|sh)es$")


@dataclass(frozen=True)
class Duplicate:
    """The live memory a new one is certainly the same claim as, and why."""

    id: str
    reason: str


@dataclass(frozen=True)
class Similar:
    """A live memory that resembles a new one (reported, never refused)."""

    id: str
    text: str
    similarity: float
    #: ``cosine`` (stored vectors) or ``words`` (share of content words, without vectors).
    measure: str

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form (``similar_to`` of a write result)."""
        return {"id": self.id, "text": self.text, "similarity": self.similarity, "measure": self.measure}


def _uninflect(word: str) -> str:
    """A folded word without its number inflection (plural nouns, third-person verbs).
    Only the -s endings: "-ed" and "-ing" change tense and aspect, which is a different claim."""
    if len(word) <= 3 or not word.isalpha() or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if _ES.search(word):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word


def claim_key(text: str) -> str:
    """The text as a claim is compared at write time: every word, in order,
    folded and without number inflection (see the module docstring)."""
    return " ".join(_uninflect(w) for w in normalise(" ".join(fold(w) for w in words(text))).split())


def find_duplicate(ctx: "StoreContext", type_: str, scope: str, content: str,
                   rows: list[tuple[str, str]] | None = None) -> Duplicate | None:
    """The live memory of ``type_`` and ``scope`` that ``content`` certainly
    restates, if any (``rows``: that block's :func:`live_block`, when read already)."""
    con = ctx.con
    exact = mem.find_by_content_key(con, memory_key(type_, scope, content))
    if exact is not None:
        return Duplicate(exact.id, "same text")
    key = claim_key(content)
    for tid, text in live_block(ctx, type_, scope) if rows is None else rows:
        if claim_key(text) == key:
            return Duplicate(tid, "same text up to case, punctuation and inflection")
    return None


def live_block(ctx: "StoreContext", type_: str, scope: str) -> list[tuple[str, str]]:
    """Ids and texts of the live memories of one type and scope, oldest first."""
    found = fetch_rows(
        ctx.con,
        "SELECT id, content FROM traces WHERE kind = 'memory' AND status = 'active' AND type = ? AND scope = ? "
        "ORDER BY created, id",
        (type_, scope),
    )
    return [(tid, text) for tid, text in found]


def find_similar(ctx: "StoreContext", type_: str, scope: str, content: str,
                 limit: int = SIMILAR_LIMIT, rows: list[tuple[str, str]] | None = None,
                 vectors_elsewhere: "VectorsElsewhere | None" = None,
                 cosines: dict[str, float] | None = None) -> list[Similar]:
    """The live memories of ``type_`` and ``scope`` that most resemble ``content``,
    closest first (at most ``limit``): what an ``add`` reports as ``similar_to``.
    ``vectors_elsewhere``: who else may embed the texts the cache lacks (see :func:`_fill_cache`).
    ``cosines``, when given, receives the cosine of every memory of the block
    that has a vector (what :mod:`.at_write` weighs a new claim's rivals by)."""
    rows = live_block(ctx, type_, scope) if rows is None else rows
    # Asked even with no neighbour: the new text's vector is then in the cache for the next add.
    found = _by_vectors(ctx, type_, scope, content, rows, vectors_elsewhere, cosines)
    if found is None:
        found = _by_words(content, rows)
    found.sort(key=lambda s: (-s.similarity, s.id))
    return found[:limit]


def _by_words(content: str, rows: list[tuple[str, str]]) -> list[Similar]:
    """Neighbours by the share of content stems in common (no vectors)."""
    mine = features(content).stems
    out: list[Similar] = []
    for tid, text in rows:
        theirs = features(text).stems
        union = mine | theirs
        share = len(mine & theirs) / len(union) if union else 0.0
        if share >= SIMILAR_WORDS:
            out.append(Similar(tid, text, round(share, 3), "words"))
    return out


def _by_vectors(ctx: "StoreContext", type_: str, scope: str, content: str,
                rows: list[tuple[str, str]], vectors_elsewhere: "VectorsElsewhere | None",
                cosines: dict[str, float] | None = None) -> list[Similar] | None:
    """Neighbours by cosine of stored vectors (None: the store has no vectors of the model)."""
    from memvault.store.consolidation import paraphrase
    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.model import resolve_model

    spec = resolve_model(ctx.settings.embedding.model)
    if spec is None:
        return None
    cache = vec.open_cache(ctx.data_dir, create=False)
    if cache is None:
        return None
    try:
        ids, blobs = _block_vectors(ctx, cache, spec.key, type_, scope, rows)
        if not ids and not vec.has_vectors(cache, spec.key):
            return None  # a store without vectors: words alone, and no model loaded
        # The new text's vector, and those of memories added since the last
        # embedding pass when they are few: kept in the cache, where that
        # pass finds them done and the next ``add`` compares with them.
        wanted = [_embedded_text(content)]
        if len(ids) < len(rows) <= len(ids) + MISSING_LIMIT:
            have = set(ids)
            wanted += [_embedded_text(text) for tid, text in rows if tid not in have]
        if _fill_cache(cache, spec, wanted, vectors_elsewhere):
            ids, blobs = _block_vectors(ctx, cache, spec.key, type_, scope, rows)
        query = _query_vector(cache, spec.key, wanted[0])
    finally:
        cache.close()
    if query is None:
        return None
    if not ids:
        return []
    texts = dict(rows)
    # Reported from the lowest similarity the duplicate rule could ever call a paraphrase.
    floor = ctx.settings.consolidate.duplicate_similarity - paraphrase.FLOOR
    sims = _cosines(blobs, query)
    if cosines is not None:
        cosines.update(zip(ids, sims))
    return [Similar(tid, texts[tid], sim, "cosine")
            for tid, sim in zip(ids, sims) if sim >= floor and tid in texts]


def _fill_cache(cache: "apsw.Connection", spec: "ModelSpec", texts: list[str],
                vectors_elsewhere: "VectorsElsewhere | None") -> bool:
    """Put the vectors of those of ``texts`` the cache lacks into it: by the
    process whose model is loaded (the daemon, ``vectors_elsewhere``),
    else by the model loaded here. Whether any was added (False: none
    missing, or no model to be had)."""
    from memvault.store import location
    from memvault.store.embedding.model import ModelUnavailable, load_embedder, text_hash
    from memvault.store.embedding.vectors import cache_texts, vectors_of

    stored = vectors_of(cache, spec.key, [text_hash(t) for t in texts])
    missing = [t for t in texts if text_hash(t) not in stored]
    if not missing:
        return False
    if vectors_elsewhere is not None and vectors_elsewhere(missing):
        return True
    try:
        embedder = load_embedder(spec, location.data_home())
    except ModelUnavailable:
        return False
    return cache_texts(cache, spec.key, embedder, missing) > 0


def _block_vectors(ctx: "StoreContext", cache: "apsw.Connection", model: str, type_: str, scope: str,
                   rows: list[tuple[str, str]]) -> tuple[list[str], list[bytes]]:
    """Ids and stored vectors (float16 bytes, of one size) of the live
    memories of one type and scope that are one chunk long (the short ones a
    duplicate can be). A memory not chunked yet (added since the last
    embedding pass) is looked up by the hash of its text, which is what its
    one chunk will be."""
    from memvault.store.embedding.model import text_hash
    from memvault.store.embedding.vectors import vectors_of

    con = ctx.con
    hashes: dict[str, bytes] = {}
    counts: dict[str, int] = {}
    for tid, h in con.execute(
        "SELECT t.id, c.hash FROM chunks c JOIN traces t ON t.rowid = c.trace_rowid "
        "WHERE t.kind = 'memory' AND t.status = 'active' AND t.type = ? AND t.scope = ?",
        (type_, scope),
    ):
        hashes[tid] = h
        counts[tid] = counts.get(tid, 0) + 1
    for tid, text in rows:
        if tid not in hashes:
            hashes[tid] = text_hash(_embedded_text(text))
            counts[tid] = 1
    blobs = vectors_of(cache, model, [h for tid, h in hashes.items() if counts[tid] == 1])
    ids = sorted(tid for tid, h in hashes.items() if counts[tid] == 1 and h in blobs)
    if not ids:
        return [], []
    dims = {len(blobs[hashes[tid]]) for tid in ids}
    if len(dims) != 1:  # vectors of two shapes (a changed model): keep the common one
        size = max(dims, key=lambda d: sum(1 for tid in ids if len(blobs[hashes[tid]]) == d))
        ids = [tid for tid in ids if len(blobs[hashes[tid]]) == size]
    return ids, [blobs[hashes[tid]] for tid in ids]


def _cosines(blobs: list[bytes], query: bytes) -> list[float]:
    """The cosine of each stored vector with ``query`` (float16 bytes, not
    all zero), rounded to 3 places. A block of a few hundred is done in plain
    Python when numpy is not loaded yet: importing it costs a one-off ``add``
    more than the arithmetic (the figures are the same either way)."""
    plain = "numpy" not in sys.modules and len(blobs) <= PLAIN_COSINES
    if plain and all(len(b) == len(query) for b in blobs):
        q = _floats(query)
        q_norm = _norm(q)
        sims = []
        for blob in blobs:
            v = _floats(blob)
            norm = _norm(v)
            sims.append(round(sum(map(operator.mul, v, q)) / (norm * q_norm), 3) if norm else 0.0)
        return sims
    import numpy as np

    matrix = np.frombuffer(b"".join(blobs), dtype=np.float16).reshape(len(blobs), -1).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    wide = np.frombuffer(query, dtype=np.float16).astype(np.float64)
    unit = (wide / float(np.linalg.norm(wide))).astype(np.float32)
    return [float(x) for x in np.round(((matrix / norms) @ unit).astype(np.float64), 3)]


def _embedded_text(content: str) -> str:
    """The text a one-chunk memory's vector is of (:func:`~..embedding.chunk.chunk_text`
    for a memory; its content itself when no text is left once markup is out)."""
    from memvault.store.embedding.chunk import chunk_text

    return chunk_text("memory", content, content, 0, len(content), "")


def _query_vector(cache: "apsw.Connection", model: str, text: str) -> bytes | None:
    """The vector the cache holds for ``text`` (None: none, or all zero)."""
    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.model import text_hash

    stored = vec.vectors_of(cache, model, [text_hash(text)])
    if not stored:
        return None
    blob = next(iter(stored.values()))
    return blob if _norm(_floats(blob)) > 0 else None


def _floats(blob: bytes) -> tuple[float, ...]:
    """A stored vector's float16 values."""
    return struct.unpack(f"<{len(blob) // 2}e", blob)


def _norm(v: tuple[float, ...]) -> float:
    """The Euclidean length of ``v``."""
    return math.sqrt(sum(map(operator.mul, v, v)))
