"""The block scanner: one note's Markdown blocks, with line spans and heading paths.

:func:`scan_blocks` is the one place that reads a note's block structure.
It walks the lines of the masked text (:mod:`.mask`, which alone decides
what is code, comment, HTML or math) once and yields :class:`Block` values
in document order: headings (ATX and setext), paragraphs, list items,
blockquotes and callouts, tables, thematic breaks, and the runs of code,
HTML, ``%% comments %%`` and ``$$ math $$`` lines.  The parser (headings,
block ids), the fact segmenter and the chunker all consume it, so they
agree on what a heading is and which heading a line is under.

The rules, where Obsidian and CommonMark leave room:

- An ATX heading is ``#`` to ``######`` and a blank, indented by at most
  three spaces, anywhere outside masked regions and blockquotes (also
  right under a list item, which it ends).  A setext underline (``===``,
  ``---``) makes a heading of the paragraph right above it, but not of a
  list item's text or of a quote.  Headings inside quotes are text.
- A list item starts at a marker (``-``, ``*``, ``+``, ``1.``, ``1)``) at
  any indentation and nests under the nearest open item with a smaller
  marker indentation.  Lines after it up to a blank line continue it
  (lazily, too) unless they start a heading, or, unindented, a quote, a
  break or a table.  After a blank line, an indented line starts a
  paragraph or quote inside the item whose content column it reaches; an
  unindented one ends the list.
- A blockquote runs over its ``>`` lines and the lazy text lines after
  them; its inside is scanned like a note (without headings), and a
  ``[!type]`` first line makes it a callout.
- A table is a row with a ``|`` followed by a delimiter row; it runs over
  the next lines that hold a ``|``.
- A line that is blank once masked but not in the note is a comment or
  math line if a comment or ``$$`` span covers it, and paragraph text
  otherwise (a line holding only ``` `code` ``` or ``$x$`` is text).

Line numbers are 0-based lines of the text given.  All text is LF-normalised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memvault.vault_io.mask import COMMENT, MATH, Masked, indent_width, line_index, mask_markdown
from memvault.vault_io.syntax import (
    ATX_RE,
    BLOCK_ID_RE,
    CALLOUT_RE,
    LIST_ITEM_RE,
    QUOTE_RE,
    SETEXT_RE,
    TABLE_DELIM_RE,
    THEMATIC_RE,
)

PARAGRAPH, ITEM, QUOTE, TABLE, HEADING, BREAK = "paragraph", "item", "quote", "table", "heading", "break"
CODE, HTML = "code", "html"
#: Blocks that hold no prose: what the masking pass hid.
HIDDEN_KINDS = frozenset({CODE, HTML, COMMENT, MATH})

# Line classes: what a line could start.  The hidden ones map to block kinds.
_BLANK, _TEXT, _ATX, _QUOTE, _BREAK, _ITEM, _CODE, _HTML, _COMMENT, _MATH = range(10)
_HIDDEN = {_CODE: CODE, _HTML: HTML, _COMMENT: COMMENT, _MATH: MATH}
_HIDDEN_CLASS = {COMMENT: _COMMENT, MATH: _MATH}
# First characters of a masked line that may make it more than prose (or
# code: a masked code line is blank).  Any other line is paragraph text,
# and takes the fast path.
_MAYBE_STRUCTURE = frozenset(" \t#>-*+_=0123456789")
#: Quotes nest this deep at most; a ">" further in is text.  (Each level is
#: a nested scan: a hostile "> > > ..." line must not exhaust the stack.)
MAX_QUOTE_DEPTH = 32


@dataclass(slots=True)
class Block:
    """One block of a note's structure, as the scanner reads it (treat as
    read-only). A block *id* (``^id``) and the lines it names is another
    thing: :class:`memvault.vault_io.note.BlockId`.

    ``start`` and ``end`` are its first and last line (0-based, inclusive).
    ``headings`` is the heading path in force, outermost first (for a
    heading, up to and including itself; headings without text are left
    out).  ``parent`` is the index, in the scanner's list, of the list item
    or quote the block sits in, or -1.  ``level`` is a heading's level or an
    item's nesting depth (0 for an item of a top-level list); ``text`` is a
    heading's text as written (closing ``#`` run and outer blanks dropped,
    setext lines joined by a space) or a callout's type.
    """

    kind: str
    start: int
    end: int
    headings: tuple[str, ...] = ()
    parent: int = -1
    level: int = 0
    text: str = ""


def collapse(text: str) -> str:
    """``text`` with runs of whitespace made one space, trimmed."""
    return " ".join(text.split())  # str.split() knows Unicode white space, and beats a regex


def atx_text(text: str) -> str:
    """ATX heading text (what follows the opening ``#`` run) without its
    optional closing ``#`` run and blanks.

    Done with string methods: a regex for "blanks, hashes, blanks, end"
    retried at every blank of a long heading is quadratic.
    """
    text = text.strip(" \t")
    bare = text.rstrip("#")
    if len(bare) < len(text) and (not bare or bare[-1] in " \t"):
        text = bare.rstrip(" \t")
    return text


def scan_blocks(
    text: str,
    masked: Masked | None = None,
    *,
    lines: list[str] | None = None,
    headings_from: int = 0,
) -> list[Block]:
    """The blocks of ``text`` (LF line endings), in document order, parents
    before the blocks inside them.

    ``masked`` is :func:`~.mask.mask_markdown` of ``text`` and ``lines`` its
    lines, if the caller has them.  Lines before ``headings_from`` hold no
    headings (the broken front-matter of a note whose YAML did not load).
    """
    if masked is None:
        masked = mask_markdown(text)
    raw = lines if lines is not None else text.split("\n")
    out: list[Block] = []
    _Scanner(raw, masked.text.split("\n"), masked, out, headings_from=headings_from).run()
    return out


class _Scanner:
    """One pass over a run of lines: the whole note, or the inside of a
    quote (then ``raw`` and ``mlines`` hold the lines without their quote
    prefix, ``base`` is the note line of the first one, and headings are off).
    """

    def __init__(
        self,
        raw: list[str],
        mlines: list[str],
        masked: Masked,
        out: list[Block],
        *,
        base: int = 0,
        parent: int = -1,
        headings_from: int | None = 0,
        path: tuple[str, ...] = (),
        depth: int = 0,
    ) -> None:
        self.raw, self.mlines, self.masked, self.out = raw, mlines, masked, out
        self.base, self.parent, self.depth = base, parent, depth
        self.headings_from = headings_from  # None: no headings at all (inside a quote)
        self.trail: list[tuple[int, str]] = []  # open headings: (level, text)
        self.path = path
        self.para = -1  # index of the paragraph that the next text line continues
        self.items: list[tuple[int, int, int]] = []  # open list items: (marker indent, content indent, index)
        self.blank_before = False  # a blank (or hidden) line since the last list line
        self.indent = 0  # of the line just classified
        self.match: re.Match[str] | None = None  # the list marker of the line just classified

    # -- classification ----------------------------------------------------

    def classify(self, i: int) -> int:
        """The class of line ``i``; sets :attr:`indent` (and :attr:`match`
        for a list item)."""
        n = i + self.base
        masked = self.masked
        if n in masked.code_lines:
            self.indent = indent_width(self.raw[i])
            return _HTML if n in masked.html_lines else _CODE
        line = self.mlines[i]
        stripped = line.lstrip(" \t")
        if not stripped:
            hidden = masked.hidden_lines.get(n) if masked.hidden_lines else None
            if hidden is not None:
                self.indent = indent_width(self.raw[i])
                return _HIDDEN_CLASS[hidden]
            raw = self.raw[i]
            if not raw.strip():
                return _BLANK
            self.indent = indent_width(raw)
            return _TEXT  # only inline code, math or HTML tags: paragraph text
        pos = len(line) - len(stripped)
        indent = 0
        if pos:
            if self.raw[i][:pos].strip(" \t"):
                self.indent = indent_width(self.raw[i])
                return _TEXT  # starts with a masked span: nothing structural
            indent = indent_width(line)
        self.indent = indent
        first = stripped[0]
        if first == "#":
            if indent < 4 and self.headings_from is not None and n >= self.headings_from and ATX_RE.match(stripped):
                return _ATX
        elif first == ">":
            if indent < 4 and self.depth < MAX_QUOTE_DEPTH:
                return _QUOTE
        elif first in _MAYBE_STRUCTURE:
            if first in "-*_" and THEMATIC_RE.match(line):
                return _BREAK
            if first != "_" and first != "=":
                self.match = LIST_ITEM_RE.match(line)
                if self.match is not None:
                    return _ITEM
        return _TEXT

    def atx_like(self, i: int) -> bool:
        """Whether line ``i`` reads as an ATX heading where headings count
        (so it cannot continue a paragraph lazily, even inside a quote)."""
        stripped = self.mlines[i].lstrip(" \t")
        return stripped[:1] == "#" and self.indent < 4 and ATX_RE.match(stripped) is not None

    def table_starts(self, i: int) -> bool:
        """Whether a table (a row with a pipe, then a delimiter row) starts at ``i``."""
        raw = self.raw
        if i + 1 >= len(raw) or "|" not in raw[i]:
            return False
        delim = raw[i + 1]
        if "-" not in delim or (i + 1 + self.base) in self.masked.code_lines:
            return False
        return bool(TABLE_DELIM_RE.match(delim)) and ("|" in delim or "|" in raw[i].strip()[1:-1])

    # -- the pass ----------------------------------------------------------

    def run(self, i: int = 0) -> None:
        """Scan lines ``i`` to the end."""
        mlines, n, base = self.mlines, len(self.raw), self.base
        code, hidden = self.masked.code_lines, self.masked.hidden_lines
        while i < n:
            first = mlines[i][:1]
            if i + base in code or (hidden and i + base in hidden):
                kind = self.classify(i)
            elif not first:  # an empty line: the other common case
                self.para = -1
                self.blank_before = bool(self.items)
                i += 1
                continue
            elif first not in _MAYBE_STRUCTURE:
                # Prose at the margin, the common line: nothing to classify.
                self.indent = 0
                if self.items:
                    taken = self.list_line(i, _TEXT)
                    i = taken if taken >= 0 else self.block(i, _TEXT)
                else:
                    i = self.block(i, _TEXT)
                continue
            elif first in "-*+" and mlines[i][1:2] == " " and self.para < 0 and not THEMATIC_RE.match(mlines[i]):
                # A bullet at the margin, the next most common line (with no
                # paragraph open, it cannot be a setext underline).
                self.indent = 0
                self.match = LIST_ITEM_RE.match(mlines[i])
                self.item(i)
                i += 1
                continue
            else:
                kind = self.classify(i)
            if kind == _BLANK:
                self.para = -1
                self.blank_before = bool(self.items)
                i += 1
            elif kind >= _CODE:
                i = self.hidden(i, kind)
            elif self.para >= 0 and kind != _ATX and self.setext(i):
                i += 1
            elif kind == _ATX:
                self.end_list()
                self.heading_atx(i)
                i += 1
            elif self.items:
                taken = self.list_line(i, kind)
                i = taken if taken >= 0 else self.block(i, kind)
            else:
                i = self.block(i, kind)

    def block(self, i: int, kind: int) -> int:
        """Line ``i`` outside any list (or ending one): start or continue a
        block; returns the next line to look at."""
        if kind == _TEXT:
            if "|" in self.raw[i] and self.table_starts(i):
                self.para = -1
                return self.table(i)
            if self.para >= 0:
                self.out[self.para].end = i + self.base
            else:
                self.para = self.add(PARAGRAPH, i, i, self.parent)
            return i + 1
        self.para = -1
        if kind == _QUOTE:
            return self.quote(i, self.parent)
        if kind == _BREAK:
            self.add(BREAK, i, i, self.parent)
        else:
            self.item(i)
        return i + 1

    def list_line(self, i: int, kind: int) -> int:
        """Line ``i`` while a list is open: the next line to look at, or -1
        when the line ends the list and is to be read as an ordinary line."""
        if kind == _ITEM:
            self.item(i)
            return i + 1
        indent = self.indent
        if not self.blank_before:
            if self.para >= 0:  # a paragraph inside an item runs on
                self.out[self.para].end = i + self.base
                return i + 1
            if indent == 0 and (kind == _QUOTE or kind == _BREAK or ("|" in self.raw[i] and self.table_starts(i))):
                self.end_list()
                return -1
            self.out[self.items[-1][2]].end = i + self.base  # the item's text runs on
            return i + 1
        if indent == 0:
            self.end_list()
            return -1
        owner = self.owner(indent)
        self.blank_before = False
        if self.mlines[i].lstrip(" \t").startswith(">") and self.depth < MAX_QUOTE_DEPTH:
            return self.quote(i, owner)
        self.para = self.add(PARAGRAPH, i, i, owner)
        return i + 1

    # -- blocks ------------------------------------------------------------

    def add(self, kind: str, start: int, end: int, parent: int, level: int = 0, text: str = "") -> int:
        """Append a block (lines relative to this scanner); returns its index."""
        self.out.append(Block(kind, start + self.base, end + self.base, self.path, parent, level, text))
        return len(self.out) - 1

    def hidden(self, i: int, kind: int) -> int:
        """The run of code, HTML, comment or math lines at ``i`` (``kind``
        is their line class)."""
        j, n, base = i + 1, len(self.raw), self.base
        indent = self.indent
        if kind == _CODE or kind == _HTML:  # the masking pass listed these lines
            code, html = self.masked.code_lines, self.masked.html_lines
            while j < n and j + base in code and (j + base in html) == (kind == _HTML):
                j += 1
        else:
            while j < n and self.classify(j) == kind:
                j += 1
        self.para = -1
        if self.items and indent > 0:
            parent = self.owner(indent)
            self.blank_before = True  # what follows is after a gap, as after a blank line
        else:
            self.end_list()
            parent = self.parent
        self.add(_HIDDEN[kind], i, j - 1, parent)
        return j

    def item(self, i: int) -> None:
        """A list item at ``i``, nested under the open item it indents past."""
        prefix, marker, gap = self.match.groups()  # type: ignore[union-attr]
        indent = indent_width(prefix) if prefix else 0
        items = self.items
        while items and items[-1][0] >= indent:
            items.pop()
        parent = items[-1][2] if items else self.parent
        content = indent + len(marker) + ((len(gap.expandtabs(4)) if "\t" in gap else len(gap)) if gap else 1)
        out = self.out
        out.append(Block(ITEM, i + self.base, i + self.base, self.path, parent, len(items)))
        items.append((indent, content, len(out) - 1))
        self.para = -1
        self.blank_before = False

    def owner(self, indent: int) -> int:
        """The open item that a line indented by ``indent`` after a gap
        belongs to: the deepest whose content column it reaches (give or
        take one), else the outermost."""
        items = self.items
        k = len(items)
        while k > 1 and items[k - 1][1] > indent + 1:
            k -= 1
        return items[k - 1][2]

    def end_list(self) -> None:
        """Close every open list item."""
        self.items.clear()
        self.blank_before = False

    def table(self, i: int) -> int:
        """The table at ``i`` (header, delimiter, rows); returns the next line."""
        j = i + 2
        raw, mlines, code = self.raw, self.mlines, self.masked.code_lines
        while j < len(raw) and "|" in raw[j] and mlines[j].strip() and (j + self.base) not in code:
            j += 1
        self.add(TABLE, i, j - 1, self.parent)
        return j

    # -- headings ----------------------------------------------------------

    def heading_atx(self, i: int) -> None:
        """The ATX heading on line ``i``."""
        line = self.mlines[i]
        stripped = line.lstrip(" \t")
        m = ATX_RE.match(stripped)
        assert m is not None
        level = len(m.group().rstrip(" \t"))
        start = len(line) - len(stripped) + m.end()
        text = atx_text(self.raw[i][start:]) if m.end() > level else ""
        self.para = -1
        self.enter(self.add(HEADING, i, i, self.parent, level, text))

    def setext(self, i: int) -> bool:
        """Make the open paragraph a heading if line ``i`` underlines it."""
        if self.headings_from is None:
            return False
        line = self.mlines[i]
        first = line.lstrip(" \t")[:1]
        if first not in ("=", "-") or not SETEXT_RE.match(line):
            return False
        block = self.out[self.para]
        if block.start < self.headings_from:
            return False
        block.kind = HEADING
        block.level = 1 if first == "=" else 2
        block.text = " ".join(self.raw[k - self.base].strip() for k in range(block.start, block.end + 1))
        block.end = i + self.base
        block.parent = self.parent  # a heading ends the list it was under
        self.end_list()
        self.enter(self.para)
        self.para = -1
        return True

    def enter(self, index: int) -> None:
        """Update the heading path with the heading at ``index``: it closes
        every heading of its level or deeper and, if it has text, opens."""
        block = self.out[index]
        trail = self.trail
        while trail and trail[-1][0] >= block.level:
            trail.pop()
        key = collapse(block.text)
        if key:
            trail.append((block.level, key))
        self.path = block.headings = tuple(text for _, text in trail)

    # -- quotes ------------------------------------------------------------

    def quote(self, i: int, parent: int) -> int:
        """The blockquote (or callout) at ``i`` and, scanned like a note
        without headings, what it holds; returns the next line."""
        raw, mlines, code = self.raw, self.mlines, self.masked.code_lines
        inner_raw: list[str] = []
        inner_masked: list[str] = []
        j, n = i, len(raw)
        text_open = False  # the quote's last line was text: a lazy line may follow
        while j < n:
            line = mlines[j]
            if j + self.base in code:
                if not raw[j].lstrip(" \t").startswith(">"):
                    break
                cut = QUOTE_RE.match(raw[j]).end()  # type: ignore[union-attr]
                text_open = False
            elif line.lstrip(" \t")[:1] == ">":
                cut = QUOTE_RE.match(line).end()  # type: ignore[union-attr]
                text_open = bool(line[cut:].strip())
            elif j > i and text_open and self.classify(j) == _TEXT and not self.atx_like(j):
                cut = 0  # a lazy line: it continues the quote's last paragraph
            else:
                break
            inner_raw.append(raw[j][cut:])
            inner_masked.append(line[cut:])
            j += 1
        index = self.add(QUOTE, i, j - 1, parent)
        first = next((k for k, line in enumerate(inner_masked) if line.strip()), None)
        start = 0
        if first is not None and inner_masked[first].lstrip(" \t").startswith("[!"):
            callout = CALLOUT_RE.match(inner_raw[first])
            if callout is not None:
                self.out[index].text = callout.group(1).strip()
                start = first + 1  # the title line is the callout's, not a paragraph
        inner = _Scanner(
            inner_raw, inner_masked, self.masked, self.out,
            base=i + self.base, parent=index, headings_from=None, path=self.path, depth=self.depth + 1,
        )
        inner.run(start)
        return j


# --------------------------------------------------------------------------
# What the parser reads off the blocks
# --------------------------------------------------------------------------


def strip_block_id(line: str) -> str:
    """``line`` without a trailing ``^block-id`` (and the blanks before it)."""
    m = BLOCK_ID_RE.search(line)
    if m is None or (m.start() and line[m.start() - 1] not in " \t"):
        return line
    return line[: m.start()].rstrip(" \t")


def headings_of(blocks: list[Block]) -> list[tuple[int, str, int]]:
    """(level, text, first line) of every heading."""
    return [(b.level, b.text, b.start) for b in blocks if b.kind == HEADING]


def find_block_ids(
    scan: str, blocks: list[Block], starts: list[int], start_line: int = 0
) -> list[tuple[str, int, int]]:
    """Block ids ``^id`` of ``scan`` (masked text), as (id, first line, id line).

    ``text ^id`` names what its line belongs to: a paragraph (from its first
    line), a list item, a heading, a whole quote or table.  So does ``^id``
    alone on a line that continues a block (``para`` then ``^id``).  ``^id``
    alone after a blank line names the whole block above it: a list, quote,
    table, code block, paragraph or heading.  ``starts`` is
    :func:`~.mask.line_starts` of ``scan``; ids before ``start_line`` are
    ignored.
    """
    candidates: list[tuple[str, int, bool]] = []
    for m in BLOCK_ID_RE.finditer(scan):
        caret = m.start()
        if caret and scan[caret - 1] not in " \t\n":
            continue  # "x^2" and "[[a#^b]]" name no block
        i = line_index(starts, caret)
        if i >= start_line:
            candidates.append((m.group(1), i, not scan[starts[i] : m.start()].strip(" \t")))
    if not candidates:
        return []
    at = [-1] * len(starts)  # the innermost block of every line
    for k, b in enumerate(blocks):
        at[b.start : b.end + 1] = [k] * (b.end - b.start + 1)
    found: list[tuple[str, int, int]] = []
    for block_id, i, alone in candidates:
        k = at[i]
        if k < 0:
            first = i
        elif alone and blocks[k].start == i and blocks[k].parent < 0:
            j = i - 1  # "^id" alone, after a gap: the block above
            while j >= start_line and at[j] < 0:
                j -= 1
            first = _whole(blocks, at[j]) if j >= start_line else i
        else:
            first = _owner(blocks, k)
        found.append((block_id, first, i))
    return found


def _root(blocks: list[Block], k: int) -> int:
    while blocks[k].parent >= 0:
        k = blocks[k].parent
    return k


def _owner(blocks: list[Block], k: int) -> int:
    """First line of what a line of block ``k`` belongs to: its list item
    in a list, else its outermost block (a whole quote)."""
    root = _root(blocks, k)
    if blocks[root].kind != ITEM:
        return blocks[root].start
    while blocks[k].kind != ITEM:
        k = blocks[k].parent
    return blocks[k].start


def _whole(blocks: list[Block], k: int) -> int:
    """First line of the outermost block holding block ``k``; for a list
    item, of the whole list."""
    root = _root(blocks, k)
    if blocks[root].kind == ITEM:
        j = root - 1
        while j >= 0 and (blocks[j].parent >= 0 or blocks[j].kind == ITEM):
            if blocks[j].parent < 0:
                root = j
            j -= 1
    return blocks[root].start
