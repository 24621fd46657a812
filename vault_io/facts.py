"""The default fact extractor: local, deterministic rules, no model.

:func:`extract_facts` turns one parsed source note into :class:`FactDraft`
values. Segmentation (what a list item, sentence or table row is) lives in
:mod:`vault_io.segment`; this module decides which segments are facts, what
type of memory each is, where it points back to, and what its id is.

Which segments are facts: those with at least three words (links count
with their display text, a CJK character counts as a word) that are not
pure links or tags (nothing left once links, URLs and ``#tags`` are
removed, or only a label: ``Tags: #a #b``). Every fact carries all of its
note's tags, front-matter and inline (``#memory/source`` aside). Front-matter
properties are facts too (``Birthday: 1990-04-02``), except memvault's own
markers and bookkeeping keys (:data:`SKIPPED_PROPERTIES`).

Types, first rule that applies:

1. an open task (``- [ ]``, any status but done or cancelled) is
   ``prospective``, with a due date from ``📅 2026-01-31`` or
   ``due:: 2026-01-31``; a done (``[x]``) or cancelled (``[-]``) task is
   ``episodic``;
2. the nearest enclosing heading that says something decides:
   Lessons / How-to / Steps / Instructions / Guide / Recipe / Checklist...
   ``procedural`` (also a heading that is just "Setup" or "Workflow", but
   not one that merely mentions a setup, nor "Next steps");
   a date (``2025-01-31``, ``31st Jan, 2025``, ``March 12``) ``episodic``;
   About me / Profile / Bio / Who I am ``identity``;
3. the note: an "About me"/"Profile" title is ``identity``; a daily note (a
   name starting with a date, date folders such as ``2025/01/10.md``, or a
   folder named Daily, Journal, Diary...) is ``episodic``;
4. otherwise ``semantic``.

Ids: ``f-`` and 16 hex digits of sha256 over the source note's trace id, the
normalised fact text (NFC, white space collapsed) and an occurrence counter
for repeated text in the same note, so a rebuild from the same vault gives
the same ids and a fact keeps its id when it moves within its note.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import quote

from memvault.vault_io.frontmatter import frontmatter_tags
from memvault.vault_io.lazy_pattern import LazyPattern
from memvault.vault_io.markdown import find_markdown_links, find_tags, find_wikilinks, links_as_read, normalise_tag
from memvault.vault_io.mask import blank_spans, mask_markdown
from memvault.vault_io.note import Link, ParsedNote
from memvault.vault_io.parser import structure_start
from memvault.vault_io.secrets import redact
from memvault.vault_io.segment import Segment, collapse, segment_body
from memvault.vault_io.sources import SOURCE_TAG
from memvault.vault_io.syntax import MD_LINK_RE, TAG_RE, URL_RE, WIKILINK_RE

IDENTITY, SEMANTIC, EPISODIC, PROCEDURAL, PROSPECTIVE = (
    "identity", "semantic", "episodic", "procedural", "prospective",
)

#: Front-matter keys that are never facts (compared case-insensitively).
SKIPPED_PROPERTIES = frozenset(
    """memory memory_source id uid aliases alias tags tag cssclasses cssclass title publish permalink
    created updated modified created_at updated_at date_created date_modified last_modified lastmod
    position kanban-plugin excalidraw-plugin""".split()
)

MIN_WORDS = 3

# Words that make a heading a how-to wherever they stand in it.
_PROCEDURAL_RE = LazyPattern(
    r"\b(?:lessons?|learnings|learn(?:ed|t)|how[- ]?to'?s?|howtos?|steps?|instructions?|procedures?"
    r"|guides?|tutorials?|walk-?throughs?|recipes?|checklists?|playbooks?|runbooks?|tips|troubleshooting)\b",
    re.I,
)
# Words that name a how-to only as the whole heading: "Setup" is one; "My
# setup", "Setup of my desk" or "Desk setup" describe a desk; "Workflow
# ideas" are ideas, "My workflow" is how I work.
_PROCEDURAL_WHOLE_RE = LazyPattern(r"^(?:set[- ]?up|(?:my |the )?workflows?)$", re.I)
# "Next steps" lists what is to be done, not how to do something.
_NEXT_STEPS_RE = LazyPattern(r"\bnext steps?\b", re.I)
_IDENTITY_RE = LazyPattern(
    r"^(?:about me|about myself|me|myself|profile|my profile|user profile|bio|biography|who i am"
    r"|personal (?:info|information|details|profile|facts)|identity)$",
    re.I,
)
_MONTHS = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE_RE = LazyPattern(
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b\d{{4}}/\d{{2}}/\d{{2}}\b"
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?(?: of)? {_MONTHS},? (?:\d{{4}})?"
    rf"|\b{_MONTHS} \d{{1,2}}(?:st|nd|rd|th)?\b",
    re.I,
)
_DAILY_NAME_RE = LazyPattern(r"^\d{4}-\d{2}-\d{2}\b")
# A date spelled by the folders: "Notes/2025/01/10.md", "2025/01/10 Friday.md".
_DATE_PATH_RE = LazyPattern(
    r"(?:^|/)(?:19|20)\d{2}/(?:0[1-9]|1[0-2])/(?:0[1-9]|[12]\d|3[01])(?:[ ._-][^/]*)?\.md$", re.I
)
_DAILY_FOLDERS = frozenset({"daily", "daily notes", "dailies", "journal", "journals", "diary", "daily-notes", "logbook"})
_DUE_RE = LazyPattern(r"(?:📅|🗓️?)\s*(\d{4}-\d{2}-\d{2})|\bdue::\s*(\d{4}-\d{2}-\d{2})", re.I)
_DONE = frozenset("xX-")
_WORD_RE = LazyPattern(r"[^\W_]+(?:['’][^\W_]+)*")
_CJK_RE = LazyPattern(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_EMOJI_PREFIX_RE = LazyPattern(r"^[^\w]+", re.U)
# What is left of "Tags: #a #b" once the tags are gone: a label alone.
_LABEL_RE = LazyPattern(r"[^\w]*[^\W_]+[ \t]*:[^\w]*")


@dataclass(frozen=True)
class FactDraft:
    """One extracted fact, before it is written to the index."""

    id: str
    text: str  # secrets redacted
    type: str
    segment: str  # "item" | "task" | "sentence" | "row" | "property" | "llm"
    headings: tuple[str, ...] = ()
    context: tuple[str, ...] = ()
    block_id: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    due: str | None = None
    tags: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    redacted: int = 0
    ordinal: int = 0
    key: str = ""  # normalised text, for pairing
    topics: tuple[str, ...] = ()
    importance: float | None = None

    @property
    def heading_path(self) -> str:
        """``Projects > memvault > Decisions`` (empty above the first heading)."""
        return " > ".join(self.headings)

    @property
    def anchor(self) -> str | None:
        """What an Obsidian link or URI needs after ``#``: ``^blockid`` or the heading."""
        if self.block_id:
            return f"^{self.block_id}"
        return self.headings[-1] if self.headings else None


@dataclass
class Extraction:
    """The facts of one note and how many secrets were redacted on the way."""

    facts: list[FactDraft] = field(default_factory=list)
    redacted: int = 0
    extractor: str = "default"
    warnings: list[str] = field(default_factory=list)


# -- small pure helpers ----------------------------------------------------------


def normalise(text: str) -> str:
    """The form two texts are compared and hashed in: NFC, white space collapsed."""
    return collapse(unicodedata.normalize("NFC", text))


def fact_id(source_id: str, key: str, occurrence: int = 0) -> str:
    """The stable id of the ``occurrence``-th fact with normalised text ``key`` in a source note."""
    seed = f"{source_id}\x00{key}\x00{occurrence}"
    return "f-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]


@lru_cache(maxsize=8192)
def source_uri(path: str, anchor: str | None) -> str:
    """``vault://<path>#<heading>`` or ``vault://<path>#^<block>`` (percent-encoded,
    ``/`` and ``^`` kept), or ``vault://<path>`` without an anchor."""
    uri = "vault://" + quote(path, safe="/")
    return uri + ("#" + quote(anchor, safe="^") if anchor else "")


def display_text(text: str) -> str:
    """``text`` as read: links as their display text, URLs dropped."""
    return _without_urls(links_as_read(text))


def _without_links(text: str) -> str:
    """``text`` with its links and URLs blanked."""
    return _without_urls(MD_LINK_RE.sub(" ", WIKILINK_RE.sub(" ", text)))


def _without_urls(text: str) -> str:
    # The URL pattern may start at any letter: look for "://" first.
    return URL_RE.sub(" ", text) if "://" in text else text


def word_count(text: str) -> int:
    """Words in ``text``; each CJK character is a word of its own."""
    words = _WORD_RE.findall(text)
    cjk = len(_CJK_RE.findall(text))
    if not cjk:
        return len(words)
    return cjk + sum(1 for w in words if not _CJK_RE.search(w))


def _without_tags(text: str) -> str:
    """``text`` with its ``#tags`` blanked (``#123`` is no tag and stays, nor
    does ``a#b``: a tag starts the text or follows white space)."""

    def blank(m: re.Match[str]) -> str:
        start = m.start()
        if (start and not text[start - 1].isspace()) or not normalise_tag(m.group(1)):
            return m.group(0)
        return " "

    return TAG_RE.sub(blank, text)


def is_fact_text(text: str) -> bool:
    """At least :data:`MIN_WORDS` words, and more than links and tags: a
    line of tags (``#journal #memory/source``, ``Tags: #a #b``) is the
    note's metadata, not a fact."""
    if "#" in text:
        untagged = _without_tags(text)
        if untagged != text:
            if "[" not in untagged and "://" not in untagged and (
                not _WORD_RE.search(untagged) or _LABEL_RE.fullmatch(untagged.strip())
            ):
                return False
            if not _WORD_RE.search(_without_links(untagged)):
                return False  # links and tags only
    if "[" not in text and "://" not in text:
        return word_count(text) >= MIN_WORDS
    if not _WORD_RE.search(_without_links(text)):
        return False  # a pure link (or links only)
    return word_count(display_text(text)) >= MIN_WORDS


def is_daily_note(path: str) -> bool:
    """A note named after a date, one whose folders and name spell a date
    (``2025/01/10.md``), or one inside a Daily/Journal/Diary folder."""
    parts = path.split("/")
    name = parts[-1]
    if _DAILY_NAME_RE.match(name) or _DATE_PATH_RE.search(path):
        return True
    return any(p.strip().lower() in _DAILY_FOLDERS for p in parts[:-1])


def _bare(heading: str) -> str:
    """Heading text without leading emoji/punctuation and Markdown emphasis."""
    text = heading.replace("*", "").replace("_", " ").strip()
    return collapse(_EMOJI_PREFIX_RE.sub("", text)).rstrip(":").strip()


@lru_cache(maxsize=4096)
def heading_type(heading: str) -> str | None:
    """The memory type a heading implies, if any."""
    bare = _bare(heading)
    if _IDENTITY_RE.match(bare):
        return IDENTITY
    if _PROCEDURAL_RE.search(_NEXT_STEPS_RE.sub(" ", bare)) or _PROCEDURAL_WHOLE_RE.match(bare):
        return PROCEDURAL
    if _DATE_RE.search(bare):
        return EPISODIC
    return None


def note_type(note: ParsedNote) -> str:
    """The type a note gives its facts when no heading or task decides."""
    if _IDENTITY_RE.match(_bare(note.title)):
        return IDENTITY
    if is_daily_note(note.path):
        return EPISODIC
    return SEMANTIC


def fact_type(segment_kind: str, task: str | None, headings: Sequence[str], default: str) -> str:
    """Type of one fact (rules in the module docstring)."""
    if segment_kind == "task" and task is not None:
        return EPISODIC if task in _DONE else PROSPECTIVE
    for heading in reversed(headings):
        found = heading_type(heading)
        if found:
            return found
    return default


def due_date(text: str) -> str | None:
    """``2026-01-31`` from ``📅 2026-01-31`` or ``due:: 2026-01-31``."""
    m = _DUE_RE.search(text)
    return (m.group(1) or m.group(2)) if m else None


def links_and_tags(text: str, line: int) -> tuple[tuple[Link, ...], tuple[str, ...]]:
    """Links (not embeds) and inline tags written in a fact's text."""
    if "[" not in text and "#" not in text:
        return (), ()
    # Masking only matters where code spans, comments, HTML or math could hide a link.
    masked = mask_markdown(text).text if any(c in text for c in "`%<$") else text
    wiki, wiki_spans = find_wikilinks(masked, text)
    scan = blank_spans(masked, wiki_spans)
    md, md_spans = find_markdown_links(scan, text)
    scan = blank_spans(scan, md_spans)
    links = tuple(
        Link(target=r.target, kind="link", subpath=r.subpath, display=r.display, line=line, markdown=r.markdown)
        for r in sorted(wiki + md, key=lambda r: r.offset)
        if not r.embed
    )
    return links, tuple(find_tags(scan, text)) if "#" in text else ()


def _dedupe(tags: Sequence[str]) -> tuple[str, ...]:
    seen: set[str] = set()
    out = []
    for tag in tags:
        low = tag.lower()
        if low not in seen and low != SOURCE_TAG:
            seen.add(low)
            out.append(tag)
    return tuple(out)


def _block_index(blocks: Sequence[Any], last_line: int) -> list[str | None]:
    """For each file line (index), the innermost block id covering it (of
    two as short, the later one).

    The shortest blocks claim their lines first and each line is claimed
    once: ``free[i]`` leads to the first unclaimed line from ``i`` on
    (path-halving), so thousands of nested ids stay linear.
    """
    owner: list[str | None] = [None] * (last_line + 2)
    free = list(range(last_line + 3))

    def first_free(i: int) -> int:
        while free[i] != i:
            free[i] = free[free[i]]
            i = free[i]
        return i

    order = sorted(range(len(blocks)), key=lambda k: (blocks[k].end_line - blocks[k].line, -k))
    for k in order:
        b = blocks[k]
        last = min(b.end_line, last_line)
        if b.line > last:
            continue
        ln = first_free(max(b.line, 0))
        while ln <= last:
            owner[ln] = b.id
            free[ln] = ln + 1
            ln = first_free(ln + 1)
    return owner


class DraftBuilder:
    """Turns fact texts with their anchors into :class:`FactDraft` values for
    one note: ids with occurrence counters, block ids, links, tags."""

    def __init__(self, note: ParsedNote, source_id: str) -> None:
        self.note = note
        self.source_id = source_id
        self.facts: list[FactDraft] = []
        self._seen: dict[str, int] = {}
        # Every fact carries all of the note's tags, front-matter and inline
        # (the parser's list, first spelling kept), then its own.
        self._note_tags = note.tags or tuple(frontmatter_tags(note.frontmatter))
        last_line = note.body_line + note.body.count("\n")
        self._owner = _block_index(note.blocks, last_line) if note.blocks else None

    def block_id(self, first: int | None, last: int | None) -> str | None:
        """The innermost ``^block-id`` whose block holds lines first..last."""
        owner = self._owner
        if owner is None or first is None or last is None or not 0 <= first < len(owner):
            return None
        inner = owner[first]
        return inner if inner is not None and inner == owner[min(max(last, first), len(owner) - 1)] else None

    def add(
        self,
        segment: str,
        text: str,
        first: int | None,
        last: int | None,
        headings: tuple[str, ...] = (),
        context: tuple[str, ...] = (),
        type_: str = SEMANTIC,
        due: str | None = None,
        redacted: int = 0,
        topics: tuple[str, ...] = (),
        importance: float | None = None,
    ) -> FactDraft:
        """Record one fact (``text`` already redacted) and return its draft."""
        key = normalise(text)
        occurrence = self._seen.get(key, 0)
        self._seen[key] = occurrence + 1
        links, inline_tags = links_and_tags(text, first or 1)
        draft = FactDraft(
            id=fact_id(self.source_id, key, occurrence),
            text=text,
            type=type_,
            segment=segment,
            headings=headings,
            context=context,
            block_id=self.block_id(first, last),
            line_start=first,
            line_end=last,
            due=due,
            tags=_dedupe([*self._note_tags, *inline_tags]),
            links=links,
            redacted=redacted,
            ordinal=len(self.facts),
            key=key,
            topics=topics,
            importance=importance,
        )
        self.facts.append(draft)
        return draft


# -- properties ------------------------------------------------------------------


def _property_value(value: Any) -> str | None:
    """A property value as fact text; None for empty values and nested objects."""
    if value is None or isinstance(value, dict):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        items = [_property_value(v) for v in value]
        kept = [v for v in items if v]
        return ", ".join(kept) if kept else None
    text = collapse(str(value))
    return text or None


def property_label(key: str) -> str:
    """``favourite_color`` -> ``Favourite color``."""
    label = collapse(key.replace("_", " "))
    return label[:1].upper() + label[1:]


def property_segments(
    frontmatter: Mapping[str, Any], key_lines: Mapping[str, int], fallback: tuple[int, int]
) -> list[tuple[str, int, int, int]]:
    """(text, first line, last line, redactions) for each front-matter property fact."""
    out: list[tuple[str, int, int, int]] = []
    for key, value in frontmatter.items():
        if not isinstance(key, str) or key.strip().lower() in SKIPPED_PROPERTIES or key.startswith("_"):
            continue
        rendered = _property_value(value)
        if rendered is None:
            continue
        redacted, n = redact(f"{key}: {rendered}")
        rendered = redacted[len(key) + 2 :] if redacted.startswith(f"{key}: ") else "[redacted]"
        line = key_lines.get(key)
        first, last = (line, line) if line else fallback
        out.append((f"{property_label(key)}: {rendered}", first, last, n))
    return out


# -- the extractor ---------------------------------------------------------------


def extract_facts(
    note: ParsedNote, source_id: str, *, key_lines: Mapping[str, int] | None = None
) -> Extraction:
    """The facts of one source note, in document order (properties first).

    ``source_id`` is the note's trace id (the seed of the fact ids);
    ``key_lines`` maps front-matter keys to their file lines, by default
    the parser's (``note.key_lines``); a key missing from it points at the
    whole front-matter.
    """
    segments, keys = _segments(note)
    result = Extraction(redacted=keys)
    default = note_type(note)
    builder = DraftBuilder(note, source_id)
    if note.frontmatter and note.body_line > 1:
        fallback = (1, note.body_line - 1)
        lines = note.key_lines if key_lines is None else key_lines
        for text, first, last, n in property_segments(note.frontmatter, lines, fallback):
            result.redacted += n
            builder.add("property", text, first, last, type_=default, redacted=n)
    for seg in segments:
        text, n = redact(seg.text)
        result.redacted += n
        if not is_fact_text(text):
            continue
        type_ = fact_type(seg.kind, seg.task, seg.headings, default)
        due = due_date(text) if type_ == PROSPECTIVE else None
        builder.add(seg.kind, text, seg.line_start, seg.line_end, seg.headings, seg.context, type_, due, n)
    result.facts = builder.facts
    return result


def segments_of(note: ParsedNote) -> list[Segment]:
    """Every segment of the note, short ones too (the llm extractor anchors to these)."""
    return _segments(note)[0]


def _segments(note: ParsedNote) -> tuple[list[Segment], int]:
    """:func:`~.segment.segment_body` of the note, with its block ids, the
    parser's notion of where headings may start, and the blocks it found."""
    return segment_body(
        note.body, note.body_line, [b.end_line for b in note.blocks], headings_from=structure_start(note),
        masked=note.masked, blocks=note.structure,
    )
