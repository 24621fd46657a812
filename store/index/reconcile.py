"""Bringing the index in line with the vault.

:func:`reconcile` is the one code path for every change, whether it comes
from a full ``memvault sync`` (every path of the vault is a candidate) or from
the daemon (the paths its watcher saw). For each candidate it decides, cheapest
check first: unchanged (same mtime, size, ctime and inode; a path the daemon's
watcher gave is read whatever its stat), touched (same hash), changed,
new, moved (a new path whose front-matter id or content hash belongs to a path
that disappeared), or deleted. Then it writes the decisions in batches, each
one ``BEGIN IMMEDIATE`` transaction, and re-resolves the links elsewhere in
the vault whose targets appeared or disappeared.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import apsw

from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.db.rows import rows, scalar
from memvault.store.index.classify import TraceDraft, finish_edges, finish_trace, note_edges, note_trace
from memvault.store.index.identity import NoteIdentity, frontmatter_id, is_copy, with_error
from memvault.store.index.moves import pair_edited_moves
from memvault.store.index.turn_traces import drop_turns, sync_turns
from memvault.store.memories import rows as mem
from memvault.vault_io.confine import outside_target
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.gate import Gate
from memvault.vault_io.note import ParsedNote
from memvault.vault_io.resolve import LinkResolver, Resolution
from memvault.vault_io.scan import (
    FileStat,
    ScanResult,
    ScanWarning,
    excluded,
    scan_vault,
    stat_file,
    vault_rules,
)

log = logging.getLogger(__name__)

#: Notes written per transaction: large enough to amortise the commit, small
#: enough that a CLI writer never waits long for the daemon (or vice versa).
BATCH = 500

#: A reconcile writing at least this many notes, and at least as many as the
#: index already holds, is a bulk load: FTS is rebuilt once at the end instead
#: of row by row (see store.records.begin_bulk_load).
BULK_MIN = 1000

#: The index's meta key listing the vault paths found leading outside the
#: vault (JSON list), for ``stats`` and ``doctor``.
OUTSIDE_META = "outside_vault"

#: SQLite's default: checkpoint the WAL when it reaches this many pages.
WAL_AUTOCHECKPOINT = 1000

Progress = Callable[[int, int], None]


class VaultMissingError(MemvaultError):
    """The vault folder is gone; nothing was changed in the index."""


class NoteObserver(Protocol):
    """Something derived from notes (facts, vectors) that follows their changes.

    Called after the reconcile's own transactions have committed, so an
    observer may take its time (an LLM call) without holding the write lock;
    it opens its own transactions. Returns warnings to report.
    """

    def notes_changed(self, written: list[tuple[ParsedNote, rec.TraceRow]], removed: list[str]) -> list[str]:
        """``written``: notes (re)indexed, with their traces; ``removed``: trace ids whose note is gone."""
        ...

    def wanted(self, written: list[tuple[ParsedNote, rec.TraceRow]]) -> list[tuple[ParsedNote, rec.TraceRow]]:
        """Those of ``written`` that ``notes_changed`` would do anything with
        (a long reconcile keeps only those; an observer without it gets all)."""
        ...


@dataclass
class SyncSummary:
    """What one reconcile did."""

    added: int = 0
    updated: int = 0
    moved: int = 0
    deleted: int = 0
    skipped: int = 0
    errors: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    parse_errors: list[str] = field(default_factory=list)
    changed_paths: list[str] = field(default_factory=list)

    def count(self, c: "NoteChange") -> None:
        """Count one written note as added, moved or updated."""
        if c.old_path is None:
            self.added += 1
        elif c.old_path != c.stat.path:
            self.moved += 1
        else:
            self.updated += 1
        if c.note.error:
            self.errors += 1
            self.parse_errors.append(f"{c.stat.path}: {c.note.error}")
        self.changed_paths.append(c.stat.path)

    @property
    def changed(self) -> bool:
        """Whether the index changed at all."""
        return bool(self.added or self.updated or self.moved or self.deleted)

    def as_dict(self) -> dict[str, object]:
        """The summary as plain JSON-ready values."""
        return {
            "added": self.added,
            "updated": self.updated,
            "moved": self.moved,
            "deleted": self.deleted,
            "skipped": self.skipped,
            "errors": self.errors,
            "seconds": round(self.seconds, 3),
            "warnings": self.warnings,
            "parse_errors": self.parse_errors,
        }


@dataclass
class NoteChange:
    stat: FileStat
    note: ParsedNote
    old_path: str | None  # where the trace lived before (moves), or same path
    trace_id: str = ""
    memory: bool = False
    resolutions: tuple[Resolution, ...] | None = None  # of note.links + note.embeds, when read in bulk
    keys: tuple[str, ...] | None = None  # their link keys, likewise
    #: The note gave up the id its path was indexed under (another note keeps
    #: it by the identity rule): its new id starts a trace of its own instead
    #: of taking the old one's over by a rename.
    own_trace: bool = False
    #: The note took over an id another path held (by the identity rule, or
    #: from a note gone from disk): not an edit of that memory, so no version.
    takeover: bool = False
    #: The path whose index row held the id before (its note is gone from disk).
    displaces: str | None = None
    #: The trace row drafted from a note where it was read (a worker process),
    #: with that note: used while ``note`` is still that note.
    draft: tuple[ParsedNote, TraceDraft] | None = None


class Indexer:
    """Joins one vault folder to its index connection."""

    def __init__(
        self,
        root: Path,
        con: apsw.Connection,
        *,
        ignore: Iterable[str] = (),
        max_file_size: int = 5 * 1024 * 1024,
        memory_folder: str = "Memory",
        observers: Sequence[NoteObserver] = (),
        gate: Gate | None = None,
    ) -> None:
        """``gate``: the vault's write gate (the id, created and version lines
        a note gets, temp files removed); by default one for ``memory_folder``
        and its default history folder."""
        self.root = root
        self.con = con
        self.ignore = list(ignore)
        self.max_file_size = max_file_size
        self.memory_folder = memory_folder
        self.observers = list(observers)
        self.gate = gate or default_gate(root, memory_folder)
        self.identity = NoteIdentity(root, con, memory_folder, self.gate)
        self._paths: tuple[dict[str, str | None], LinkResolver] | None = None
        self._released: set[str] = set()  # trace ids notes let go of, this batch
        self._paths_gen: str | None = None

    # -- entry points ------------------------------------------------------

    def sync(self, progress: Progress | None = None) -> SyncSummary:
        """Full reconcile: scan the whole vault and apply every difference."""
        start = time.perf_counter()
        self._check_root()
        scan = scan_vault(self.root, ignore=self.ignore, max_file_size=self.max_file_size)
        self._check_root()  # vanished during the scan: nothing it missed is deleted
        known = rec.load_files(self.con)
        absent = {p for p in known if p not in scan.files and scan.covers(p)}
        summary = self._reconcile(scan, absent, known, progress)
        self._resettle(summary)
        # A full scan saw every note: a live memory none of them holds is
        # retired as a note deleted in the vault (phantoms never outlive a sync).
        if scalar(self.con, mem.PHANTOMS_EXIST):
            with write_transaction(self.con):
                retired = mem.retire_phantoms(self.con)
            summary.deleted += len(retired)
            summary.warnings += [f"memory {tid}: no note holds it; marked {mem.NOTE_DELETED}" for tid in retired]
        self._record_outside(scan.outside, None)
        summary.warnings += self._remove_stale_temps(scan.temp_files)
        summary.seconds = time.perf_counter() - start
        return summary

    def _resettle(self, summary: SyncSummary) -> None:
        """Read again the memory notes that still name an id another note
        keeps (the rewrite of their ``id`` line failed, or waited for a
        pending store write), so the identity rule settles them now."""
        unsettled: list[str] = [path for path, _, _ in rows(self.con, mem.UNSETTLED)]
        if not unsettled:
            return
        with write_transaction(self.con):
            self.con.executemany("UPDATE files SET hash = NULL, ctime_ns = 0 WHERE path = ?",
                                 [(p,) for p in unsettled])
        again = self.sync_paths(unsettled)
        summary.updated += again.updated + again.moved + again.added
        summary.parse_errors += [e for e in again.parse_errors if e not in summary.parse_errors]
        summary.warnings += again.warnings

    def _remove_stale_temps(self, temps: list[str]) -> list[str]:
        """Delete memvault's own temporary files that a writer killed mid-write
        left behind (none younger than :data:`STALE_TEMP_S`: a writer may still
        be at work on those)."""
        out = []
        now = time.time()
        for rel in temps:
            path = self.root / rel
            try:
                if now - path.stat().st_mtime < STALE_TEMP_S:
                    continue
                self.gate.remove(rel)
            except OSError:
                continue
            out.append(f"{rel}: removed a temporary file left by an interrupted write")
        return out

    def sync_paths(self, paths: Iterable[str]) -> SyncSummary:
        """Reconcile only ``paths`` (from watcher events); others are untouched.

        Each note among them is read again (its hash compared) whatever its
        stat says: a path is given because something happened to it, and a
        stat can match a file it does not describe (a sync tool's rename of
        a same-size file with the sender's mtime, in one timestamp tick)."""
        start = time.perf_counter()
        self._check_root()
        scan = ScanResult()
        absent: set[str] = set()
        known: dict[str, rec.FileRow] = {}
        rules = vault_rules(self.root, self.ignore)
        for path in sorted(set(paths)):  # the same order in every process (a set's follows the hash seed)
            row = rec.get_file(self.con, path)
            if row:
                known[path] = row
            # An excluded path is not part of the vault, as in a full scan.
            if excluded(rules, path):
                st = None
            elif (target := outside_target(self.root, path)) is not None:
                scan.outside.add(path)
                scan.warnings.append(ScanWarning(path, f"symlink leads outside the vault (to {target}); skipped"))
                st = None
            else:
                st = stat_file(self.root, path)
            if st is None:
                if row:
                    absent.add(path)
            elif st.is_note and st.size > self.max_file_size:
                scan.warnings.append(ScanWarning(path, "larger than the size limit; skipped"))
                scan.skipped.add(path)
            else:
                scan.files[path] = st
        summary = self._reconcile(scan, absent, known, None, reread=True)
        self._record_outside(scan.outside, set(paths))
        summary.seconds = time.perf_counter() - start
        return summary

    def _record_outside(self, outside: set[str], looked_at: set[str] | None) -> None:
        """Keep the paths found leading outside the vault (for ``stats``):
        what was known of ``looked_at`` (all, when None: a full scan) is
        replaced by ``outside``. The index is written only when it changed."""
        before = set(json.loads(rec.get_meta(self.con, OUTSIDE_META) or "[]"))
        after = outside | (set() if looked_at is None else before - looked_at)
        # A file under a folder already listed (a watched path below a symlinked folder) counts once.
        after = {p for p in after if not any(p.startswith(q + "/") for q in after)}
        if after != before:
            with write_transaction(self.con):
                rec.set_meta(self.con, OUTSIDE_META, json.dumps(sorted(after)))

    def _check_root(self) -> None:
        # A vanished vault (unmounted disk, renamed folder) must never read
        # as "every note was deleted".
        if not self.root.is_dir():
            raise VaultMissingError(f"vault folder {self.root} is missing")

    # -- the reconcile itself ---------------------------------------------

    def _reconcile(
        self,
        scan: ScanResult,
        absent: set[str],
        known: dict[str, rec.FileRow],
        progress: Progress | None,
        reread: bool = False,
    ) -> SyncSummary:
        from memvault.store.index.reconcile_pass import ReconcilePass

        try:
            return ReconcilePass(self, scan, absent, known, reread=reread).run(progress)
        except BaseException:
            self._paths = None  # the cached path index may be half-updated
            self.con.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT}")  # if a bulk load paused it
            raise

    def _path_index(self) -> tuple[dict[str, str | None], LinkResolver]:
        """Every tracked path with its trace id, and a resolver over them.

        Loading 20,000 paths and building the resolver costs ~80 ms, too much
        for each of the daemon's small batches, so both are kept between
        reconciles and updated in place; a files generation counter (bumped
        by triggers on the files table) tells when another process changed
        the table and they must be reloaded.
        """
        gen = rec.files_generation(self.con)
        if self._paths is None or self._paths_gen != gen:
            files = {r[0]: r[1] for r in self.con.execute("SELECT path, trace_id FROM files")}
            self._paths = (files, LinkResolver(files))
            self._paths_gen = gen
        return self._paths

    def _remove_trace(self, trace_id: str) -> None:
        """A note's file is gone: drop its trace, but only soft-delete a
        memory (its text stays searchable with --include-deleted and comes
        back with ``memvault restore``)."""
        row = self.con.execute("SELECT kind FROM traces WHERE id = ?", (trace_id,)).fetchone()
        if row and row[0] == "memory":
            mem.note_deleted(self.con, trace_id)  # restore puts it back where it was, under its name
        else:
            drop_turns(self.con, trace_id)
            rec.delete_trace(self.con, trace_id)

    def _detect_moves(self, changes: list[NoteChange], gone: dict[str, rec.FileRow]) -> set[str]:
        """Pair new paths with vanished ones: same front-matter id, else same
        bytes. A conflict copy is never the note moved: it carries the id and
        maybe the bytes of the note it clashed with (a rename of that note
        arriving in the same batch would otherwise hand the copy its id)."""
        by_id = {row.trace_id: path for path, row in sorted(gone.items()) if row.kind == "note" and row.trace_id}
        by_hash: dict[str, str] = {}
        for path, row in sorted(gone.items()):
            if row.kind == "note" and row.hash:
                by_hash.setdefault(row.hash, path)
        moved_ids: set[str] = set()
        for c in changes:
            if c.old_path is not None or is_copy(c.note):
                continue
            fm_id = frontmatter_id(c.note)
            old = by_id.get(fm_id) if fm_id else None
            if old is None:
                old = by_hash.get(c.note.hash)
            if old is None or gone[old].trace_id in moved_ids:
                continue
            c.old_path = old
            c.trace_id = gone[old].trace_id or ""
            moved_ids.add(c.trace_id)
        self._pair_edited_moves(changes, gone, moved_ids)
        return moved_ids

    def _pair_edited_moves(self, changes: list[NoteChange], gone: dict[str, rec.FileRow], moved_ids: set[str]) -> None:
        """Pair what is left by similarity (:func:`.moves.pair_edited_moves`):
        a note renamed *and* edited while memvault was not looking keeps its
        id, facts and history. Ordinary notes only: a vanished memory note is
        soft-deleted (and restorable), never taken over by a look-alike."""
        new = [c for c in changes if c.old_path is None and not c.memory and not frontmatter_id(c.note)]
        old = {
            p: row.trace_id
            for p, row in gone.items()
            if row.kind == "note" and row.trace_id and row.trace_id not in moved_ids
        }
        if not new or not old:
            return
        contents = dict(
            self.con.execute(
                f"SELECT id, content FROM traces WHERE kind = 'note' AND id IN ({','.join('?' * len(old))})",
                list(old.values()),
            )
        )
        pairs = pair_edited_moves(
            [(c.stat.path, c.note.body) for c in new], {p: contents[tid] for p, tid in old.items() if tid in contents}
        )
        for i, p in pairs:
            new[i].old_path, new[i].trace_id = p, old[p]
            moved_ids.add(old[p])

    def _write_note(
        self,
        c: NoteChange,
        resolver: LinkResolver,
        all_files: dict[str, str | None],
        known: dict[str, rec.FileRow],
        fresh: bool = False,
    ) -> rec.TraceRow:
        note, st = c.note, c.stat
        old_row = known.get(c.old_path) if c.old_path else None
        left: str | None = None  # the id this note's path was indexed under, if it let it go
        if old_row and old_row.trace_id and old_row.trace_id != c.trace_id:
            # rename_trace moves every file row holding the old id: with
            # another note indexed under it too, that note's row would follow
            # an id its note does not name (and, renamed back later, drag
            # this one along). That note keeps the trace; this one leaves it.
            # So does a memory whose forget came in another device's history
            # log while its note was still here: the forget is the old id's
            # (it is retired with it, _retire_released), and the note, naming
            # another id now, starts that id's memory, as it does where the
            # sync tool brings it back to the device that forgot.
            if (not c.own_trace and rec.get_trace(self.con, c.trace_id) is None
                    and not self._held_elsewhere(old_row.trace_id, {st.path, c.old_path})
                    and not self._forgotten(old_row.trace_id)):
                rec.rename_trace(self.con, old_row.trace_id, c.trace_id)
            else:
                left = old_row.trace_id
        if c.displaces is not None:
            row = rec.get_file(self.con, c.displaces)
            if row is not None and row.trace_id == c.trace_id:
                rec.delete_file(self.con, c.displaces)
            all_files.pop(c.displaces, None)
            resolver.remove(c.displaces)
        draft = c.draft[1] if c.draft is not None and c.draft[0] is note else None
        if draft is not None:
            trace, warning = finish_trace(draft, c.trace_id, st), draft.warning
        else:  # no draft, or the note changed since (an id line rewritten)
            trace, warning = note_trace(note, c.trace_id, st, self.memory_folder)
        if warning:
            c.note = note = with_error(note, warning)
        if trace.kind == "memory" and not fresh:
            # A takeover is no edit of that memory (no version), but its note
            # is live all the same: a deletion of the memory ends here too.
            self._keep_version(trace, edit=not c.takeover)
        rec.put_file(
            self.con,
            rec.FileRow(st.path, "note", c.trace_id, st.mtime_ns, st.size, note.hash, note.error,
                        ctime_ns=trusted_ctime(st), inode=st.inode),
        )
        rec.put_trace(self.con, trace, new=fresh)
        sync_turns(self.con, trace, new=fresh)
        if trace.kind == "memory" and trace.created and not fresh:
            # The note's `created` is the memory's creation time on every
            # device (put_trace keeps the index's own otherwise).
            self.con.execute("UPDATE traces SET created = ? WHERE id = ? AND created != ?",
                             (trace.created, trace.id, trace.created))
        if left is not None and left != c.trace_id:
            self._released.add(left)
        if draft is not None and draft.edges is not None:
            edges = finish_edges(draft.edges, all_files)
        else:
            edges = note_edges(note, resolver, all_files, trace.kind, c.resolutions, c.keys)
        if fresh:
            rec.add_edges(self.con, c.trace_id, edges)
        else:
            rec.replace_edges(self.con, c.trace_id, edges)
        return trace

    def _forgotten(self, trace_id: str) -> bool:
        """Whether the durable state records ``trace_id`` as deleted."""
        return self.con.execute("SELECT 1 FROM state.forgotten WHERE memory_id = ?", (trace_id,)).fetchone() is not None

    def _held_elsewhere(self, trace_id: str, paths: set[str | None]) -> bool:
        """Whether a file row other than those at ``paths`` holds ``trace_id``."""
        held = rows(self.con, "SELECT path FROM files WHERE trace_id = ?", (trace_id,))
        return any(path not in paths for (path,) in held)

    def _retire_released(self) -> None:
        """The traces notes of this batch let go of (:meth:`_write_note`):
        a memory no note holds any more is not live, as if its note had been
        deleted in the vault (a phantom otherwise). In the batch's transaction."""
        for trace_id in sorted(self._released):
            still = self.con.execute("SELECT 1 FROM files WHERE trace_id = ? LIMIT 1", (trace_id,)).fetchone()
            row = self.con.execute("SELECT kind, status FROM traces WHERE id = ?", (trace_id,)).fetchone()
            pending = self.con.execute("SELECT 1 FROM state.outbox WHERE trace_id = ?", (trace_id,)).fetchone()
            if still is None and row is not None and tuple(row) == ("memory", "active") and pending is None:
                mem.retire_phantom(self.con, trace_id)
        self._released.clear()

    def _keep_version(self, trace: rec.TraceRow, edit: bool = True) -> None:
        """A memory note changed in the vault: keep the version it replaces,
        exactly as ``memvault update`` does (the store's own writes read back
        unchanged, so they make none), unless it is no ``edit`` of that
        memory (a takeover of its id); and a note that comes back live ends
        its memory's deletion either way (its forget record goes, as a
        rebuild drops the forget of a memory whose note is live). A memory
        merged into another (``superseded``, forgotten for the merge) whose
        note comes back is live again just the same."""
        old = rec.get_trace(self.con, trace.id)
        if old is None or old.kind != "memory":
            return
        if old.status != "active":
            mem.clear_deleted(self.con, trace.id)
        elif edit and old.status == "active" and mem.meaningfully_changed(old, trace):
            trace.metadata = dict(trace.metadata, supersedes=mem.snapshot_version(self.con, old, EDITED_IN_VAULT))

    def _reresolve(
        self, keys: set[str], resolver: LinkResolver, all_files: dict[str, str | None], written: set[str]
    ) -> None:
        paths_by_id = {tid: p for p, tid in all_files.items() if tid}
        for edge in rec.edges_with_keys(self.con, keys):
            if edge.source_id in written:
                continue
            source_path = paths_by_id.get(edge.source_id)
            if source_path is None:
                continue
            hit = resolver.resolve(edge.target_name, source_path)
            target_id = all_files.get(hit.path) if hit.path else None
            if (hit.path, target_id, hit.ambiguous) != (edge.target_path, edge.target_id, edge.ambiguous):
                rec.set_edge_target(self.con, edge.id or 0, hit.path, target_id, hit.ambiguous)


#: The reason kept with a memory version a person replaced in the vault.
EDITED_IN_VAULT = "edited in the vault"

#: memvault's temporary files older than this are leftovers of a dead writer.
STALE_TEMP_S = 3600.0

#: A file changed less than this long before it was recorded may change again
#: within the same timestamp tick (coarse kernel clocks; 2 s on FAT) without
#: its mtime or size moving: such an entry is "racy", as git calls it.
RACY_NS = 2_000_000_000


def trusted_ctime(st: FileStat) -> int:
    """The ctime to record for ``st``: 0 (read it again next time) when the
    file is racy, i.e. changed too recently for its timestamps to be trusted.

    "Recently" is measured from when the stat was taken, not from now: the
    content was read after the stat, and a write after that read within
    the same timestamp tick would leave mtime and ctime as recorded (a
    reconcile waiting seconds for the write lock must not make it trusted)."""
    seen = st.seen_ns or time.time_ns()
    if seen - max(st.mtime_ns, st.ctime_ns) < RACY_NS:
        return 0
    return st.ctime_ns


def needs_look(st: FileStat, row: rec.FileRow | None) -> bool:
    # mtime and size catch edits; ctime catches a same-size file renamed onto
    # the path (mv keeps mtime); the inode a file renamed onto it within the
    # same timestamp tick; ctime 0 marks a racy or pre-ctime entry, inode 0
    # a pre-inode one.
    return (
        row is None
        or row.mtime_ns != st.mtime_ns
        or row.size != st.size
        or row.ctime_ns != st.ctime_ns
        or row.inode != st.inode
        or row.read_error is not None
    )


def default_gate(root: Path, memory_folder: str) -> Gate:
    """The write gate of an indexer given no other: ``memory_folder``, its
    default history folder, the memory types."""
    from memvault.store.memories.memtypes import MEMORY_TYPES

    return Gate(root, memory_folder, f"{memory_folder.strip('/')}/.memvault/history", MEMORY_TYPES)
