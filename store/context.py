"""What a store sub-package is given: one small context, not the facade.

A function or service in ``store/<room>/`` needs some of: the vault folder,
the effective settings, the vault's private data dir and the store's
connection (the index with the durable state attached). It receives them as
one :class:`StoreContext`, and any collaborator it calls (the memory mirror,
the reconciler, a sync) as an argument of its own, so it can be read and
tested without :class:`~memvault.store.memory_store.MemoryStore`::

    ctx = store.ctx                                     # the facade's own
    ctx = StoreContext(root, settings, data_dir, lambda: con)   # a test's or a tool's

The connection is opened on first use through ``opener``; the facade's opener
also builds an index never built from the whole vault before handing it out
(see ``MemoryStore.con``), which is why the context does not connect by itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import apsw

from memvault.store import location
from memvault.store.db.connection import IndexDatabaseError, connect
from memvault.store.settings import Settings
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.gate import Gate


class NoIndexError(MemvaultError):
    """A read-only command ran before the vault was ever indexed."""


@dataclass(eq=False)
class StoreContext:
    """The vault, its settings, its data dir and the store's connection."""

    root: Path
    settings: Settings
    data_dir: Path
    #: The store's own connection (opened on the first call, then the same one).
    opener: Callable[[], apsw.Connection] = field(repr=False)

    @property
    def con(self) -> apsw.Connection:
        """The store's connection (index with state attached)."""
        return self.opener()

    @property
    def name(self) -> str:
        """The vault's name as Obsidian shows it: its folder name."""
        return self.root.name

    @property
    def index_path(self) -> Path:
        """The derived index database."""
        return self.data_dir / location.INDEX_FILE

    @property
    def state_path(self) -> Path:
        """The durable state database."""
        return self.data_dir / location.STATE_FILE

    @property
    def history_folder(self) -> Path:
        """The vault folder of every device's history log (:mod:`.history`)."""
        return self.root / self.settings.history_folder

    @cached_property
    def gate(self) -> Gate:
        """The one gate of every write into this vault (:mod:`memvault.vault_io.gate`)."""
        return vault_gate(self.root, self.settings)

    def has_index(self) -> bool:
        """Whether this vault has been indexed before."""
        return self.index_path.exists()

    def connect(self) -> apsw.Connection:
        """A new connection of its own (for another thread; the caller closes it)."""
        location.ensure_private_dir(self.data_dir)
        return connect(self.index_path, state=self.state_path)

    def read_con(self) -> apsw.Connection:
        """The connection for read-only work; refuses to create an index."""
        if not self.has_index():
            raise NoIndexError(
                f"vault {self.root} has no index yet: run `memvault --vault {self.root} sync` first"
            )
        try:
            return self.con
        except IndexDatabaseError as exc:
            raise NoIndexError(str(exc)) from exc


def vault_gate(root: Path, settings: Settings) -> Gate:
    """The write gate of the vault at ``root`` with ``settings``' folders."""
    from memvault.store.memories.memtypes import MEMORY_TYPES

    return Gate(root, settings.memory_folder, settings.history_folder, MEMORY_TYPES)
