"""One trace as ``show`` and ``read`` give it, and its links both ways
(see :mod:`memvault.store.answers.browse`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from memvault.store.answers import _Answer
from memvault.store.answers.browse.listing import _TraceKey
from memvault.store.answers.browse.parts import _Flat, _Part


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
class Link(_Part):
    """A link, embed or property link a trace makes, and what it resolves to
    (in a :class:`Backlink`, a part whose keys follow the source's)."""

    KEY: ClassVar[str] = "kind"

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
class Backlink(_Flat):
    """A link to a trace (or an attachment) from another one: its source,
    then the link's own keys (JSON is flat, as ``backlinks`` always printed)."""

    FLAT: ClassVar[dict[str, type[_Part]]] = {"link": Link}

    source_id: str
    source_path: str | None
    source_title: str | None
    #: The link as its source makes it.
    link: Link


@dataclass(frozen=True)
class _TraceHead(_TraceKey, _Flat):
    """What ``show`` and ``read`` both begin with: a trace's index row."""

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
    #: The key a keyed memory holds (``editor.theme``).
    key: str | None = None
