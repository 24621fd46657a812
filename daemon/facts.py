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
   least :data:`SIMILARITY`, best pairs first). A paired new fact gets an
   ``updates`` edge to its predecessor, which is kept as superseded with
   reason "changed in source" (``memvault history`` follows the chain);
4. old facts left unpaired are retired: "removed from source".

A deleted note retires its facts ("source note deleted"), an unmarked one
too ("no longer a memory source"). A note whose front-matter stops parsing
keeps its facts until it parses again (a typo should not wipe them).
Changing the ``sources`` globs of the config is noticed the next time the
indexer is built (:meth:`FactObserver.refresh_globs`).
"""

from __future__ import annotations

import difflib
import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
from memvault.store import facts as sf
from memvault.store import records as rec
from memvault.store.db import write_transaction
from memvault.vault_io.facts import Extraction, FactDraft, extract_facts, source_uri
from memvault.vault_io.frontmatter import key_lines as fm_key_lines
from memvault.vault_io.frontmatter import split_frontmatter
from memvault.vault_io.note import NoteReadError, ParsedNote, content_hash
from memvault.vault_io.parser import parse_note
from memvault.vault_io.resolve import LinkResolver, link_key, path_key
from memvault.vault_io.sources import SourceMarks, matching_glob, source_marks

from .config import Config

log = logging.getLogger(__name__)

#: Lowest difflib ratio at which an edited fact is taken for its predecessor.
SIMILARITY = 0.6
#: Most old facts a new one is compared with (nearest in note order first),
#: so pairing stays fast when a whole long section is rewritten.
MAX_CANDIDATES = 40
#: Source notes written per transaction.
BATCH = 200

REASON_CHANGED = "changed in source"
REASON_REMOVED = "removed from source"
REASON_DELETED = "source note deleted"
REASON_UNMARKED = "no longer a memory source"
GLOBS_META = "fact_source_globs"
#: Marks an extraction that was skipped because only the note's path changed.
MOVED = "moved"


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
    within one heading path, the most similar texts (ratio >= SIMILARITY).
    """
    pairs: list[tuple[FactDraft, str]] = []
    free_new = list(new)
    free_old = list(old)
    new_blocks = defaultdict(list)
    old_blocks = defaultdict(list)
    for d in free_new:
        if d.block_id:
            new_blocks[d.block_id].append(d)
    for t, m in free_old:
        if m.block_id:
            old_blocks[m.block_id].append((t, m))
    used_new: set[str] = set()
    used_old: set[str] = set()
    for block, ds in new_blocks.items():
        olds = old_blocks.get(block, [])
        if len(ds) == 1 and len(olds) == 1:
            pairs.append((ds[0], olds[0][0].id))
            used_new.add(ds[0].id)
            used_old.add(olds[0][0].id)
    by_heading: dict[str, list[tuple[rec.TraceRow, sf.FactMeta]]] = defaultdict(list)
    for t, m in free_old:
        if t.id not in used_old:
            by_heading[m.heading_path].append((t, m))
    scored: list[tuple[float, int, int, FactDraft, str]] = []
    for d in free_new:
        if d.id in used_new:
            continue
        candidates = by_heading.get(d.heading_path, [])
        if len(candidates) > MAX_CANDIDATES:
            candidates = sorted(candidates, key=lambda tm: abs(tm[1].ordinal - d.ordinal))[:MAX_CANDIDATES]
        a = d.text.lower()
        for t, m in candidates:
            sm = difflib.SequenceMatcher(None, a, t.content.lower(), autojunk=False)
            if sm.real_quick_ratio() < SIMILARITY or sm.quick_ratio() < SIMILARITY:
                continue
            ratio = sm.ratio()
            if ratio >= SIMILARITY:
                scored.append((ratio, -abs(m.ordinal - d.ordinal), d.ordinal, d, t.id))
    scored.sort(key=lambda s: (-s[0], -s[1], s[2]))
    for _, _, _, d, old_id in scored:
        if d.id in used_new or old_id in used_old:
            continue
        pairs.append((d, old_id))
        used_new.add(d.id)
        used_old.add(old_id)
    return pairs


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
                    continue  # already extracted from these bytes (another writer got here first)
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
                    if extraction.extractor == MOVED:
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
            if state and state.hash == note.hash and state.extractor == "llm":
                # Only the path changed: keep the facts, do not ask the model again.
                return Extraction(extractor=MOVED)
            try:
                return self.llm.extract(note, trace.id, key_lines=key_lines)
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
