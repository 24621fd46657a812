"""What the store answers about keyed facts (:mod:`memvault.store.memories.keys`):
who holds a key (:class:`KeyLookup`), and keys two live memories hold (:class:`KeyClash`)."""

from __future__ import annotations

from dataclasses import dataclass

from memvault.store.answers import _Answer
from memvault.vault_io.errors import MemvaultError


@dataclass(frozen=True)
class KeyLookup(_Answer):
    """Who holds one key of one scope."""

    key: str
    scope: str
    #: The memory keyed reads and writes use (None: no live memory holds the key).
    holder: str | None
    #: Other live memories holding it too (a clash), latest first.
    others: tuple[str, ...] = ()


@dataclass(frozen=True)
class KeyClash(_Answer):
    """Two or more live memories holding one key of one scope (``conflicts``, ``status``)."""

    scope: str
    key: str
    #: The one keyed reads and writes use: the note updated last, then the smaller id.
    holder: str
    #: The others, latest first.
    others: tuple[str, ...]
    #: ``key``: what kind of conflict this is, beside conflict copies.
    kind: str = "key"

    @property
    def detail(self) -> str:
        """One line for people."""
        return (f"{1 + len(self.others)} live memories hold key {self.key} (scope {self.scope}); {self.holder} "
                "is used (updated last): forget, merge or re-key the others")


class KeyHeld(MemvaultError):
    """A keyed write without a reason, while a live memory holds the key
    (exit 1). ``current`` is that memory as it is now (its id, text,
    version), so the caller can decide and write again with a reason; the
    daemon's socket hands it back with the refusal."""

    def __init__(self, message: str, current: dict[str, object]) -> None:
        super().__init__(message)
        self.current = current

    @classmethod
    def of(cls, key: str, scope: str, memory_id: str, version: int, content: str, type_: str, tags: list[str],
           updated: str) -> "KeyHeld":
        """The refusal for memory ``memory_id`` at ``version``, holding ``key`` in ``scope``."""
        text = " ".join(content.split())
        short = text if len(text) <= 120 else text[:119] + "…"
        return cls(
            f"key {key} (scope {scope}) is held by {memory_id}, version {version}: {short!r}; "
            "give a reason to supersede it (its text stays in the history)",
            {"id": memory_id, "key": key, "version": version, "type": type_, "tags": tags, "scope": scope,
             "updated": updated, "content": content},
        )
