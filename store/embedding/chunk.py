"""Cutting traces into the texts that get embedded.

* A **fact** is one text: ``"<Note > Heading>: <fact>"`` (its trace title
  holds the note title and heading path, which give the fact its context).
* A **memory** is its content, cut like a note when it is long.
* An ordinary **note** is cut into chunks of at most :data:`MAX_TOKENS`
  tokens (counted with the model's own tokenizer, [CLS]/[SEP] included): first
  on headings (the headings of :func:`memvault.vault_io.blocks.scan_blocks`,
  the parser's and the fact extractor's: ATX and setext, none inside code,
  comments, HTML or math), then within a section on paragraph breaks, else
  sentence ends, else word starts. Consecutive chunks
  of one section overlap by about :data:`OVERLAP_TOKENS` tokens so a sentence
  cut in two is whole in one of them. Every note chunk starts with
  ``"<title> > <heading path>"`` so a chunk means what it means in its note.

A chunk is stored as a character span of its trace's content plus its
heading path, so the text is rebuilt exactly from the trace (and checked
against the stored hash before it is embedded).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memvault.store.embedding.model import MAX_TOKENS, text_hash, tokenizer
from memvault.vault_io.blocks import HEADING, scan_blocks
from memvault.vault_io.frontmatter import frontmatter_end
from memvault.vault_io.markdown import links_as_read
from memvault.vault_io.mask import line_starts
from memvault.vault_io.syntax import AUTOLINK_RE

#: Tokens repeated at the start of the next chunk of the same section.
OVERLAP_TOKENS = 32
#: [CLS] and [SEP], plus one token of slack for how the prefix and the body
#: tokenize when joined.
_RESERVED = 3

_BLANK_RUN = re.compile(r"\n[ \t]*\n\s*")
_SENTENCE_END = frozenset(".!?;:")


@dataclass(frozen=True)
class Chunk:
    """One text to embed: a span of the trace's content under a heading path."""

    seq: int
    start: int
    stop: int
    heading: str
    tokens: int
    text: str

    @property
    def hash(self) -> bytes:
        """The embedding-cache key of the text."""
        return text_hash(self.text)


def clean_markup(text: str) -> str:
    """Link syntax out of the text the model sees: ``[[Note|shown]]`` reads
    as "shown", ``[text](url)`` as "text", and bare URLs (token-hungry noise
    to a sentence model) are dropped."""
    text = links_as_read(text)
    return AUTOLINK_RE.sub("", text) if "://" in text else text


def chunk_text(kind: str, title: str, content: str, start: int, stop: int, heading: str) -> str:
    """The exact text embedded for a chunk (rebuilt from the trace and the span)."""
    body = clean_markup(content[start:stop]).strip()
    if kind == "note" and body.startswith("> [!"):
        body = plain_turns(body)
    if kind in ("fact", "turn"):  # a turn's title is its speaker: "Noor: I went to ..."
        return f"{title}: {body}" if title and body else body or title
    if kind == "memory":
        return body or title
    head = f"{title} > {heading}" if heading else title
    return f"{head}\n{body}" if body else head


_TURN_HEAD = re.compile(r"^> \[!(?:user|assistant|tool|system)\][+-]?[ \t]*(.*?)(?: · [0-9: -]+)?[ \t]*\n(?:>[ \t]?)?", re.M)
_BLOCK_ID_LINE = re.compile(r"^\^t\d+[ \t]*$\n?", re.M)
_QUOTE_MARK = re.compile(r"^>[ \t]?", re.M)


def plain_turns(text: str) -> str:
    """Turns of a session note as the model should read them: "Noor:
    I went to ..." rather than callout markup, time stamps and block ids,
    which are noise to a sentence model (the speaker's name stays)."""
    text = _TURN_HEAD.sub(lambda m: f"{m.group(1)}: ", text)
    text = _BLOCK_ID_LINE.sub("", text)
    return _QUOTE_MARK.sub("", text).strip()


@dataclass(frozen=True)
class _Section:
    heading: str
    start: int
    stop: int


def sections(content: str) -> list[_Section]:
    """The content split at its headings, each part with its heading path
    ``"H1 > H2"`` (the path facts carry too); the text before the first
    heading has an empty path.  A heading's own lines (a setext heading's
    underline too) belong to no part: the path stands for them.

    ``content`` is a note's body.  A front-matter block at its start (the
    body of a note whose YAML did not load) holds no headings, as for the
    parser.
    """
    out: list[_Section] = []
    starts: list[int] | None = None
    cur_start = 0
    cur_heading = ""
    for block in scan_blocks(content, headings_from=frontmatter_end(content) if content.startswith("---") else 0):
        if block.kind != HEADING:
            continue
        starts = starts or line_starts(content)
        out.append(_Section(cur_heading, cur_start, starts[block.start]))
        cur_heading = " > ".join(block.headings)
        cur_start = starts[block.end + 1] if block.end + 1 < len(starts) else len(content)
    out.append(_Section(cur_heading, cur_start, len(content)))
    return [s for s in out if content[s.start : s.stop].strip()]


def chunk_trace(kind: str, title: str, content: str) -> list[Chunk]:
    """The chunks of one trace, in order."""
    if kind == "fact":
        text = chunk_text(kind, title, content, 0, len(content), "")
        return [Chunk(0, 0, len(content), "", _count(text), text)]
    parts = sections(content) if kind not in ("memory", "turn") else [_Section("", 0, len(content))]
    if not parts:  # an empty note still has its title to be found by
        text = chunk_text(kind, title, content, 0, 0, "")
        return [Chunk(0, 0, 0, "", _count(text), text)] if text.strip() else []
    out: list[Chunk] = []
    cuts = _turn_starts(content) if kind == "note" else []
    for sec in parts:
        prefix = chunk_text(kind, title, "", 0, 0, sec.heading) if kind != "memory" else ""
        budget = MAX_TOKENS - _RESERVED - (_count(prefix, special=False) if prefix else 0)
        for part_start, part_stop in _at_turns(sec.start, sec.stop, cuts):
            if cuts and not content[part_start:part_stop].strip():
                continue  # the blank line before a transcript's first turn
            for start, stop in _split(content, part_start, part_stop, max(budget, 32)):
                text = chunk_text(kind, title, content, start, stop, sec.heading)
                out.append(Chunk(len(out), start, stop, sec.heading, _count(text), text))
    return out


def _turn_starts(content: str) -> list[int]:
    """Where the turns of a session note's transcript start (none for any other note)."""
    from memvault.store.retrieval.turns import has_turns, note_turns

    return [t.start for t in note_turns(content)] if has_turns(content) else []


def _at_turns(start: int, stop: int, cuts: list[int]) -> list[tuple[int, int]]:
    """``[start, stop)`` cut where a turn starts: each turn of a session note
    is a chunk of its own (or several, when long), so a turn's vector says
    what that turn says and recall can quote it alone."""
    inside = [c for c in cuts if start < c < stop]
    if not inside:
        return [(start, stop)]
    bounds = [start, *inside, stop]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def _count(text: str, special: bool = True) -> int:
    return len(tokenizer().encode(text, add_special_tokens=special).ids)


def _split(content: str, start: int, stop: int, budget: int) -> list[tuple[int, int]]:
    """Spans of ``content[start:stop]`` of at most ``budget`` tokens each."""
    body = content[start:stop]
    enc = tokenizer().encode(body, add_special_tokens=False)
    offs = enc.offsets
    n = len(offs)
    if n <= budget:
        return [(start, stop)]
    para_starts = {m.end() for m in _BLANK_RUN.finditer(body)}
    # Token i starts a paragraph, a sentence or a word: the places to cut before.
    para = [offs[i][0] in para_starts for i in range(n)]
    sentence = [i > 0 and body[offs[i - 1][1] - 1] in _SENTENCE_END and offs[i][0] > offs[i - 1][1] for i in range(n)]
    word = [i == 0 or offs[i][0] > offs[i - 1][1] for i in range(n)]
    spans: list[tuple[int, int]] = []
    i = 0
    while i < n:
        hard = i + budget
        if hard >= n:
            j = n
        else:
            j = _cut(para, i + budget // 2, hard) or _cut(sentence, i + budget // 2, hard) or _cut(word, i + 1, hard) or hard
        spans.append((start + offs[i][0], start + offs[j - 1][1]))
        if j >= n:
            break
        nxt = max(i + 1, j - OVERLAP_TOKENS)
        while nxt < j and not (sentence[nxt] or para[nxt]):
            nxt += 1  # start the overlap at a sentence start when one is near
        if nxt >= j:
            nxt = max(i + 1, j - OVERLAP_TOKENS)
            while nxt < j and not word[nxt]:
                nxt += 1
        i = nxt
    return spans


def _cut(marks: list[bool], lo: int, hi: int) -> int | None:
    """The last index in [lo, hi] whose mark is set."""
    for k in range(min(hi, len(marks) - 1), lo - 1, -1):
        if marks[k]:
            return k
    return None
