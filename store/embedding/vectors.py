"""Chunks in the index, vectors in the embedding cache, and the in-memory matrix.

Two databases take part:

* the index (``index.db``) holds ``chunks`` (what to embed, per trace) and the
  ``embed_queue`` of traces whose text changed (filled by triggers, see
  migration ``m004_vectors``), plus ``vector_state.generation``, bumped on
  every change that makes an in-memory matrix stale;
* the embedding cache (``embeddings.db`` in the same data dir) holds every
  vector ever computed, keyed by (model, sha256 of the embedded text). It is
  the only place vectors live: deleting and rebuilding the index, renaming a
  note or restarting never embeds unchanged text again.

The light half of this module (cache access, chunk upkeep, counts) imports
no numpy; :class:`VectorMatrix` imports it when built.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import apsw

from memvault.store.db.connection import BUSY_TIMEOUT_MS, journal_mode_wal, private_file, write_transaction
from memvault.store.db.records import get_meta, now_iso, set_meta
from memvault.store.db.rows import count, rows

if TYPE_CHECKING:
    import numpy as np

CACHE_FILE = "embeddings.db"
#: Vectors are stored as float16: half the bytes of float32 and a cosine
#: error around 1e-4, far below what separates a hit from a miss.
STORE_DTYPE = "float16"


# -- the embedding cache ---------------------------------------------------------


def _cache_schema(con: apsw.Connection) -> None:
    if count(con, "PRAGMA user_version") >= 1:
        return
    con.execute("BEGIN IMMEDIATE")
    try:
        if count(con, "PRAGMA user_version") < 1:
            con.execute(
                """
                CREATE TABLE vectors (
                    id    INTEGER PRIMARY KEY,
                    model TEXT NOT NULL,
                    hash  BLOB NOT NULL,
                    vec   BLOB NOT NULL,
                    used  TEXT NOT NULL,
                    UNIQUE (model, hash)
                );
                PRAGMA user_version = 1;
                """
            )
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def cache_path(data_dir: Path) -> Path:
    """The embedding cache of the vault whose data dir is ``data_dir``."""
    return data_dir / CACHE_FILE


@overload
def open_cache(data_dir: Path, *, create: Literal[True] = True) -> apsw.Connection: ...


@overload
def open_cache(data_dir: Path, *, create: bool) -> apsw.Connection | None: ...


def open_cache(data_dir: Path, *, create: bool = True) -> apsw.Connection | None:
    """A connection to the embedding cache (owner-only file, WAL); None when
    it does not exist and ``create`` is false."""
    path = cache_path(data_dir)
    if not path.exists():
        if not create:
            return None
        private_file(path)
    con = apsw.Connection(str(path))
    con.set_busy_timeout(BUSY_TIMEOUT_MS)
    journal_mode_wal(con)
    con.execute("PRAGMA synchronous=NORMAL")
    _cache_schema(con)
    return con


def has_vectors(cache: apsw.Connection | None, model: str) -> bool:
    """Whether any vector of ``model`` exists (decides the default search mode)."""
    if cache is None:
        return False
    return cache.execute("SELECT 1 FROM vectors WHERE model = ? LIMIT 1", (model,)).fetchone() is not None


def cached_hashes(cache: apsw.Connection, model: str) -> set[bytes]:
    """The text hashes that already have a vector of ``model``."""
    return {r[0] for r in cache.execute("SELECT hash FROM vectors WHERE model = ?", (model,))}


def put_vectors(cache: apsw.Connection, model: str, items: Sequence[tuple[bytes, bytes]]) -> None:
    """Store (hash, float16 bytes) pairs of ``model``; existing keys are kept."""
    now = now_iso()
    with write_transaction(cache):
        cache.executemany(
            "INSERT OR IGNORE INTO vectors (model, hash, vec, used) VALUES (?, ?, ?, ?)",
            [(model, h, v, now) for h, v in items],
        )


def vectors_of(cache: apsw.Connection, model: str, hashes: Sequence[bytes]) -> dict[bytes, bytes]:
    """The stored vectors (float16 bytes) of ``model`` for those of ``hashes`` that have one."""
    found: dict[bytes, bytes] = {}
    distinct = sorted(set(hashes))
    for i in range(0, len(distinct), 500):
        part = distinct[i : i + 500]
        marks = ",".join("?" * len(part))
        found.update(rows(cache, f"SELECT hash, vec FROM vectors WHERE model = ? AND hash IN ({marks})", (model, *part)))
    return found


# -- a model that cannot be loaded ----------------------------------------------

#: Index meta key recording that the configured model could not be loaded.
UNAVAILABLE_KEY = "embedding_unavailable"


def note_unavailable(con: apsw.Connection, model: str | None, message: str | None) -> None:
    """Remember (or forget, with ``message=None``) that ``model`` cannot be
    loaded here, so later commands can say why search is keyword-only."""
    current = get_meta(con, UNAVAILABLE_KEY)
    value = json.dumps({"model": model, "message": message}) if model and message else None
    if current == value:
        return
    with write_transaction(con):
        if value is None:
            con.execute("DELETE FROM meta WHERE key = ?", (UNAVAILABLE_KEY,))
        else:
            set_meta(con, UNAVAILABLE_KEY, value)


def recorded_unavailable(con: apsw.Connection, model: str) -> str | None:
    """Why ``model`` could not be loaded last time, if a run said so."""
    raw = get_meta(con, UNAVAILABLE_KEY)
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    return data.get("message") if data.get("model") == model else None


# -- chunks in the index -----------------------------------------------------------


def generation(con: apsw.Connection) -> int:
    """The vector generation: changes whenever chunks or their vectors change."""
    row = con.execute("SELECT generation FROM vector_state WHERE id = 1").fetchone()
    return int(row[0]) if row else 0


def bump_generation(con: apsw.Connection) -> None:
    """Tell readers new vectors exist (chunk changes bump it by trigger)."""
    with write_transaction(con):
        con.execute("UPDATE vector_state SET generation = generation + 1 WHERE id = 1")


def queued(con: apsw.Connection, limit: int) -> list[int]:
    """Up to ``limit`` trace rowids waiting to be (re)chunked."""
    return [r[0] for r in con.execute("SELECT trace_rowid FROM embed_queue LIMIT ?", (limit,))]


def queued_of(con: apsw.Connection, rowids: Sequence[int]) -> list[int]:
    """Which of the traces ``rowids`` wait to be (re)chunked."""
    out: list[int] = []
    for i in range(0, len(rowids), 500):
        part = list(rowids[i : i + 500])
        marks = ",".join("?" * len(part))
        out += [r[0] for r in con.execute(f"SELECT trace_rowid FROM embed_queue WHERE trace_rowid IN ({marks})", part)]
    return sorted(out)


def trace_chunks(con: apsw.Connection, rowids: Sequence[int]) -> list[tuple[int, bytes]]:
    """(id, hash) of the chunks of the traces ``rowids``."""
    out: list[tuple[int, bytes]] = []
    for i in range(0, len(rowids), 500):
        part = list(rowids[i : i + 500])
        marks = ",".join("?" * len(part))
        out += [(r[0], r[1]) for r in con.execute(f"SELECT id, hash FROM chunks WHERE trace_rowid IN ({marks})", part)]
    return out


def written_traces(con: apsw.Connection, ids: Sequence[str], paths: Sequence[str]) -> list[int]:
    """The rowids of the traces ``ids`` and of every trace of the notes
    ``paths``: the note's, its turns' (which share its path) and its facts'."""
    found: set[int] = set()
    for i in range(0, len(ids), 500):
        part = list(ids[i : i + 500])
        marks = ",".join("?" * len(part))
        found.update(r[0] for r in con.execute(f"SELECT rowid FROM traces WHERE id IN ({marks})", part))
    for i in range(0, len(paths), 500):
        part = list(paths[i : i + 500])
        marks = ",".join("?" * len(part))
        found.update(r[0] for r in con.execute(
            f"SELECT rowid FROM traces WHERE path IN ({marks}) UNION SELECT t.rowid FROM traces t JOIN facts f "
            f"ON f.trace_id = t.id WHERE f.source_id IN (SELECT id FROM traces WHERE path IN ({marks}))",
            part + part))
    return sorted(found)


def queue_size(con: apsw.Connection) -> int:
    """How many traces wait to be (re)chunked."""
    return count(con, "SELECT count(*) FROM embed_queue")


#: A memory that is a turn of a conversation (a front-matter ``speaker``):
#: chunked and embedded as a turn of a session note is, "Speaker: text"
#: (:func:`~memvault.store.embedding.chunk.chunk_text`), so one turn has one
#: vector whichever way it was written down. Measured 2026-11-26 (turn
#: notes): LoCoMo-dev hybrid R@10 0.662 -> 0.688 and recall block 0.707 ->
#: 0.749 (plain RRF 0.599, packed 0.705); the conversational set's ``context``
#: recall 0.747 / 0.707 -> 0.771 / 0.751 but its hybrid R@10 0.725 / 0.691 ->
#: 0.709 / 0.659 (dev / test): a trade, see docs/benchmarks.md.
_SPEAKER = "CASE WHEN t.kind = 'memory' AND json_valid(t.metadata) THEN json_extract(t.metadata, '$.frontmatter.speaker') END"
_CHUNK_KIND = f"CASE WHEN typeof({_SPEAKER}) = 'text' THEN 'turn' ELSE t.kind END"
_CHUNK_TITLE = f"CASE WHEN typeof({_SPEAKER}) = 'text' THEN {_SPEAKER} ELSE t.title END"


def rechunk(con: apsw.Connection, rowids: Sequence[int]) -> int:
    """Chunk the queued traces ``rowids`` and take them off the queue, in one
    write transaction; a trace whose chunks did not change is left alone (no
    generation bump). Returns the number of traces whose chunks changed."""
    from memvault.store.embedding.chunk import chunk_trace

    if not rowids:
        return 0
    marks = ",".join("?" * len(rowids))
    traces = {
        r[0]: r[1:]
        for r in con.execute(f"SELECT t.rowid, {_CHUNK_KIND}, {_CHUNK_TITLE}, t.content FROM traces t WHERE t.rowid IN ({marks})",
                             list(rowids))
    }
    old: dict[int, list[tuple[Any, ...]]] = {}
    for r in con.execute(
        f"SELECT trace_rowid, seq, start, stop, heading, tokens, hash FROM chunks WHERE trace_rowid IN ({marks}) "
        "ORDER BY trace_rowid, seq",
        list(rowids),
    ):
        old.setdefault(r[0], []).append(tuple(r[1:]))
    planned: dict[int, list[tuple[Any, ...]]] = {}
    for rowid, (kind, title, content) in traces.items():
        planned[rowid] = [(c.seq, c.start, c.stop, c.heading, c.tokens, c.hash) for c in chunk_trace(kind, title, content)]
    changed = 0
    with write_transaction(con):
        for rowid in rowids:
            new = planned.get(rowid)
            if new is not None and new != old.get(rowid, []):
                con.execute("DELETE FROM chunks WHERE trace_rowid = ?", (rowid,))
                con.executemany(
                    "INSERT INTO chunks (trace_rowid, seq, start, stop, heading, tokens, hash) VALUES (?,?,?,?,?,?,?)",
                    [(rowid, *c) for c in new],
                )
                changed += 1
            con.execute("DELETE FROM embed_queue WHERE trace_rowid = ?", (rowid,))
    return changed


@dataclass(frozen=True)
class PendingChunk:
    """A chunk whose text has no vector of the current model yet."""

    id: int
    hash: bytes
    tokens: int


#: Index meta key: the model whose pending chunks ``embed_pending`` holds.
PENDING_MODEL_KEY = "pending_model"


def hashes_with_vectors(cache: apsw.Connection, model: str, hashes: Sequence[bytes]) -> set[bytes]:
    """Which of ``hashes`` have a vector of ``model`` (looked up, not listed)."""
    found: set[bytes] = set()
    for i in range(0, len(hashes), 500):
        part = list(hashes[i : i + 500])
        marks = ",".join("?" * len(part))
        found.update(r[0] for r in cache.execute(
            f"SELECT hash FROM vectors WHERE model = ? AND hash IN ({marks})", (model, *part)))
    return found


def refill_pending(con: apsw.Connection, cache: apsw.Connection, model: str) -> None:
    """Fill ``embed_pending`` from scratch for ``model`` (once per model: a
    new index, a changed ``embedding.model``, an older index)."""
    have = cached_hashes(cache, model)
    missing = [(cid,) for cid, h in con.execute("SELECT id, hash FROM chunks") if h not in have]
    with write_transaction(con):
        con.execute("DELETE FROM embed_pending")
        con.executemany("INSERT INTO embed_pending (chunk_id) VALUES (?)", missing)
        set_meta(con, PENDING_MODEL_KEY, model)


def pending_chunks(con: apsw.Connection, cache: apsw.Connection, model: str) -> list[PendingChunk]:
    """Chunks (one per distinct text) still to embed for ``model``, shortest
    first so each batch pads to a similar length.

    Read from ``embed_pending``, which triggers keep current as chunks come
    and :func:`done_embedding` as vectors are stored: an idle vault costs one
    empty query, not a scan of every chunk. Texts whose vector another
    process (or a cache import) stored meanwhile are dropped here.
    """
    if get_meta(con, PENDING_MODEL_KEY) != model:
        refill_pending(con, cache, model)
    found = rows(con, "SELECT c.id, c.hash, c.tokens FROM embed_pending p JOIN chunks c ON c.id = p.chunk_id")
    if not found:
        return []
    have = hashes_with_vectors(cache, model, list({h for _, h, _ in found}))
    if have:
        done_embedding(con, list(have))
    seen: set[bytes] = set()
    out: list[PendingChunk] = []
    for cid, h, tokens in found:
        if h in have or h in seen:
            continue
        seen.add(h)
        out.append(PendingChunk(cid, h, tokens))
    out.sort(key=lambda p: (p.tokens, p.id))
    return out


def done_embedding(con: apsw.Connection, hashes: Sequence[bytes]) -> None:
    """These texts have vectors now: no chunk holding one of them is pending."""
    with write_transaction(con):
        for i in range(0, len(hashes), 500):
            part = list(hashes[i : i + 500])
            marks = ",".join("?" * len(part))
            con.execute(
                f"DELETE FROM embed_pending WHERE chunk_id IN (SELECT id FROM chunks WHERE hash IN ({marks}))", part
            )


def chunk_texts(con: apsw.Connection, ids: Sequence[int]) -> dict[int, tuple[bytes, str]]:
    """(stored hash, rebuilt text) of chunks ``ids``; a chunk whose trace changed
    since it was cut rebuilds to another text, which the caller detects by hash."""
    from memvault.store.embedding.chunk import chunk_text

    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    out: dict[int, tuple[bytes, str]] = {}
    for cid, h, start, stop, heading, kind, title, content in con.execute(
        f"SELECT c.id, c.hash, c.start, c.stop, c.heading, {_CHUNK_KIND}, {_CHUNK_TITLE}, t.content "
        f"FROM chunks c JOIN traces t ON t.rowid = c.trace_rowid WHERE c.id IN ({marks})",
        list(ids),
    ):
        out[cid] = (h, chunk_text(kind, title, content, start, stop, heading))
    return out


def coverage(con: apsw.Connection, cache: apsw.Connection | None, model: str) -> tuple[int, int]:
    """(chunks with a vector of ``model``, all chunks)."""
    have = cached_hashes(cache, model) if cache is not None else set()
    total = done = 0
    for (h,) in con.execute("SELECT hash FROM chunks"):
        total += 1
        done += h in have
    return done, total


# -- the in-memory matrix -----------------------------------------------------------

#: Up to this many vectors, every similarity is computed exactly (a few ms).
EXACT_BELOW = 20_000
#: What :meth:`VectorMatrix.similarities` gives rows the first pass left out.
NOT_SCORED = -2.0


def rescored(n: int) -> int:
    """How many of ``n`` rows the binary first pass hands to exact scoring:
    a fixed share, so recall of the true best stays level as the vault grows
    (measured in bench_retrieval: recall@10 against exact search)."""
    return min(n, max(2_000, n // 40))



class VectorMatrix:
    """Every chunk vector of one model, as a unit-row float32 matrix.

    ``trace_rowids[i]`` and ``chunk_ids[i]`` name row ``i``. Built from the two
    databases at one :func:`generation`; :meth:`stale` tells when to rebuild.
    """

    def __init__(self, model: str, gen: int, chunk_ids: "np.ndarray", trace_rowids: "np.ndarray", matrix: "np.ndarray"):
        self.model = model
        self.generation = gen
        self.chunk_ids = chunk_ids
        self.trace_rowids = trace_rowids
        self.matrix = matrix
        self._row_of_chunk: dict[int, int] | None = None
        self._rows_of_trace: dict[int, "np.ndarray"] | None = None
        self._codes: "tuple[np.ndarray, np.ndarray] | None" = None

    @classmethod
    def load(cls, con: apsw.Connection, cache: apsw.Connection | None, model: str) -> "VectorMatrix":
        """Read the matrix of ``model`` for the chunks now in the index."""
        import numpy as np

        gen = generation(con)
        vecs: dict[bytes, bytes] = {}
        if cache is not None:
            vecs = dict(rows(cache, "SELECT hash, vec FROM vectors WHERE model = ?", (model,)))
        ids: list[int] = []
        rowids: list[int] = []
        blobs: list[bytes] = []
        for cid, trace_rowid, h in con.execute("SELECT id, trace_rowid, hash FROM chunks ORDER BY id"):
            v = vecs.get(h)
            if v is not None:
                ids.append(cid)
                rowids.append(trace_rowid)
                blobs.append(v)
        if blobs:
            dim = len(blobs[0]) // 2
            blobs = [b for b in blobs if len(b) == dim * 2] if any(len(b) != dim * 2 for b in blobs) else blobs
            matrix = np.frombuffer(b"".join(blobs), dtype=np.float16).reshape(len(blobs), dim).astype(np.float32)
        else:
            matrix = np.zeros((0, 0), dtype=np.float32)
        return cls(model, gen, np.asarray(ids, dtype=np.int64), np.asarray(rowids, dtype=np.int64), matrix)

    def __len__(self) -> int:
        return int(self.matrix.shape[0])

    def stale(self, con: apsw.Connection) -> bool:
        """Whether the index has changed since this matrix was read."""
        return generation(con) != self.generation

    def row_of_chunk(self, chunk_id: int) -> int | None:
        """The matrix row of a chunk, if it has a vector."""
        if self._row_of_chunk is None:
            self._row_of_chunk = {int(c): i for i, c in enumerate(self.chunk_ids)}
        return self._row_of_chunk.get(chunk_id)

    def rows_of_trace(self, trace_rowid: int) -> "np.ndarray | None":
        """The matrix rows of one trace's chunks."""
        import numpy as np

        if self._rows_of_trace is None:
            order = np.argsort(self.trace_rowids, kind="stable")
            keys, starts = np.unique(self.trace_rowids[order], return_index=True)
            ends = np.append(starts[1:], len(order))
            self._rows_of_trace = {int(k): order[a:b] for k, a, b in zip(keys, starts, ends)}
        return self._rows_of_trace.get(trace_rowid)

    def similarities(self, query: "np.ndarray") -> "np.ndarray":
        """Cosine similarity of the rows to a unit query vector.

        Up to :data:`EXACT_BELOW` rows every value is exact. Above, a first
        pass ranks every row by the Hamming distance of sign bits (of the
        centred vectors: 48 bytes a row, a few ms for 100,000 rows where the
        float matrix takes 15), and only the :func:`rescored` best are
        scored exactly; every other row gets :data:`NOT_SCORED`, below any
        cosine. :meth:`exact` scores given rows when a caller needs them.
        """
        import numpy as np

        n = len(self)
        if n == 0 or query.shape[0] != self.matrix.shape[1]:
            return np.zeros(n, dtype=np.float32)
        if n < EXACT_BELOW:
            scores: np.ndarray = self.matrix @ query
            return scores
        codes, centre = self._binary()
        qbits = np.zeros(codes.shape[1] * 64, dtype=bool)
        qbits[: len(centre)] = (query - centre) > 0
        q = np.packbits(qbits).view(np.uint64)
        bits = np.bitwise_count(codes ^ q)
        distance = bits[:, 0].astype(np.uint16)
        for word in range(1, bits.shape[1]):  # column adds: 2x faster than sum(axis=1) here
            distance += bits[:, word]
        take = rescored(n)
        best = np.argpartition(distance, take - 1)[:take]
        sims = np.full(n, NOT_SCORED, dtype=np.float32)
        sims[best] = self.matrix[best] @ query
        return sims

    def exact(self, rows: "np.ndarray", query: "np.ndarray") -> "np.ndarray":
        """Exact cosine similarity of ``rows`` to a unit query vector."""
        sims: np.ndarray = self.matrix[rows] @ query
        return sims

    def _binary(self) -> "tuple[np.ndarray, np.ndarray]":
        """Sign bits of the centred rows, packed into uint64 words (built once).

        Sentence embeddings share a common direction; centring first makes
        each bit split the rows about evenly, which is what makes Hamming
        distance track cosine.
        """
        import numpy as np

        if self._codes is None:
            centre = self.matrix.mean(axis=0)
            dim = self.matrix.shape[1]
            pad = (-dim) % 64  # whole uint64 words per row
            bits = np.zeros((len(self), dim + pad), dtype=bool)
            bits[:, :dim] = (self.matrix - centre) > 0
            self._codes = (np.packbits(bits, axis=1).view(np.uint64), centre)
        return self._codes

    def best_per_trace(self, sims: "np.ndarray", k: int) -> list[tuple[int, float, int]]:
        """The ``k`` traces with the highest chunk similarity, as
        (trace rowid, similarity, chunk id), best first."""
        import numpy as np

        n = len(sims)
        if n == 0 or k <= 0:
            return []
        out: list[tuple[int, float, int]] = []
        seen: set[int] = set()
        take = min(n, max(4 * k, 64))
        while True:
            top = np.argpartition(-sims, take - 1)[:take] if take < n else np.arange(n)
            top = top[np.argsort(-sims[top], kind="stable")]
            out.clear()
            seen.clear()
            for i in top:
                r = int(self.trace_rowids[i])
                if r in seen:
                    continue
                seen.add(r)
                out.append((r, float(sims[i]), int(self.chunk_ids[i])))
                if len(out) >= k:
                    return out
            if take >= n:
                return out
            take = min(n, take * 4)


def encode_vectors(matrix: "np.ndarray") -> list[bytes]:
    """Rows of a float32 matrix as the cache's float16 bytes."""
    import numpy as np

    return [row.tobytes() for row in matrix.astype(np.float16)]


def chunk_rows(con: apsw.Connection, chunk_ids: Iterable[int]) -> dict[int, tuple[int, int, int, str]]:
    """(trace rowid, start, stop, heading) of chunks, by id."""
    ids = list(chunk_ids)
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {
        r[0]: (r[1], r[2], r[3], r[4])
        for r in con.execute(f"SELECT id, trace_rowid, start, stop, heading FROM chunks WHERE id IN ({marks})", ids)
    }


def cache_texts(cache: apsw.Connection, model: str, embedder: Any, texts: Sequence[str]) -> int:
    """Embed those of ``texts`` the cache lacks under ``model`` and keep them
    there (float16, keyed by each text's hash, as every reader expects); how
    many. A write needing vectors (``add``'s neighbours) does this, in its
    own process or in the daemon's (the ``embed`` op). One text at a time, so
    a vector is the same whichever process made it."""
    import numpy as np

    from memvault.store.embedding.model import text_hash

    wanted = {text_hash(t): t for t in texts}
    have = vectors_of(cache, model, list(wanted))
    todo = [(h, t) for h, t in wanted.items() if h not in have]
    if todo:
        put_vectors(cache, model, [(h, np.asarray(embedder.embed([t])[0]).astype(np.float16).tobytes())
                                   for h, t in todo])
    return len(todo)
