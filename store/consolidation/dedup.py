"""Write-time deduplication: is a new memory already known?

:func:`find_duplicate` answers for ``add`` (and everything that adds through
the store: MCP ``remember``, import, ingest), cheapest test first:

1. the same text up to spaces and case (the index's content key, one lookup);
2. the same normalised text (punctuation too) as a live memory of the same
   type and scope (one indexed query over that type and scope);
3. with vectors only: a live memory of the same type and scope that the
   duplicate rule (:func:`.rules.duplicate`) accepts: the same numbers,
   dates, polarity and names, and a cosine similarity at least what the
   words that differ call for (:func:`.paraphrase.judge`: from
   ``consolidate.duplicate_similarity`` - 0.20 when every differing word is
   explained, to + 0.05 for one slot refilled or a heavy rewrite).

Step 3 needs the new text's vector: the embedding cache is asked first (the
same text embedded before costs nothing); otherwise the model is loaded,
which happens only when the store has vectors of the configured model at
all, and the new vector is kept in the cache: it is the vector of the new
memory's one chunk, so a second ``add`` right after (no embedding pass in
between, no daemon) compares with it. Without vectors the rule is text alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from memvault.store.consolidation import paraphrase, rules
from memvault.store.consolidation.text import features, normalise
from memvault.store.index.classify import content_key
from memvault.store.memories import rows as mem

if TYPE_CHECKING:
    import numpy as np

    from memvault.store.memory_store import MemoryStore


@dataclass(frozen=True)
class Duplicate:
    """The live memory a new one duplicates, and why."""

    id: str
    reason: str


def _memo(tid: str, type_: str, scope: str, text: str) -> rules.Memo:
    # Creation time only separates episodes; a new memory is made now.
    return rules.Memo(tid, type_, scope, text, datetime.now(timezone.utc), features(text))


def find_duplicate(store: "MemoryStore", type_: str, scope: str, content: str) -> Duplicate | None:
    """The live memory of ``type_`` and ``scope`` that ``content`` duplicates, if any."""
    con = store.con
    exact = mem.find_by_content_key(con, content_key(type_, scope, content))
    if exact is not None:
        return Duplicate(exact.id, "same text")
    rows = con.execute(
        "SELECT id, content FROM traces WHERE kind = 'memory' AND status = 'active' AND type = ? AND scope = ? "
        "ORDER BY created, id",
        (type_, scope),
    ).fetchall()
    norm = normalise(content)
    for tid, text in rows:
        if normalise(text) == norm:
            return Duplicate(tid, "same normalised text")
    return _similar(store, type_, scope, content, rows)


def _similar(store: "MemoryStore", type_: str, scope: str, content: str,
             rows: list[tuple[str, str]]) -> Duplicate | None:
    """Step 3 (module docstring)."""
    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.model import resolve_model

    spec = resolve_model(store.settings.embedding.model)
    if spec is None:
        return None
    cache = vec.open_cache(store.data_dir, create=False)
    if cache is None:
        return None
    try:
        ids, matrix = _block_vectors(store, cache, spec.key, type_, scope, rows)
        if not ids and not vec.has_vectors(cache, spec.key):
            return None  # a store without vectors: text alone, and no model loaded
        query = _vector_of(store, cache, spec, content)
    finally:
        cache.close()
    if query is None or not ids:
        return None
    import numpy as np

    threshold = store.settings.consolidate.duplicate_similarity
    texts = dict(rows)
    sims = np.round((matrix @ query).astype(np.float64), 6)
    # The lowest similarity the rule can accept (every differing word explained).
    floor = threshold - paraphrase.FLOOR
    candidates = sorted(
        ((float(sims[i]), tid) for i in np.nonzero(sims >= floor)[0].tolist() if (tid := ids[i]) in texts),
        key=lambda t: (-t[0], t[1]),
    )
    new = _memo("new", type_, scope, content)
    book = rules.NameBook.of([new.f, *(features(texts[tid]) for _, tid in candidates)])
    for sim, tid in candidates:
        why = rules.duplicate(_memo(tid, type_, scope, texts[tid]), new, sim, threshold, book)
        if why is not None:
            return Duplicate(tid, why)
    return None


def _block_vectors(store: "MemoryStore", cache: object, model: str, type_: str, scope: str,
                   rows: list[tuple[str, str]]) -> "tuple[list[str], np.ndarray]":
    """Ids and unit vectors (rows) of the live memories of one type and scope
    that are one chunk long (the short ones a duplicate can be). A memory not
    chunked yet (added since the last embedding pass) is looked up by the
    hash of its text, which is what its one chunk will be."""
    import numpy as np

    from memvault.store.embedding.model import text_hash
    from memvault.store.embedding.vectors import vectors_of

    con = store.con
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
    blobs = vectors_of(cache, model, [h for tid, h in hashes.items() if counts[tid] == 1])  # type: ignore[arg-type]
    ids = sorted(tid for tid, h in hashes.items() if counts[tid] == 1 and h in blobs)
    if not ids:
        return [], np.zeros((0, 0), dtype=np.float32)
    dims = {len(blobs[hashes[tid]]) for tid in ids}
    if len(dims) != 1:  # vectors of two shapes (a changed model): keep the common one
        size = max(dims, key=lambda d: sum(1 for tid in ids if len(blobs[hashes[tid]]) == d))
        ids = [tid for tid in ids if len(blobs[hashes[tid]]) == size]
    matrix = np.frombuffer(b"".join(blobs[hashes[tid]] for tid in ids), dtype=np.float16)
    matrix = matrix.reshape(len(ids), -1).astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return ids, matrix / norms


def _embedded_text(content: str) -> str:
    """The text a one-chunk memory's vector is of (:func:`~..embedding.chunk.chunk_text`
    for a memory; its content itself when no text is left once markup is out)."""
    from memvault.store.embedding.chunk import chunk_text

    return chunk_text("memory", content, content, 0, len(content), "")


def _vector_of(store: "MemoryStore", cache: object, spec: object, content: str) -> "np.ndarray | None":
    """The new text's unit vector: from the cache when that text was embedded
    before, else from the model (None when it cannot be loaded)."""
    import numpy as np

    from memvault.store import location
    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.model import ModelUnavailable, load_embedder, text_hash

    text = _embedded_text(content)
    stored = vec.vectors_of(cache, spec.key, [text_hash(text)])  # type: ignore[arg-type, attr-defined]
    if stored:
        v = np.frombuffer(next(iter(stored.values())), dtype=np.float16).astype(np.float64)
    else:
        try:
            embedder = load_embedder(spec, location.data_home())  # type: ignore[arg-type]
        except ModelUnavailable:
            return None
        # As the cache holds it (float16), so a write and a consolidation agree.
        v16 = embedder.embed([text])[0].astype(np.float16)
        # Kept in the cache under the text's hash, which is the hash of the new
        # memory's one chunk: the next ``add`` compares with it before any
        # embedding pass has run, and that pass finds it done.
        vec.put_vectors(cache, spec.key, [(text_hash(text), v16.tobytes())])  # type: ignore[arg-type, attr-defined]
        v = v16.astype(np.float64)
    n = float(np.linalg.norm(v))
    return (v / n).astype(np.float32) if n > 0 else None
