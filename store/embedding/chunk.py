"""Cutting traces into the texts that get embedded.

* A **fact** is one text: ``"<Note > Heading>: <fact>"`` (its trace title
  holds the note title and heading path, which give the fact its context).
* A **memory** is its content, cut like a note when it is long.
* An ordinary **note** is cut into chunks of at most :data:`MAX_TOKENS`
  tokens (counted with the model's own tokenizer, [CLS]/[SEP] included): first
  on headings (ATX headings outside code fences), then within a section on
  paragraph breaks, else sentence ends, else word starts. Consecutive chunks
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

#: Tokens repeated at the start of the next chunk of the same section.
OVERLAP_TOKENS = 32
#: [CLS] and [SEP], plus one token of slack for how the prefix and the body
#: tokenize when joined.
_RESERVED = 3

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
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


_WIKILINK = re.compile(r"!?\[\[([^\[\]|#\n]*)(?:#[^\[\]|\n]*)?(?:\|([^\[\]\n]*))?\]\]")
_MD_LINK = re.compile(r"!?\[([^\[\]\n]*)\]\((?:[^()\s]|\([^()\s]*\))*\)")
_URL = re.compile(r"<?https?://[^\s>)]+>?")


def clean_markup(text: str) -> str:
    """Link syntax out of the text the model sees: ``[[Note|shown]]`` reads
    as "shown", ``[text](url)`` as "text", and bare URLs (token-hungry noise
    to a sentence model) are dropped."""
    text = _WIKILINK.sub(lambda m: (m.group(2) or m.group(1) or "").strip(), text)
    text = _MD_LINK.sub(lambda m: m.group(1), text)
    return _URL.sub("", text)


def chunk_text(kind: str, title: str, content: str, start: int, stop: int, heading: str) -> str:
    """The exact text embedded for a chunk (rebuilt from the trace and the span)."""
    body = clean_markup(content[start:stop]).strip()
    if kind == "fact":
        return f"{title}: {body}" if title else body
    if kind == "memory":
        return body or title
    head = f"{title} > {heading}" if heading else title
    return f"{head}\n{body}" if body else head


@dataclass(frozen=True)
class _Section:
    heading: str
    start: int
    stop: int


def sections(content: str) -> list[_Section]:
    """The content split at ATX headings (fenced code is skipped), each part
    with its heading path ``"H1 > H2"``; the text before the first heading
    has an empty path."""
    out: list[_Section] = []
    path: list[tuple[int, str]] = []
    fence: str | None = None
    pos = 0
    cur_start = 0
    cur_heading = ""
    for line in content.splitlines(keepends=True):
        bare = line.rstrip("\n")
        m = _FENCE.match(bare)
        if m:
            marker = m.group(1)
            if fence is None:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = None
        elif fence is None:
            h = _ATX.match(bare)
            if h:
                out.append(_Section(cur_heading, cur_start, pos))
                level, text = len(h.group(1)), (h.group(2) or "").strip()
                while path and path[-1][0] >= level:
                    path.pop()
                if text:
                    path.append((level, text))
                cur_heading = " > ".join(t for _, t in path)
                cur_start = pos + len(line)
        pos += len(line)
    out.append(_Section(cur_heading, cur_start, len(content)))
    return [s for s in out if content[s.start : s.stop].strip()]


def chunk_trace(kind: str, title: str, content: str) -> list[Chunk]:
    """The chunks of one trace, in order."""
    if kind == "fact":
        text = chunk_text(kind, title, content, 0, len(content), "")
        return [Chunk(0, 0, len(content), "", _count(text), text)]
    parts = sections(content) if kind != "memory" else [_Section("", 0, len(content))]
    if not parts:  # an empty note still has its title to be found by
        text = chunk_text(kind, title, content, 0, 0, "")
        return [Chunk(0, 0, 0, "", _count(text), text)] if text.strip() else []
    out: list[Chunk] = []
    for sec in parts:
        prefix = chunk_text(kind, title, "", 0, 0, sec.heading) if kind != "memory" else ""
        budget = MAX_TOKENS - _RESERVED - (_count(prefix, special=False) if prefix else 0)
        for start, stop in _split(content, sec.start, sec.stop, max(budget, 32)):
            text = chunk_text(kind, title, content, start, stop, sec.heading)
            out.append(Chunk(len(out), start, stop, sec.heading, _count(text), text))
    return out


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
