"""Embedding the vault: chunk what changed, embed what has no vector yet.

:class:`EmbeddingPipeline` is the one code path, used in the foreground by
``memvault sync`` (after the text index is written, so keyword search is
ready first, see the store's ``embed``) and in the background by the
daemon's embedding service (:mod:`memvault.daemon.embedding_service`), which
runs :meth:`EmbeddingPipeline.run` step by step on the pipeline
the store's ``embedding_loop`` builds (:meth:`EmbeddingPipeline.for_ctx`): the daemon keeps only the timing
(when to look again, when to retry a model that would not load).

Both use their own database connections and short write transactions, so
keyword search (a reader under WAL) is never blocked. Batches are sized by
tokens: hundreds of short facts at once, a few dozen 256-token chunks, so
memory stays bounded whatever the vault holds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from memvault.store import location
from memvault.store.embedding import vectors as vec
from memvault.store.embedding.model import (
    Embedder,
    ModelSpec,
    ModelUnavailable,
    load_embedder,
    resolve_model,
    text_hash,
)

if TYPE_CHECKING:
    from memvault.store.context import StoreContext
    from memvault.store.settings import Settings

log = logging.getLogger("memvault.embedding")

#: Traces chunked per write transaction.
CHUNK_BATCH = 200
#: Most texts in one call to the model, however short.
MAX_BATCH_TEXTS = 256
#: Readers are told about new vectors at most this often while a long
#: embedding run goes on (each notice makes them reload the matrix).
GENERATION_INTERVAL = 2.0
#: Most texts a write embeds before it answers (``add``, ``source add``,
#: ``ingest`` with no daemon to do it): one model batch, about 3 s of a
#: busy 2-core CPU. A write that made more leaves them to ``sync`` (or the
#: daemon) and says so.
EMBED_NOW_LIMIT = MAX_BATCH_TEXTS

Progress = Callable[[int, int], None]


@dataclass
class EmbedReport:
    """What one pipeline run did."""

    chunked: int = 0  # traces whose chunks changed
    embedded: int = 0  # texts sent to the model
    skipped: int = 0  # texts whose trace changed under us (re-queued by trigger)
    pending: int = 0  # texts still without a vector when the run ended
    seconds: float = 0.0
    model: str | None = None
    unavailable: str | None = None  # why the model could not be used, if so
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {k: getattr(self, k) for k in ("chunked", "embedded", "skipped", "pending", "seconds", "model", "unavailable")}


def model_spec(settings: "Settings") -> ModelSpec | None:
    """The embedding model ``settings`` name (None: vectors off)."""
    return resolve_model(settings.embedding.model)


def batches(pending: list[vec.PendingChunk], batch_tokens: int) -> Iterator[list[vec.PendingChunk]]:
    """Consecutive groups of ``pending`` (sorted by length) whose padded size,
    texts x longest text, stays within ``batch_tokens``."""
    batch: list[vec.PendingChunk] = []
    longest = 0
    for p in pending:
        longest_if = max(longest, p.tokens)
        if batch and (longest_if * (len(batch) + 1) > batch_tokens or len(batch) >= MAX_BATCH_TEXTS):
            yield batch
            batch, longest_if = [], p.tokens
        batch.append(p)
        longest = longest_if
    if batch:
        yield batch


class EmbeddingPipeline:
    """Chunks queued traces and embeds pending chunks of one vault."""

    def __init__(
        self,
        index: apsw.Connection,
        data_dir: Path,
        spec: ModelSpec | None,
        *,
        batch_tokens: int = 512,
        embedder: Embedder | None = None,
    ) -> None:
        self.con = index
        self.data_dir = data_dir
        self.spec = spec
        self.batch_tokens = max(256, batch_tokens)
        self._embedder = embedder
        self._cache: apsw.Connection | None = None

    @classmethod
    def for_ctx(cls, ctx: "StoreContext", index: apsw.Connection | None = None, **kw: Any) -> "EmbeddingPipeline":
        """A pipeline over the store of ``ctx`` (on a connection of its own unless given)."""
        con = index if index is not None else ctx.connect()
        return cls(con, ctx.data_dir, model_spec(ctx.settings), batch_tokens=ctx.settings.embedding.batch_tokens, **kw)

    @property
    def cache(self) -> apsw.Connection:
        """The embedding cache connection (opened on first use)."""
        if self._cache is None:
            self._cache = vec.open_cache(self.data_dir)
        return self._cache

    def embedder(self) -> Embedder:
        """The model, loaded once per process; raises :class:`ModelUnavailable`."""
        if self.spec is None:
            raise ModelUnavailable("vectors are turned off (embedding.model = none)")
        if self._embedder is None or self._embedder.spec != self.spec:
            self._embedder = load_embedder(self.spec, location.data_home())
        return self._embedder

    def close(self, *, index_too: bool = False) -> None:
        """Close the cache connection (and the index one when the pipeline owns it)."""
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        if index_too:
            self.con.close()

    # -- steps --------------------------------------------------------------

    def chunk_queued(self, should_stop: Callable[[], bool] = lambda: False) -> int:
        """(Re)chunk every queued trace; returns how many changed.

        With vectors turned off the queue is left alone: chunking costs
        tokenizer time and nothing would ever read the chunks.
        """
        changed = 0
        if self.spec is None:
            return 0
        while not should_stop():
            rowids = vec.queued(self.con, CHUNK_BATCH)
            if not rowids:
                break
            changed += vec.rechunk(self.con, rowids)
        return changed

    def pending(self) -> list[vec.PendingChunk]:
        """Texts without a vector of the configured model."""
        if self.spec is None:
            return []
        return vec.pending_chunks(self.con, self.cache, self.spec.key)

    def embed_pending(
        self,
        progress: Progress | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        pending: list[vec.PendingChunk] | None = None,
    ) -> EmbedReport:
        """Embed every pending text in length-sorted, token-bounded batches."""
        report = EmbedReport(model=self.spec.key if self.spec else None)
        todo = self.pending() if pending is None else pending
        if not todo or self.spec is None:
            return report
        model = self.embedder()  # raises ModelUnavailable before any work
        total, done = len(todo), 0
        last_bump = time.monotonic()
        dirty = False
        for batch in batches(todo, self.batch_tokens):
            if should_stop():
                break
            texts = vec.chunk_texts(self.con, [p.id for p in batch])
            keep: list[tuple[bytes, str]] = []
            for p in batch:
                stored = texts.get(p.id)
                if stored is None or text_hash(stored[1]) != stored[0]:
                    report.skipped += 1  # its trace changed: the trigger queued it again
                    continue
                keep.append(stored)
            if keep:
                matrix = model.embed([t for _, t in keep])
                vec.put_vectors(self.cache, self.spec.key, list(zip([h for h, _ in keep], vec.encode_vectors(matrix))))
                vec.done_embedding(self.con, [h for h, _ in keep])
                report.embedded += len(keep)
                dirty = True
            done += len(batch)
            if progress:
                progress(done, total)
            if dirty and time.monotonic() - last_bump >= GENERATION_INTERVAL:
                vec.bump_generation(self.con)
                last_bump, dirty = time.monotonic(), False
        if dirty:
            vec.bump_generation(self.con)
        report.pending = total - done
        return report

    def embed_traces(
        self, rowids: Sequence[int], *, limit: int | None = None,
        elsewhere: Callable[[list[str]], bool] | None = None,
    ) -> EmbedReport:
        """Chunk and embed the texts of the traces ``rowids`` alone (what a
        write just made), so they are searchable by meaning when the write
        answers; the rest of the queue is left for :meth:`run`.

        More than ``limit`` (default :data:`EMBED_NOW_LIMIT`) texts without a vector are not embedded (the
        report's ``pending`` says how many). ``elsewhere(texts)``: a process
        whose model is loaded (the running daemon) puts their vectors into
        the cache; else the model is loaded here. A model that cannot be
        loaded is reported (``unavailable``), not raised."""
        start = time.perf_counter()
        report = EmbedReport(model=self.spec.key if self.spec else None)
        if self.spec is None or not rowids:
            return report
        queued = vec.queued_of(self.con, rowids)
        if queued:
            report.chunked = vec.rechunk(self.con, queued)
        chunks = vec.trace_chunks(self.con, rowids)
        missing = self._without_vectors(chunks)
        if len(missing) > (EMBED_NOW_LIMIT if limit is None else limit):
            report.pending = len(missing)
        elif missing:
            texts = {h: t for h, t in vec.chunk_texts(self.con, list(missing.values())).values() if text_hash(t) == h}
            try:
                if not (elsewhere is not None and elsewhere(list(texts.values()))):
                    matrix = self.embedder().embed(list(texts.values()))
                    vec.put_vectors(self.cache, self.spec.key, list(zip(texts, vec.encode_vectors(matrix))))
                report.embedded = len(texts)
            except ModelUnavailable as exc:
                report.unavailable = str(exc)
                vec.note_unavailable(self.con, self.spec.key, str(exc))
            report.pending = len(self._without_vectors(chunks))
        done = {h for _, h in chunks} - set(self._without_vectors(chunks))
        if done:
            vec.done_embedding(self.con, list(done))  # off the pending list; readers see them at once
            vec.bump_generation(self.con)
        report.seconds = time.perf_counter() - start
        return report

    def _without_vectors(self, chunks: list[tuple[int, bytes]]) -> dict[bytes, int]:
        """Of ``chunks`` (id, hash), the texts the cache has no vector of: hash -> a chunk holding it."""
        assert self.spec is not None
        have = vec.hashes_with_vectors(self.cache, self.spec.key, [h for _, h in chunks])
        return {h: cid for cid, h in chunks if h not in have}

    def run(
        self,
        progress: Progress | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        *,
        try_model: bool = True,
        asking: Callable[[], None] | None = None,
    ) -> EmbedReport:
        """Chunk the queue, then embed what is pending: the whole of a
        foreground run (``memvault sync``) and one step of a background
        embedder's loop (the daemon's embedding service) alike.

        ``try_model`` False only counts what is pending (a host waiting to
        retry a model that could not be loaded); ``asking()`` is called just
        before the model is loaded and asked. A missing model is reported in
        the result (``unavailable``) and recorded in the index for later
        commands to show, not raised; a model that loads clears that record.
        """
        start = time.perf_counter()
        chunked = self.chunk_queued(should_stop)
        key = self.spec.key if self.spec else None
        pending = self.pending()
        report = EmbedReport(model=key, pending=len(pending))
        if pending and try_model:
            if asking is not None:
                asking()
            try:
                report = self.embed_pending(progress, should_stop, pending)
                vec.note_unavailable(self.con, key, None)  # it loaded
            except ModelUnavailable as exc:
                report = EmbedReport(model=key, pending=len(pending), unavailable=str(exc))
                vec.note_unavailable(self.con, key, str(exc))
        report.chunked = chunked
        report.seconds = time.perf_counter() - start
        return report
