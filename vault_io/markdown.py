"""Body-level scanners for Obsidian-flavoured Markdown: links, embeds, tags,
headings and block ids, each a plain regex over the masked text
(:mod:`.mask`).

All functions here work on LF-normalised text (no ``\\r``) and return 0-based
line indexes *within the text they were given*; :mod:`vault_io.parser` turns
them into file line numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from memvault.vault_io.mask import (
    ATX_LINE_RE,
    LIST_ITEM_RE,
    indent_width,
    line_index,
    line_starts,
)

# --------------------------------------------------------------------------
# Links and embeds
# --------------------------------------------------------------------------

# Wikilink content: no brackets and no newline, so ``[[a [[b]]`` finds
# ``[[b]]`` and a stray ``[[`` cannot swallow the rest of a paragraph.  The
# "!" of an embed is checked by hand: an optional first character would cost
# Python's regex engine its fast literal-prefix search.
WIKILINK_RE = re.compile(r"\[\[([^\[\]\n]*)\]\]")

# [text](destination "title"), one level of brackets inside the text, one
# level of balanced parentheses inside a bare destination.  The blanks are
# possessive ("*+"): an empty destination between two runs of spaces would
# otherwise let the engine try every way of splitting them.
_MD_LINK_RE = re.compile(
    r"\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"
    r"\([ \t]*+(?:<([^<>\n]*)>|([^\s()<>]*+(?:\([^\s()]*\)[^\s()<>]*+)*+))"
    r"(?:[ \t]++(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*+\)"
)
_SCHEME_RE = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:")
_SIZE_RE = re.compile(r"\d+(?:x\d+)?")

IMAGE_EXTENSIONS = frozenset({"png", "jpg", "jpeg", "gif", "bmp", "svg", "webp", "avif"})


@dataclass(frozen=True)
class RawLink:
    """A link found in text, before it is turned into a :class:`~vault_io.note.Link`."""

    offset: int  # where the link starts in the scanned text
    embed: bool
    target: str
    subpath: str | None
    display: str | None
    size: str | None
    markdown: bool


def is_image(target: str) -> bool:
    """Whether ``target`` names an image Obsidian would show at a given size."""
    dot = target.rfind(".")
    return dot >= 0 and target[dot + 1 :].lower() in IMAGE_EXTENSIONS


def _split_size(target: str, embed: bool, label: str | None) -> tuple[str | None, str | None]:
    """Split an embed label into (display, size).

    Only image embeds take a size, written ``100`` or ``100x200`` after the
    last ``|``; anything else after ``|`` stays display text.
    """
    if not embed or label is None or not is_image(target):
        return label, None
    head, bar, tail = label.rpartition("|")
    if _SIZE_RE.fullmatch(tail.strip()):
        display = head.strip() if bar else ""
        return (display or None), tail.strip()
    return label, None


def split_wikilink(inner: str) -> tuple[str, str | None, str | None]:
    """Split the text between ``[[`` and ``]]`` into (target, subpath, display).

    ``Note#H1#H2|alias`` gives ``("Note", "H1#H2", "alias")``.  A backslash
    before the pipe (``[[Note\\|alias]]``, how tables escape it) is dropped.
    """
    display: str | None = None
    bar = inner.find("|")
    if bar >= 0:
        display = inner[bar + 1 :].strip() or None
        inner = inner[:bar]
        if inner.endswith("\\"):
            inner = inner[:-1]
    target, _, subpath = inner.partition("#")
    return target.strip(), clean_subpath(subpath), display


def clean_subpath(subpath: str) -> str | None:
    """``subpath`` with blank ``#`` segments dropped, or None if nothing is left.

    Obsidian reads ``Note##^id`` as ``Note#^id`` and ``#H1# H2`` as ``H1#H2``.
    """
    if "#" not in subpath:
        return subpath.strip() or None
    return "#".join(part.strip() for part in subpath.split("#") if part.strip()) or None


def wikilink(offset: int, embed: bool, inner: str) -> RawLink | None:
    """The link a ``[[inner]]`` stands for, or None if it names nothing."""
    target, subpath, display = split_wikilink(inner)
    if not target and not subpath:
        return None
    display, size = _split_size(target, embed, display)
    return RawLink(offset, embed, target, subpath, display, size, False)


def find_wikilinks(scan: str, source: str) -> tuple[list[RawLink], list[tuple[int, int]]]:
    """All ``[[...]]`` and ``![[...]]`` in ``scan`` (masked text).

    The link text is read from ``source`` (the unmasked text at the same
    offsets).  Also returns every matched span, so callers can blank them
    before looking for tags.
    """
    links: list[RawLink] = []
    spans: list[tuple[int, int]] = []
    for m in WIKILINK_RE.finditer(scan):
        start = m.start()
        embed = start > 0 and scan[start - 1] == "!"
        if embed:
            start -= 1
        spans.append((start, m.end()))
        link = wikilink(start, embed, source[m.start(1) : m.end(1)])
        if link is not None:
            links.append(link)
    return links, spans


def _markdown_link(offset: int, embed: bool, label: str, dest: str) -> RawLink | None:
    """The vault link a Markdown link stands for, or None for URLs and blanks."""
    dest = dest.strip()
    if not dest or _SCHEME_RE.match(dest):
        return None
    path, _, fragment = dest.partition("#")
    target = unquote(path).strip()
    subpath = clean_subpath(unquote(fragment))
    if not target and not subpath:
        return None
    display, size = _split_size(target, embed, label.strip() or None)
    return RawLink(offset, embed, target, subpath, display, size, True)


def find_markdown_links(scan: str, source: str) -> tuple[list[RawLink], list[tuple[int, int]]]:
    """All ``[text](dest)`` and ``![alt](dest)`` in ``scan`` that point into the vault.

    URLs with a scheme (``https:``, ``obsidian:``, ``mailto:``...) are not vault
    links; ``(#Heading)`` is a link to a heading of the same note.  A link
    nested in another's text (``[![img](a.png)](Note.md)``) is found too.
    Returns the links and every matched span.
    """
    links: list[RawLink] = []
    spans: list[tuple[int, int]] = []
    for m in _MD_LINK_RE.finditer(scan):
        start = m.start()
        embed = start > 0 and scan[start - 1] == "!"
        if embed:
            start -= 1
        spans.append((start, m.end()))
        label_start, label_end = m.span(1)
        label = source[label_start:label_end]
        if "](" in label:
            inner, _ = find_markdown_links(scan[:label_end], source[:label_end])
            links.extend(link for link in inner if link.offset >= label_start)
        group = 2 if m.group(2) is not None else 3
        dest = source[m.start(group) : m.end(group)]
        link = _markdown_link(start, embed, label, dest)
        if link is not None:
            links.append(link)
    links.sort(key=lambda link: link.offset)
    return links, spans


# --------------------------------------------------------------------------
# Tags
# --------------------------------------------------------------------------

# Obsidian's own tag body: anything but whitespace, ASCII punctuation other
# than "-", "_" and "/", and the Unicode general/supplemental punctuation
# blocks.  So letters and digits of any script, marks, and emoji are in.
TAG_BODY = r"[^\s\u2000-\u206F\u2E00-\u2E7F'!\"#$%&()*+,.:;<=>?@^`{|}~\[\]\\]+"
_TAG_RE = re.compile("#(" + TAG_BODY + ")")
_TAG_BODY_RE = re.compile(TAG_BODY)


def normalise_tag(raw: str) -> str | None:
    """``raw`` (without ``#``) as a tag, or None if Obsidian would not take it.

    A tag must be made of tag characters only, loses a trailing ``/``, and
    must hold at least one character that is not a digit (``1984`` is not a
    tag, ``y1984`` and ``2024/05`` are).
    """
    if not _TAG_BODY_RE.fullmatch(raw):
        return None
    tag = raw.rstrip("/")
    if not tag or tag.isdigit() or not tag.strip("0123456789"):
        return None
    return tag


def find_tags(scan: str, source: str) -> list[str]:
    """Inline ``#tags`` of ``scan`` (masked text with links blanked), in order.

    A ``#`` starts a tag only at the start of a line or after whitespace in
    the *source* text, so ``a#b``, ``(#b)`` and ``**#b**`` are not tags,
    nor is ``` `x`#b ``` although its code span is blank in ``scan``.
    """
    tags: list[str] = []
    for m in _TAG_RE.finditer(scan):
        start = m.start()
        if start and not source[start - 1].isspace():
            continue
        tag = normalise_tag(m.group(1))
        if tag is not None:
            tags.append(tag)
    return tags


# --------------------------------------------------------------------------
# Headings
# --------------------------------------------------------------------------

# Line-start patterns begin with a literal "\n" and run over "\n" + text:
# Python's engine tries a re.M "^" at every position, but jumps between
# occurrences of a literal first character.
_ATX_RE = re.compile(r"\n {0,3}(#{1,6})(?:[ \t]([^\n]*))?(?=\n|\Z)")
_SETEXT_RE = re.compile(r"\n {0,3}(=+|-+)[ \t]*(?=\n|\Z)")
_SETEXT_LINE_RE = re.compile(r" {0,3}(?:=+|-+)[ \t]*$")
_THEMATIC_RE = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")


def _line_kind(line: str) -> str:
    """Classify a (masked, non-blank) line for block structure.

    Returns one of "list", "quote", "table", "heading", "hr" and "text".
    """
    stripped = line.lstrip(" \t")
    first = stripped[:1]
    if first == ">":
        return "quote"
    if first == "|":
        return "table"
    if first == "#" and ATX_LINE_RE.match(stripped) and indent_width(line) < 4:
        return "heading"
    if first in "-*_" and _THEMATIC_RE.match(line):
        return "hr"
    if LIST_ITEM_RE.match(line):
        return "list"
    return "text"


def find_headings(
    scan: str,
    source_lines: list[str],
    code_lines: frozenset[int],
    start_line: int = 0,
    starts: list[int] | None = None,
) -> list[tuple[int, str, int]]:
    """ATX and setext headings of ``scan``, as (level, text, 0-based line).

    The text comes from ``source_lines`` (so inline code in a heading keeps
    its letters), without the closing ``#``s and surrounding whitespace.
    Lines before ``start_line`` are ignored; ``starts`` is
    :func:`line_starts` of ``scan``, if the caller has it already.
    """
    starts = starts or line_starts(scan)
    found: list[tuple[int, str, int]] = []
    padded = "\n" + scan  # offsets in padded are one past those in scan
    if "#" in scan:
        for m in _ATX_RE.finditer(padded):
            i = line_index(starts, m.start())
            if i < start_line:
                continue
            text = ""
            if m.group(2) is not None:
                offset = m.start(2) - 1 - starts[i]
                text = _atx_text(source_lines[i][offset:])
            found.append((len(m.group(1)), text, i))
    masked_lines: list[str] = []
    if "\n" in scan and ("-" in scan or "=" in scan):
        for m in _SETEXT_RE.finditer(padded):
            i = line_index(starts, m.start())
            masked_lines = masked_lines or scan.split("\n")
            first = _setext_paragraph_start(masked_lines, code_lines, i, start_line)
            if first is None:
                continue
            text = " ".join(source_lines[j].strip() for j in range(first, i))
            found.append((1 if m.group(1)[0] == "=" else 2, text, first))
    found.sort(key=lambda h: h[2])
    return found


def _atx_text(text: str) -> str:
    """ATX heading text without its optional closing ``#`` run and blanks.

    Done with string methods: a regex for "blanks, hashes, blanks, end"
    retried at every blank of a long heading is quadratic.
    """
    text = text.strip(" \t")
    bare = text.rstrip("#")
    if len(bare) < len(text) and (not bare or bare[-1] in " \t"):
        text = bare.rstrip(" \t")
    return text


def _setext_paragraph_start(
    lines: list[str], code: frozenset[int], underline: int, start_line: int
) -> int | None:
    """First line of the paragraph a setext underline closes, or None if none.

    The underline must directly follow paragraph text that is not a lazy
    continuation of a list item or blockquote.
    """
    j = underline - 1
    while j >= start_line and j not in code and lines[j].strip(" \t"):
        kind = "hr" if _SETEXT_LINE_RE.match(lines[j]) else _line_kind(lines[j])
        if kind != "text":
            if kind in ("heading", "hr") and j < underline - 1:
                return j + 1
            return None
        j -= 1
    return j + 1 if j + 1 < underline else None


# --------------------------------------------------------------------------
# Block ids
# --------------------------------------------------------------------------

# Obsidian: "Latin letters, numbers, and dashes", after a space or alone.
_BLOCK_ID_RE = re.compile(r"\^([A-Za-z0-9-]+)[ \t]*(?=\n|\Z)")


def _block_owners(
    lines: list[str], code: frozenset[int], start_line: int
) -> tuple[list[int], list[int]]:
    """For every line, the first line of its block and of its "owner".

    One forward pass.  A block is a paragraph, a whole list, a blockquote, a
    table, a code block, or a heading.  The owner is the list item for lines
    of a list, and the block itself otherwise.  Blank lines get -1.  Lazy
    continuation follows CommonMark: an unindented text line directly after
    a paragraph, list, quote or table line belongs to that block.
    """
    n = len(lines)
    block = [-1] * n
    owner = [-1] * n
    kind = ""
    first = item = -1
    prev_blank = True
    for i in range(start_line, n):
        if i not in code and not lines[i].strip(" \t"):
            prev_blank = True
            continue
        this = "code" if i in code else _line_kind(lines[i])
        indented = this != "code" and indent_width(lines[i]) > 0
        if this == "code":
            if not (kind == "code" and (i - 1) in code):
                kind, first = "code", i
        elif this in ("heading", "hr"):
            kind, first = "heading", i
        elif this == "list":
            if kind != "list":
                kind, first = "list", i
            item = i
        elif kind == "list" and indented:
            pass  # list content, across blank lines too
        elif not prev_blank and kind in ("para", "list", "quote", "table") and (
            this == "text" or this == kind
        ):
            pass  # lazy continuation, or the next line of a quote or table
        else:
            kind, first = ("para" if this == "text" else this), i
        block[i] = first
        owner[i] = item if kind == "list" else first
        prev_blank = False
    return block, owner


def find_blocks(
    scan: str,
    code_lines: frozenset[int],
    start_line: int = 0,
    starts: list[int] | None = None,
) -> list[tuple[str, int, int]]:
    """Block ids ``^id`` of ``scan``, as (id, first line, id line), 0-based.

    ``text ^id`` names what its line belongs to: a paragraph (from its first
    line), a list item, a heading, a whole quote or table.  So does ``^id``
    alone on a line that continues a block (``para`` then ``^id``).  ``^id`` alone
    after a blank line names the whole block above it: a list, quote, table,
    code block, paragraph or heading.
    """
    if "^" not in scan:
        return []
    starts = starts or line_starts(scan)
    candidates: list[tuple[str, int, bool]] = []
    for m in _BLOCK_ID_RE.finditer(scan):
        caret = m.start()
        if caret and scan[caret - 1] not in " \t\n":
            continue  # "x^2" and "[[a#^b]]" name no block
        i = line_index(starts, caret)
        if i >= start_line:
            alone = not scan[starts[i] : caret].strip(" \t")
            candidates.append((m.group(1), i, alone))
    if not candidates:
        return []
    lines = scan.split("\n")
    block, owner = _block_owners(lines, code_lines, start_line)
    found: list[tuple[str, int, int]] = []
    for block_id, i, alone in candidates:
        if not alone or block[i] != i:
            first = owner[i]
        else:
            j = i - 1
            while j >= start_line and block[j] < 0:
                j -= 1
            first = block[j] if j >= start_line else i
        found.append((block_id, first, i))
    return found
