"""Keeping the embedding cache small, and carrying it to another device.

The cache (``embeddings.db``, see :mod:`.vectors`) keeps every vector ever
computed, keyed by (model, text hash), so unchanged text is never embedded
twice. Left alone it only grows: :func:`prune` drops vectors no chunk uses
(after a grace period, so a note deleted by mistake or a rebuilt index comes
back without re-embedding) and, past a size cap, the least recently used of
those first. The daemon prunes once a day; ``memvault cache prune`` on demand.

A second machine that syncs the same vault need not embed it again:
``memvault cache export FILE`` writes a consistent copy of the cache
(``VACUUM INTO``), and ``memvault cache import FILE`` on the other machine adds
every vector it lacks; its next sync embeds only what neither had.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import apsw

from memvault.store.db.connection import write_transaction
from memvault.store.db.records import now_iso
from memvault.store.db.rows import count, rows
from memvault.store.embedding.vectors import open_cache
from memvault.vault_io.errors import MemvaultError, UsageError


class CacheFileError(UsageError):
    """A cache file to import is missing or not a memvault embedding cache."""


@dataclass
class PruneReport:
    """What one prune did."""

    kept: int = 0
    dropped_unused: int = 0
    dropped_for_size: int = 0
    bytes_before: int = 0
    bytes_after: int = 0

    def as_dict(self) -> dict[str, int]:
        """JSON-ready form."""
        return dict(self.__dict__)


def cache_bytes(cache: apsw.Connection) -> int:
    """The cache database's size in bytes (pages in use)."""
    pages = count(cache, "PRAGMA page_count")
    free = count(cache, "PRAGMA freelist_count")
    return (pages - free) * count(cache, "PRAGMA page_size")


def prune(cache: apsw.Connection, index: apsw.Connection, *, keep_days: float, max_bytes: int) -> PruneReport:
    """Drop vectors no chunk of ``index`` uses: those unused for more than
    ``keep_days``, then, while the cache is over ``max_bytes``, the least
    recently used others. Vectors in use are never dropped (and are marked
    used now); the file shrinks when a tenth or more was dropped."""
    report = PruneReport(bytes_before=cache_bytes(cache))
    live = {r[0] for r in index.execute("SELECT DISTINCT hash FROM chunks")}
    now = now_iso()
    cutoff = (datetime.now(timezone.utc) - timedelta(days=keep_days)).replace(microsecond=0).isoformat()
    found = rows(cache, "SELECT id, hash, used FROM vectors")
    in_use = [rid for rid, h, _ in found if h in live]
    unused: list[tuple[str, int]] = sorted(((used, rid) for rid, h, used in found if h not in live))
    stale = [rid for used, rid in unused if used < cutoff]
    report.kept = len(in_use)
    with write_transaction(cache):
        cache.executemany("UPDATE vectors SET used = ? WHERE id = ?", [(now, rid) for rid in in_use])
        cache.executemany("DELETE FROM vectors WHERE id = ?", [(rid,) for rid in stale])
    report.dropped_unused = len(stale)
    spare = [rid for used, rid in unused if used >= cutoff]  # oldest first
    if cache_bytes(cache) > max_bytes and found:
        per_row = max(1, report.bytes_before // len(found))
        over = (cache_bytes(cache) - max_bytes) // per_row + 1
        drop = spare[: int(over)]
        with write_transaction(cache):
            cache.executemany("DELETE FROM vectors WHERE id = ?", [(rid,) for rid in drop])
        report.dropped_for_size = len(drop)
    dropped = report.dropped_unused + report.dropped_for_size
    if found and dropped * 10 >= len(found):
        cache.execute("VACUUM")
    report.bytes_after = cache_bytes(cache)
    return report


def export_cache(data_dir: Path, target: Path) -> int:
    """Write a consistent copy of the cache to ``target`` (a new file);
    returns how many vectors it holds."""
    if target.exists():
        raise CacheFileError(f"{target} exists already; give a new file name")
    cache = open_cache(data_dir, create=False)
    if cache is None:
        raise MemvaultError("this vault has no embedding cache yet: run `memvault sync` first")
    try:
        cache.execute("VACUUM INTO ?", (str(target),))
        os.chmod(target, 0o600)
        return count(cache, "SELECT count(*) FROM vectors")
    finally:
        cache.close()


def import_cache(data_dir: Path, source: Path) -> int:
    """Add every vector of the cache file ``source`` this vault's cache lacks;
    returns how many were added."""
    if not source.is_file():
        raise CacheFileError(f"{source} is not a file")
    cache = open_cache(data_dir)
    try:
        try:
            cache.execute("ATTACH DATABASE ? AS other", (str(source),))
            cache.execute("SELECT model, hash, vec, used FROM other.vectors LIMIT 1").fetchall()
        except apsw.Error:
            raise CacheFileError(f"{source} is not a memvault embedding cache") from None
        with write_transaction(cache):
            before = count(cache, "SELECT count(*) FROM vectors")
            cache.execute(
                "INSERT OR IGNORE INTO vectors (model, hash, vec, used) SELECT model, hash, vec, used FROM other.vectors"
            )
            added = count(cache, "SELECT count(*) FROM vectors") - before
        cache.execute("DETACH DATABASE other")
        return added
    finally:
        cache.close()
