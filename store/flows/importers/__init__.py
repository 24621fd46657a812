"""One module per foreign format; each turns a file into items for the sink.

An importer is a function ``read(path, progress) -> Iterator[Entry]``. An
:class:`Entry` names one item at its source (``conversations.json item 17
(6616a0c2..., "Editor settings")``) and holds a function that converts it
into what memvault writes: :class:`~..conversation.Conversation` (a session
note), :class:`MemoryItem` or :class:`NoteItem`. The conversion runs inside
the sink, one entry at a time, so an odd item is one error line in the
summary and never stops the others. Importers never touch the store: the
sink (:mod:`..sink`) writes through it.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, Union

from memvault.store.flows.conversation import Conversation
from memvault.vault_io.errors import UsageError

if TYPE_CHECKING:
    from memvault.store.flows.sink import ImportSink

P = ParamSpec("P")


@dataclass
class MemoryItem:
    """A memory to import, keyed by its id at the source (else a content hash)."""

    source: str  # the import-key source: "mem0", "csv", "mcp-memory"...
    key: str
    content: str
    type: str = "semantic"
    tags: list[str] = field(default_factory=list)
    scope: str = "user"
    created: str | None = None
    updated: str | None = None
    strength: float | None = None
    origin: str = "import"  # the memory's `source` property
    related: list[str] = field(default_factory=list)  # link targets of its Related section
    id: str | None = None  # an id to keep (memvault's own exports, markdown notes)
    path: str | None = None  # a vault path to write it at, if free
    extra: dict[str, Any] = field(default_factory=dict)  # further front-matter keys


@dataclass
class NoteItem:
    """An ordinary note to write (a project document), keyed like a memory."""

    source: str
    key: str
    path: str  # vault path
    text: str


@dataclass
class Skip:
    """An item the format holds that is deliberately not imported (counted as skipped)."""

    why: str


class Record(Protocol):
    """An item that writes itself through the sink (the records of memvault's
    own export, :mod:`.memvault`)."""

    def restore(self, sink: "ImportSink") -> str | None:
        """Write what the record holds; the action to count (None: not an item)."""
        ...


Item = Union[Conversation, MemoryItem, NoteItem, Skip, Record]


@dataclass
class Entry:
    """One item at its source, converted on demand (errors stay with it)."""

    ref: str
    convert: Callable[[], list[Item]]

    @classmethod
    def of(cls, ref: str, convert: Callable[P, list[Item]], /, *args: P.args, **kwargs: P.kwargs) -> "Entry":
        """An entry converted by ``convert(*args, **kwargs)`` when its turn comes
        (the arguments bound now: an importer yields entries in a loop)."""
        return cls(ref, functools.partial(convert, *args, **kwargs))

    @classmethod
    def one(cls, ref: str, make: Callable[P, Item], /, *args: P.args, **kwargs: P.kwargs) -> "Entry":
        """An entry that converts into the one item ``make(*args, **kwargs)``."""
        return cls(ref, lambda: [make(*args, **kwargs)])


Progress = Callable[[int, int], None]
Reader = Callable[[Path, Progress | None], Iterator[Entry]]

#: Format name -> module (each has ``read``); ``json``/``jsonl`` are memvault's own export.
FORMATS: dict[str, str] = {
    "chatgpt": "chatgpt",
    "claude": "claude",
    "mem0": "mem0",
    "mcp-memory": "mcp_memory",
    "csv": "csv_rows",
    "json": "memvault",
    "jsonl": "memvault",
    "markdown": "markdown",
}


def reader(name: str) -> Reader:
    """The ``read`` function of a format, or a usage error naming the formats."""
    module = FORMATS.get(name)
    if module is None:
        raise UsageError(f"unknown import format {name!r}: use one of {', '.join(FORMATS)}")
    read: Reader = importlib.import_module(f"{__name__}.{module}").read  # each module's read is a Reader
    return read


def json_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a field an
    export may leave out, or hold something else in)."""
    return value if isinstance(value, dict) else {}


def short(value: Any, limit: int = 40) -> str:
    """A short quoted form of a title for messages."""
    text = " ".join(str(value).split()) if value else ""
    return text if len(text) <= limit else text[: limit - 1] + "…"
