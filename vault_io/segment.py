"""Cutting a note's body into fact-sized segments, with file line numbers.

The blocks come from the block scanner (:func:`vault_io.blocks.scan_blocks`,
over the parser's masking, which tells code, comments, HTML and math apart
from text), so segments sit under the same headings as the parser's
headings and the chunker's sections. What becomes a segment:

- every list item (task items keep their checkbox character), with the
  items above it (and a lead-in line such as ``Tools:`` just before the
  list, and a callout's title) as its *context*;
- every sentence of a paragraph (also paragraphs inside list items);
- every table row, as ``Column: value; Column: value``;
- the body of a callout or block quote, segmented by the same rules.

What never does: headings (they become the *heading path* of what follows),
code blocks, HTML blocks, ``%% comments %%``, ``$$ math $$``, embeds,
thematic breaks, table delimiter rows, a callout's ``[!type]`` line, and
private key blocks. The text of a segment is the Markdown as written (links,
emphasis, inline code and ``$math$`` kept), with list markers, checkboxes,
quote prefixes, ``^block-ids``, embeds, comments and HTML tags removed and
whitespace collapsed. Filtering (too short, pure links) and redacting
secrets in the text are the caller's job; context entries and heading paths,
which are indexed with every fact below them, are redacted here (before a
long one is cut, so no token is cut into an unrecognisable prefix), and a
password value is never split into two sentences.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memvault.vault_io.blocks import (
    HEADING,
    HIDDEN_KINDS,
    ITEM,
    PARAGRAPH,
    QUOTE,
    TABLE,
    Block,
    collapse,
    scan_blocks,
    strip_block_id,
)
from memvault.vault_io.lazy_pattern import LazyPattern
from memvault.vault_io.mask import Masked, line_starts, mask_markdown, unmask_spans
from memvault.vault_io.secrets import always_value_spans, private_key_lines, redact
from memvault.vault_io.syntax import (
    CALLOUT_RE,
    CELL_SPLIT_RE,
    EMBED_RE,
    LIST_ITEM_RE,
    MD_LINK,
    QUOTE_RE,
    TASK_RE,
    URL,
    WIKILINK,
)

__all__ = ["Segment", "collapse", "segment_body", "split_sentences"]


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
    text: str  # original text, quote prefixes removed
    masked: str  # masked text (inline math kept), same prefixes removed
    skip: bool = False  # no text of its own: see _Segmenter.line


_SPACES_RE = LazyPattern(r" {1,}")

#: Longest a context entry (a parent item, a lead-in) is kept.
CONTEXT_CHARS = 80


def _clean(line: _Line) -> str:
    """The line's text without comments, HTML tags (masked spans that are
    not inline code), embeds and a trailing block id."""
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
        text = EMBED_RE.sub(" ", text)
    return text


def _short(text: str) -> str:
    """``text`` cut to :data:`CONTEXT_CHARS`, secrets redacted first (a cut
    through a token would leave a prefix no pattern recognises)."""
    text = redact(text)[0]
    return text if len(text) <= CONTEXT_CHARS else text[: CONTEXT_CHARS - 1].rstrip() + "…"


class _Segmenter:
    """One pass over a note's blocks, in document order: the segments found,
    and the context each list item or quote gives the blocks inside it."""

    def __init__(
        self, body: str, body_line: int, block_lines: set[int], headings_from: int,
        masked: Masked | None = None, blocks: Sequence[Block] | None = None,
    ) -> None:
        self.raw = body.split("\n")
        if masked is None:
            masked = mask_markdown(body)
        self.blocks = blocks if blocks is not None else scan_blocks(body, masked, lines=self.raw, headings_from=headings_from)
        # Fact text keeps its formulas: put inline math back into the mask.
        self.masked = unmask_spans(masked.text, body, masked.math_spans).split("\n")
        self.body_line = body_line
        self.block_lines = block_lines  # file lines that end with a ^block-id
        self.secret: set[int] = set()
        self.keys = 0  # private key blocks skipped
        if "PRIVATE KEY" in body:
            self.secret = private_key_lines(self.raw) - masked.code_lines
            self.keys = sum(1 for k in self.secret if k - 1 not in self.secret)
        self.out: list[Segment] = []
        self.heads: dict[str, str] = {}  # heading path entry -> its redacted form
        # Secrets redacted in text that is context but never a segment of its
        # own (headings, lead-ins, callout titles), so the caller counts them.
        self.redacted = 0
        self.depth: list[int] = []  # per block: quotes around it
        self.inner: dict[int, tuple[str, ...]] = {-1: ()}  # per container: context of what it holds
        self.list_context: dict[int, tuple[str, ...]] = {}  # per container: context of its current list
        self.leadin: dict[int, tuple[str, ...]] = {}  # per container: lead-in for a list that follows
        self.previous: dict[int, str] = {}  # per container: kind of the last block seen in it

    def _redact_counted(self, text: str) -> str:
        text, n = redact(text)
        self.redacted += n
        return text

    # -- helpers ---------------------------------------------------------

    def line(self, k: int, depth: int) -> _Line:
        """Body line ``k`` without the prefixes of the ``depth`` quotes around it.

        It is skipped (no text of its own) if it is a private key line, or
        blank once masked: a line of only inline code, HTML tags or
        non-breaking spaces reads as a gap between sentences, not as one.
        """
        text, masked = self.raw[k], self.masked[k]
        cut = 0
        for _ in range(depth):
            m = QUOTE_RE.match(text, cut)
            if m is None:
                break  # a lazy line: no prefix
            cut = m.end()
        masked = masked[cut:]
        return _Line(self.body_line + k, text[cut:], masked, k in self.secret or not masked.strip())

    def runs(self, block: Block, depth: int) -> list[list[_Line]]:
        """The lines of ``block`` in runs between skipped lines."""
        runs: list[list[_Line]] = [[]]
        for k in range(block.start, block.end + 1):
            line = self.line(k, depth)
            if line.skip:
                if runs[-1]:
                    runs.append([])
            else:
                runs[-1].append(line)
        return [run for run in runs if run]

    def text_of(self, line: _Line, start: int = 0) -> str:
        """Cleaned text of ``line`` from column ``start``."""
        part = _Line(line.no, line.text[start:], line.masked[start:], line.skip)
        text = _clean(part)
        if line.no in self.block_lines:
            text = strip_block_id(text.rstrip())
        return text

    def emit(self, block: Block, kind: str, text: str, first: int, last: int, context: tuple[str, ...], task: str | None = None) -> None:
        """Record a segment of ``block`` (unless its text is empty), under
        the block's heading path in its redacted form."""
        text = collapse(text)
        if text:
            headings = tuple(self.heads.get(h, h) for h in block.headings)
            self.out.append(Segment(kind, text, first, last, headings, context, task))

    # -- the pass ----------------------------------------------------------

    def run(self) -> None:
        """Segment every block, in document order."""
        blocks = self.blocks
        for k, block in enumerate(blocks):
            parent = block.parent
            up = blocks[parent] if parent >= 0 else None
            self.depth.append(self.depth[parent] + (up.kind == QUOTE) if up is not None else 0)
            if block.kind in HIDDEN_KINDS:
                continue  # no prose, and a lead-in reaches over it
            context = self.inner.get(parent, ())
            leadin = self.leadin.pop(parent, ())
            after = self.previous.get(parent)
            self.previous[parent] = block.kind
            if block.kind == HEADING:
                text = collapse(block.text)
                self.heads[text] = self._redact_counted(text)
            elif block.kind == ITEM:
                if up is None or up.kind != ITEM:  # an item of the outermost list here
                    if after != ITEM:
                        self.list_context[parent] = context + leadin
                    context = self.list_context[parent]
                self.item(k, block, context)
            elif block.kind == PARAGRAPH:
                self.paragraph(k, block, context, lead=up is None or up.kind == QUOTE)
            elif block.kind == QUOTE:
                self.quote(k, block, context)
            elif block.kind == TABLE:
                self.table(k, block, context)

    def paragraph(self, k: int, block: Block, context: tuple[str, ...], lead: bool) -> None:
        """Sentences of the paragraph; with ``lead``, a last sentence ending
        in ":" right before a list is that list's lead-in (``Tools:``)."""
        sentences: list[tuple[str, int, int]] = []
        for run in self.runs(block, self.depth[k]):
            sentences += self.sentences(run)
        if lead and sentences and sentences[-1][0].endswith(":") and self._list_follows(k):
            self.leadin[block.parent] = (_short(self._redact_counted(sentences.pop()[0])),)
        for text, first, last in sentences:
            self.emit(block, "sentence", text, first, last, context)

    def _list_follows(self, k: int) -> bool:
        """Whether the next block beside block ``k`` (past code, comments,
        math) is a list item."""
        blocks = self.blocks
        for j in range(k + 1, len(blocks)):
            if blocks[j].kind not in HIDDEN_KINDS:
                return blocks[j].kind == ITEM and blocks[j].parent == blocks[k].parent
        return False

    def sentences(self, lines: Sequence[_Line]) -> list[tuple[str, int, int]]:
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
            first = lines[bisect_right(starts, s) - 1].no
            last = lines[bisect_right(starts, max(s, e - 1)) - 1].no
            found.append((text, first, last))
        return found

    def item(self, k: int, block: Block, context: tuple[str, ...]) -> None:
        """One list item (its marker line and the lines that continue it);
        the items and paragraphs inside it get its text as context."""
        runs = self.runs(block, self.depth[k])
        lines = runs[0] if runs else []
        if not lines or lines[0].no != self.body_line + block.start:
            return  # its first line is a private key line
        head = lines[0]
        m = LIST_ITEM_RE.match(head.text)
        text = self.text_of(head, m.end() if m else 0)
        task = None
        tm = TASK_RE.match(text.lstrip())
        if tm:
            task = tm.group(1)
            text = text.lstrip()[tm.end() :]
        parts = [text] + [self.text_of(line) for line in lines[1:]]
        full = collapse(" ".join(parts))
        self.emit(block, "task" if task is not None else "item", full, head.no, lines[-1].no, context, task)
        short = _short(full)
        self.inner[k] = context + (short,) if short else context
        for run in runs[1:]:  # lines after a gap read as a paragraph inside the item
            for sentence, first, last in self.sentences(run):
                self.emit(block, "sentence", sentence, first, last, self.inner[k])

    def quote(self, k: int, block: Block, context: tuple[str, ...]) -> None:
        """A block quote: what it holds is segmented like a body; a
        callout's title is context for all of it."""
        if block.text:  # a callout: its title line is the first non-blank one
            depth = self.depth[k] + 1
            for n in range(block.start, block.end + 1):
                line = self.line(n, depth)
                callout = CALLOUT_RE.match(line.text) if line.masked.strip() else None
                if callout is not None:
                    title = self._redact_counted(collapse(self.text_of(_Line(line.no, callout.group(2), callout.group(2)))))
                    if title:
                        context = context + (_short(title),)
                    break
        self.inner[k] = context

    def table(self, k: int, block: Block, context: tuple[str, ...]) -> None:
        """One ``Column: value; ...`` segment per body row of the table."""
        depth = self.depth[k]
        header = self.line(block.start, depth)
        headers = _cells(self.text_of(header))
        for n in range(block.start + 2, block.end + 1):
            line = self.line(n, depth)
            if line.skip:
                continue
            cells = _cells(self.text_of(line))
            pairs = []
            for i, cell in enumerate(cells[: max(len(headers), 1)] if headers else cells):
                if not cell:
                    continue
                head = headers[i] if i < len(headers) and headers[i] else f"Column {i + 1}"
                pairs.append(f"{head}: {cell}")
            if pairs:
                self.emit(block, "row", "; ".join(pairs), line.no, line.no, context)


def _cells(row: str) -> list[str]:
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return [collapse(cell.replace("\\|", "|")) for cell in CELL_SPLIT_RE.split(row)]


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
_MONTH_START_RE = LazyPattern(
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
    r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\b"
)
_ET_RE = LazyPattern(r"(?i)\bet\s+$")


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


_BOUNDARY_RE = LazyPattern(r"[.!?…]+[\"'”’)\]*_]*(?=\s)|[。！？]+[\"'”’)\]]*|\n")
# Never cut inside: code spans, links, URLs, inline math.
_PROTECT_RE = LazyPattern(rf"(`+)[^`]+?\1|{WIKILINK}|!?{MD_LINK}|{URL}|\$[^$\n]+\$")
_NON_SPACE_RE = LazyPattern(r"\S")
_WORD_BEFORE_RE = LazyPattern(r"([^\s(\[\"'“‘]+)\.$")
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
    # What lies around a boundary is found from where the last look ended,
    # never by slicing to the text's end or start: a paragraph of thousands
    # of lines stays linear.  The next non-space is at ahead_at for any
    # position from ahead_from on; last_char is the last non-space before
    # `behind`.
    ahead_from, ahead_at = len(text) + 1, len(text)
    behind, last_char = 0, ""
    for m in _BOUNDARY_RE.finditer(text):
        start, end = m.span()
        while p < len(protected) and protected[p][1] <= start:
            p += 1
        if p < len(protected) and protected[p][0] <= start < protected[p][1]:
            continue
        if not ahead_from <= end <= ahead_at:
            found = _NON_SPACE_RE.search(text, end)
            ahead_from, ahead_at = end, found.start() if found else len(text)
        rest = text[ahead_at : ahead_at + 40]  # enough to read a month name
        nxt = rest[:1]
        if m.group() == "\n":
            tail = text[behind:start].rstrip()
            behind, last_char = start, tail[-1:] or last_char
            if not last_char or not nxt or nxt.islower() or last_char in _CONTINUES:
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


def segment_body(
    body: str, body_line: int = 1, block_lines: Iterable[int] = (), *, headings_from: int = 0,
    masked: Masked | None = None, blocks: Sequence[Block] | None = None,
) -> tuple[list[Segment], int]:
    """All segments of a note body (LF line endings), in document order, and
    the number of secrets redacted outside segment texts: private key blocks
    skipped outside code, and secrets in headings, lead-ins and callout
    titles (context and heading paths are redacted; segment texts are not,
    the caller redacts and counts those).

    ``body_line`` is the file line the body starts on, ``block_lines`` the
    file lines that end with a ``^block-id`` (as :mod:`vault_io.parser`
    found them), and ``headings_from`` the body line before which no
    heading is read (see :func:`vault_io.parser.structure_start`).
    ``masked`` and ``blocks``, when given, are the body's masking and
    blocks as the parser found them (:attr:`~.note.ParsedNote.masked`,
    :attr:`~.note.ParsedNote.structure`): the body is not scanned again.
    """
    seg = _Segmenter(body, body_line, set(block_lines), headings_from, masked, blocks)
    seg.run()
    return seg.out, seg.keys + seg.redacted
