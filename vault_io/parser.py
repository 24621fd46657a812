"""Turn the raw bytes of one note into a :class:`~vault_io.note.ParsedNote`.

The steps: decode UTF-8 (bytes that are not UTF-8 become U+FFFD, and the
note says so in ``undecodable`` and ``error``), drop a BOM and
normalise line endings to LF, split off and load the front-matter, mask the
regions of the body where Obsidian sees no syntax (code, comments, HTML,
math), run the link and tag scanners over the masked body, and read the
headings and block ids off its blocks (:mod:`.blocks`).  Line numbers are
file lines: the body's offset in the file is added.

Invalid front-matter never stops indexing: the note is then parsed as if the
whole file were body, with ``frontmatter={}`` and the reason in ``error``.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from operator import attrgetter
from typing import Any

from memvault.vault_io.blocks import find_block_ids, headings_of, scan_blocks
from memvault.vault_io.frontmatter import (
    DEFAULT_MAX_BYTES,
    FrontmatterError,
    frontmatter_aliases,
    frontmatter_end,
    frontmatter_links,
    frontmatter_tags,
    frontmatter_title,
    key_lines,
    load_frontmatter,
    split_frontmatter,
)
from memvault.vault_io.markdown import RawLink, find_markdown_links, find_tags, find_wikilinks
from memvault.vault_io.mask import blank_spans, line_index, line_starts, mask_markdown
from memvault.vault_io.note import UNDECODABLE, BlockId, Heading, Link, ParsedNote, content_hash

log = logging.getLogger(__name__)

#: How ``ParsedNote.error`` starts when a scanner failed (a bug, not the note).
INTERNAL_ERROR = "internal parser error"


def parse_note(
    path: str, data: bytes, *, max_frontmatter_bytes: int = DEFAULT_MAX_BYTES, keep_blocks: bool = True
) -> ParsedNote:
    """Parse one note.  ``path`` is the vault-relative POSIX path.

    The note carries the masking and blocks found on the way
    (:attr:`ParsedNote.structure`) unless ``keep_blocks`` is false (a note
    sent to another process, which would pay to ship and hold them).

    Raises nothing: bytes that are not UTF-8 are decoded as U+FFFD (the
    note's ``undecodable`` and ``error`` name the first one), and a bug in a
    scanner yields a note with only its text and an ``error`` starting
    "internal parser error", so one odd note cannot stop a sync.
    """
    undecodable: str | None = None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # One bad byte must not hide the whole note from search: index it with
        # U+FFFD in place of the bad bytes, and say so (the file is left as is).
        text = data.decode("utf-8", "replace")
        undecodable = f"byte 0x{data[exc.start]:02x} at offset {exc.start}"
    bom = text.startswith("\ufeff")
    if bom:
        text = text[1:]
    crlf = "\r\n" in text
    if "\r" in text:
        # A lone CR is a line break too (CommonMark), so count it as one.
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        note = _parse_text(path, text, content_hash(data), crlf, bom, max_frontmatter_bytes, keep_blocks)
        return note if undecodable is None else _undecodable(note, undecodable)
    except Exception as exc:  # last line of defence; tests hold this branch to zero
        log.exception("internal error parsing %s", path)
        return ParsedNote(
            path=path,
            title=_stem(path),
            frontmatter={},
            body=text,
            body_line=1,
            hash=content_hash(data),
            error=f"{INTERNAL_ERROR}: {type(exc).__name__}: {exc}",
            crlf=crlf,
            bom=bom,
            undecodable=undecodable,
        )


def _undecodable(note: ParsedNote, where: str) -> ParsedNote:
    """``note`` marked as decoded with replacement characters; the reason
    leads its ``error`` (so the index records it and ``doctor`` finds it)."""
    reason = f"{UNDECODABLE} ({where}); indexed with replacement characters, fix the bytes in an editor"
    return replace(note, undecodable=where, error=f"{reason}; {note.error}" if note.error else reason)


def _parse_text(
    path: str, text: str, digest: str, crlf: bool, bom: bool, max_frontmatter_bytes: int, keep_blocks: bool = True
) -> ParsedNote:
    """Parse LF-normalised, BOM-less ``text``; see :func:`parse_note`."""
    yaml_text, body, body_line = split_frontmatter(text)
    frontmatter: dict[str, Any] = {}
    error: str | None = None
    property_links: list[Link] = []
    lines_of_keys: dict[str, int] = {}
    heads_from = 0  # body lines before this hold no headings or block ids
    if yaml_text is not None:
        try:
            frontmatter = load_frontmatter(yaml_text, max_bytes=max_frontmatter_bytes)
            if frontmatter:
                lines_of_keys = key_lines(yaml_text)
                property_links = frontmatter_links(frontmatter, lines_of_keys)
        except FrontmatterError as exc:
            # Index the whole file as body, but do not read headings out of
            # the broken YAML (a "key: value" line above "---" is no heading).
            error = str(exc)
            heads_from = body_line - 1
            body, body_line = text, 1

    masked = mask_markdown(body)
    starts = line_starts(body)
    wikilinks, wiki_spans = find_wikilinks(masked.text, body)
    scan = blank_spans(masked.text, wiki_spans)  # "[[a #b]]" holds no tag
    md_links, md_spans = find_markdown_links(scan, body)
    scan = blank_spans(scan, md_spans)

    links: list[Link] = list(property_links)
    embeds: list[Link] = []
    found = sorted(wikilinks + md_links, key=_offset) if md_links else wikilinks
    for raw in found:
        link = _to_link(raw, body_line + line_index(starts, raw.offset))
        (embeds if raw.embed else links).append(link)

    tags = _dedupe_tags(frontmatter_tags(frontmatter) + find_tags(scan, body))
    structure = scan_blocks(body, masked, headings_from=heads_from)
    headings = tuple(
        Heading(level=level, text=htext, line=body_line + i)
        for level, htext, i in headings_of(structure)
    )
    blocks: tuple[BlockId, ...] = ()
    if "^" in masked.text:
        blocks = tuple(
            BlockId(id=block_id, line=body_line + first, end_line=body_line + last)
            for block_id, first, last in find_block_ids(
                masked.text, structure, starts, heads_from
            )
        )
    note = ParsedNote(
        path=path,
        title=frontmatter_title(frontmatter) or _stem(path),
        frontmatter=frontmatter,
        body=body,
        body_line=body_line,
        hash=digest,
        tags=tags,
        aliases=tuple(frontmatter_aliases(frontmatter)),
        links=tuple(links),
        embeds=tuple(embeds),
        headings=headings,
        blocks=blocks,
        key_lines=lines_of_keys,
        error=error,
        crlf=crlf,
        bom=bom,
    )
    if keep_blocks and heads_from == structure_start(note):
        # The note carries what was found here: the segmenter reads it, not the text again.
        note.__dict__["masked"] = masked
        note.__dict__["structure"] = tuple(structure)
    return note


def structure_start(note: ParsedNote) -> int:
    """The body line (0-based) from which the parser read headings and block
    ids: past the front-matter block of a note whose YAML did not load (its
    body is then the whole file), else 0."""
    if note.error is None or note.body_line != 1 or note.error.startswith(INTERNAL_ERROR):
        return 0
    return frontmatter_end(note.body)


def _stem(path: str) -> str:
    """``PurePosixPath(path).stem`` without building a path object."""
    name = path.rpartition("/")[2]
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


_offset = attrgetter("offset")


def _to_link(raw: RawLink, line: int) -> Link:
    """A scanner's :class:`RawLink` as the :class:`Link` value the index stores."""
    return Link(
        target=raw.target,
        kind="embed" if raw.embed else "link",
        subpath=raw.subpath,
        display=raw.display,
        size=raw.size,
        line=line,
        markdown=raw.markdown,
    )


def _dedupe_tags(tags: list[str]) -> tuple[str, ...]:
    """Tags without case-insensitive repeats, keeping each first spelling."""
    seen: set[str] = set()
    kept: list[str] = []
    for tag in tags:
        key = tag.lower()
        if key not in seen:
            seen.add(key)
            kept.append(tag)
    return tuple(kept)
