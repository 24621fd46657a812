"""The store's browse answers, typed: a page of :class:`ListedTrace` for
``list`` and ``recent`` (:class:`TracePage`), one trace as ``show`` gives
it (:class:`ShowResult`) and as ``read`` does (:class:`ReadResult`), and
the versions of a memory or fact (``history``: :class:`MemoryVersion` each),
a trace's links both ways (:class:`Link`, :class:`Backlink`) and the
index's counts (``stats``: :class:`IndexStats`).

Kept apart from :mod:`.answers` (search, context, session start), which a
``memvault search`` process imports: these are loaded only by the commands,
tools and store methods that browse. Each answer's :meth:`to_json` gives
the JSON the CLI's ``--json`` and the MCP tools print, key for key, and
:meth:`from_json` reads it back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from memvault.store.answers import AnswerError, _Answer

F = TypeVar("F", bound="_Flat")


@dataclass(frozen=True)
class ListedTrace(_Answer):
    """One note, memory or fact in a listing: what it is and a preview of its text."""

    id: str
    #: ``memory``, ``note`` or ``fact``.
    kind: str
    type: str
    title: str
    path: str | None
    #: An ``obsidian://`` link to the note (None: no path).
    uri: str | None
    #: ``active``, or ``deleted`` (forgotten) and ``superseded``.
    status: str
    tags: tuple[str, ...]
    #: A memory's scope (``user`` or a project).
    scope: str | None
    strength: float | None
    created: str
    #: When it last changed (``created`` when never changed).
    updated: str
    #: Where it came from (``manual``, ``vault``, ``mcp:<client>`` ...).
    source: str | None
    #: The start of its text on one line (``…`` where cut).
    preview: str
    #: A memory's current version (what ``update --expect-version`` takes); only memories have one.
    version: int | None = None


@dataclass(frozen=True)
class TracePage(_Answer):
    """One page of a listing: its items, how many match in all, and where the next page starts."""

    NESTED: ClassVar[dict[str, type[_Answer]]] = {"items": ListedTrace}

    items: tuple[ListedTrace, ...]
    #: Traces that match, on every page.
    total: int
    #: Give it back as ``cursor`` for the next page (None: the last page).
    next_cursor: str | None


@dataclass(frozen=True)
class _Part(_Answer):
    """Keys that an answer has all together or not at all, spliced into it (see :class:`_Flat`)."""

    #: The key whose presence in JSON means the part is there.
    KEY: ClassVar[str] = ""


@dataclass(frozen=True)
class _Flat(_Answer):
    """An answer whose :attr:`FLAT` fields are parts whose keys stand in its
    own JSON, where the field stands (a turn's keys after a read's links):
    the shape ``show`` and ``read`` have always printed."""

    #: Fields holding a :class:`_Part` (its type), spliced in; left out when None.
    FLAT: ClassVar[dict[str, type[_Part]]] = {}

    def to_json(self) -> dict[str, Any]:
        """JSON values, each part's keys in the part's place (a key already
        there keeps its place and takes the part's value)."""
        out: dict[str, Any] = {}
        for key, value in super().to_json().items():
            if key in self.FLAT:
                out.update(value.to_json())
            else:
                out[key] = value
        return out

    @classmethod
    def from_json(cls: type[F], data: object) -> F:
        """The answer ``data`` (from :meth:`to_json`) describes, its parts
        gathered back; raises :class:`AnswerError` as :meth:`_Answer.from_json`."""
        if not isinstance(data, Mapping):
            raise AnswerError(f"{cls.__name__}: not a JSON object")
        values = dict(data)
        for name, kind in cls.FLAT.items():
            if kind.KEY in values:
                keys = [f.name for f in dataclasses.fields(kind)]
                values[name] = kind.from_json({k: values.pop(k) for k in keys if k in values})
        return super().from_json(values)


@dataclass(frozen=True)
class TurnRef(_Part):
    """One turn of a session note, when ``show`` or ``read`` was given ``path#^t12``."""

    KEY: ClassVar[str] = "ref"

    #: The turn's block id (``^t12``).
    anchor: str
    #: ``path#^t12``, what search names the turn by.
    ref: str
    #: Who said it (the name the turn's callout shows, else the role's label).
    speaker: str
    #: When it was said (``2023-05-08 13:56``; "" when the note does not say).
    at: str


@dataclass(frozen=True)
class FactSource(_Part):
    """Where a fact came from: its source note and the place in it."""

    KEY: ClassVar[str] = "source_path"

    #: The source note's vault path.
    source_path: str | None
    #: ``Heading`` or ``^blockid`` in the source note.
    anchor: str | None
    heading_path: str
    #: The fact's first and last line in its source note.
    lines: tuple[int | None, int | None]
    #: ``vault://<path>#<heading>`` or ``vault://<path>#^<block>``.
    source_uri: str


@dataclass(frozen=True)
class Link(_Answer):
    """A link, embed or property link a trace makes, and what it resolves to."""

    #: ``link``, ``embed``, ``property`` (a link in the front matter), ``related`` (a memory's
    #: link), or ``supersedes`` (a memory's link to the version it replaced).
    kind: str
    #: The name as written (``[[Deploy#Setup|the steps]]``: ``Deploy``).
    target: str
    #: The heading or ``^block`` after ``#``.
    anchor: str | None
    #: The text shown instead of the name.
    display: str | None
    #: The front-matter property holding a property link.
    property: str | None
    #: The line it is on.
    line: int | None
    #: ``resolved``, ``unresolved`` or ``ambiguous`` (two notes have the name).
    status: str
    #: The vault path it resolves to (a note or an attachment).
    target_path: str | None
    #: The trace it resolves to (None for an attachment).
    target_id: str | None


@dataclass(frozen=True)
class Backlink(_Answer):
    """A link to a trace (or an attachment) from another one: its source, then the link."""

    source_id: str
    source_path: str | None
    source_title: str | None
    kind: str
    target: str
    anchor: str | None
    display: str | None
    property: str | None
    line: int | None
    status: str
    target_path: str | None
    target_id: str | None


@dataclass(frozen=True)
class _TraceHead(_Flat):
    """What ``show`` and ``read`` both begin with: a trace's index row."""

    id: str
    #: ``note``, ``memory`` or ``fact``.
    kind: str
    type: str
    title: str
    path: str | None
    #: An ``obsidian://`` link to the note (at a fact's place in its source, a read section's heading).
    uri: str | None
    #: ``active``, ``deleted`` (forgotten) or ``superseded``.
    status: str
    tags: tuple[str, ...]
    created: str
    updated: str
    source: str | None
    scope: str | None
    strength: float | None


@dataclass(frozen=True)
class ShowResult(_TraceHead):
    """One note, memory or fact as the index holds it (``memvault show``)."""

    FLAT: ClassVar[dict[str, type[_Part]]] = {"turn": TurnRef}

    #: The trace's metadata (a note's front matter and aliases, a fact's extractor ...).
    metadata: dict[str, Any]
    #: Why the note's front matter could not be read (None: it could).
    parse_error: str | None
    #: Its text (the turn's line for ``path#^t12``).
    content: str
    #: How many links, embeds and property links it makes.
    links: int
    turn: TurnRef | None = None


@dataclass(frozen=True)
class ReadResult(_TraceHead):
    """Everything about one note, memory or fact (``read``): its text (or
    one section, one turn), version, source, links both ways."""

    FLAT: ClassVar[dict[str, type[_Part]]] = {"fact": FactSource, "turn": TurnRef}
    NESTED: ClassVar[dict[str, type[_Answer]]] = {"links": Link, "backlinks": Backlink}

    parse_error: str | None
    #: Its text, or the section under :attr:`heading`, or the turn's line.
    content: str
    #: A memory's current version (what ``update --expect-version`` takes).
    version: int | None = None
    #: The id of the version a memory replaced (memvault writes it in the note).
    supersedes: str | None = None
    #: Where a fact came from (None: not a fact, or no longer anchored).
    fact: FactSource | None = None
    #: A note's front matter (None: it has none).
    properties: dict[str, Any] | None = None
    #: Why it was forgotten, superseded or merged.
    reason: str | None = None
    #: The heading path of the section read (None: the whole text).
    heading: str | None = None
    #: Its links, embeds and property links, resolved.
    links: tuple[Link, ...] = ()
    #: What links to it, with each link's source.
    backlinks: tuple[Backlink, ...] = ()
    turn: TurnRef | None = None


@dataclass(frozen=True)
class MemoryVersion(_Answer):
    """One version of a memory or fact (``history``): the current one, an
    older one, or a memory merged into it."""

    #: The memory's id (the current version), ``<id>.v<n>`` (an older one), or a merged memory's id.
    id: str
    #: ``active`` (current), ``superseded`` or ``deleted``.
    status: str
    #: Why it was replaced, forgotten or merged (``updated``, ``merged into m-...``; None: current).
    reason: str | None
    type: str
    updated: str
    content: str
    tags: tuple[str, ...]


@dataclass(frozen=True)
class NoteParseError(_Answer):
    """A note indexed with a parse error (``stats --errors``)."""

    path: str
    error: str


@dataclass(frozen=True)
class IndexStats(_Answer):
    """Counts of what the index holds (``stats``)."""

    NESTED: ClassVar[dict[str, type[_Answer]]] = {"parse_error_list": NoteParseError}

    notes: int
    attachments: int
    traces: int
    #: Traces of each kind (``fact``, ``memory``, ``note``), by kind's name.
    traces_by_kind: dict[str, int]
    edges: int
    links_unresolved: int
    links_ambiguous: int
    #: Distinct tags.
    tags: int
    parse_errors: int
    read_errors: int
    #: Notes indexed with U+FFFD for bytes that are not UTF-8 (counted in parse errors too).
    undecodable: int
    #: Symlinks leading out of the vault that the last scan skipped unread.
    skipped_outside_vault: int
    #: Conflicts memvault ever recorded.
    conflicts: int
    #: Memory notes not written yet.
    pending_writes: int
    #: When the vault was last synced (None: never).
    last_sync: str | None
    #: Active facts of memory sources.
    facts: int
    facts_superseded: int
    fact_sources: int
    #: Secrets redacted out of fact text.
    secrets_redacted: int
    #: The index database, and its size with its WAL files (None: not asked).
    index_path: str | None = None
    index_bytes: int | None = None
    #: The vault's folder.
    vault: str | None = None
    #: Every note with a parse error (None: not asked).
    parse_error_list: tuple[NoteParseError, ...] | None = None
