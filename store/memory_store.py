"""One vault, its configuration and its index, opened together.

This is what the CLI talks to: :class:`Vault` knows where the vault's index
lives, opens it lazily, and hands out the indexer.
"""

from __future__ import annotations

from memvault.vault_io.errors import MemvaultError, UsageError

import os
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw
from memvault.store import location
from memvault.store.db.connection import IndexDatabaseError, connect

from memvault.store.settings import Config, load_config

if TYPE_CHECKING:
    from memvault.store.index.reconcile import Indexer


class VaultError(UsageError):
    """The vault cannot be used (missing, not a folder, unreadable)."""


class NoIndexError(MemvaultError):
    """A read-only command ran before the vault was ever indexed."""


def resolve_vault_path(value: str | os.PathLike[str] | None) -> Path:
    """Check and absolutise a vault path given by flag, environment or config."""
    if value is None or str(value).strip() == "":
        raise VaultError(
            "no vault given: pass --vault PATH, set MEMVAULT_VAULT, or set `vault` in the config file"
        )
    path = Path(os.path.expanduser(str(value))).absolute()
    if not path.exists():
        raise VaultError(f"vault folder {path} does not exist")
    if not path.is_dir():
        raise VaultError(f"vault path {path} is not a folder")
    if not os.access(path, os.R_OK | os.X_OK):
        raise VaultError(f"vault folder {path} is not readable")
    home = location.data_home()
    if location.inside(home, path):
        # The index is a cache of the vault: inside it, it would be synced,
        # backed up and scanned along with the notes.
        raise VaultError(
            f"memvault's data dir {home} is inside the vault {path}: "
            "set MEMVAULT_HOME to a folder outside the vault"
        )
    return path


class Vault:
    """A vault folder and its index."""

    def __init__(self, root: Path, config: Config) -> None:
        self.root = root
        self.config = config
        #: Where llm fact extraction goes instead of being asked inline: the
        #: daemon's background worker (see llm_worker), for every indexer
        #: this vault builds (the memory writer's too).
        self.fact_defer: Callable[[str, str], bool] | None = None

    @classmethod
    def open(cls, vault: str | None = None, overrides: dict[str, Any] | None = None) -> "Vault":
        """Load configuration (flags in ``overrides``) and check the vault path."""
        config = load_config({"vault": vault, **(overrides or {})})
        return cls(resolve_vault_path(config.vault), config)

    @property
    def name(self) -> str:
        """The vault's name as Obsidian shows it: its folder name."""
        return self.root.name

    @cached_property
    def data_dir(self) -> Path:
        """The private folder that holds this vault's index."""
        return location.vault_data_dir(self.root)

    @property
    def index_path(self) -> Path:
        """The index database file."""
        return self.data_dir / location.INDEX_FILE

    def has_index(self) -> bool:
        """Whether this vault has been indexed before."""
        return self.index_path.exists()

    @cached_property
    def con(self) -> apsw.Connection:
        """The index connection, creating the index if needed."""
        location.ensure_private_dir(self.data_dir)
        return connect(self.index_path)

    def read_con(self) -> apsw.Connection:
        """The index connection for read-only commands; refuses to create one."""
        if not self.has_index():
            raise NoIndexError(
                f"vault {self.root} has no index yet: run `memvault --vault {self.root} sync` first"
            )
        try:
            return self.con
        except IndexDatabaseError as exc:
            raise NoIndexError(str(exc)) from exc

    def indexer(self, *, refresh_globs: bool = True) -> "Indexer":
        """The reconciler for this vault.

        ``refresh_globs=False`` leaves the re-evaluation of notes whose source
        status changed with the config's ``sources`` globs to the caller (the
        daemon first routes llm extraction to its background worker).
        """
        from memvault.store.facts.observer import FactObserver
        from memvault.store.index.reconcile import Indexer

        facts = FactObserver(self.root, self.con, self.config)
        facts.defer = self.fact_defer
        # A changed `sources` glob re-evaluates the notes it adds or drops;
        # a no-op (one meta read) when the globs are as last time.
        if refresh_globs:
            facts.refresh_globs()
        return Indexer(
            self.root,
            self.con,
            ignore=self.config["ignore"],
            max_file_size=self.config["max_file_size"],
            memory_folder=self.config["memory_folder"],
            observers=[facts],
        )

    def close(self) -> None:
        """Close the index connection if it was opened."""
        con = self.__dict__.pop("con", None)
        if con is not None:
            con.close()
