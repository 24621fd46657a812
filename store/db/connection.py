"""Opening memvault's databases: the one place pragmas and transactions live.

A vault has two SQLite databases in its data dir, always opened together:
``index.db`` (the main schema), the *derived* index of the vault that can be
dropped and rebuilt from the notes at any time, and ``state.db`` (attached as
``state``), the *durable* state only memvault knows: memory versions, forgets,
recall statistics, fact history, conflicts and the outbox of pending note
writes (see :mod:`.state_schema`). Every connection comes from :func:`connect`, which
applies the pragmas below (one small function each, in the spirit of
``apsw.bestpractice``) and brings both schemas up to date.

Every writing transaction goes through :func:`write_transaction`: one writer
discipline for the whole process (a lock per database, so the daemon's
threads queue on it instead of on SQLite's lock) and one retry policy
against writers in other processes (``BEGIN IMMEDIATE`` with the busy
timeout, retried until :data:`WRITE_WAIT_S`, then :class:`StoreBusyError`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import apsw

from memvault.store.db import index_schema, state_schema
from memvault.store.db.rows import count
from memvault.store.location import STATE_FILE, ensure_private_dir
from memvault.vault_io.errors import MemvaultError

Migration = Callable[[apsw.Connection], None]

#: How long one attempt waits for another process's writer (SQLite's busy handler).
BUSY_TIMEOUT_MS = 10_000
#: How long a write transaction waits in all for the write lock before giving up.
WRITE_WAIT_S = 60.0


class IndexDatabaseError(MemvaultError):
    """A problem with the index database itself (missing, unreadable, corrupt)."""


class StoreWriteError(MemvaultError):
    """The disk refused a write to memvault's databases (full, read-only, an I/O error)."""


#: SQLite's failures of the disk itself, as opposed to a bug in a statement.
_DISK_ERRORS = (apsw.FullError, apsw.IOError, apsw.ReadOnlyError, apsw.CantOpenError, apsw.CorruptError)


class StoreBusyError(MemvaultError):
    """Another process held the write lock for longer than :data:`WRITE_WAIT_S`."""


def journal_mode_wal(con: apsw.Connection, schema: str = "main") -> None:
    """Write-ahead logging: readers never block the writer and vice versa.

    The daemon indexes while ``memvault search`` reads; WAL makes that safe
    and keeps a crash from leaving a half-applied transaction.

    Switching a new database to WAL needs it to itself, and SQLite reports
    SQLITE_BUSY for that at once, without the busy handler: two connections
    opening a fresh index together (the daemon's threads, a CLI command)
    would fail. So the switch is retried for as long as the busy timeout.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    delay = 0.005
    while True:
        try:
            con.execute(f"PRAGMA {schema}.journal_mode=WAL")
            return
        except apsw.BusyError:
            if time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)


def _synchronous_normal(con: apsw.Connection) -> None:
    """fsync at checkpoints, not at every commit.

    With WAL this cannot corrupt the database; at worst a power cut loses the
    last transactions, which the next sync rebuilds from the vault anyway.
    """
    con.execute("PRAGMA synchronous=NORMAL")


def _foreign_keys(con: apsw.Connection) -> None:
    """Enforce REFERENCES clauses (off by default in SQLite for compatibility)."""
    con.execute("PRAGMA foreign_keys=ON")


def _busy_timeout(con: apsw.Connection) -> None:
    """Wait for a competing writer rather than failing at once."""
    con.set_busy_timeout(BUSY_TIMEOUT_MS)


def _cache_size(con: apsw.Connection) -> None:
    """Up to 64 MiB of page cache (the default is 2 MiB).

    Indexing a large vault inserts into several B-trees at random keys;
    with the default cache most of those pages are read back from the OS on
    every insert. Memory is only taken as pages are actually used.
    """
    con.execute("PRAGMA cache_size=-65536")


def _journal_size_limit(con: apsw.Connection) -> None:
    """Shrink the WAL file back to 64 MiB after a checkpoint.

    A first index writes a few hundred MiB through the WAL; without a limit
    the file keeps that size on disk for good.
    """
    con.execute("PRAGMA journal_size_limit=67108864")


def _no_double_quoted_strings(con: apsw.Connection) -> None:
    """Treat "x" as an identifier only, so a typo'd column name is an error
    instead of silently becoming a string literal."""
    con.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
    con.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)


def private_file(path: Path) -> None:
    """Create a database file owner-only (0600), in a 0700 folder, before
    SQLite opens it.

    SQLite gives the -wal and -shm files the same mode as the database, so
    this one call keeps all three private.
    """
    ensure_private_dir(path.parent)
    if not path.exists():
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
    os.chmod(path, 0o600)


def _attach_state(con: apsw.Connection, path: Path) -> None:
    """Attach the durable state database as schema ``state``.

    WAL like the index, but ``synchronous=FULL``: unlike the index, what is
    committed there cannot be rebuilt from the vault, so a commit waits for
    its fsync. One ``BEGIN IMMEDIATE`` takes the write lock of both files.
    """
    private_file(path)
    con.execute("ATTACH DATABASE ? AS state", (str(path),))
    journal_mode_wal(con, "state")
    con.execute("PRAGMA state.synchronous=FULL")


def connect(path: Path | str, *, create: bool = True, state: Path | str | None = None) -> apsw.Connection:
    """Open (and if needed create and migrate) the index at ``path``, with
    the durable state (``state``, default ``state.db`` beside it) attached.

    With ``create=False`` a missing index raises :class:`IndexDatabaseError`
    instead of creating an empty one, for read-only commands.
    """
    path = Path(path)
    state_path = Path(state) if state is not None else path.with_name(STATE_FILE)
    if create:
        private_file(path)
    elif not path.exists():
        raise IndexDatabaseError(f"no index at {path}")
    try:
        con = apsw.Connection(str(path))
        _busy_timeout(con)
        journal_mode_wal(con)
        _synchronous_normal(con)
        _foreign_keys(con)
        _cache_size(con)
        _journal_size_limit(con)
        _no_double_quoted_strings(con)
        _attach_state(con, state_path)
        # State first: the index's migrations may move durable rows into it.
        migrate(con, state_schema.MIGRATIONS, "state")
        migrate(con, index_schema.MIGRATIONS, "main")
    except apsw.Error as exc:
        raise IndexDatabaseError(f"cannot open index {path}: {exc}") from exc
    return con


def migrate(con: apsw.Connection, migrations: Sequence[Migration], schema: str) -> int:
    """Apply every pending migration of ``schema`` ("main" or "state"), each
    in its own immediate transaction, recording it in ``PRAGMA user_version``.

    Returns the resulting version. A database from a newer memvault (a
    higher version than this code knows) is refused rather than guessed at.
    """
    current = user_version(con, schema)
    if current > len(migrations):
        raise apsw.SQLError(
            f"{schema} schema version {current} is newer than this memvault understands "
            f"({len(migrations)}); upgrade memvault"
        )
    for number in range(current + 1, len(migrations) + 1):
        with write_transaction(con):
            # Re-check under the write lock: another process may have migrated.
            if user_version(con, schema) < number:
                migrations[number - 1](con)
                con.execute(f"PRAGMA {schema}.user_version={number}")
    return len(migrations)


def user_version(con: apsw.Connection, schema: str = "main") -> int:
    """The number of migrations applied to ``schema``."""
    return count(con, f"PRAGMA {schema}.user_version")


_WRITERS: dict[str, threading.RLock] = {}
_WRITERS_LOCK = threading.Lock()


def _writer_lock(con: apsw.Connection) -> threading.RLock:
    """The process-wide lock of the database ``con`` writes to."""
    key = os.path.realpath(con.filename)
    with _WRITERS_LOCK:
        lock = _WRITERS.get(key)
        if lock is None:
            lock = _WRITERS[key] = threading.RLock()
        return lock


def _begin_immediate(con: apsw.Connection) -> None:
    """``BEGIN IMMEDIATE``, retried while another process holds the lock.

    Each attempt already waits the busy timeout; a daemon's full sync or a
    long import may hold the lock longer than that, so a writer tries again
    until :data:`WRITE_WAIT_S` have passed in all.
    """
    deadline = time.monotonic() + WRITE_WAIT_S
    while True:
        try:
            con.execute("BEGIN IMMEDIATE")
            return
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise StoreBusyError(
                    "the index is busy: another memvault process has been writing to it for "
                    f"{WRITE_WAIT_S:.0f} s; try again"
                ) from None


@contextlib.contextmanager
def write_transaction(con: apsw.Connection) -> Iterator[apsw.Connection]:
    """Run the block as one ``BEGIN IMMEDIATE`` transaction.

    IMMEDIATE takes the write lock up front, so the busy timeout applies to
    the whole transaction rather than to a later read-to-write upgrade that
    SQLite cannot wait for. Threads of this process queue on a lock of their
    own first, so they never spin on SQLite's busy handler against each other.
    """
    with _writer_lock(con):
        _begin_immediate(con)
        try:
            yield con
        except BaseException as exc:
            if con.in_transaction:  # SQLite may have rolled back already (a full disk)
                con.execute("ROLLBACK")
            if isinstance(exc, _DISK_ERRORS):
                raise StoreWriteError(f"cannot write to {con.filename}: {exc}; nothing was changed") from exc
            raise
        else:
            try:
                con.execute("COMMIT")
            except _DISK_ERRORS as exc:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise StoreWriteError(f"cannot write to {con.filename}: {exc}; nothing was changed") from exc


def checkpoint(con: apsw.Connection) -> None:
    """Fold the WAL back into the database file (used at daemon shutdown)."""
    con.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
