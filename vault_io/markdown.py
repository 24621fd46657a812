"""Body-level scanners for Obsidian-flavoured Markdown.

The parser never builds a Markdown syntax tree.  Instead it makes one
*masking* pass (:func:`mask_markdown`) that blanks out every region in which
Obsidian does not see links, tags, headings or block ids: fenced and indented
code, inline code spans, ``%% comments %%``, HTML comments, HTML tags and
HTML blocks, and ``$$ math $$``.  Masked characters become spaces and
newlines are kept, so the masked text has the same length and the same line
numbers as the body, and every extractor below is a plain regex over it.

All functions here work on LF-normalised text (no ``\\r``) and return 0-based
line indexes *within the text they were given*; :mod:`vault_io.parser` turns
them into file line numbers.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote

# --------------------------------------------------------------------------
# Masking
# --------------------------------------------------------------------------

# CommonMark HTML tag grammar (open tag with attributes, closing tag).  Quoted
# attribute values may not cross a line: that bounds how far an unclosed quote
# can make the regex search, and multi-line attribute values are vanishingly
# rare in notes.
_ATTR = (
    r"\s++[A-Za-z_:][A-Za-z0-9_.:-]*+"
    r"(?:\s*+=\s*+(?:[^\s\"'=<>`]++|'[^'\n]*'|\"[^\"\n]*\"))?"
)
_OPEN_TAG = rf"<[A-Za-z][A-Za-z0-9-]*+(?:{_ATTR})*\s*+/?>"
_CLOSE_TAG = r"</[A-Za-z][A-Za-z0-9-]*+\s*+>"

# Inline constructs are found left to right and whichever starts first wins,
# which is how CommonMark decides between a code span, a comment and a tag.
_INLINE_START_RE = re.compile(r"[`%$<]")
_BACKTICKS_RE = re.compile(r"`+")
_HTML_TAG_RE = re.compile(rf"{_OPEN_TAG}|{_CLOSE_TAG}")

_FENCE_OPEN_RE = re.compile(r"(`{3,}|~{3,})(.*)$")
_FENCE_CLOSE_RE = re.compile(r"(`{3,}|~{3,})[ \t]*$")
_QUOTE_PREFIX_RE = re.compile(r"(?:[ \t]*>)+[ \t]?")
_LIST_ITEM_RE = re.compile(r"[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")
_LIST_MARKER_CHARS = frozenset("-*+0123456789")
_ATX_LINE_RE = re.compile(r"#{1,6}(?:[ \t]|$)")

# HTML blocks (CommonMark types 1, 6 and 7).  Type 2 (comments) is left to the
# inline pass, which already handles comments spanning lines.
_HTML_RAW_START_RE = re.compile(r"<(?:script|pre|style|textarea)(?:[\s>]|$)", re.I)
_HTML_RAW_END_RE = re.compile(r"</(?:script|pre|style|textarea)>", re.I)
_HTML_BLOCK_START_RE = re.compile(
    r"</?(?:address|article|aside|base|basefont|blockquote|body|caption|center|col"
    r"|colgroup|dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer"
    r"|form|frame|frameset|h[1-6]|head|header|hr|html|iframe|legend|li|link|main"
    r"|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section"
    r"|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul)(?:[ \t]|/?>|$)",
    re.I,
)
_HTML_LONE_TAG_RE = re.compile(rf"(?:{_OPEN_TAG}|{_CLOSE_TAG})[ \t]*$")

_BLANK_LINE_RE = re.compile(r"\n[ \t]*(?:\n|$)")
_NEWLINE_RE = re.compile(r"\n")


@dataclass(frozen=True)
class Masked:
    """The result of :func:`mask_markdown`.

    ``text`` has the length and line structure of the input, with masked
    characters replaced by spaces.  ``code_lines`` holds the 0-based indexes
    of lines that belong to a fenced or indented code block or an HTML block:
    they look blank in ``text`` but are not blank lines for block structure.
    """

    text: str
    code_lines: frozenset[int]


def _blank(segment: str) -> str:
    """Spaces in place of every character of ``segment`` except newlines."""
    if "\n" not in segment:
        return " " * len(segment)
    return "\n".join(" " * len(part) for part in segment.split("\n"))


def _indent_width(line: str) -> int:
    """Leading whitespace width, counting a tab as reaching the next stop of 4."""
    stripped = line.lstrip(" \t")
    prefix = line[: len(line) - len(stripped)]
    if "\t" not in prefix:
        return len(prefix)
    return len(prefix.expandtabs(4))


def _mask_blocks(lines: list[str]) -> set[int]:
    """Blank code blocks and HTML blocks in ``lines`` (in place).

    Returns the indexes of the blanked lines.  One pass, one state machine:
    a fenced block, an indented code block, or an HTML block may be open.
    """
    code: set[int] = set()
    fence_char = ""
    fence_len = 0
    fence_quoted = False  # opened inside a blockquote: ends with the quote
    html_raw = False  # <script>/<pre>/<style>/<textarea>: ends at closing tag
    html_block = False  # other HTML blocks: end at a blank line
    indented = False
    para = False  # a paragraph is open, so indented lines continue it
    in_list = False  # indented lines belong to a list item, not to code
    prev_blank = True

    def hide(i: int) -> None:
        lines[i] = " " * len(lines[i])
        code.add(i)

    for i, line in enumerate(lines):
        if fence_char and fence_quoted and not _QUOTE_PREFIX_RE.match(line):
            fence_char = ""  # the blockquote ended, and the fence with it
        if fence_char:
            hide(i)
            content = _QUOTE_PREFIX_RE.sub("", line, count=1) if fence_quoted else line
            close = _FENCE_CLOSE_RE.match(content.lstrip(" \t"))
            if close and close.group(1)[0] == fence_char and len(close.group(1)) >= fence_len:
                fence_char = ""
                para = False
            continue
        if html_raw:
            hide(i)
            html_raw = not _HTML_RAW_END_RE.search(line)
            continue
        stripped = line.lstrip(" \t")
        if not stripped:
            html_block = para = False
            prev_blank = True
            continue
        if html_block:
            hide(i)
            continue

        indent = 0 if stripped is line else _indent_width(line)
        if indented and indent < 4:
            indented = False
        if indented or (indent >= 4 and not para and not in_list):
            # Indented code: only where no paragraph is open (CommonMark) and
            # not under a list item, whose indented lines are list content.
            hide(i)
            indented = True
            prev_blank = False
            continue

        first = stripped[0]
        quote = _QUOTE_PREFIX_RE.match(line) if first == ">" else None
        if quote is not None:
            stripped = line[quote.end() :].lstrip(" \t")
            first = stripped[:1]
        opens = ""  # what this line opens: "fence", "raw" or "html"
        if (first == "`" or first == "~") and (indent < 4 or in_list):
            fence = _FENCE_OPEN_RE.match(stripped)
            if fence and not (first == "`" and "`" in fence.group(2)):
                fence_char, fence_len = first, len(fence.group(1))
                fence_quoted = quote is not None
                opens = "fence"
        elif first == "<" and quote is None and indent < 4:
            if _HTML_RAW_START_RE.match(stripped):
                html_raw = not _HTML_RAW_END_RE.search(stripped)
                opens = "raw"
            elif _HTML_BLOCK_START_RE.match(stripped) or (
                not para and _HTML_LONE_TAG_RE.match(stripped)
            ):
                html_block = True
                opens = "html"
        if opens:
            hide(i)
            para = prev_blank = False
            continue

        # An ordinary line: keep track of paragraphs and lists.
        if first in _LIST_MARKER_CHARS and _LIST_ITEM_RE.match(stripped):
            in_list = True
        elif indent == 0 and (prev_blank or first == "#"):
            in_list = False
        para = not (first == "#" and quote is None and _ATX_LINE_RE.match(stripped))
        prev_blank = False
    return code


@lru_cache(maxsize=64)
def _backtick_closer(n: int) -> re.Pattern[str]:
    """A regex for a backtick run of exactly ``n`` characters."""
    return re.compile(rf"(?<!`)`{{{n}}}(?!`)")


def _mask_inline(text: str) -> str:
    """Blank code spans, ``%%`` and HTML comments, HTML tags and ``$$`` math."""
    spans: list[tuple[int, int]] = []
    cursor = 0
    # Caches that keep many backtick runs in one long paragraph linear:
    # the next blank line after some offset, and per run length the last
    # search for a closer that failed (from where, up to which limit).
    blank_from, blank_at = len(text) + 1, -1  # nothing cached yet
    failed: dict[int, tuple[int, int]] = {}
    # Scanning for the four opening characters and deciding in Python is
    # several times faster than one alternation regex, which Python's engine
    # tries at every position.
    for m in _INLINE_START_RE.finditer(text):
        start = m.start()
        if start < cursor:
            continue
        first = m.group()
        if first == "`":
            run = _BACKTICKS_RE.match(text, start)
            run_end = run.end() if run else start + 1
            cursor = run_end
            if start and text[start - 1] == "\\":
                continue  # an escaped backtick cannot open a code span
            # A code span lives within one paragraph: stop at a blank line.
            if not (blank_from <= run_end and (blank_at < 0 or run_end <= blank_at)):
                blank = _BLANK_LINE_RE.search(text, run_end)
                blank_from, blank_at = run_end, (blank.start() if blank else -1)
            limit = blank_at if blank_at >= 0 else len(text)
            n = run_end - start
            miss = failed.get(n)
            if miss is not None and miss[0] <= run_end and miss[1] == limit:
                continue
            close = _backtick_closer(n).search(text, run_end, limit)
            if close is None:
                failed[n] = (run_end, limit)
                continue
            end = close.end()
        elif first == "%":
            if not text.startswith("%%", start):
                continue
            found = text.find("%%", start + 2)
            end = len(text) if found < 0 else found + 2  # unclosed: rest of note
        elif first == "$":
            if not text.startswith("$$", start):
                continue
            found = text.find("$$", start + 2)
            if found < 0:
                cursor = start + 2  # a lone "$$" is just text
                continue
            end = found + 2
        elif text.startswith("<!--", start):
            found = text.find("-->", start + 4)
            end = len(text) if found < 0 else found + 3
        else:
            before = start - 1
            while before > 0 and text[before] in " \t":
                before -= 1
            if before > 0 and text[before] == "(" and text[before - 1] == "]":
                continue  # "[x](<A Note.md>)": a link destination, not a tag
            tag = _HTML_TAG_RE.match(text, start)
            if tag is None:
                continue
            end = tag.end()
        spans.append((start, end))
        cursor = end
    return blank_spans(text, spans)


def mask_markdown(text: str) -> Masked:
    """Blank every region of ``text`` in which Obsidian sees no links or tags.

    Block constructs (fenced and indented code, HTML blocks) are handled line
    by line first, then inline ones (code spans, comments, tags, math) in one
    left-to-right regex pass over what is left.
    """
    lines = text.split("\n")
    code = _mask_blocks(lines)
    blocked = "\n".join(lines) if code else text
    return Masked(_mask_inline(blocked), frozenset(code))


def blank_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each ``(start, end)`` span (sorted, disjoint) blanked."""
    if not spans:
        return text
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        pieces.append(text[last:start])
        pieces.append(_blank(text[start:end]))
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def line_starts(text: str) -> list[int]:
    """Offsets at which each line of ``text`` starts."""
    return [0] + [m.end() for m in _NEWLINE_RE.finditer(text)]


def line_index(starts: list[int], offset: int) -> int:
    """The 0-based line holding ``offset``, given :func:`line_starts`."""
    return bisect_right(starts, offset) - 1


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
    if first == "#" and _ATX_LINE_RE.match(stripped) and _indent_width(line) < 4:
        return "heading"
    if first in "-*_" and _THEMATIC_RE.match(line):
        return "hr"
    if _LIST_ITEM_RE.match(line):
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
        indented = this != "code" and _indent_width(lines[i]) > 0
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
