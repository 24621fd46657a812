"""Keeping facts in step with their source notes.

:class:`FactObserver` is an indexer observer (see
:class:`~memvault.store.index.reconcile.NoteObserver`): after every reconcile it is
told which notes were (re)indexed and which disappeared, and brings the
facts of each memory source up to date. ``memvault sync`` and the daemon both
go through it.

Re-extraction is incremental (:mod:`.fact_sync`): unchanged facts keep their
ids, changed ones are paired with their predecessors, removed ones retired.

A deleted note retires its facts ("source note deleted"), an unmarked one
too ("no longer a memory source").

With the llm extractor, ``memvault sync`` asks the endpoint inline (bounded
by ``llm.timeout`` x attempts). The daemon does not: an llm call can take
seconds, and the daemon must keep every other note searchable within its
debounce. There the observer hands each changed source to
:class:`~.llm_worker.LLMFactWorker` (one background thread, a bounded queue that
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

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import apsw

from memvault.store.db import records as rec
from memvault.store.db import rows as db
from memvault.store.db.connection import write_transaction
from memvault.store.facts import rows as sf
from memvault.store.facts.reextract import FactLinks, fact_title, sync_source_facts
from memvault.store.settings import Settings
from memvault.vault_io.facts import Extraction, extract_facts, source_uri
from memvault.vault_io.note import NoteReadError, ParsedNote, content_hash
from memvault.vault_io.parser import parse_note
from memvault.vault_io.resolve import path_key
from memvault.vault_io.session_note import is_session_note
from memvault.vault_io.sources import SourceMarks, matching_glob, source_marks

log = logging.getLogger(__name__)

#: Source notes written per transaction.
BATCH = 200

REASON_DELETED = "source note deleted"
REASON_UNMARKED = "no longer a memory source"
#: A session's fact that an earlier session states too: that one holds it.
REASON_EARLIER = "said in an earlier session"
GLOBS_META = "fact_source_globs"
#: Marks an extraction that was skipped because only the note's path changed.
MOVED = "moved"
#: Marks an extraction left to the daemon's llm worker (the facts stay as they are).
DEFERRED = "deferred"
#: ``defer(source_id, path)`` queues a source for background llm extraction;
#: False when it could not be queued (full, stopping).
Defer = Callable[[str, str], bool]


class FactObserver:
    """The indexer observer that extracts and updates facts of memory sources."""

    def __init__(self, root: Path, con: apsw.Connection, settings: Settings) -> None:
        self.root = root
        self.con = con
        self.globs: list[str] = list(settings.sources)
        self.extractor_name: str = settings.extractor
        #: Which chat facts are kept (``ingest.min_importance``, ``ingest.max_per_turn``: :mod:`.importance`).
        self.min_importance = settings.ingest.min_importance
        self.max_per_turn = settings.ingest.max_per_turn
        self.llm = None
        self.pending_warnings: list[str] = []
        #: Set by a host's background worker (the daemon's, see
        #: the store's ``route_llm_facts``): llm extraction is queued
        #: there instead of run inline.
        self.defer: Defer | None = None
        #: Repeat keys of conversation facts extracted in the current batch
        #: -> the session that keeps the fact (see :func:`~.conversation.drop_repeats`;
        #: sessions are taken by :func:`~.conversation.session_rank`, so the earliest).
        self.batch_seen: dict[str, str] = {}
        #: Session note id -> facts of later sessions it takes over (retired
        #: when its facts are written): the earliest session holds a fact.
        self.take_over: dict[str, list[str]] = {}
        #: Session note id -> fact ids to keep instead of the repeat rule
        #: (a restore of memvault's own export; see the store's ``fact_keep``).
        self.keep: dict[str, set[str]] = {}
        if self.extractor_name == "llm":
            from memvault.store.facts.llm_extract import LLMExtractor

            self.llm = LLMExtractor.from_settings(settings)

    # -- the observer protocol ---------------------------------------------

    def wanted(self, written: list[tuple[ParsedNote, rec.TraceRow]]) -> list[tuple[ParsedNote, rec.TraceRow]]:
        """The written notes :meth:`notes_changed` has work for: sources (to
        extract) and notes that were sources or had facts (to retire or
        keep). Lets a long reconcile let go of every other note as it goes."""
        ids = [t.id for _, t in written]
        known = sf.source_ids_with_facts(self.con, ids) | sf.recorded_sources(self.con, ids)
        return [(n, t) for n, t in written
                if t.id in known or (t.kind == "note" and bool(source_marks(n, self.globs)))]

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
        self.batch_seen, self.take_over = {}, {}
        resolver = FactLinks(self.con)
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
        from memvault.store.consolidation.retention import keep_facts, retained

        # A session note retention moved to the trash keeps its facts there.
        in_trash = retained(self.con, removed) if removed else {}
        retire += [(tid, REASON_DELETED) for tid in removed if tid not in in_trash]
        if retire or in_trash:
            with write_transaction(self.con):
                for tid, reason in retire:
                    sf.retire_source(self.con, tid, reason)
                for tid, trash in in_trash.items():
                    keep_facts(self.con, tid, trash)
        # Ordinary sources first, all written before any session note is
        # read, so a fact they state counts as known whichever batch it falls
        # in; then session notes in the order that decides which one holds a
        # fact several of them state (the earliest: see session_rank). Never
        # the order the notes came in, which is the order this device saw them.
        sessions = [w for w in todo if is_session_note(w[0].frontmatter)]
        ordinary = [w for w in todo if not is_session_note(w[0].frontmatter)]
        if sessions:
            from memvault.store.facts.conversation import session_rank

            sessions.sort(key=lambda w: session_rank(w[0], w[1].id))
        for group in (ordinary, sessions):
            for i in range(0, len(group), BATCH):
                self._apply_batch(group[i : i + BATCH], resolver, warnings)
        self._reresolve(written, removed, resolver)

    def _apply_batch(
        self, batch: list[tuple[ParsedNote, rec.TraceRow, SourceMarks]], resolver: FactLinks, warnings: list[str]
    ) -> None:
        """Extract and write the facts of one batch of source notes."""
        extracted = []
        remarked = []
        for note, trace, marks in batch:
            state = sf.get_source(self.con, trace.id)
            if state and state.hash == note.hash and state.path == note.path:
                # Already extracted from these bytes (another writer got
                # here first, or only the config's globs changed): the
                # facts stand, but how the note is marked may not.
                if state.marks != " ".join(marks.names):
                    state.marks = " ".join(marks.names)
                    remarked.append(state)
                continue
            extraction = self._extract(note, trace, state, warnings)
            if extraction is not None:
                extracted.append((note, trace, marks, extraction))
        if remarked:
            with write_transaction(self.con):
                for state in remarked:
                    sf.put_source(self.con, state)
        if not extracted:
            return
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
                self._retire_taken(self.take_over.pop(trace.id, []))
                result = sync_source_facts(self.con, note, trace.id, extraction, marks, resolver)
                warnings += result.warnings
                warnings += [f"{note.path}: {w}" for w in extraction.warnings]

    def _extract(
        self, note: ParsedNote, trace: rec.TraceRow, state: sf.SourceState | None, warnings: list[str]
    ) -> Extraction | None:
        """Facts of one source note with the configured extractor (falling
        back to the default rules when the llm extractor fails). A session
        note gets the conversation extractor's rules or prompt, its facts
        anchored to their turns, those the ingest settings keep
        (:func:`~.importance.select`), its digest's action items
        (:mod:`.actions`), and none that repeat what is known already."""
        extraction = self._extract_note(note, trace, state, warnings)
        if extraction is None or extraction.extractor in (MOVED, DEFERRED) or not is_session_note(note.frontmatter):
            return extraction
        from memvault.store.facts.conversation import anchor_to_turns, drop_repeats, session_rank

        if extraction.extractor != "conversation":  # the llm's facts: anchored by line, to their turns here
            extraction = anchor_to_turns(note, extraction)
        from memvault.store.facts.actions import with_action_items

        # The digest block's tasks, whichever extractor; the ingest settings weigh them as the plans they are.
        extraction = with_action_items(note, trace.id, extraction)
        if trace.id in self.keep:
            extraction.facts = [d for d in extraction.facts if d.id in self.keep[trace.id]]
            return extraction
        from memvault.store.facts.importance import select

        # Before the repeat rule: a fact left out here takes nothing over from a later session.
        extraction.facts = select(extraction.facts, self.min_importance, self.max_per_turn)
        taken: list[str] = []
        extraction = drop_repeats(self.con, trace.id, extraction, self.batch_seen, session_rank(note, trace.id), taken)
        if taken:
            self.take_over[trace.id] = taken
        return extraction

    def _retire_taken(self, fact_ids: list[str]) -> None:
        """Retire the facts of later sessions that an earlier one took over
        (in the transaction that writes the earlier one's facts); one that
        is no longer live (retired meanwhile) stays as it is."""
        for fact_id in fact_ids:
            if db.first(self.con, "SELECT 1 FROM traces WHERE id = ? AND status = ?", (fact_id, sf.ACTIVE)):
                sf.retire(self.con, fact_id, REASON_EARLIER)

    def _extract_note(
        self, note: ParsedNote, trace: rec.TraceRow, state: sf.SourceState | None, warnings: list[str]
    ) -> Extraction | None:
        session = is_session_note(note.frontmatter)
        key_lines = note.key_lines  # found by the parser: the source file is not read again
        if self.llm is not None:
            from memvault.store.facts.llm_extract import LLMCancelled

            if state and state.hash == note.hash and state.extractor == "llm":
                # Only the path changed: keep the facts, do not ask the model again.
                return Extraction(extractor=MOVED)
            if self.defer is not None:
                # The daemon: the model is asked in the background (module docstring).
                queued = self.defer(trace.id, note.path)
                if queued and state is not None and state.facts > 0:
                    return Extraction(extractor=DEFERRED)
                if not queued:
                    log.warning("%s: llm extraction queue full or stopped; used the default extractor", note.path)
            else:
                try:
                    if session:
                        from memvault.store.facts.conversation import CONVERSATION_PROMPT, llm_prompt

                        return self.llm.extract(note, trace.id, key_lines=key_lines, system_prompt=CONVERSATION_PROMPT,
                                                user_prompt=llm_prompt(note))
                    return self.llm.extract(note, trace.id, key_lines=key_lines)
                except LLMCancelled:
                    raise  # shutting down: write nothing for this note
                except Exception as exc:
                    warnings.append(f"{note.path}: llm extractor failed ({exc}); used the default extractor")
        try:
            if session:
                from memvault.store.facts.conversation import extract_conversation_facts

                return extract_conversation_facts(note, trace.id)
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

    def _reresolve(self, written: list[tuple[ParsedNote, rec.TraceRow]], removed: list[str], resolver: FactLinks) -> None:
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
                rows += db.rows(self.con, sql + f"{column} IN ({','.join('?' * len(chunk))})", chunk)
        if removed:
            rows += db.rows(
                self.con,
                sql + "e.target_path IS NOT NULL AND NOT EXISTS (SELECT 1 FROM files WHERE path = e.target_path)",
            )
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
        self.batch_seen, self.take_over = {}, {}
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
        return _Extracted(note, source_id, marks, extraction, self.take_over.pop(source_id, []))

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
                self._retire_taken(job.taken)
                result = sync_source_facts(self.con, note, source_id, extraction, marks, FactLinks(self.con))
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
        files = db.rows(self.con, "SELECT path, trace_id FROM files WHERE kind = 'note' AND trace_id IS NOT NULL")
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
    #: Facts of later sessions this one takes over (:meth:`FactObserver._retire_taken`).
    taken: list[str]
