"""``memvault doctor``: check both databases and the vault, say what to repair.

Each check returns findings; a finding names what is wrong and the repair
that fixes it. Repairs are the store's ordinary operations (a sync, a
rebuild of the derived index, applying the durable state, pruning rows that
point at nothing), so a repair is never more dangerous than using memvault:

- **integrity**: ``PRAGMA integrity_check`` of the index and of the state;
  the FTS index against its table. A damaged index is rebuilt from the vault
  and the state; a damaged state cannot be rebuilt (restore a backup).
- **orphans**: rows that point at nothing (recall statistics of traces that
  exist nowhere, notes' traces with no file), pruned.
- **state vs index**: versions, forgets and fact history the index lacks
  (the state is applied again) or that the state lacks (copied into it).
- **vault vs index**: notes changed, added or gone since the last sync (a
  sync), and store-side writes still pending (a sync finishes them).
- **embedding**: texts without a vector of the configured model (an
  interrupted first sync, ``sync --no-embed`` with no daemon running):
  semantic search does not see them until they are embedded (the repair;
  ``sync`` does too). A warning: keyword search finds them meanwhile, and
  the index is sound. While a daemon serves the vault it embeds them itself.
- **history**: changes not yet appended to this device's history log in
  the vault (a sync appends them); as warnings, lines of the logs that are
  not a record of their file's device (planted or damaged: never read) or
  stamped ahead of this device's clock (not read until then).
- **consolidation**: a run, merge or undo whose process died halfway (the
  next one finishes it; so does the repair, a merge whole).
- **memories**: a live memory no note holds (its note is gone, or the file it
  claims belongs to another memory: two memories claiming one file). After
  a sync has had its chance to find the note, each is retired as a note
  deleted in the vault is (soft-deleted, restorable).

Some findings are warnings: the vault holds something memvault works around
but cannot fix (notes with bytes that are not UTF-8, indexed with
replacement characters; symlinks leading out of the vault, never read). A
person must; they do not make the vault unhealthy, and no repair claims them.
Texts not yet embedded are a warning too (nothing is wrong, search is only
less than it will be), which the ``embed`` repair finishes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import apsw

from memvault.store.context import StoreContext
from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.db.rows import count

Progress = Callable[[int, int], None]

#: Repairs in the order they must run (a rebuild first makes the others moot).
REPAIRS = ("rebuild", "fts", "state", "backfill", "prune", "recover", "sync", "phantoms", "embed")


@dataclass
class Finding:
    """One problem and the repair that fixes it (None: nothing memvault can do)."""

    check: str
    detail: str
    repair: str | None
    #: Something a person must fix, which memvault works around meanwhile:
    #: reported, but the vault is still healthy.
    warning: bool = False

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"check": self.check, "detail": self.detail, "repair": self.repair, "warning": self.warning}


@dataclass
class DoctorReport:
    """Every finding, and what ``--repair`` did."""

    findings: list[Finding] = field(default_factory=list)
    #: Repairs that ran and left nothing of what they were for.
    repaired: list[str] = field(default_factory=list)
    #: What a repair that ran could not fix, one line each.
    unrepaired: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        """Whether nothing is wrong (warnings aside)."""
        return not any(not f.warning for f in self.findings)


class Synced(Protocol):
    """What a repair reads of a sync's report."""

    #: A line for each note write the sync could not finish.
    unwritten: list[str]


class Sync(Protocol):
    """The store's whole-vault sync (the facade's ``sync``)."""

    def __call__(self, progress: Progress | None = None, *, stale_after: float = ...) -> Synced:
        """Bring the index in line with the vault; pending writes older than ``stale_after`` s are finished."""
        ...


class Embed(Protocol):
    """The store's embedding of what has no vector yet (the facade's ``embed``)."""

    def __call__(self, progress: Progress | None = None) -> object:
        """Chunk and embed every text still without a vector."""
        ...


class Rebuild(Protocol):
    """The store's index rebuild (the facade's ``rebuild``), which replaces its connection."""

    def __call__(self, progress: Progress | None = None) -> object:
        """Drop the index and build it again from the vault and the durable state."""
        ...


def _one(con: apsw.Connection, sql: str) -> int:
    return count(con, sql)


def check_integrity(con: apsw.Connection) -> list[Finding]:
    """SQLite's own checks of both databases, and of the FTS index."""
    out = []
    for schema, repair, what in (("main", "rebuild", "index"), ("state", None, "durable state")):
        rows = [r[0] for r in con.execute(f"PRAGMA {schema}.integrity_check(20)")]
        if rows != ["ok"]:
            hint = "" if repair else " (it cannot be rebuilt: restore a backup)"
            out.append(Finding("integrity", f"the {what} database is damaged: {'; '.join(rows[:3])}{hint}", repair))
    try:
        con.execute("INSERT INTO traces_fts(traces_fts, rank) VALUES ('integrity-check', 1)")
    except apsw.Error as exc:
        out.append(Finding("integrity", f"the full-text index disagrees with its table: {exc}", "fts"))
    return out


#: Rows of the durable state the index lacks, and the other way round.
_STATE_NOT_INDEXED = (
    "SELECT count(*) FROM state.memory_versions v WHERE NOT EXISTS (SELECT 1 FROM traces t WHERE t.id = v.id)",
    "SELECT count(*) FROM state.fact_history h WHERE NOT EXISTS (SELECT 1 FROM traces t WHERE t.id = h.fact_id)",
    "SELECT count(*) FROM state.forgotten f WHERE NOT EXISTS (SELECT 1 FROM traces t WHERE t.id = f.memory_id)",
)
_INDEXED_NOT_STATE = (
    # A memory merged into another is superseded too; state.merges holds it.
    "SELECT count(*) FROM traces t WHERE t.kind = 'memory' AND t.status = 'superseded' "
    "AND NOT EXISTS (SELECT 1 FROM state.memory_versions v WHERE v.id = t.id) "
    "AND NOT EXISTS (SELECT 1 FROM state.merges m WHERE m.memory_id = t.id)",
    "SELECT count(*) FROM traces t WHERE t.kind = 'memory' AND t.status = 'deleted' "
    "AND NOT EXISTS (SELECT 1 FROM state.forgotten f WHERE f.memory_id = t.id)",
)


def check_state(con: apsw.Connection) -> list[Finding]:
    """The durable state and the index tell the same story."""
    out = []
    missing = sum(_one(con, sql) for sql in _STATE_NOT_INDEXED)
    if missing:
        out.append(Finding("state", f"{missing} versions, forgotten memories or old facts of the durable state "
                                    "are missing from the index", "state"))
    unsaved = sum(_one(con, sql) for sql in _INDEXED_NOT_STATE)
    if unsaved:
        out.append(Finding("state", f"{unsaved} versions or forgotten memories are only in the index, "
                                    "not in the durable state", "backfill"))
    return out


def check_orphans(con: apsw.Connection) -> list[Finding]:
    """Rows that point at nothing."""
    out = []
    stale = _one(con, _STALE_RECALL.replace("DELETE", "SELECT count(*)"))
    if stale:
        out.append(Finding("orphans", f"{stale} recall statistics belong to traces that exist nowhere", "prune"))
    lost = _one(con, _LOST_NOTES.replace("DELETE", "SELECT count(*)"))
    if lost:
        out.append(Finding("orphans", f"{lost} note traces have no file", "prune"))
    turns = _one(con, _LOST_TURNS.replace("DELETE", "SELECT count(*)"))
    if turns:
        out.append(Finding("orphans", f"{turns} turn traces have no session note", "prune"))
    return out


_STALE_RECALL = (
    "DELETE FROM state.recall WHERE trace_id NOT IN (SELECT id FROM traces) "
    "AND trace_id NOT IN (SELECT fact_id FROM state.fact_history) "
    "AND trace_id NOT IN (SELECT memory_id FROM state.forgotten)"
)
_LOST_NOTES = "DELETE FROM traces WHERE kind = 'note' AND id NOT IN (SELECT trace_id FROM files WHERE trace_id IS NOT NULL)"
#: Turn traces (store/index/turn_traces.py) whose note left the index.
_LOST_TURNS = (
    "DELETE FROM traces WHERE kind = 'turn' AND "
    "NOT EXISTS (SELECT 1 FROM traces n WHERE n.kind = 'note' AND n.id = traces.source AND n.path IS traces.path)"
)


def check_memories(con: apsw.Connection) -> list[Finding]:
    """Live memories without their note (phantoms)."""
    from memvault.store.memories.rows import UNSETTLED, phantoms

    out = []
    found = phantoms(con)
    if found:
        shown = [f"{tid} (claims {path}, which {'is ' + holder + chr(39) + 's note' if holder else 'does not exist'})"
                 if path else f"{tid} (no note)" for tid, path, holder in found]
        out.append(Finding("memories", f"{len(found)} live memories have no note of their own: {_names(shown)}",
                           "phantoms"))
    shared = [f"{path} (names {named}, indexed as {tid})" for path, tid, named in con.execute(UNSETTLED).fetchall()]
    if shared:
        out.append(Finding("memories", f"{len(shared)} memory notes name an id another note keeps: {_names(shared)}",
                           "sync"))
    return out


def check_vault(ctx: StoreContext) -> list[Finding]:
    """Notes that changed since the last sync, and writes still pending."""
    from memvault.store.index.reconcile import needs_look
    from memvault.vault_io.scan import scan_vault

    out = []
    if not ctx.root.is_dir():
        return [Finding("vault", f"the vault folder {ctx.root} is missing", None)]
    con = ctx.con
    scan = scan_vault(ctx.root, ignore=ctx.settings.ignore, max_file_size=ctx.settings.max_file_size)
    known = rec.load_files(con)
    changed = sum(1 for st in scan.files.values() if needs_look(st, known.get(st.path))
                  and not _same_bytes(ctx.root, st.path, known.get(st.path)))
    gone = sum(1 for p in known if p not in scan.files and scan.covers(p))
    if changed or gone:
        out.append(Finding("vault", f"{changed} files changed or new and {gone} gone since the last sync", "sync"))
    from memvault.store.memories.rows import pending_writes

    pending = [f"{p['id']} ({p['action']} {p['path'] or 'a new note'}{', its last try failed' if p['failed'] else ''})"
               for p in pending_writes(con)]
    if pending:
        out.append(Finding("vault", f"{len(pending)} memory notes wait to be written: {_names(pending)}", "sync"))
    return out + _vault_warnings(con, sorted(scan.outside), sorted(scan.bad_names))


#: Most paths a warning names before it says "and N more".
_NAMED = 10


def _vault_warnings(con: apsw.Connection, outside: list[str], bad_names: list[str]) -> list[Finding]:
    """What a person must fix in the vault: symlinks out of it, bytes that are not UTF-8 (in notes or names)."""
    from memvault.store.index.lookup import undecodable_files
    from memvault.vault_io.note import UNDECODABLE

    out = []
    if outside:
        out.append(Finding("vault", f"skipped: {len(outside)} outside the vault (symlinks leading out of it are "
                                    f"never read): {_names(outside)}", None, warning=True))
    bad = undecodable_files(con)
    if bad:
        shown = [f"{p} ({e.removeprefix(UNDECODABLE).split(';')[0].strip(' ()')})" for p, e in bad]
        out.append(Finding("vault", f"{len(bad)} notes have bytes that are not UTF-8, indexed with replacement "
                                    f"characters: {_names(shown)}; memvault cannot repair them (it never rewrites "
                                    "a note for this): fix them in an editor", None, warning=True))
    if bad_names:
        out.append(Finding("vault", f"skipped: {len(bad_names)} files whose names are not UTF-8 (not indexed, so not "
                                    f"searchable): {_names(bad_names)}; memvault never renames a file: rename "
                                    "them", None, warning=True))
    return out


def _names(items: list[str]) -> str:
    more = f" and {len(items) - _NAMED} more" if len(items) > _NAMED else ""
    return ", ".join(items[:_NAMED]) + more


def _same_bytes(root: Path, path: str, row: rec.FileRow | None) -> bool:
    """Whether a file whose timestamps moved still holds the bytes last
    indexed (a touch, or an entry recorded too recently to trust)."""
    from memvault.vault_io.note import content_hash

    if row is None or row.hash is None:
        return row is not None and row.kind == "attachment"
    try:
        return content_hash((root / path).read_bytes()) == row.hash
    except OSError:
        return False


def diagnose(ctx: StoreContext) -> list[Finding]:
    """Every check, in order; an index too damaged to query stops after integrity."""
    con = ctx.con
    findings = check_integrity(con)
    if any(f.repair == "rebuild" for f in findings):
        return findings
    return (findings + check_state(con) + check_orphans(con) + check_memories(con) + check_vault(ctx)
            + check_history(ctx) + check_runs(ctx) + check_embedding(ctx))


def check_embedding(ctx: StoreContext) -> list[Finding]:
    """Texts semantic search cannot see yet: chunks without a vector of the
    configured model, and traces not yet cut into chunks."""
    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.model import resolve_model
    from memvault.store.serving import is_locked

    spec = resolve_model(ctx.settings.embedding.model)
    if spec is None:
        return []  # vectors are turned off: nothing is missing
    con = ctx.con
    cache = vec.open_cache(ctx.data_dir, create=False)
    try:
        done, total = vec.coverage(con, cache, spec.key)
    finally:
        if cache is not None:
            cache.close()
    queued = vec.queue_size(con)
    if total == done and not queued:
        return []
    parts = [f"{total - done} texts have no vector of the model"] if total > done else []
    parts += [f"{queued} notes or memories are not yet cut into texts"] if queued else []
    detail = " and ".join(parts) + " (semantic search does not see them yet)"
    why = vec.recorded_unavailable(con, spec.key)
    if why:
        detail += f"; the model could not be loaded last time: {why}"
    if is_locked(ctx.data_dir):
        return [Finding("embedding", detail + "; the running daemon embeds them", None, warning=True)]
    return [Finding("embedding", detail + "; `memvault sync` embeds them", "embed", warning=True)]


def check_runs(ctx: StoreContext) -> list[Finding]:
    """A consolidation run, merge or undo whose process died halfway (a
    merge whose survivor holds its members' text while some are still
    live): the next run, merge or undo finishes it; so does ``--repair``."""
    from memvault.store.consolidation import rows as log
    from memvault.store.consolidation.journal import left_unfinished

    out = []
    for run in left_unfinished(ctx):
        what = "merge" if run.trigger == "merge" else f"consolidation run ({run.trigger})"
        at = [f"{a.kind} {' '.join(a.ids)}" for a in log.actions(ctx.con, run.id) if a.pending]
        out.append(Finding("consolidation", f"{what} {run.id} was cut short (its process died)"
                           + (f" while doing: {'; '.join(at)}" if at else "")
                           + f"; repairing finishes it, then `memvault consolidate --undo {run.id}` reverses it whole",
                           "recover"))
    return out


def check_history(ctx: StoreContext) -> list[Finding]:
    """Changes this device has not yet appended to its history log in the
    vault (the vault refused the write): other devices do not have them."""
    from memvault.store.history import lines, logfile
    from memvault.store.history.replicate import TABLES

    out = []
    queued = count(ctx.con, "SELECT count(DISTINCT tbl || key) FROM state.history_pending")
    if queued:
        out.append(Finding("history", f"{queued} changes are not yet in this device's history log in "
                                      f"{ctx.settings.history_folder}/ (other devices lack them)", "sync"))
    # Lines no device wrote as they are (planted, damaged) or stamped ahead of
    # this device's clock: never read (or not yet); a person must look.
    for line in lines.audit(logfile.log_files(ctx.history_folder), TABLES):
        out.append(Finding("history", f"{ctx.settings.history_folder}/{line}", None, warning=True))
    return out


def repair_report(ctx: StoreContext, report: DoctorReport, progress: Progress | None = None, *,
                  rebuild: Rebuild, sync: Sync, embed: Embed, recover: Callable[[], None] | None = None) -> None:
    """Repair what ``report`` found, check again, and say truthfully what was
    repaired: a repair whose finding is still there is not (``unrepaired``
    names it, with why when the repair said)."""
    errors: list[str] = []
    ran = repair(ctx, report.findings, progress, errors, rebuild=rebuild, sync=sync, embed=embed, recover=recover)
    report.findings = diagnose(ctx)
    left = {f.repair for f in report.findings if f.repair}
    report.repaired = [r for r in ran if r not in left]
    report.unrepaired = errors + [f"{f.repair}: {f.detail}" for f in report.findings if f.repair in ran]


def repair(ctx: StoreContext, findings: list[Finding], progress: Progress | None = None,
           errors: list[str] | None = None, *, rebuild: Rebuild, sync: Sync, embed: Embed,
           recover: Callable[[], None] | None = None) -> list[str]:
    """Run each repair the findings ask for, once, in :data:`REPAIRS` order;
    ``errors`` gets a line for each note write a sync could not finish;
    ``recover`` settles what dead consolidation runs left (the store's).

    A rebuild and a sync are the whole store's (they close and reopen its
    connection, write notes, tell listeners), so they come as the store's own
    ``rebuild`` and ``sync``; ``ctx.con`` is the store's connection after them."""
    from memvault.store.index.rebuild import apply_state, backfill_state

    wanted = {f.repair for f in findings if f.repair}
    done: list[str] = []
    if "rebuild" in wanted:
        rebuild(progress)
        return ["rebuild"]
    con = ctx.con
    if "fts" in wanted:
        with write_transaction(con):
            con.execute("INSERT INTO traces_fts(traces_fts) VALUES ('rebuild')")
        done.append("fts")
    if "state" in wanted:
        apply_state(con)
        done.append("state")
    if "backfill" in wanted:
        backfill_state(con)
        done.append("backfill")
    if "prune" in wanted:
        with write_transaction(con):
            con.execute(_STALE_RECALL)
            con.execute(_LOST_NOTES)
            con.execute(_LOST_TURNS)
        done.append("prune")
    if "recover" in wanted and recover is not None:
        recover()
        done.append("recover")
        wanted.add("sync")  # what it changed goes into the history log, as any change
    if "sync" in wanted:
        # Every pending write now, however young: a repair is asked for
        # (and refused while a daemon runs), so no writer is at them.
        report = sync(progress, stale_after=0)
        if errors is not None:
            errors += report.unwritten
        done.append("sync")
    if "phantoms" in wanted:
        # After the sync: a note it found again holds its memory once more.
        from memvault.store.memories.rows import retire_phantoms

        with write_transaction(con):
            retire_phantoms(con)
        done.append("phantoms")
    if "embed" in wanted:
        embed()  # a model that cannot be loaded is recorded: the check then says why
        done.append("embed")
    return done


def data_files(data_dir: Path) -> list[Path]:
    """The index's files (database, WAL, shared memory), which a rebuild replaces."""
    from memvault.store.location import INDEX_FILE

    base = data_dir / INDEX_FILE
    return [base, Path(f"{base}-wal"), Path(f"{base}-shm")]
