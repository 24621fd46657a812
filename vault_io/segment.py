"""Cutting a note's body into fact-sized segments, with file line numbers.

One forward pass over the body's lines, with the parser's masking
(:func:`vault_io.markdown.mask_markdown`) telling code, comments, HTML and
math apart from text. What becomes a segment:

- every list item (task items keep their checkbox character), with the
  items above it (and a lead-in line such as ``Tools:`` just before the
  list, and a callout's title) as its *context*;
- every sentence of a paragraph (also indented paragraphs inside list items);
- every table row, as ``Column: value; Column: value``;
- the body of a callout or block quote, segmented by the same rules.

What never does: headings (they become the *heading path* of what follows),
code blocks, HTML blocks, ``%% comments %%``, ``$$ math $$``, embeds,
thematic breaks, table delimiter rows, a callout's ``[!type]`` line, and
private key blocks. The text of a segment is the Markdown as written (links,
emphasis and inline code kept), with list markers, checkboxes, quote
prefixes, ``^block-ids``, embeds, comments and HTML tags removed and
whitespace collapsed. Filtering (too short, pure links) and redacting
secrets in the text are the caller's job; context entries and heading paths,
which are indexed with every fact below them, are redacted here (before a
long one is cut, so no token is cut into an unrecognisable prefix), and a
password value is never split into two sentences.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memvault.vault_io.mask import line_starts, mask_markdown
from memvault.vault_io.note import Heading
from memvault.vault_io.secrets import always_value_spans, private_key_lines, redact


@dataclass(frozen=True)
class Segment:
    """A candidate fact: one list item, sentence or table row."""

    kind: str  # "item" | "task" | "sentence" | "row"
    text: str
    line_start: int  # 1-based file lines
    line_end: int
    headings: tuple[str, ...] = ()  # enclosing headings, outermost first
    context: tuple[str, ...] = ()  # lead-in, callout title, parent list items
    task: str | None = None  # the checkbox character of a task item


@dataclass
class _Line:
    no: int  # 1-based file line
    text: str  # original text, container prefixes removed
    masked: str  # masked text, same prefixes removed
    skip: bool = False  # code or HTML block line, private key line

    @property
    def blank(self) -> bool:
        return self.skip or not self.masked.strip()


_ITEM_RE = re.compile(r"([ \t]*)([-*+]|\d{1,9}[.)])([ \t]+|$)")
_TASK_RE = re.compile(r"\[(.)\](?:[ \t]+|$)")
_QUOTE_RE = re.compile(r" {0,3}>[ \t]?")
_CALLOUT_RE = re.compile(r"[ \t]*\[!([^\]\n]*)\][+-]?[ \t]*(.*)$")
_HR_RE = re.compile(r" {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_DELIM_RE = re.compile(r"[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_CELL_SPLIT_RE = re.compile(r"(?<!\\)\|")
_BLOCK_ID_RE = re.compile(r"(?:^|[ \t])\^[A-Za-z0-9-]+[ \t]*$")
_EMBED_RE = re.compile(r"!\[\[[^\[\]\n]*\]\]|!\[[^\]\n]*\]\([^)\n]*\)")
_SPACES_RE = re.compile(r" {1,}")

#: Longest a context entry (a parent item, a lead-in) is kept.
CONTEXT_CHARS = 80


def collapse(text: str) -> str:
    """``text`` with runs of whitespace made one space, trimmed."""
    return " ".join(text.split())  # str.split() knows Unicode white space, and beats a regex


def _indent(prefix: str) -> int:
    return len(prefix.expandtabs(4))


def _clean(line: _Line) -> str:
    """The line's text without comments, HTML tags and math (masked spans
    that are not inline code), embeds and a trailing block id."""
    text = line.text
    if line.masked != text:
        pieces: list[str] = []
        last = 0
        for m in _SPACES_RE.finditer(line.masked):
            start, end = m.span()
            original = text[start:end]
            if not original.strip() or original.lstrip().startswith("`"):
                continue  # real blanks, or an inline code span: keep as written
            pieces.append(text[last:start])
            pieces.append(" ")
            last = end
        pieces.append(text[last:])
        text = "".join(pieces)
    if "!" in text:
        text = _EMBED_RE.sub(" ", text)
    return text


def _short(text: str) -> str:
    """``text`` cut to :data:`CONTEXT_CHARS`, secrets redacted first (a cut
    through a token would leave a prefix no pattern recognises)."""
    text = redact(text)[0]
    return text if len(text) <= CONTEXT_CHARS else text[: CONTEXT_CHARS - 1].rstrip() + "…"


class _Segmenter:
    """State of one pass: the heading stack and the segments found so far."""

    def __init__(self, headings: dict[int, tuple[int, str, int]], block_lines: set[int]) -> None:
        self.headings = headings  # first file line -> (level, text, last file line)
        self.block_lines = block_lines  # file lines that end with a ^block-id
        self.stack: list[tuple[int, str]] = []
        self.out: list[Segment] = []
        # Secrets redacted in text that is context but never a segment of its
        # own (headings, lead-ins, callout titles), so the caller counts them.
        self.redacted = 0

    def _redact_counted(self, text: str) -> str:
        text, n = redact(text)
        self.redacted += n
        return text

    # -- helpers ---------------------------------------------------------

    def text_of(self, line: _Line, start: int = 0) -> str:
        """Cleaned text of ``line`` from column ``start``."""
        part = _Line(line.no, line.text[start:], line.masked[start:], line.skip)
        text = _clean(part)
        if line.no in self.block_lines:
            text = _BLOCK_ID_RE.sub("", text.rstrip())
        return text

    def heading_path(self) -> tuple[str, ...]:
        return tuple(text for _, text in self.stack)

    def emit(self, kind: str, text: str, first: int, last: int, context: tuple[str, ...], task: str | None = None) -> None:
        text = collapse(text)
        if text:
            self.out.append(Segment(kind, text, first, last, self.heading_path(), context, task))

    # -- block dispatch --------------------------------------------------

    def blocks(self, lines: list[_Line], context: tuple[str, ...], top: bool) -> None:
        """Segment a run of lines (the body, or the inside of a quote)."""
        i, n = 0, len(lines)
        leadin: tuple[str, ...] = ()
        while i < n:
            line = lines[i]
            if top and line.no in self.headings:
                level, text, last = self.headings[line.no]
                while self.stack and self.stack[-1][0] >= level:
                    self.stack.pop()
                self.stack.append((level, self._redact_counted(collapse(text))))
                leadin = ()
                while i < n and lines[i].no <= last:
                    i += 1
                continue
            if line.blank:
                i += 1
                continue
            if _QUOTE_RE.match(line.text) and line.text.lstrip(" ").startswith(">"):
                i = self.quote(lines, i, context)
                leadin = ()
            elif _HR_RE.match(line.text):
                i += 1
                leadin = ()
            elif _ITEM_RE.match(line.text):
                i = self.list_block(lines, i, context + leadin, top)
                leadin = ()
            elif self.table_starts(lines, i):
                i = self.table(lines, i, context)
                leadin = ()
            else:
                i, leadin = self.paragraph(lines, i, context, top)

    def starts_block(self, lines: list[_Line], i: int, top: bool) -> bool:
        """Whether line ``i`` interrupts a paragraph."""
        line = lines[i]
        if line.blank or (top and line.no in self.headings):
            return True
        text = line.text
        return bool(
            (text.lstrip(" ").startswith(">") and _QUOTE_RE.match(text))
            or _HR_RE.match(text)
            or _ITEM_RE.match(text)
            or self.table_starts(lines, i)
        )

    # -- paragraphs ------------------------------------------------------

    def paragraph(
        self, lines: list[_Line], i: int, context: tuple[str, ...], top: bool
    ) -> tuple[int, tuple[str, ...]]:
        """Sentences of the paragraph at ``i``; returns the next line and a
        lead-in (``Tools:``) if the paragraph introduces a list."""
        start = i
        i += 1
        while i < len(lines) and not self.starts_block(lines, i, top):
            i += 1
        sentences = self.sentences(lines[start:i])
        j = i
        while j < len(lines) and lines[j].blank and not (top and lines[j].no in self.headings):
            j += 1
        leadin: tuple[str, ...] = ()
        if (
            sentences
            and sentences[-1][0].endswith(":")
            and j < len(lines)
            and _ITEM_RE.match(lines[j].text)
            and not _HR_RE.match(lines[j].text)
        ):
            leadin = (_short(self._redact_counted(sentences.pop()[0])),)
        for text, first, last in sentences:
            self.emit("sentence", text, first, last, context)
        return i, leadin

    def sentences(self, lines: Sequence[_Line], indent_ok: bool = True) -> list[tuple[str, int, int]]:
        """(sentence, first line, last line) for a paragraph's lines."""
        parts = [self.text_of(line).strip() for line in lines]
        joined = "\n".join(parts)
        starts = line_starts(joined)
        found: list[tuple[str, int, int]] = []
        for s, e in split_sentences(joined):
            text = collapse(joined[s:e])
            if not text:
                continue
            s += len(joined[s:e]) - len(joined[s:e].lstrip())  # the line the words start on
            e -= len(joined[s:e]) - len(joined[s:e].rstrip())
            first = lines[_line_at(starts, s)].no
            last = lines[_line_at(starts, max(s, e - 1))].no
            found.append((text, first, last))
        return found

    # -- lists -----------------------------------------------------------

    def list_block(self, lines: list[_Line], i: int, context: tuple[str, ...], top: bool) -> int:
        """Every item of the list at ``i`` (nested ones with their parents as context)."""
        n = len(lines)
        # Open items: [marker indent, content indent, text parts, first line, last line,
        # task, context, flushed, text as context]
        stack: list[list] = []
        blank_before = False

        def flush(item: list) -> None:
            if item[7]:
                return
            item[7] = True
            text = collapse(" ".join(item[2]))
            item[8] = _short(text)  # its form as context of the items below it
            kind = "task" if item[5] is not None else "item"
            self.emit(kind, text, item[3], item[4], item[6], item[5])

        def parents(below: int) -> tuple[str, ...]:
            found = (it[8] if it[7] else _short(collapse(" ".join(it[2]))) for it in stack[:below])
            return tuple(text for text in found if text)

        while i < n:
            line = lines[i]
            if top and line.no in self.headings:
                break
            if line.blank:
                blank_before = True
                i += 1
                continue
            m = _ITEM_RE.match(line.text)
            if m and not _HR_RE.match(line.text):
                indent = _indent(m.group(1))
                while stack and stack[-1][0] >= indent:
                    flush(stack.pop())
                for it in stack:
                    flush(it)  # a parent's text is complete once a child starts
                gap = m.group(3)
                content_indent = indent + len(m.group(2)) + (len(gap.expandtabs(4)) if gap else 1)
                text = self.text_of(line, m.end())
                task = None
                tm = _TASK_RE.match(text.lstrip())
                if tm:
                    task = tm.group(1)
                    text = text.lstrip()[tm.end():]
                item_context = context + parents(len(stack))
                stack.append([indent, content_indent, [text], line.no, line.no, task, item_context, False, ""])
                blank_before = False
                i += 1
                continue
            raw_indent = _indent(line.text[: len(line.text) - len(line.text.lstrip(" \t"))])
            if blank_before:
                if raw_indent == 0 or not stack:
                    break  # the list ended at the blank line
                # An indented paragraph (or quote) inside an item.
                owner = len(stack)
                while owner > 1 and stack[owner - 1][1] > raw_indent + 1:
                    owner -= 1
                inner_context = context + parents(owner)
                if line.text.lstrip(" \t").startswith(">"):
                    j = i
                    run: list[_Line] = []
                    while j < n and not lines[j].blank and lines[j].text.lstrip(" \t").startswith(">"):
                        cut = len(lines[j].text) - len(lines[j].text.lstrip(" \t"))
                        run.append(_Line(lines[j].no, lines[j].text[cut:], lines[j].masked[cut:], lines[j].skip))
                        j += 1
                    self.quote(run, 0, inner_context)
                    i = j
                else:
                    j = i + 1
                    while j < n and not lines[j].blank and not _ITEM_RE.match(lines[j].text) and not (
                        top and lines[j].no in self.headings
                    ):
                        j += 1
                    for text, first, last in self.sentences(lines[i:j]):
                        self.emit("sentence", text, first, last, inner_context)
                    i = j
                blank_before = False
                continue
            if raw_indent == 0 and (
                (line.text.startswith(">")) or _HR_RE.match(line.text) or self.table_starts(lines, i)
            ):
                break
            if stack and not stack[-1][7]:
                stack[-1][2].append(self.text_of(line))
                stack[-1][4] = line.no
            i += 1
        for it in stack:
            flush(it)
        return i

    # -- quotes and callouts ---------------------------------------------

    def quote(self, lines: list[_Line], i: int, context: tuple[str, ...]) -> int:
        """The block quote (or callout) at ``i``, segmented like a body."""
        inner: list[_Line] = []
        while i < len(lines):
            line = lines[i]
            m = _QUOTE_RE.match(line.text)
            if not m or not line.text.lstrip(" ").startswith(">"):
                break
            k = m.end()
            inner.append(_Line(line.no, line.text[k:], line.masked[k:], line.skip))
            i += 1
        for j, line in enumerate(inner):
            if line.blank:
                continue
            callout = _CALLOUT_RE.match(line.text)
            if callout:
                title = self._redact_counted(collapse(self.text_of(_Line(line.no, callout.group(2), callout.group(2)))))
                inner[j] = _Line(line.no, "", "", True)
                if title:
                    context = context + (_short(title),)
            break
        self.blocks(inner, context, top=False)
        return i

    # -- tables ----------------------------------------------------------

    def table_starts(self, lines: list[_Line], i: int) -> bool:
        """Whether a table (header row, then a delimiter row) starts at ``i``."""
        if i + 1 >= len(lines) or "|" not in lines[i].text or lines[i].blank:
            return False
        delim = lines[i + 1].text
        return "-" in delim and bool(_DELIM_RE.match(delim)) and ("|" in delim or "|" in lines[i].text.strip()[1:-1])

    def table(self, lines: list[_Line], i: int, context: tuple[str, ...]) -> int:
        """One ``Column: value; ...`` segment per body row of the table at ``i``."""
        headers = _cells(self.text_of(lines[i]))
        i += 2
        while i < len(lines) and not lines[i].blank and "|" in lines[i].text:
            line = lines[i]
            cells = _cells(self.text_of(line))
            pairs = []
            for k, cell in enumerate(cells[: max(len(headers), 1)] if headers else cells):
                if not cell:
                    continue
                head = headers[k] if k < len(headers) and headers[k] else f"Column {k + 1}"
                pairs.append(f"{head}: {cell}")
            if pairs:
                self.emit("row", "; ".join(pairs), line.no, line.no, context)
            i += 1
        return i


def _cells(row: str) -> list[str]:
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [collapse(cell.replace("\\|", "|")) for cell in _CELL_SPLIT_RE.split(row)]


def _line_at(starts: list[int], offset: int) -> int:
    from bisect import bisect_right

    return bisect_right(starts, offset) - 1


# --------------------------------------------------------------------------
# Sentences
# --------------------------------------------------------------------------

#: Abbreviations that never end a sentence (compared in lower case). Only
#: what is not also an ordinary English word: "no", "sun", "sat", "max",
#: "am" or "etc." end sentences as often as not, so they are judged by what
#: follows them (below) or not at all. A lower-case next word continues the
#: sentence anyway, so these only matter before a capital, digit or symbol.
ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt capt sgt lt vs viz cf eg ie approx resp incl excl
    e.g i.e a.m p.m u.s u.k ph.d b.sc m.sc""".split()
)
#: Titles that are also words, abbreviations only when capitalised ("Gen. Patton", "the next gen.").
CAPITALISED_TITLES = frozenset("Ft Col Gen Gov Rev Hon Pres Sen Rep".split())
#: Abbreviations only before a number ("No. 5", "p. 12", "Fig. 3", "ca. 1900", "min. 5").
BEFORE_NUMBER = frozenset(
    """no nos nr fig figs vol vols pp p ch chap sec sect eq eqs ref refs op est ca art para min max avg
    tel ext""".split()
)
#: Capitalised months before a number ("Jan. 5", "Sept. 2019"), weekdays
#: before a number or a month ("Mon. 3 May", "Sat. Jan 5").
MONTHS = frozenset("Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec".split())
WEEKDAYS = frozenset("Mon Tue Tues Wed Thu Thur Thurs Fri Sat Sun".split())
_MONTH_START_RE = re.compile(
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
    r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\b"
)
_ET_RE = re.compile(r"(?i)\bet\s+$")


def _is_abbreviation(word: str, rest: str, before: str) -> bool:
    """Whether the period after ``word`` (as written, markup stripped) is an
    abbreviation's, given the text after it (``rest``, stripped) and before it."""
    low = word.lower()
    if low in ABBREVIATIONS or word in CAPITALISED_TITLES:
        return True
    digit_next = rest[:1].isdigit()
    if digit_next and (low in BEFORE_NUMBER or word in MONTHS or word in WEEKDAYS):
        return True
    if word in WEEKDAYS and _MONTH_START_RE.match(rest):
        return True
    if low == "al" and _ET_RE.search(before):
        return True  # "et al."
    if len(word) == 1:
        return word.isalpha() and word.isupper()  # an initial: "J. R. R. Tolkien"
    # A dotted acronym ("U.S.", "Ph.D.", "e.g."), not a number ("3.5.") or a
    # version ("v1.2.") or a file or domain name ("example.com/a.b.").
    parts = low.split(".")
    return len(parts) > 1 and all(0 < len(part) <= 2 and part.isalpha() for part in parts)


_BOUNDARY_RE = re.compile(r"[.!?…]+[\"'”’)\]*_]*(?=\s)|[。！？]+[\"'”’)\]]*|\n")
_PROTECT_RE = re.compile(
    r"(`+)[^`]+?\1|\[\[[^\[\]\n]*\]\]|!?\[[^\]\n]*\]\([^)\n]*\)"
    r"|\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s<>\"]*[^\s<>\".,;:!?)\]'”’]"
    r"|\$[^$\n]+\$"
)
_WORD_BEFORE_RE = re.compile(r"([^\s(\[\"'“‘]+)\.$")
_CONTINUES = ",;(–—-&/+=<"


def split_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences of ``text``.

    A sentence ends at ``.``, ``!``, ``?`` or ``…`` followed by white space
    and a character that is not a lower-case letter; a period does not end
    one after an abbreviation (``e.g.``, ``Dr.``; ``No.``, ``Fig.`` or
    ``Jan.`` only before a number, ``Mon.`` before a number or a month), a
    capital initial (``J.``) or a dotted acronym (``U.S.``). Decimals
    (``3.14``) and URLs have no white space after their inner periods (a
    decimal's final period does end a sentence), and links, inline code,
    ``$math$`` and ``password:`` values are never split. ``。！？`` always end a sentence. A line break (``\\n``) ends
    one unless the next line starts in lower case or the line ends with a
    continuation mark (``,``, ``;``, ``-``...): a line per thought, as
    Obsidian shows them, makes one fact per line.
    """
    protected: list[tuple[int, int]] = [m.span() for m in _PROTECT_RE.finditer(text)] if any(
        c in text for c in "`[:$"
    ) else []
    if ":" in text or "=" in text:
        secret = always_value_spans(text)  # a password value is redacted whole: never cut it
        if secret:
            protected = sorted(protected + secret)
    cuts: list[int] = []
    p = 0
    for m in _BOUNDARY_RE.finditer(text):
        start, end = m.span()
        while p < len(protected) and protected[p][1] <= start:
            p += 1
        if p < len(protected) and protected[p][0] <= start < protected[p][1]:
            continue
        rest = text[end:].lstrip()
        nxt = rest[:1]
        if m.group() == "\n":
            before = text[:start].rstrip()
            if not before or not nxt or nxt.islower() or before[-1] in _CONTINUES:
                continue
            cuts.append(end)
            continue
        if nxt and nxt.islower():
            continue
        if text[start] in "。！？":
            cuts.append(end)
            continue
        if text[start] == "." and text[start:end].rstrip("\"'”’)]*_") == ".":
            # Only the word before the period matters: a bounded window keeps
            # long paragraphs linear (an unbounded search rescans from 0).
            word = _WORD_BEFORE_RE.search(text, max(0, start - 64), start + 1)
            if word and _is_abbreviation(word.group(1).strip("*_`"), rest, text[max(0, word.start() - 8) : word.start()]):
                continue  # "Dr.", "J.", "U.S.", "No. 5", "Mon. 3 May"
        cuts.append(end)
    spans: list[tuple[int, int]] = []
    last = 0
    for cut in cuts:
        if cut > last:
            spans.append((last, cut))
            last = cut
    if last < len(text):
        spans.append((last, len(text)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------


def _heading_extents(lines: list[str], body_line: int, headings: Iterable[Heading]) -> dict[int, tuple[int, str, int]]:
    """First file line -> (level, text, last file line) of every heading;
    a setext heading runs to its underline."""
    out: dict[int, tuple[int, str, int]] = {}
    setext = re.compile(r" {0,3}(?:=+|-+)[ \t]*$")
    for h in headings:
        i = h.line - body_line
        if not 0 <= i < len(lines):
            continue
        last = h.line
        if not lines[i].lstrip(" ").startswith("#"):
            j = i + 1
            while j < len(lines) and not setext.match(lines[j]):
                j += 1
            last = body_line + min(j, len(lines) - 1)
        out[h.line] = (h.level, h.text, last)
    return out


def segment_body(
    body: str, body_line: int = 1, headings: Sequence[Heading] = (), block_lines: Iterable[int] = ()
) -> tuple[list[Segment], int]:
    """All segments of a note body (LF line endings), in document order, and
    the number of secrets redacted outside segment texts: private key blocks
    skipped outside code, and secrets in headings, lead-ins and callout
    titles (context and heading paths are redacted; segment texts are not,
    the caller redacts and counts those).

    ``body_line`` is the file line the body starts on, ``headings`` the
    note's headings and ``block_lines`` the file lines that end with a
    ``^block-id`` (both as :mod:`vault_io.parser` found them).
    """
    raw = body.split("\n")
    masked = mask_markdown(body, inline_math=False)
    mlines = masked.text.split("\n")
    secret: set[int] = set()
    keys = 0
    if "PRIVATE KEY" in body:
        secret = private_key_lines(raw) - masked.code_lines
        keys = sum(1 for k in secret if k - 1 not in secret)
    lines = [
        _Line(body_line + k, raw[k], mlines[k], k in masked.code_lines or k in secret) for k in range(len(raw))
    ]
    seg = _Segmenter(_heading_extents(raw, body_line, headings), set(block_lines))
    seg.blocks(lines, (), top=True)
    return seg.out, keys + seg.redacted
