"""Opening the index database: the one place pragmas and transactions live.

Every connection to a memvault index comes from :func:`connect`, which applies
the pragmas below (one small function each, in the spirit of
``apsw.bestpractice``) and brings the schema up to date. Every writing
transaction goes through :func:`write_transaction`, which starts with
``BEGIN IMMEDIATE`` so two writers (the daemon and a CLI command) queue on the
busy timeout instead of failing half-way with ``SQLITE_BUSY`` on upgrade.
"""

from __future__ import annotations

from memvault.vault_io.errors import MemvaultError

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import apsw

from memvault.store.db import index_schema as migrations
from memvault.store.location import ensure_private_dir

#: How long a connection waits for another writer before giving up.
BUSY_TIMEOUT_MS = 10_000


class IndexDatabaseError(MemvaultError):
    """A problem with the index database itself (missing, unreadable, corrupt)."""


def journal_mode_wal(con: apsw.Connection) -> None:
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
            con.execute("PRAGMA journal_mode=WAL")
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


def connect(path: Path | str, *, create: bool = True) -> apsw.Connection:
    """Open (and if needed create and migrate) the index at ``path``.

    With ``create=False`` a missing database raises :class:`IndexDatabaseError`
    instead of creating an empty one, for read-only commands.
    """
    path = Path(path)
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
        migrations.migrate(con)
    except apsw.Error as exc:
        raise IndexDatabaseError(f"cannot open index {path}: {exc}") from exc
    return con


@contextlib.contextmanager
def write_transaction(con: apsw.Connection) -> Iterator[apsw.Connection]:
    """Run the block as one ``BEGIN IMMEDIATE`` transaction.

    IMMEDIATE takes the write lock up front, so the busy timeout applies to
    the whole transaction rather than to a later read-to-write upgrade that
    SQLite cannot wait for.
    """
    con.execute("BEGIN IMMEDIATE")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    else:
        con.execute("COMMIT")


def checkpoint(con: apsw.Connection) -> None:
    """Fold the WAL back into the database file (used at daemon shutdown)."""
    con.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
