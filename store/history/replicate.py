"""Sharing the durable state through the history logs, and merging them.

The shared tables of ``state.db`` (:data:`TABLES`) have triggers
(migration ``m006_history_log``) that queue the key of every row changed in
``state.history_pending``, in the transaction of the change. :func:`sync_history`,
in one ``BEGIN IMMEDIATE`` transaction:

1. reads what is new in every log file in the vault (this device's too: a
   crash may have left lines it never recorded) into ``state.history_records``;
2. flushes the queue: one record per changed row, the row as it is now (or
   ``null``: deleted), appended to this device's log, stamped by a hybrid
   logical clock (never below the newest stamp seen, so a change made here
   after reading a record wins over it everywhere);
3. sets every row a new record touched to the record that wins for its
   key: the greatest (stamp, device, seq). The order is total and does not
   depend on the order the files were read in, so every device that has
   read the same records holds the same rows.

A device's log compacts when its tail passes :data:`COMPACT_LINES` lines:
its latest record for each row goes to its snapshot file (written whole,
atomically) and the tail starts empty. Only records another record of the
same device and row outranks are dropped, so the merge gives the same rows.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from memvault.store.db.connection import write_transaction
from memvault.store.db.rows import first, rows, scalar
from memvault.store.db.state_schema import HISTORY_TABLES_M006, HISTORY_TABLES_M007
from memvault.store.history import has_queued, lines, logfile
from memvault.store.memories.rows import NOTE_DELETED
from memvault.vault_io.gate import Gate, WriteRefused

log = logging.getLogger(__name__)

#: Shared tables and their key columns.
TABLES: dict[str, tuple[str, ...]] = {**HISTORY_TABLES_M006, **HISTORY_TABLES_M007}
#: Columns a device numbers on its own: never shared (the key says which row).
LOCAL_COLUMNS = {"contradictions": ("id",)}
#: A device's tail is compacted into its snapshot past this many lines.
COMPACT_LINES = 5000

Key = tuple[str, str]  # (table, key as JSON)
Change = tuple[str, list[Any], "dict[str, Any] | None"]  # (table, key values, the row now; None: deleted)


@dataclass
class HistorySync:
    """What one :func:`sync_history` did."""

    appended: int = 0  # records this device appended to its log
    appended_bytes: int = 0
    read: int = 0  # new records read from the logs
    bad_lines: int = 0  # complete lines that were not a record of their file's device (skipped)
    waiting: int = 0  # files read up to a record stamped ahead of this device's clock
    changed: list[Change] = field(default_factory=list)  # rows set to another device's record
    compacted: bool = False


def device_id(con: apsw.Connection) -> str:
    """This data dir's device id (made once, by the migration)."""
    return str(scalar(con, "SELECT value FROM state.meta WHERE key = 'device_id'"))


def key_text(values: list[Any]) -> str:
    """A row's key as stored and written: compact JSON."""
    return json.dumps(values, ensure_ascii=False, separators=(",", ":"))


_COLUMNS: dict[tuple[int, str], list[str]] = {}


def _columns(con: apsw.Connection, table: str) -> list[str]:
    """The shared columns of a table (asked once per schema version)."""
    version = int(scalar(con, "PRAGMA state.schema_version"))
    cols = _COLUMNS.get((version, table))
    if cols is None:
        local = LOCAL_COLUMNS.get(table, ())
        cols = _COLUMNS[(version, table)] = [
            r[1] for r in con.execute(f"PRAGMA state.table_info({table})") if r[1] not in local]
    return cols


def _where(table: str) -> str:
    return " AND ".join(f"{c} = ?" for c in TABLES[table])


def current_row(con: apsw.Connection, table: str, values: list[Any]) -> dict[str, Any] | None:
    """The shared columns of one row as ``state.db`` holds it now, or None."""
    cols = _columns(con, table)
    row = con.execute(f"SELECT {', '.join(cols)} FROM state.{table} WHERE {_where(table)}", values).fetchone()
    return None if row is None else dict(zip(cols, row, strict=True))


def _set_row(con: apsw.Connection, table: str, values: list[Any], row: dict[str, Any] | None) -> None:
    """Make ``state.<table>`` hold ``row`` under its key (None: no row)."""
    if row is None:
        con.execute(f"DELETE FROM state.{table} WHERE {_where(table)}", values)
        return
    cols = [c for c in _columns(con, table) if c in row]
    keys = TABLES[table]
    update = ", ".join(f"{c} = excluded.{c}" for c in cols if c not in keys) or f"{keys[0]} = excluded.{keys[0]}"
    params = [row[c] for c in cols]
    sql = f"INSERT INTO state.{table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    try:
        con.execute(f"{sql} ON CONFLICT({', '.join(keys)}) DO UPDATE SET {update}", params)
    except apsw.ConstraintError:
        # Another unique constraint (a version number under another id): the record wins.
        con.execute(sql.replace("INSERT", "INSERT OR REPLACE", 1), params)


def _rank(con: apsw.Connection, table: str, values: list[Any]) -> tuple[int, str, int]:
    """The newest record of one row: (stamp, device, seq); none: the lowest."""
    found = con.execute(f"SELECT stamp, device, seq FROM state.history_records WHERE tbl = ? AND key = ? {_NEWEST}",
                        (table, key_text(values))).fetchone()
    return (-1, "", -1) if found is None else (int(found[0]), str(found[1]), int(found[2]))


def _claim_slot(con: apsw.Connection, row: dict[str, Any], done: HistorySync) -> bool:
    """Whether a version row may take its (memory, version) slot.

    Two devices may number a memory's versions apart (its id was contested,
    each device kept another note's versions under it): two ids claim one
    slot. The row whose newest record is the greatest keeps it, whatever the
    order the records arrived in; the other row leaves the state (and the
    index follows), its text stays in its device's log."""
    holders = [h for (h,) in con.execute(
        "SELECT id FROM state.memory_versions WHERE memory_id = ? AND version = ? AND id != ?",
        (row.get("memory_id"), row.get("version"), row.get("id")))]
    if not holders:
        return True
    mine = _rank(con, "memory_versions", [row.get("id")])
    if not all(mine > _rank(con, "memory_versions", [h]) for h in holders):
        return False
    for h in holders:
        con.execute("DELETE FROM state.memory_versions WHERE id = ?", (h,))
        done.changed.append(("memory_versions", [h], None))
    return True


def _stamp(con: apsw.Connection) -> int:
    """Now in ms, but never below the newest stamp seen (a hybrid logical clock)."""
    newest = scalar(con, "SELECT max(stamp) FROM state.history_records")
    return max(int(time.time() * 1000), int(newest or 0) + 1)


def _meta_int(con: apsw.Connection, key: str) -> int:
    row = con.execute("SELECT value FROM state.meta WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else 0


def _set_meta(con: apsw.Connection, key: str, value: object) -> None:
    con.execute("INSERT OR REPLACE INTO state.meta (key, value) VALUES (?, ?)", (key, str(value)))


def _remember_file(con: apsw.Connection, path: Path, offset: int, seen: tuple[int, str] | None = None) -> None:
    """How far ``path`` was read: its inode and first line as ``seen`` before
    reading (else now), so a file replaced meanwhile reads as new next time."""
    ino, head = seen or (path.stat().st_ino, logfile.head(path))
    con.execute("INSERT OR REPLACE INTO state.history_files (name, ino, offset, head) VALUES (?,?,?,?)",
                (path.name, ino, offset, head))


def _ingest(con: apsw.Connection, folder: Path, done: HistorySync, paths: list[Path] | None = None) -> set[Key]:
    """Read what is new in every log file (or in ``paths``); the rows its
    records touch. A line that is not a record of its file's device is
    skipped; a file is read up to a record stamped ahead of this device's
    clock, and on from there at a later sync (:mod:`.lines`)."""
    touched: set[Key] = set()
    now = lines.now_ms()
    for path in logfile.log_files(folder) if paths is None else [p for p in paths if p.exists()]:
        try:
            st = path.stat()
            known = first(con, "SELECT ino, offset, head FROM state.history_files WHERE name = ?", (path.name,))
            if known and known[0] == st.st_ino and known[1] == st.st_size:
                continue
            head = logfile.head(path)
            # The same first line is the same log grown (a sync tool delivers a
            # new inode each time); a compacted or replaced file starts otherwise.
            grown = known is not None and known[1] <= st.st_size and known[2] == head
            found, end = logfile.read_from(path, int(known[1]) if known is not None and grown else 0)
        except OSError as exc:  # a file the sync tool is replacing this moment: the next sync reads it
            log.warning("cannot read history log %s: %s", path, exc)
            continue
        device = lines.file_device(path)
        for r, start, _ in found:
            if isinstance(r, dict) and "snapshot" in r:
                continue  # a snapshot's header (it makes each snapshot's first line its own)
            if lines.refused(r, device, TABLES) is not None:
                done.bad_lines += 1
                continue
            if lines.waits(r, now):
                done.waiting += 1
                end = start  # read on from this record once the clock has reached it
                break
            key = key_text(r["k"])
            con.execute(
                "INSERT OR IGNORE INTO state.history_records (device, seq, stamp, tbl, key, row) VALUES (?,?,?,?,?,?)",
                (r["d"], r["n"], r["t"], r["tb"], key,
                 None if r.get("r") is None else json.dumps(r["r"], ensure_ascii=False, sort_keys=True)))
            if con.changes():
                done.read += 1
                touched.add((r["tb"], key))
        _remember_file(con, path, end, (st.st_ino, head))
    return touched


def _flush(con: apsw.Connection, gate: Gate, folder: Path, device: str, done: HistorySync, compact_lines: int) -> None:
    """Append one record per queued row to this device's log (the whole
    queue, or nothing: the caller's transaction rolls back on a failure);
    compact the log once its tail passes ``compact_lines``."""
    queued = rows(con, "SELECT tbl, key, max(n) FROM state.history_pending GROUP BY tbl, key ORDER BY min(n)")
    if not queued:
        return
    seq = int(scalar(con, "SELECT coalesce(max(seq), 0) FROM state.history_records WHERE device = ?", (device,)))
    stamp = _stamp(con)
    lines = []
    for table, key, _ in queued:
        if table not in TABLES:
            continue
        values = json.loads(key)
        row = current_row(con, table, values)
        seq += 1
        record = {"d": device, "n": seq, "t": stamp, "tb": table, "k": values, "r": row}
        lines.append(logfile.encode(record))
        con.execute(
            "INSERT INTO state.history_records (device, seq, stamp, tbl, key, row) VALUES (?,?,?,?,?,?)",
            (device, seq, stamp, table, key_text(values),
             None if row is None else json.dumps(row, ensure_ascii=False, sort_keys=True)))
    tail = logfile.tail_path(folder, device)
    done.appended_bytes += logfile.append(tail, lines, gate)
    done.appended += len(lines)
    _remember_file(con, tail, tail.stat().st_size)
    con.execute("DELETE FROM state.history_pending WHERE n <= ?", (max(q[2] for q in queued),))
    _set_meta(con, "history_tail_lines", _meta_int(con, "history_tail_lines") + len(lines))
    if _meta_int(con, "history_tail_lines") > compact_lines:
        compact(con, folder, device, gate)
        done.compacted = True


#: The newest record of a row first.
_NEWEST = "ORDER BY stamp DESC, device DESC, seq DESC LIMIT 1"


#: The reason a device gives a row it inferred from the vault alone, by table:
#: a memory note that vanished, a memory note edited since its counter.
INFERRED = {"forgotten": NOTE_DELETED, "memory_versions": "edited in the vault"}


def winner(con: apsw.Connection, table: str, key: str) -> tuple[str | None] | None:
    """The record that wins for one row: the greatest (stamp, device, seq).

    One exception: a device that sees a memory's note vanish, or change,
    records what it inferred (:data:`INFERRED`); the same row recorded with
    a reason given (on the device that forgot or updated it, whose log came
    after the note) wins over that, unless the row was deleted since."""
    top = con.execute("SELECT row, json_extract(row, '$.reason') FROM state.history_records "
                      f"WHERE tbl = ? AND key = ? {_NEWEST}", (table, key)).fetchone()
    inferred = INFERRED.get(table)
    if top is None or inferred is None or top[1] != inferred:
        return None if top is None else (top[0],)
    deleted = con.execute(
        f"SELECT stamp, device, seq FROM state.history_records WHERE tbl = ? AND key = ? AND row IS NULL {_NEWEST}",
        (table, key)).fetchone() or (-1, "", -1)
    given = con.execute(
        "SELECT row FROM state.history_records WHERE tbl = ? AND key = ? AND row IS NOT NULL "
        "AND json_extract(row, '$.reason') IS NOT ? AND (stamp, device, seq) > (?, ?, ?) " + _NEWEST,
        (table, key, inferred, *deleted)).fetchone()
    return given or (top[0],)


def _apply(con: apsw.Connection, touched: set[Key], done: HistorySync) -> None:
    """Set every touched row to the record that wins for its key."""
    for table, key in sorted(touched):
        best = winner(con, table, key)
        if best is None:
            continue
        values = json.loads(key)
        row = None if best[0] is None else json.loads(best[0])
        now = current_row(con, table, values)
        if row is None and now is None:
            continue
        if row is not None and now is not None and all(now.get(c) == v for c, v in row.items() if c in now):
            continue
        if table == "memory_versions" and row is not None and not _claim_slot(con, row, done):
            if now is not None:  # an older record's row under this key: the key's winner lost its slot
                _set_row(con, table, values, None)
                done.changed.append((table, values, None))
            continue
        try:
            _set_row(con, table, values, row)
        except apsw.ConstraintError:  # a row this schema cannot hold (a column missing): skipped
            done.bad_lines += 1
            continue
        done.changed.append((table, values, row))


def compact(con: apsw.Connection, folder: Path, device: str, gate: Gate | None = None) -> None:
    """Move this device's records into its snapshot (its latest record per
    row) and start an empty tail, through the vault's write ``gate`` (by
    default one for ``folder`` alone). Call inside a write transaction."""
    gate = gate or logfile.folder_gate(folder)
    # ``+s.device``: each record's newer ones are looked up by (tbl, key);
    # on ``s.device = ...`` the planner took the primary key and read all of
    # the device's records for each record (every row a device ever changed
    # stays in the table, so each compaction grew as their number squared:
    # 12 s of a 5,000-conversation import).
    latest = rows(
        con, "SELECT seq, stamp, tbl, key, row FROM state.history_records r WHERE device = ? "
        "AND seq = (SELECT max(seq) FROM state.history_records s WHERE +s.device = r.device "
        "AND s.tbl = r.tbl AND s.key = r.key) ORDER BY seq", (device,))
    lines = [logfile.encode({"d": device, "snapshot": _stamp(con)})]
    lines += [logfile.encode({"d": device, "n": seq, "t": stamp, "tb": tbl, "k": json.loads(key),
                              "r": None if row is None else json.loads(row)}) for seq, stamp, tbl, key, row in latest]
    snapshot, tail = logfile.snapshot_path(folder, device), logfile.tail_path(folder, device)
    logfile.replace(snapshot, lines, gate)
    logfile.replace(tail, [], gate)
    _remember_file(con, snapshot, snapshot.stat().st_size)
    _remember_file(con, tail, 0)
    con.execute(
        "DELETE FROM state.history_records WHERE device = ? AND seq < (SELECT max(seq) FROM state.history_records s "
        "WHERE +s.device = history_records.device AND s.tbl = history_records.tbl AND s.key = history_records.key)",
        (device,))
    _set_meta(con, "history_tail_lines", 0)


def _anything_new(con: apsw.Connection, folder: Path, write: bool) -> bool:
    """Whether a change is queued (and ``write``), or a log file is not as
    it was when last read (a stat each, nothing read)."""
    if write and has_queued(con):
        return True
    known = {name: (ino, offset) for name, ino, offset in
             con.execute("SELECT name, ino, offset FROM state.history_files")}
    for path in logfile.log_files(folder):
        try:
            st = path.stat()
        except OSError:
            continue
        if known.get(path.name) != (st.st_ino, st.st_size):
            return True
    return False


def sync_history(
    con: apsw.Connection, folder: Path, *, write: bool = True, compact_lines: int = COMPACT_LINES,
    on_change: Callable[[list[Change]], None] | None = None, gate: Gate | None = None,
) -> HistorySync:
    """Read every device's log, append this device's queued changes to its
    own (unless ``write`` is off, or the vault refuses: they stay queued) and
    merge (module docstring). ``on_change`` runs in the same transaction
    with the rows that took another device's record (the index follows them).
    This device's log is written through the vault's write ``gate`` (by
    default one for ``folder`` alone)."""
    done = HistorySync()
    gate = gate or logfile.folder_gate(folder)
    if not _anything_new(con, folder, write):
        return done  # the daemon's every batch asks: no write lock for nothing
    with write_transaction(con):
        device = device_id(con)
        touched = _ingest(con, folder, done)
        if write:
            try:
                with con:  # a savepoint; an unwritable vault: the queue stays, the merge goes on
                    _flush(con, gate, folder, device, done, compact_lines)
            except (OSError, WriteRefused) as exc:
                log.warning("cannot write the history log in %s: %s", folder, exc)
        mark = int(scalar(con, "SELECT coalesce(max(n), 0) FROM state.history_pending"))
        _apply(con, touched, done)
        # Rows set from the logs are not this device's changes: not queued again.
        con.execute("DELETE FROM state.history_pending WHERE n > ?", (mark,))
        if done.changed and on_change is not None:
            on_change(done.changed)
    return done


def flush_only(con: apsw.Connection, folder: Path, *, compact_lines: int = COMPACT_LINES,
               gate: Gate | None = None) -> HistorySync:
    """Append this device's queued changes to its log, reading nothing (a
    command's end), through the vault's write ``gate`` (by default one for
    ``folder`` alone). A no-op (no transaction) when nothing is queued."""
    done = HistorySync()
    gate = gate or logfile.folder_gate(folder)
    if not has_queued(con):
        return done
    with write_transaction(con):
        device = device_id(con)
        # Lines a killed flush appended and never recorded: read first, so no seq is used twice.
        _ingest(con, folder, done, [logfile.tail_path(folder, device)])
        _flush(con, gate, folder, device, done, compact_lines)
    return done
