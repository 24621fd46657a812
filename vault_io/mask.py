"""Masking: blanking out what Obsidian does not read as Markdown structure.

The parser never builds a Markdown syntax tree. Instead it makes one
*masking* pass (:func:`mask_markdown`) that blanks out every region in which
Obsidian does not see links, tags, headings or block ids: fenced and indented
code, inline code spans, ``%% comments %%``, HTML comments, HTML tags and
HTML blocks, and ``$$ math $$`` and ``$inline math$``. Masked characters become spaces and
newlines are kept, so the masked text has the same length and the same line
numbers as the body: every extractor in :mod:`.markdown` is a plain regex
over it, and the block scanner (:mod:`.blocks`) reads the note's structure
from it line by line.  This pass is the one place that decides what is
code, comment, HTML or math.

All functions here work on LF-normalised text (no ``\\r``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from memvault.vault_io.syntax import (
    ATX_RE,
    FENCE_CLOSE_RE,
    FENCE_OPEN_RE,
    LIST_ITEM_RE,
    LIST_MARKER_CHARS,
    QUOTES_RE,
)

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


#: What hid a line that is blank in the masked text but not in the source.
COMMENT, MATH = "comment", "math"


@dataclass(frozen=True)
class Masked:
    """The result of :func:`mask_markdown`.

    ``text`` has the length and line structure of the input, with masked
    characters replaced by spaces.  ``code_lines`` holds the 0-based indexes
    of lines that belong to a fenced or indented code block or an HTML block:
    they look blank in ``text`` but are not blank lines for block structure;
    ``html_lines`` is the part of them that is HTML.  ``hidden_lines`` maps
    each line a ``%% comment %%``, ``<!-- comment -->`` or ``$$ math $$``
    touches to :data:`COMMENT` or :data:`MATH` (so a line that is blank in
    ``text`` can be told from one that is blank in the note), and
    ``math_spans`` are the ``$inline math$`` spans, which fact text keeps.
    """

    text: str
    code_lines: frozenset[int]
    html_lines: frozenset[int] = frozenset()
    hidden_lines: dict[int, str] = field(default_factory=dict)
    math_spans: tuple[tuple[int, int], ...] = ()


def _blank(segment: str) -> str:
    """Spaces in place of every character of ``segment`` except newlines."""
    if "\n" not in segment:
        return " " * len(segment)
    return "\n".join(" " * len(part) for part in segment.split("\n"))


def indent_width(line: str) -> int:
    """Leading whitespace width, counting a tab as reaching the next stop of 4."""
    stripped = line.lstrip(" \t")
    prefix = line[: len(line) - len(stripped)]
    if "\t" not in prefix:
        return len(prefix)
    return len(prefix.expandtabs(4))


def _mask_blocks(lines: list[str]) -> tuple[set[int], set[int]]:
    """Blank code blocks and HTML blocks in ``lines`` (in place).

    Returns the indexes of the blanked lines, and those of them that are
    HTML.  One pass, one state machine (:class:`_BlockMasker`): a fenced
    block, an indented code block, or an HTML block may be open.
    """
    masker = _BlockMasker(lines)
    for i, line in enumerate(lines):
        masker.step(i, line)
    return masker.code, masker.html


class _BlockMasker:
    """The state of :func:`_mask_blocks`' pass: which block is open, and
    whether a paragraph or a list item is (indented lines continue those)."""

    __slots__ = ("lines", "code", "html", "fence_char", "fence_len", "fence_quoted", "html_raw", "html_block",
                 "indented", "para", "in_list", "prev_blank")

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.code: set[int] = set()
        self.html: set[int] = set()
        self.fence_char = ""
        self.fence_len = 0
        self.fence_quoted = False  # opened inside a blockquote: ends with the quote
        self.html_raw = False  # <script>/<pre>/<style>/<textarea>: ends at closing tag
        self.html_block = False  # other HTML blocks: end at a blank line
        self.indented = False
        self.para = False  # a paragraph is open, so indented lines continue it
        self.in_list = False  # indented lines belong to a list item, not to code
        self.prev_blank = True

    def hide(self, i: int, kind: set[int] | None = None) -> None:
        """Blank line ``i``, counting it as code (and as ``kind``)."""
        self.lines[i] = " " * len(self.lines[i])
        self.code.add(i)
        if kind is not None:
            kind.add(i)

    def step(self, i: int, line: str) -> None:
        """Line ``i``: blanked inside (or opening) a block, else tracked."""
        if self._inside_open(i, line):
            return
        stripped = line.lstrip(" \t")
        if not stripped:
            self.html_block = self.para = False
            self.prev_blank = True
            return
        if self.html_block:
            self.hide(i, self.html)
            return
        indent = 0 if stripped is line else indent_width(line)
        if self._indented_code(i, indent):
            return
        first = stripped[0]
        quote = QUOTES_RE.match(line) if first == ">" else None
        if quote is not None:
            stripped = line[quote.end() :].lstrip(" \t")
            first = stripped[:1]
        if self._opens(i, stripped, first, indent, quote is not None):
            return
        self._track(stripped, first, indent, quote is not None)

    def _inside_open(self, i: int, line: str) -> bool:
        """Whether line ``i`` is inside an open fenced or raw HTML block
        (then blanked, and maybe closing it)."""
        if self.fence_char and self.fence_quoted and not QUOTES_RE.match(line):
            self.fence_char = ""  # the blockquote ended, and the fence with it
        if self.fence_char:
            self.hide(i)
            if _closes_fence(line, self.fence_char, self.fence_len, self.fence_quoted):
                self.fence_char, self.para = "", False
            return True
        if self.html_raw:
            self.hide(i, self.html)
            self.html_raw = not _HTML_RAW_END_RE.search(line)
            return True
        return False

    def _indented_code(self, i: int, indent: int) -> bool:
        """Whether line ``i`` is indented code (then blanked)."""
        if self.indented and indent < 4:
            self.indented = False
        if self.indented or (indent >= 4 and not self.para and not self.in_list):
            # Indented code: only where no paragraph is open (CommonMark) and
            # not under a list item, whose indented lines are list content.
            self.hide(i)
            self.indented = True
            self.prev_blank = False
            return True
        return False

    def _opens(self, i: int, stripped: str, first: str, indent: int, quoted: bool) -> bool:
        """Whether line ``i`` opens a fenced, raw HTML or HTML block (then blanked)."""
        opens = ""  # what this line opens: "fence", "raw" or "html"
        if (first == "`" or first == "~") and (indent < 4 or self.in_list):
            self.fence_len = _fence_opens(stripped)
            if self.fence_len:
                self.fence_char, self.fence_quoted, opens = first, quoted, "fence"
        elif first == "<" and not quoted and indent < 4:
            opens = _html_block_start(stripped, self.para)
            self.html_raw = opens == "raw"
            self.html_block = opens == "html"
        if opens:
            self.hide(i, None if opens == "fence" else self.html)
            self.para = self.prev_blank = False
            return True
        return False

    def _track(self, stripped: str, first: str, indent: int, quoted: bool) -> None:
        """An ordinary line: keep track of paragraphs and lists."""
        if first in LIST_MARKER_CHARS and LIST_ITEM_RE.match(stripped):
            self.in_list = True
        elif indent == 0 and (self.prev_blank or first == "#"):
            self.in_list = False
        self.para = not (first == "#" and not quoted and ATX_RE.match(stripped))
        self.prev_blank = False

def _fence_opens(stripped: str) -> int:
    """The length of the fence run that opens a code block on this line
    (without its indentation), or 0.  A backtick fence's info string holds
    no backtick."""
    fence = FENCE_OPEN_RE.match(stripped)
    if fence is None or (stripped[0] == "`" and "`" in fence.group(2)):
        return 0
    return len(fence.group(1))


def _closes_fence(line: str, char: str, length: int, quoted: bool) -> bool:
    """Whether ``line`` closes the open fence of ``length`` ``char`` characters (a
    fence opened in a quote is closed inside it)."""
    content = QUOTES_RE.sub("", line, count=1) if quoted else line
    close = FENCE_CLOSE_RE.match(content.lstrip(" \t"))
    return bool(close) and close.group(1)[0] == char and len(close.group(1)) >= length  # type: ignore[union-attr]


def _html_block_start(stripped: str, para: bool) -> str:
    """What an unindented line starting with "<" opens: "raw" (``<pre>``,
    ``<script>``... up to its closing tag), "closed" (such a block that
    closes on the same line), "html" (up to a blank line), or nothing.  A
    lone tag cannot interrupt a paragraph (``para``)."""
    if _HTML_RAW_START_RE.match(stripped):
        return "closed" if _HTML_RAW_END_RE.search(stripped) else "raw"
    if _HTML_BLOCK_START_RE.match(stripped) or (not para and _HTML_LONE_TAG_RE.match(stripped)):
        return "html"
    return ""


@lru_cache(maxsize=64)
def _backtick_closer(n: int) -> re.Pattern[str]:
    """A regex for a backtick run of exactly ``n`` characters."""
    return re.compile(rf"(?<!`)`{{{n}}}(?!`)")


def _mask_inline(text: str) -> tuple[str, list[tuple[int, int, str]], list[tuple[int, int]]]:
    """Blank code spans, ``%%`` and HTML comments, HTML tags and math.

    Returns the masked text, the comment and ``$$`` math spans (with
    :data:`COMMENT` or :data:`MATH`), and the inline math spans.
    """
    spans: list[tuple[int, int]] = []
    hidden: list[tuple[int, int, str]] = []
    math: list[tuple[int, int]] = []
    cursor = 0
    # Caches that keep many backtick runs in one long paragraph linear:
    # the next blank line after some offset, and per run length the last
    # search for a closer that failed (from where, up to which limit).
    blank_from, blank_at = len(text) + 1, -1  # nothing cached yet
    failed: dict[int, tuple[int, int]] = {}
    math_miss_until = -1  # many "$" in one paragraph stay linear too
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
            hidden.append((start, end, COMMENT))
        elif first == "$":
            if start and text[start - 1] == "\\":
                continue  # "\$" is a dollar sign
            if not text.startswith("$$", start):
                if math_miss_until > start:
                    continue  # no closing "$" up to the paragraph's end
                found = _inline_math_end(text, start)
                if found < 0:
                    if found == -2:
                        math_miss_until = _paragraph_end(text, start)
                    continue
                end = found
                math.append((start, end))
            else:
                found = text.find("$$", start + 2)
                if found < 0:
                    cursor = start + 2  # a lone "$$" is just text
                    continue
                end = found + 2
                hidden.append((start, end, MATH))
        else:
            end = _html_end(text, start)
            if end < 0:
                continue
            if text.startswith("<!--", start):
                hidden.append((start, end, COMMENT))
        spans.append((start, end))
        cursor = end
    return blank_spans(text, spans), hidden, math


def _html_end(text: str, start: int) -> int:
    """The end of the HTML comment or tag at ``start``, or -1 if none is there."""
    if text.startswith("<!--", start):
        found = text.find("-->", start + 4)
        return len(text) if found < 0 else found + 3
    before = start - 1
    while before > 0 and text[before] in " \t":
        before -= 1
    if before > 0 and text[before] == "(" and text[before - 1] == "]":
        return -1  # "[x](<A Note.md>)": a link destination, not a tag
    tag = _HTML_TAG_RE.match(text, start)
    return -1 if tag is None else tag.end()


_INLINE_MATH_CLOSE_RE = re.compile(r"(?<=[^\s\\])\$(?![0-9$])")


def _paragraph_end(text: str, pos: int) -> int:
    blank = _BLANK_LINE_RE.search(text, pos)
    return blank.start() if blank else len(text)


def _inline_math_end(text: str, start: int) -> int:
    """The end of inline math ``$...$`` opening at ``start``; -1 when this
    ``$`` cannot open math, -2 when no ``$`` up to the paragraph's end can close it.

    Pandoc's rule, which Obsidian follows: the opening ``$`` is followed by a
    non-space, the closing one follows a non-space and is not followed by a
    digit, and both lie in one paragraph; so "$5 and $10" is no math.
    """
    after = start + 1
    if after >= len(text) or text[after].isspace() or text[after] == "$":
        return -1
    close = _INLINE_MATH_CLOSE_RE.search(text, after, _paragraph_end(text, after))
    return -2 if close is None else close.end()


def mask_markdown(text: str) -> Masked:
    """Blank every region of ``text`` in which Obsidian sees no links or tags.

    Block constructs (fenced and indented code, HTML blocks) are handled line
    by line first, then inline ones (code spans, comments, tags, math) in one
    left-to-right regex pass over what is left.
    """
    lines = text.split("\n")
    code, html = _mask_blocks(lines)
    blocked = "\n".join(lines) if code else text
    masked, hidden, math = _mask_inline(blocked)
    return Masked(
        masked,
        frozenset(code),
        frozenset(html) if html else frozenset(),
        _hidden_lines(text, hidden) if hidden else {},
        tuple(math),
    )


def _hidden_lines(text: str, spans: list[tuple[int, int, str]]) -> dict[int, str]:
    """Each line the ``(start, end, kind)`` spans (sorted) touch, with the
    kind of the first span touching it.  Linear: line numbers are counted
    on from the previous span, never from the start of the text."""
    found: dict[int, str] = {}
    line = pos = 0
    for start, end, kind in spans:
        line += text.count("\n", pos, start)
        last = line + text.count("\n", start, end)
        for i in range(line, last + 1):
            found.setdefault(i, kind)
        line, pos = last, end
    return found


def unmask_spans(masked: str, source: str, spans: Sequence[tuple[int, int]]) -> str:
    """``masked`` with the ``(start, end)`` spans (sorted, disjoint) put back
    as they are in ``source`` (e.g. inline math, which fact text keeps)."""
    return _splice(masked, spans, source, False)


def blank_spans(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` with each ``(start, end)`` span (sorted, disjoint) blanked."""
    return _splice(text, spans, text, True)


def _splice(text: str, spans: Sequence[tuple[int, int]], source: str, blank: bool) -> str:
    """``text`` with each span replaced by that of ``source``, blanked or not."""
    if not spans:
        return text
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        pieces.append(text[last:start])
        pieces.append(_blank(source[start:end]) if blank else source[start:end])
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def line_starts(text: str) -> list[int]:
    """Offsets at which each line of ``text`` starts."""
    return [0] + [m.end() for m in _NEWLINE_RE.finditer(text)]


def line_index(starts: list[int], offset: int) -> int:
    """The 0-based line holding ``offset``, given :func:`line_starts`."""
    return bisect_right(starts, offset) - 1
