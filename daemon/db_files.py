"""Whether the daemon's database files are still the ones it has open.

An open SQLite connection keeps writing into a file that was deleted or
replaced under it, where nobody else sees the writes. The daemon remembers
the (device, inode) of ``index.db`` and ``state.db`` after each full sync
and compares them on every tick (two ``stat`` calls); a difference makes it
reopen the databases and index the whole vault again (see :mod:`.runner`).
"""

from __future__ import annotations

import os
from pathlib import Path

FileId = tuple[int, int] | None


class DatabaseFiles:
    """The identity of a store's two database files, as last opened."""

    def __init__(self, index_path: Path, state_path: Path) -> None:
        self.paths = (index_path, state_path)
        self.opened: tuple[FileId, FileId] | None = None

    def now(self) -> tuple[FileId, FileId]:
        """(device, inode) of index.db and state.db as their paths name them now (None: missing)."""
        ids: list[FileId] = []
        for path in self.paths:
            try:
                st = os.stat(path)
            except OSError:
                ids.append(None)
            else:
                ids.append((st.st_dev, st.st_ino))
        return ids[0], ids[1]

    def remember(self) -> None:
        """The files as they are now are the ones the store has open."""
        self.opened = self.now()

    def forget(self) -> None:
        """No files are open (until the next :meth:`remember`)."""
        self.opened = None

    def changed(self) -> str | None:
        """What happened to the open files since :meth:`remember`, in words
        (``"index.db was deleted"``), or None when nothing did."""
        if self.opened is None:
            return None
        now = self.now()
        if now == self.opened:
            return None
        what = []
        for name, was, is_ in zip(("index.db", "state.db"), self.opened, now):
            if was != is_:
                what.append(f"{name} was {'deleted' if is_ is None else 'replaced'}")
        return " and ".join(what)
