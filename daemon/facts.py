"""Keeping facts in step with their source notes.

:class:`FactObserver` is an indexer observer (see
:class:`~memvault.daemon.indexer.NoteObserver`): after every reconcile it is
told which notes were (re)indexed and which disappeared, and brings the
facts of each memory source up to date. ``memvault sync`` and the daemon both
go through it.

Re-extraction is incremental. For one source note:

1. every fact is extracted again (default rules, or the llm extractor);
2. a fact whose id already exists keeps it (the id comes from the note and
   the normalised text, so an unchanged fact keeps its id, creation time and
   retrieval statistics even when it moved within the note); only its
   anchor (lines, heading path, block id) is updated;
3. the remaining new facts are paired with the remaining old ones, first by
   block id (the same ``^id`` on both sides, used once on each side), then
   within the same heading path by text similarity (difflib ratio of at
   least :data:`SIMILARITY`, best pairs first; each new fact is compared
   with a few candidates found by shared words and position, so a rewrite
   of thousands of lines is paired in well under a second). A paired new
   fact gets an ``updates`` edge to its predecessor, which is kept as
   superseded with reason "changed in source" (``memvault history`` follows the chain);
4. old facts left unpaired are retired: "removed from source".

A deleted note retires its facts ("source note deleted"), an unmarked one
too ("no longer a memory source").

With the llm extractor, ``memvault sync`` asks the endpoint inline (bounded
by ``llm.timeout`` x attempts). The daemon does not: an llm call can take
seconds, and the daemon must keep every other note searchable within its
debounce. There the observer hands each changed source to
:class:`LLMFactWorker` (one background thread, a bounded queue that
coalesces repeated changes of one note) and goes on at once:

- a source that already has facts keeps them, unchanged, until the model
  answers (its ``fact_sources.hash`` stays the old one: that mismatch is
  the "llm extraction pending" mark, and every full sync re-queues such
  sources, so a job lost to a full queue or a restart is picked up again);
- a source with no facts yet gets the default extractor's facts at once,
  so it is searchable within the debounce; the model's facts then replace
  them through the usual pairing (unchanged texts keep their ids);
- when the model answers, the worker writes the facts only if the note's
  indexed hash is still the one it sent (else the answer is stale and
  dropped: the newer change has its own job); a failed call falls back to
  the default extractor, as in ``sync``. A note whose front-matter stops parsing
keeps its facts until it parses again (a typo should not wipe them).
Changing the ``sources`` globs of the config is noticed the next time the
indexer is built (:meth:`FactObserver.refresh_globs`).
"""

from __future__ import annotations

import difflib
import json
import logging
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw
from memvault.store import facts as sf
from memvault.store import records as rec
from memvault.store.db import connect, write_transaction
from memvault.vault_io.facts import Extraction, FactDraft, extract_facts, source_uri
from memvault.vault_io.frontmatter import key_lines as fm_key_lines
from memvault.vault_io.frontmatter import split_frontmatter
from memvault.vault_io.note import NoteReadError, ParsedNote, content_hash
from memvault.vault_io.parser import parse_note
from memvault.vault_io.resolve import LinkResolver, link_key, path_key
from memvault.vault_io.sources import SourceMarks, matching_glob, source_marks

from .config import Config

if TYPE_CHECKING:
    from .app import Vault
    from .indexer import Indexer

log = logging.getLogger(__name__)

_WORD_RE = re.compile(r"[^\W_]+")

#: Lowest difflib ratio at which an edited fact is taken for its predecessor.
SIMILARITY = 0.6
#: Pairing work per changed fact is capped, so it stays near-linear when a
#: whole long section is rewritten: at most MAX_LOOKUPS old facts found by
#: shared words (only words in at most RARE_DF old facts of the heading are
#: looked up) plus the three at the same rank, of which at most MAX_RATIOS
#: (best word overlap first) get a full difflib ratio.
MAX_LOOKUPS = 8
RARE_DF = 32
MAX_RATIOS = 4
#: A ratio this high ends the search for a fact's predecessor.
SURE = 0.85
#: Candidates whose ratio cannot come within this of the best so far are skipped.
BEST_MARGIN = 0.1
#: Source notes written per transaction.
BATCH = 200

REASON_CHANGED = "changed in source"
REASON_REMOVED = "removed from source"
REASON_DELETED = "source note deleted"
REASON_UNMARKED = "no longer a memory source"
GLOBS_META = "fact_source_globs"
#: Marks an extraction that was skipped because only the note's path changed.
MOVED = "moved"
#: Marks an extraction left to the daemon's llm worker (the facts stay as they are).
DEFERRED = "deferred"
#: Most source notes waiting for the daemon's llm worker.
LLM_QUEUE_MAX = 1000
#: Seconds between tries of a background fact write that found the index busy.
LLM_WRITE_RETRY = 1.0
LLM_WRITE_TRIES = 5

#: ``defer(source_id, path)`` queues a source for background llm extraction;
#: False when it could not be queued (full, stopping).
Defer = Callable[[str, str], bool]


@dataclass
class FactSyncResult:
    """What one source's reconcile did."""

    kept: int = 0
    added: int = 0
    changed: int = 0
    retired: int = 0
    warnings: list[str] = field(default_factory=list)


def fact_title(note_title: str, heading_path: str, context: str) -> str:
    """The indexed title of a fact: note title, heading path, context
    (a first heading that repeats the note title is said once)."""
    first, sep, rest = heading_path.partition(" > ")
    if first.strip().casefold() == note_title.strip().casefold():
        heading_path = rest
    return " > ".join(p for p in (note_title, heading_path, context) if p)


def build_fact(
    d: FactDraft, note: ParsedNote, source_id: str, extractor: str
) -> tuple[rec.TraceRow, sf.FactMeta]:
    """The trace and anchor row for one extracted fact."""
    context = " > ".join(d.context)
    uri = source_uri(note.path, d.anchor)
    meta = sf.FactMeta(
        trace_id=d.id, source_id=source_id, ordinal=d.ordinal, segment=d.segment,
        heading_path=d.heading_path, heading=d.headings[-1] if d.headings else None,
        block_id=d.block_id, line_start=d.line_start, line_end=d.line_end, source_uri=uri,
        context=context, due=d.due, text_key=d.key, extractor=extractor, redacted=d.redacted,
    )
    metadata: dict[str, Any] = {
        "source_id": source_id,
        "heading_path": d.heading_path,
        "block_id": d.block_id,
        "lines": [d.line_start, d.line_end],
        "source_uri": uri,
        "segment": d.segment,
        "extractor": extractor,
    }
    if context:
        metadata["context"] = context
    if d.due:
        metadata["due"] = d.due
    if d.topics:
        metadata["topics"] = list(d.topics)
    if d.importance is not None:
        metadata["importance"] = d.importance
    tags = list(d.tags) + [t for t in (f"topic/{x}" for x in d.topics) if t not in d.tags]
    trace = rec.TraceRow(
        id=d.id, kind="fact", type=d.type, title=fact_title(note.title, d.heading_path, context),
        content=d.text, tags=tags, metadata=metadata, path=note.path, source="extracted",
        strength=d.importance, status=sf.ACTIVE,
    )
    return trace, meta


def pair_changed(
    new: Sequence[FactDraft], old: Sequence[tuple[rec.TraceRow, sf.FactMeta]]
) -> list[tuple[FactDraft, str]]:
    """Pair new facts with the old facts they replace: (new draft, old id).

    Same block id first (only when the id is used once on each side), then,
    within one heading path, the most similar texts (difflib ratio >=
    :data:`SIMILARITY`, best pairs first).

    Near-linear in the number of facts, so a note with thousands of edited
    lines stays on the daemon's hot path: each new fact is compared with a
    few candidates only (:func:`_score_heading`: old facts sharing its rarer
    words, and those at the same rank under the heading), best word overlap
    first, with difflib's cheap upper bounds skipping hopeless ones, and at
    most :data:`MAX_RATIOS` full ratios per fact.
    """
    pairs: list[tuple[FactDraft, str]] = []
    new_blocks: dict[str, list[FactDraft]] = defaultdict(list)
    old_blocks: dict[str, list[str]] = defaultdict(list)
    for d in new:
        if d.block_id:
            new_blocks[d.block_id].append(d)
    for t, m in old:
        if m.block_id:
            old_blocks[m.block_id].append(t.id)
    used_new: set[str] = set()
    used_old: set[str] = set()
    for block, ds in new_blocks.items():
        olds = old_blocks.get(block, [])
        if len(ds) == 1 and len(olds) == 1:
            pairs.append((ds[0], olds[0]))
            used_new.add(ds[0].id)
            used_old.add(olds[0])
    old_by_heading: dict[str, list[tuple[rec.TraceRow, sf.FactMeta]]] = defaultdict(list)
    for t, m in old:
        if t.id not in used_old:
            old_by_heading[m.heading_path].append((t, m))
    new_by_heading: dict[str, list[FactDraft]] = defaultdict(list)
    for d in new:
        if d.id not in used_new and d.heading_path in old_by_heading:
            new_by_heading[d.heading_path].append(d)
    scored: list[tuple[float, int, int, FactDraft, str]] = []
    for heading, drafts in new_by_heading.items():
        scored += _score_heading(drafts, old_by_heading[heading])
    scored.sort(key=lambda s: (-s[0], -s[1], s[2]))
    for _, _, _, d, old_id in scored:
        if d.id in used_new or old_id in used_old:
            continue
        pairs.append((d, old_id))
        used_new.add(d.id)
        used_old.add(old_id)
    return pairs


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD_RE.findall(text.lower()))


def _score_heading(
    drafts: list[FactDraft], olds: list[tuple[rec.TraceRow, sf.FactMeta]]
) -> list[tuple[float, int, int, FactDraft, str]]:
    """(ratio, -ordinal distance, new ordinal, draft, old id) for every
    candidate pair under one heading with ratio >= SIMILARITY."""
    drafts = sorted(drafts, key=lambda d: d.ordinal)
    olds = sorted(olds, key=lambda tm: tm[1].ordinal)
    old_texts = [t.content.lower() for t, _ in olds]
    old_words = [_words(x) for x in old_texts]
    # Inverted index of the old facts' words; words in more than RARE_DF
    # facts (the heading's "stop words") are left out: they would make every
    # lookup as long as the heading.
    postings: dict[str, list[int]] = defaultdict(list)
    for i, ws in enumerate(old_words):
        for w in ws:
            postings[w].append(i)
    scale = len(olds) / len(drafts)
    out: list[tuple[float, int, int, FactDraft, str]] = []
    sm = difflib.SequenceMatcher(None, autojunk=False)
    for rank, d in enumerate(drafts):
        text = d.text.lower()
        words = _words(d.text)
        # Same rank among the unpaired facts: when a whole section is
        # rewritten, the predecessor usually sits at the same place.
        near = int(rank * scale)
        cands = {i for i in (near - 1, near, near + 1) if 0 <= i < len(olds)}
        shared: dict[int, int] = defaultdict(int)
        for w in words:
            hits = postings.get(w)
            if hits is not None and len(hits) <= RARE_DF:
                for i in hits:
                    shared[i] += 1
        if shared:
            cands.update(sorted(shared, key=shared.__getitem__, reverse=True)[:MAX_LOOKUPS])

        def jaccard(i: int) -> float:
            ow = old_words[i]
            inter = len(words & ow)
            union = len(words) + len(ow) - inter
            return inter / union if union else 1.0

        ranked = sorted(cands, key=lambda i: (-jaccard(i), abs(olds[i][1].ordinal - d.ordinal)))
        sm.set_seq2(text)  # difflib caches its analysis of seq2: one per new fact
        best = 0.0
        for i in ranked[:MAX_RATIOS]:
            sm.set_seq1(old_texts[i])
            floor = max(SIMILARITY, best - BEST_MARGIN)
            if sm.real_quick_ratio() < floor or sm.quick_ratio() < floor:
                continue
            ratio = sm.ratio()
            if ratio >= SIMILARITY:
                t, m = olds[i]
                out.append((ratio, -abs(m.ordinal - d.ordinal), d.ordinal, d, t.id))
                best = max(best, ratio)
                if ratio >= SURE:
                    break  # the first candidate by word overlap nearly always is the one
    return out


def _same(t: rec.TraceRow, new: rec.TraceRow, m: sf.FactMeta | None, new_meta: sf.FactMeta) -> bool:
    return (
        m == new_meta
        and (t.type, t.title, t.content, t.tags, t.path, t.status, t.metadata, t.strength)
        == (new.type, new.title, new.content, new.tags, new.path, new.status, new.metadata,
            new.strength if new.strength is not None else t.strength)
    )


def sync_source_facts(
    con: apsw.Connection,
    note: ParsedNote,
    source_id: str,
    extraction: Extraction,
    marks: SourceMarks,
    resolver: "_Resolver",
) -> FactSyncResult:
    """Bring the facts of one source note in line with ``extraction``.

    Runs inside the caller's write transaction; see the module docstring.
    """
    result = FactSyncResult()
    extractor = extraction.extractor
    existing = sf.facts_of(con, [source_id])
    by_id = {t.id: (t, m) for t, m in existing}
    # Facts recorded under an older trace id of the same note (it gained a
    # front-matter id): same text, so they are renamed to their new ids.
    foreign: dict[str, list[str]] = defaultdict(list)
    for state in sf.sources_at(con, note.path):
        if state.source_id != source_id:
            for t, m in sf.facts_of(con, [state.source_id]):
                foreign[m.text_key].append(t.id)
            con.execute("DELETE FROM fact_sources WHERE source_id = ?", (state.source_id,))
    drafts = extraction.facts
    for d in drafts:
        if d.id not in by_id and foreign.get(d.key):
            old_id = foreign[d.key].pop(0)
            if rec.get_trace(con, d.id) is None:
                rec.rename_trace(con, old_id, d.id)
                con.execute("UPDATE facts SET source_id = ? WHERE trace_id = ?", (source_id, d.id))
                t = rec.get_trace(con, d.id)
                m = sf.get_meta(con, d.id)
                if t and m:
                    by_id[d.id] = (t, m)
    for ids in foreign.values():
        for old_id in ids:
            con.execute("UPDATE facts SET source_id = ? WHERE trace_id = ?", (source_id, old_id))
            t, m = rec.get_trace(con, old_id), sf.get_meta(con, old_id)
            if t and m:
                by_id[old_id] = (t, m)
    new_ids = {d.id for d in drafts}
    active_old = [(t, m) for t, m in by_id.values() if t.status == sf.ACTIVE and t.id not in new_ids]
    fresh = [d for d in drafts if d.id not in by_id or by_id[d.id][0].status != sf.ACTIVE]
    pairs = dict((d.id, old_id) for d, old_id in pair_changed(fresh, active_old))
    paired_old = set(pairs.values())

    if any(t.path != note.path for t, _ in by_id.values()):
        sf.repath(con, source_id, note.path)
    new_facts: list[tuple[rec.TraceRow, sf.FactMeta]] = []
    new_edges: list[tuple[str, rec.EdgeRow]] = []
    updates: list[tuple[str, str]] = []
    for d in drafts:
        trace, meta = build_fact(d, note, source_id, extractor)
        current = by_id.get(d.id)
        if current is not None and current[0].status == sf.ACTIVE:
            # Same id, so same text: at most its anchor or type moved.
            t, m = current
            result.kept += 1
            if _same(t, trace, m, meta):
                continue
            if t.content == trace.content and t.type == trace.type:
                trace.updated = t.updated  # only the anchor moved: not an update of the fact
            sf.put_fact(con, trace, meta)
            if (m.line_start, m.anchor) != (meta.line_start, meta.anchor):
                _move_edges(con, d)
            continue
        if current is None:
            # New to the index: written in bulk below, with its source edge.
            new_facts.append((trace, meta))
            new_edges.append((d.id, rec.EdgeRow(
                kind=sf.DERIVED_FROM, target_name=note.path, target_path=note.path, target_id=source_id,
                anchor=d.anchor, line=d.line_start,
            )))
            new_edges += [(d.id, e) for e in resolver.edges(d, note.path)]
        else:
            sf.put_fact(con, trace, meta)
            sf.reactivate_cleanup(con, d.id)  # a superseded fact whose text is back
            _move_edges(con, d)
            rec.replace_edges(con, d.id, resolver.edges(d, note.path), kinds=(sf.LINK,))
        old_id = pairs.get(d.id)
        if old_id:
            updates.append((d.id, old_id))  # once the new fact exists
            sf.retire(con, old_id, REASON_CHANGED)
            result.changed += 1
        else:
            result.added += 1
    sf.insert_facts(con, new_facts)
    _add_edges(con, new_edges)
    for new_id, old_id in updates:
        sf.link_update(con, new_id, old_id)
    for t, _ in active_old:
        if t.id not in paired_old:
            sf.retire(con, t.id, REASON_REMOVED)
            result.retired += 1
    sf.put_source(con, sf.SourceState(
        source_id=source_id, path=note.path, hash=note.hash, marks=" ".join(marks.names),
        extractor=extractor, facts=len(drafts), redacted=extraction.redacted, extracted_at=rec.now_iso(),
    ))
    return result


def _add_edges(con: apsw.Connection, edges: list[tuple[str, rec.EdgeRow]]) -> None:
    """Insert edges of many facts in one statement."""
    con.executemany(
        "INSERT INTO edges (source_id, kind, target_name, target_key, target_path, target_id, "
        "anchor, display, prop, line, ambiguous) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        [
            (source, e.kind, e.target_name, e.target_key, e.target_path, e.target_id,
             e.anchor, e.display, e.prop, e.line, int(e.ambiguous))
            for source, e in edges
        ],
    )


def _move_edges(con: apsw.Connection, d: FactDraft) -> None:
    """A fact moved within its note: its edges carry the new line and anchor."""
    con.execute(
        "UPDATE edges SET line = ? WHERE source_id = ? AND kind = ?", (d.line_start, d.id, sf.LINK)
    )
    con.execute(
        "UPDATE edges SET line = ?, anchor = ? WHERE source_id = ? AND kind = ?",
        (d.line_start, d.anchor, d.id, sf.DERIVED_FROM),
    )


class _Resolver:
    """Link resolution for fact edges, built lazily from the files table."""

    def __init__(self, con: apsw.Connection) -> None:
        self.con = con
        self._files: dict[str, str | None] | None = None
        self._resolver: LinkResolver | None = None

    def _load(self) -> None:
        self._files = {r[0]: r[1] for r in self.con.execute("SELECT path, trace_id FROM files")}
        self._resolver = LinkResolver(self._files)

    def resolve(self, target: str, source_path: str) -> tuple[str | None, str | None, bool]:
        """(path, trace id, ambiguous) for a link target written in ``source_path``."""
        if self._resolver is None:
            self._load()
        assert self._resolver is not None and self._files is not None
        hit = self._resolver.resolve(target, source_path)
        return hit.path, (self._files.get(hit.path) if hit.path else None), hit.ambiguous

    def edges(self, d: FactDraft, source_path: str) -> list[rec.EdgeRow]:
        """The link edges of one fact, resolved like note links."""
        out = []
        for link in d.links:
            path, trace_id, ambiguous = self.resolve(link.target, source_path)
            out.append(rec.EdgeRow(
                kind=sf.LINK, target_name=link.target, target_key=link_key(link.target) if link.target else "",
                target_path=path, target_id=trace_id, anchor=link.subpath, display=link.display,
                line=link.line, ambiguous=ambiguous,
            ))
        return out


def frontmatter_key_lines(data: bytes) -> dict[str, int]:
    """File line of each top-level front-matter key of a note's raw bytes."""
    text = data.decode("utf-8", "replace").lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    yaml_text, _, _ = split_frontmatter(text)
    return fm_key_lines(yaml_text) if yaml_text else {}


class FactObserver:
    """The indexer observer that extracts and updates facts of memory sources."""

    def __init__(self, root: Path, con: apsw.Connection, config: Config) -> None:
        self.root = root
        self.con = con
        self.globs: list[str] = list(config["sources"])
        self.extractor_name: str = config["extractor"]
        self.llm = None
        self.pending_warnings: list[str] = []
        #: Set by the daemon (see :class:`LLMFactWorker`): llm extraction is
        #: queued there instead of run inline.
        self.defer: Defer | None = None
        if self.extractor_name == "llm":
            from .llm_extract import LLMExtractor

            self.llm = LLMExtractor.from_config(config)

    # -- the observer protocol ---------------------------------------------

    def notes_changed(self, written: list[tuple[ParsedNote, rec.TraceRow]], removed: list[str]) -> list[str]:
        """Update the facts of every written source note; retire those of
        unmarked and removed ones. Never raises: problems become warnings."""
        warnings, self.pending_warnings = self.pending_warnings, []
        try:
            self._apply(written, removed, warnings)
        except Exception as exc:  # an observer must not break the sync
            log.exception("fact extraction failed")
            warnings.append(f"facts: could not update facts: {type(exc).__name__}: {exc}")
        return warnings

    def _apply(self, written: list[tuple[ParsedNote, rec.TraceRow]], removed: list[str], warnings: list[str]) -> None:
        resolver = _Resolver(self.con)
        with_facts = sf.source_ids_with_facts(self.con, [t.id for _, t in written])
        todo: list[tuple[ParsedNote, rec.TraceRow, SourceMarks]] = []
        retire: list[tuple[str, str]] = []
        for note, trace in written:
            marks = source_marks(note, self.globs) if trace.kind == "note" else SourceMarks()
            if marks:
                todo.append((note, trace, marks))
            elif note.error and "front-matter" in note.error and trace.id in with_facts:
                warnings.append(f"{note.path}: front-matter does not parse; its facts are kept as they were")
            elif trace.id in with_facts or sf.get_source(self.con, trace.id):
                retire.append((trace.id, REASON_UNMARKED))
        retire += [(tid, REASON_DELETED) for tid in removed]
        if retire:
            with write_transaction(self.con):
                for tid, reason in retire:
                    sf.retire_source(self.con, tid, reason)
        for i in range(0, len(todo), BATCH):
            batch = todo[i : i + BATCH]
            extracted = []
            for note, trace, marks in batch:
                state = sf.get_source(self.con, trace.id)
                if state and state.hash == note.hash and state.path == note.path:
                    # Already extracted from these bytes (another writer got
                    # here first, or only the config's globs changed): the
                    # facts stand, but how the note is marked may not.
                    if state.marks != " ".join(marks.names):
                        state.marks = " ".join(marks.names)
                        with write_transaction(self.con):
                            sf.put_source(self.con, state)
                    continue
                extraction = self._extract(note, trace, state, warnings)
                if extraction is not None:
                    extracted.append((note, trace, marks, extraction))
            if not extracted:
                continue
            with write_transaction(self.con):
                for note, trace, marks, extraction in extracted:
                    state = sf.get_source(self.con, trace.id)
                    if state and state.hash == note.hash and state.path == note.path:
                        continue
                    if extraction.extractor in (MOVED, DEFERRED):
                        if extraction.extractor == MOVED or (state and state.path != note.path):
                            sf.repath(self.con, trace.id, note.path)
                            self._repath_sources(note, trace.id, state, marks)
                        continue
                    result = sync_source_facts(self.con, note, trace.id, extraction, marks, resolver)
                    warnings += result.warnings
                    warnings += [f"{note.path}: {w}" for w in extraction.warnings]
        self._reresolve(written, removed, resolver)

    def _extract(
        self, note: ParsedNote, trace: rec.TraceRow, state: sf.SourceState | None, warnings: list[str]
    ) -> Extraction | None:
        """Facts of one source note with the configured extractor (falling
        back to the default rules when the llm extractor fails)."""
        key_lines: dict[str, int] = {}
        if note.frontmatter:
            try:
                data = (self.root / note.path).read_bytes()
                if content_hash(data) == note.hash:
                    key_lines = frontmatter_key_lines(data)
            except OSError:
                pass
        if self.llm is not None:
            from .llm_extract import LLMCancelled

            if state and state.hash == note.hash and state.extractor == "llm":
                # Only the path changed: keep the facts, do not ask the model again.
                return Extraction(extractor=MOVED)
            if self.defer is not None:
                # The daemon: the model is asked in the background (module docstring).
                queued = self.defer(trace.id, note.path)
                if queued and state is not None and state.facts > 0:
                    return Extraction(extractor=DEFERRED)
                if not queued:
                    log.warning("%s: llm extraction queue full; used the default extractor", note.path)
            else:
                try:
                    return self.llm.extract(note, trace.id, key_lines=key_lines)
                except LLMCancelled:
                    raise  # shutting down: write nothing for this note
                except Exception as exc:
                    warnings.append(f"{note.path}: llm extractor failed ({exc}); used the default extractor")
        try:
            return extract_facts(note, trace.id, key_lines=key_lines)
        except Exception as exc:  # a bug in the rules must not stop the other notes
            log.exception("extracting facts from %s", note.path)
            warnings.append(f"{note.path}: could not extract facts: {type(exc).__name__}: {exc}")
            return None

    def _repath_sources(
        self, note: ParsedNote, source_id: str, state: sf.SourceState | None, marks: SourceMarks
    ) -> None:
        for t, m in sf.facts_of(self.con, [source_id]):
            m.source_uri = source_uri(note.path, m.anchor)
            sf.put_meta(self.con, m)
            self.con.execute(
                "UPDATE traces SET title = ? WHERE id = ?", (fact_title(note.title, m.heading_path, m.context), t.id)
            )
        if state:
            state.path, state.marks = note.path, " ".join(marks.names)
            sf.put_source(self.con, state)

    def _reresolve(self, written: list[tuple[ParsedNote, rec.TraceRow]], removed: list[str], resolver: _Resolver) -> None:
        """Re-resolve fact links whose target note appeared, moved or
        disappeared (the indexer re-resolves note links only).

        Cheap on the daemon's hot path: indexed lookups by the written notes'
        link keys and trace ids; the scan for vanished targets runs only when
        notes were removed.
        """
        sql = (
            "SELECT e.id, e.target_name, t.path, e.target_path, e.target_id, e.ambiguous FROM edges e "
            "JOIN traces t ON t.id = e.source_id "
            "WHERE e.kind = 'link' AND t.kind = 'fact' AND t.status = 'active' AND "
        )
        rows: list[tuple[int, str, str, str | None, str | None, int]] = []
        keys = list({path_key(n.path) for n, _ in written})
        ids = list({t.id for _, t in written})
        for column, values in (("e.target_key", keys), ("e.target_id", ids)):
            for i in range(0, len(values), 500):
                chunk = values[i : i + 500]
                rows += self.con.execute(sql + f"{column} IN ({','.join('?' * len(chunk))})", chunk).fetchall()
        if removed:
            rows += self.con.execute(
                sql + "e.target_path IS NOT NULL AND NOT EXISTS (SELECT 1 FROM files WHERE path = e.target_path)"
            ).fetchall()
        if not rows:
            return
        changes = []
        for edge_id, target, source_path, old_path, old_id, ambiguous in set(rows):
            path, trace_id, amb = resolver.resolve(target, source_path or "")
            if (path, trace_id, amb) != (old_path, old_id, bool(ambiguous)):
                changes.append((edge_id, path, trace_id, amb))
        if changes:
            with write_transaction(self.con):
                for edge_id, path, trace_id, amb in changes:
                    rec.set_edge_target(self.con, edge_id, path, trace_id, amb)

    # -- background llm extraction (the daemon) ---------------------------------

    def llm_backlog(self, *, upgrade: bool = False) -> list[tuple[str, str]]:
        """(source id, path) of the sources whose facts lag behind their note:
        indexed with another hash than they were extracted from, and with
        ``upgrade`` also those whose facts came from the default extractor
        (a fallback, or the stand-in for a new source)."""
        return [
            (r[0], r[1])
            for r in self.con.execute(
                "SELECT s.source_id, f.path FROM fact_sources s JOIN files f ON f.trace_id = s.source_id "
                "WHERE f.kind = 'note' AND (f.hash IS NOT s.hash OR (? AND s.extractor != 'llm'))",
                (int(upgrade),),
            )
        ]

    def extract_in_background(self, source_id: str) -> "str | _Extracted":
        """Extract one queued source with the llm, inline (this runs on the
        worker's thread and connection, never holding the write lock).

        Returns what to write (:meth:`write_in_background`), or why there is
        nothing to: ``stale`` (the file changed since it was indexed; that
        change queued its own job), ``current``, ``gone`` or ``unmarked``.
        Raises :class:`~.llm_extract.LLMCancelled` when the worker stops.
        """
        row = self.con.execute(
            "SELECT path, hash FROM files WHERE trace_id = ? AND kind = 'note'", (source_id,)
        ).fetchone()
        trace = rec.get_trace(self.con, source_id)
        if row is None or trace is None:
            return "gone"
        path, indexed_hash = row
        try:
            data = (self.root / path).read_bytes()
            if content_hash(data) != indexed_hash:
                return "stale"
            note = parse_note(path, data)
        except (OSError, NoteReadError):
            return "stale"
        marks = source_marks(note, self.globs)
        if not marks:
            return "unmarked"  # the indexer's observer retires its facts
        state = sf.get_source(self.con, source_id)
        if state and state.hash == note.hash and state.path == note.path and state.extractor == "llm":
            return "current"
        warnings: list[str] = []
        extraction = self._extract(note, trace, state, warnings)
        for w in [*warnings, *(f"{note.path}: {w}" for w in (extraction.warnings if extraction else []))]:
            log.warning("%s", w)
        if extraction is None:
            return "failed"
        return _Extracted(note, source_id, marks, extraction)

    def write_in_background(self, job: "_Extracted") -> str:
        """Write what :meth:`extract_in_background` got, unless the index has
        moved on meanwhile (then the answer is stale and dropped). Returns
        ``written``, ``stale`` or ``current``."""
        note, source_id, marks, extraction = job.note, job.source_id, job.marks, job.extraction
        with write_transaction(self.con):
            now = self.con.execute("SELECT path, hash FROM files WHERE trace_id = ?", (source_id,)).fetchone()
            if now is None or tuple(now) != (note.path, note.hash):
                return "stale"
            state = sf.get_source(self.con, source_id)
            if state and (state.hash, state.path, state.extractor) == (note.hash, note.path, extraction.extractor):
                return "current"  # someone (a CLI sync) wrote these facts already
            if extraction.extractor == MOVED:
                sf.repath(self.con, source_id, note.path)
                self._repath_sources(note, source_id, state, marks)
            else:
                result = sync_source_facts(self.con, note, source_id, extraction, marks, _Resolver(self.con))
                for w in result.warnings:
                    log.warning("%s", w)
        return "written"

    # -- config changes ------------------------------------------------------

    def refresh_globs(self) -> None:
        """Extract (or retire) the notes whose source status changed because
        the ``sources`` globs of the config changed since the last run."""
        stored = rec.get_meta(self.con, GLOBS_META)
        if stored is not None and json.loads(stored) == self.globs:
            return
        old = json.loads(stored) if stored else []
        files = self.con.execute("SELECT path, trace_id FROM files WHERE kind = 'note' AND trace_id IS NOT NULL").fetchall()
        changed = [
            (path, tid) for path, tid in files
            if (matching_glob(path, old) is None) != (matching_glob(path, self.globs) is None)
        ]
        written = []
        for path, tid in changed:
            trace = rec.get_trace(self.con, tid)
            try:
                note = parse_note(path, (self.root / path).read_bytes())
            except (OSError, NoteReadError) as exc:
                self.pending_warnings.append(f"{path}: cannot read for fact extraction: {exc}")
                continue
            if trace is not None:
                written.append((note, trace))
        if written:
            self.pending_warnings += self.notes_changed(written, [])
        with write_transaction(self.con):
            rec.set_meta(self.con, GLOBS_META, json.dumps(self.globs))



@dataclass
class _Extracted:
    """A background extraction waiting to be written."""

    note: ParsedNote
    source_id: str
    marks: SourceMarks
    extraction: Extraction


class LLMFactWorker:
    """The daemon's llm extraction, off its hot path (see the module docstring).

    One thread with its own index connection and its own extractor (and so
    its own circuit breaker). Jobs are source trace ids in a bounded queue:
    a note changed again before its turn is queued once. :meth:`stop` sets
    the extractor's cancel event, so a call in flight is abandoned within
    :data:`~.llm_extract.CANCEL_CHECK` seconds, and joins the thread.
    """

    def __init__(
        self, vault: "Vault", *, max_pending: int = LLM_QUEUE_MAX, on_done: Callable[[str, str], None] | None = None
    ) -> None:
        self.vault = vault
        self.max_pending = max_pending
        self.on_done = on_done  # (source id, outcome), called on the worker thread
        self.idle = threading.Event()  # nothing queued and nothing in flight
        self.idle.set()
        self.counts: dict[str, int] = defaultdict(int)
        self.error: BaseException | None = None
        self.observer: FactObserver | None = None  # the daemon's own (for the backlog query)
        self._pending: dict[str, str] = {}  # source id -> path, oldest first
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def attach(
        cls, vault: "Vault", indexer: "Indexer", on_done: Callable[[str, str], None] | None = None
    ) -> "LLMFactWorker | None":
        """Start a worker for ``indexer``'s fact observer if it uses the llm
        extractor, and route its llm extraction there; None otherwise."""
        for observer in indexer.observers:
            if isinstance(observer, FactObserver) and observer.llm is not None:
                worker = cls(vault, on_done=on_done)
                worker.observer = observer
                worker.start()
                observer.defer = worker.submit
                return worker
        return None

    def start(self) -> None:
        """Run the worker thread."""
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._main, name="memvault-llm-facts", daemon=True)
            self._thread.start()

    def submit(self, source_id: str, path: str) -> bool:
        """Queue one source; False when the queue is full or the worker stopping."""
        with self._cond:
            if self._thread is None or self._stop.is_set():
                return False
            if source_id not in self._pending and len(self._pending) >= self.max_pending:
                self.counts["dropped"] += 1
                return False
            self._pending[source_id] = path
            self.idle.clear()
            self._cond.notify()
        return True

    def submit_backlog(self, *, upgrade: bool = False) -> int:
        """Queue every source whose facts lag behind its note (on the daemon's
        thread, after a full sync); how many were queued. ``upgrade`` also
        queues sources with default-extractor facts (at start-up)."""
        if self.observer is None:
            return 0
        return sum(self.submit(sid, path) for sid, path in self.observer.llm_backlog(upgrade=upgrade))

    def stop(self, timeout: float = 10.0) -> None:
        """Abandon the call in flight, drop what is queued, join the thread."""
        self._stop.set()
        with self._cond:
            self._pending.clear()
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise RuntimeError("memvault llm fact worker did not stop")
            self._thread = None

    def status(self) -> dict[str, Any]:
        """Queue length and outcome counts, for the daemon's status."""
        with self._cond:
            queued = len(self._pending)
        return {"queued": queued, "idle": self.idle.is_set(), **self.counts}

    def _main(self) -> None:
        con: apsw.Connection | None = None
        try:
            con = connect(self.vault.index_path)
            observer = FactObserver(self.vault.root, con, self.vault.config)
            assert observer.llm is not None
            observer.llm.cancel = self._stop
            while True:
                with self._cond:
                    while not self._pending and not self._stop.is_set():
                        self.idle.set()
                        self._cond.wait()
                    if self._stop.is_set():
                        return
                    source_id = next(iter(self._pending))
                    del self._pending[source_id]
                outcome = self._run(observer, source_id)
                if outcome is None:
                    return
                self.counts[outcome] += 1
                if self.on_done is not None:
                    try:
                        self.on_done(source_id, outcome)
                    except Exception:
                        log.exception("llm fact worker callback failed")
        except BaseException as exc:  # the daemon keeps running; status reports it
            self.error = exc
            log.exception("memvault llm fact worker failed")
        finally:
            self.idle.set()
            if con is not None:
                con.close()

    def _run(self, observer: FactObserver, source_id: str) -> str | None:
        """One job; None when the worker is stopping."""
        from .llm_extract import LLMCancelled

        try:
            job = observer.extract_in_background(source_id)
        except LLMCancelled:
            return None
        except Exception:
            log.exception("background fact extraction of %s failed", source_id)
            return "failed"
        if isinstance(job, str):
            return job
        for _ in range(LLM_WRITE_TRIES):
            if self._stop.is_set():
                return None  # the hash mismatch re-queues it at the next start
            try:
                return observer.write_in_background(job)
            except apsw.BusyError:
                # A long writer (a full sync, a CLI command) holds the index;
                # the answer is kept and written when it lets go.
                if self._stop.wait(LLM_WRITE_RETRY):
                    return None
            except Exception:
                log.exception("writing background facts of %s failed", source_id)
                return "failed"
        return "busy"
