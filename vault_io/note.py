"""The parsed form of one Markdown note: what the index needs to know about it.

A :class:`ParsedNote` is a plain value; nothing here touches the file system
beyond what :func:`read_note` reads, and nothing here knows about SQLite.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.vault_io.errors import MemvaultError

if TYPE_CHECKING:
    from memvault.vault_io.blocks import Block
    from memvault.vault_io.mask import Masked

#: How ``ParsedNote.error`` starts for a note with bytes that are not UTF-8.
UNDECODABLE = "not valid UTF-8"


class NoteReadError(MemvaultError):
    """A note that cannot be indexed at all (too large, unreadable).

    The message names the file; the sync keeps any earlier index entry.
    """


@dataclass(frozen=True)
class Link:
    """One outgoing reference from a note.

    ``target`` is the link path as written (percent-decoded for Markdown links,
    without ``#subpath`` and without ``|alias``); it is ``""`` for a link to a
    heading or block of the same note (``[[#Heading]]``).
    """

    target: str
    kind: str  # "link" | "embed" | "property"
    subpath: str | None = None  # "Heading", "H1#H2" or "^blockid" (no leading '#')
    display: str | None = None  # the alias after '|', if any (never an image size)
    size: str | None = None  # "100" or "100x200" after '|' in an image embed
    line: int = 0  # 1-based line in the file; front-matter links carry their key's line or 1
    prop: str | None = None  # front-matter key, for kind == "property"
    markdown: bool = False  # written as [text](target) rather than [[target]]


@dataclass(frozen=True)
class Heading:
    """An ATX (or setext) heading."""

    level: int
    text: str
    line: int


@dataclass(frozen=True)
class BlockId:
    """A block id ``^id`` and the 1-based line range of the block it names
    (what ``[[Note#^id]]`` links to). Not a block of the note's structure:
    that is :class:`memvault.vault_io.blocks.Block`, which the scanner yields."""

    id: str
    line: int  # line of the block's first line
    end_line: int  # line that carries the ^id (may equal line)


@dataclass(frozen=True)
class ParsedNote:
    """Everything memvault reads out of one note.

    Besides its fields, a note carries the body's masking (:attr:`masked`)
    and block structure (:attr:`structure`) as the parser found them, so
    what reads the note's blocks after it (the fact segmenter) does not scan
    it again. Both are derived from ``body`` (not fields: not compared, not
    in the parser's golden files) and computed when first asked of a note
    that came without them (``parse_note(keep_blocks=False)``: a bulk
    worker's, sent to another process; a note made with ``replace``).
    """

    path: str  # vault-relative POSIX path, e.g. "Folder/Note.md"
    title: str
    frontmatter: dict[str, Any]
    body: str  # text after the front-matter, LF line endings, no BOM
    body_line: int  # 1-based file line on which ``body`` starts
    hash: str  # sha256 hex digest of the raw bytes
    tags: tuple[str, ...] = ()  # without '#', first spelling kept, de-duplicated case-insensitively
    aliases: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()  # kind "link" and "property"
    embeds: tuple[Link, ...] = ()  # kind "embed"
    headings: tuple[Heading, ...] = ()
    blocks: tuple[BlockId, ...] = ()  # the note's block ids (``^id``), in order
    # File line of each top-level front-matter key (what fact anchors need
    # from the raw file, so the facts observer never re-reads it).
    key_lines: dict[str, int] = field(default_factory=dict)
    error: str | None = None  # e.g. "invalid YAML front-matter at line 3: ..."
    crlf: bool = False  # the file used CRLF line endings
    bom: bool = False  # the file started with a UTF-8 BOM
    # Where the first byte that is not UTF-8 sits ("byte 0xff at offset 10"),
    # when the text was decoded with U+FFFD replacements; None for clean UTF-8.
    undecodable: str | None = None

    @property
    def stem(self) -> str:
        """The file name without its extension."""
        return PurePosixPath(self.path).stem

    @cached_property
    def masked(self) -> "Masked":
        """The body masked (:func:`~.mask.mask_markdown`): which spans are
        code, comments, HTML or math."""
        from memvault.vault_io.mask import mask_markdown

        return mask_markdown(self.body)

    @cached_property
    def structure(self) -> "tuple[Block, ...]":
        """The body's blocks in document order (:func:`~.blocks.scan_blocks`,
        headings read from :func:`~.parser.structure_start` on); treat as
        read-only."""
        from memvault.vault_io.blocks import scan_blocks
        from memvault.vault_io.parser import structure_start

        return tuple(scan_blocks(self.body, self.masked, headings_from=structure_start(self)))


def content_hash(data: bytes) -> str:
    """The content hash memvault uses everywhere: sha256 of the raw bytes."""
    return hashlib.sha256(data).hexdigest()
