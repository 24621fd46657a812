"""Notes an import (or ingest) wrote and has not indexed yet, kept durably.

An import writes notes first and indexes them in batches (a sync of the
written paths). A process killed in between would leave notes in the vault
that no search finds until the next full ``sync``. So their paths are
recorded in the durable state (``state.meta``) before they are written and
dropped once they are indexed; the next command that opens the store indexes
whatever is still listed (:func:`index_leftovers`) before it answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

import apsw

from memvault.store.db.connection import write_transaction
from memvault.store.db.rows import first

KEY = "unindexed_written_notes"


def listed(con: apsw.Connection) -> list[str]:
    """The paths written and not indexed yet."""
    row = first(con, "SELECT value FROM state.meta WHERE key = ?", (KEY,))
    return [str(p) for p in json.loads(row[0])] if row else []


def _put(con: apsw.Connection, paths: list[str]) -> None:
    if paths:
        con.execute("INSERT OR REPLACE INTO state.meta (key, value) VALUES (?, ?)", (KEY, json.dumps(paths)))
    else:
        con.execute("DELETE FROM state.meta WHERE key = ?", (KEY,))


def will_write(con: apsw.Connection, paths: Iterable[str]) -> None:
    """Record ``paths`` before they are written (a transaction of its own)."""
    new = list(paths)
    if not new:
        return
    with write_transaction(con):
        now = listed(con)
        _put(con, now + [p for p in dict.fromkeys(new) if p not in now])


def indexed(con: apsw.Connection, paths: Iterable[str]) -> None:
    """``paths`` are indexed now: drop them from the list."""
    done = set(paths)
    if not done:
        return
    with write_transaction(con):
        now = listed(con)
        if any(p in done for p in now):
            _put(con, [p for p in now if p not in done])


def index_leftovers(con: apsw.Connection, sync_paths: Callable[[list[str]], object]) -> None:
    """Index what a killed import wrote and never indexed through the store's
    ``sync_paths`` (a no-op, one read, when nothing is listed)."""
    paths = listed(con)
    if paths:
        sync_paths(paths)
        indexed(con, paths)
