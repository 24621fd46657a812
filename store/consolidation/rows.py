"""SQL of consolidation's durable state (see ``m002_consolidation`` in
:mod:`memvault.store.db.state_schema`): runs and their actions, merges,
contradictions, ``derived_from`` links and decay times.

Everything here lives in ``state.db``: a rebuilt index gets merges,
contradictions and links back from it (:mod:`.links`), and the log is never
derived from anything.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from memvault.store.db import records as rec
from memvault.store.db.rows import count


@dataclass
class Run:
    """One consolidation run (or one ``memvault merge``)."""

    id: str
    started: str
    finished: str | None
    day: str
    trigger: str
    status: str
    summary: dict[str, Any]


@dataclass
class LoggedAction:
    """One action of a run, as logged."""

    run_id: str
    seq: int
    kind: str
    ids: list[str]
    reason: str
    detail: dict[str, Any]
    undo: dict[str, Any] | None

    @property
    def pending(self) -> bool:
        """Logged before it started and not confirmed done: its writer died halfway."""
        return bool(self.undo and self.undo.get("pending"))


@dataclass
class Contradiction:
    """Two live claims that disagree; ``newer`` wins in recall."""

    id: int
    older_id: str
    newer_id: str
    kind: str
    reason: str
    run_id: str | None
    status: str
    created: str


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def new_run_id(day: str) -> str:
    """A fresh run id: ``c-<day>-<random>`` (sorts by day)."""
    return f"c-{day.replace('-', '')}-{secrets.token_hex(3)}"


# -- runs and actions --------------------------------------------------------


def start_run(con: apsw.Connection, run_id: str, day: str, trigger: str) -> None:
    """Record a run as started (status ``running`` until :func:`finish_run`)."""
    con.execute(
        "INSERT INTO state.consolidation_runs (id, started, day, trigger, status) VALUES (?,?,?,?, 'running')",
        (run_id, rec.now_iso(), day, trigger),
    )


def finish_run(con: apsw.Connection, run_id: str, status: str, summary: dict[str, Any]) -> None:
    """Record how a run ended and what it did in numbers."""
    con.execute(
        "UPDATE state.consolidation_runs SET finished = ?, status = ?, summary = ? WHERE id = ?",
        (rec.now_iso(), status, _dumps(summary), run_id),
    )


def log_action(
    con: apsw.Connection, run_id: str, kind: str, ids: Sequence[str], reason: str,
    detail: dict[str, Any], undo: dict[str, Any] | None,
) -> int:
    """Append an action to a run's log; returns its sequence number."""
    seq = 1 + count(con, "SELECT coalesce(max(seq), 0) FROM state.consolidation_actions WHERE run_id = ?", (run_id,))
    con.execute(
        "INSERT INTO state.consolidation_actions (run_id, seq, kind, ids, reason, detail, undo) VALUES (?,?,?,?,?,?,?)",
        (run_id, seq, kind, _dumps(list(ids)), reason, _dumps(detail), _dumps(undo) if undo is not None else None),
    )
    return seq


def update_action(con: apsw.Connection, run_id: str, seq: int, undo: dict[str, Any] | None, *,
                  ids: Sequence[str] | None = None, detail: dict[str, Any] | None = None) -> None:
    """Bring a logged action up to date with what it did so far (an action is
    logged before it starts, ``pending`` in its undo, so a writer killed
    halfway leaves a row saying what it was doing)."""
    con.execute("UPDATE state.consolidation_actions SET undo = ? WHERE run_id = ? AND seq = ?",
                (_dumps(undo) if undo is not None else None, run_id, seq))
    if ids is not None:
        con.execute("UPDATE state.consolidation_actions SET ids = ? WHERE run_id = ? AND seq = ?",
                    (_dumps(list(ids)), run_id, seq))
    if detail is not None:
        con.execute("UPDATE state.consolidation_actions SET detail = ? WHERE run_id = ? AND seq = ?",
                    (_dumps(detail), run_id, seq))


def drop_action(con: apsw.Connection, run_id: str, seq: int) -> None:
    """Take back a logged action that turned out not to have happened."""
    con.execute("DELETE FROM state.consolidation_actions WHERE run_id = ? AND seq = ?", (run_id, seq))


def unfinished_runs(con: apsw.Connection) -> list[Run]:
    """Runs still marked ``running`` (their writer died, when no run holds the lock)."""
    return [_run(r) for r in con.execute(
        f"SELECT {_RUN_COLS} FROM state.consolidation_runs WHERE status = 'running' ORDER BY started, rowid")]


def runs_with_pending(con: apsw.Connection) -> list[str]:
    """Runs with an action still ``pending`` (see :func:`update_action`)."""
    return [r[0] for r in con.execute(
        "SELECT DISTINCT run_id FROM state.consolidation_actions WHERE json_extract(undo, '$.pending') = 1 "
        "ORDER BY run_id")]


def _run(row: Sequence[Any]) -> Run:
    return Run(row[0], row[1], row[2], row[3], row[4], row[5], json.loads(row[6] or "{}"))


_RUN_COLS = "id, started, finished, day, trigger, status, summary"


def get_run(con: apsw.Connection, run_id: str) -> Run | None:
    """One run by id (or a unique prefix of it)."""
    row = con.execute(f"SELECT {_RUN_COLS} FROM state.consolidation_runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        rows = con.execute(
            f"SELECT {_RUN_COLS} FROM state.consolidation_runs WHERE id LIKE ? ORDER BY id LIMIT 2",
            (run_id.replace("%", "") + "%",),
        ).fetchall()
        row = rows[0] if len(rows) == 1 else None
    return _run(row) if row else None


def runs(con: apsw.Connection, limit: int = 20) -> list[Run]:
    """The latest runs, newest first."""
    return [
        _run(r)
        for r in con.execute(
            f"SELECT {_RUN_COLS} FROM state.consolidation_runs ORDER BY started DESC, rowid DESC LIMIT ?", (limit,)
        )
    ]


def actions(con: apsw.Connection, run_id: str) -> list[LoggedAction]:
    """A run's actions in the order they were done."""
    return [
        LoggedAction(r[0], r[1], r[2], json.loads(r[3]), r[4], json.loads(r[5]), json.loads(r[6]) if r[6] else None)
        for r in con.execute(
            "SELECT run_id, seq, kind, ids, reason, detail, undo FROM state.consolidation_actions "
            "WHERE run_id = ? ORDER BY seq",
            (run_id,),
        )
    ]


def set_run_status(con: apsw.Connection, run_id: str, status: str) -> None:
    """Mark a run (``undone`` after its undo)."""
    con.execute("UPDATE state.consolidation_runs SET status = ? WHERE id = ?", (status, run_id))


# -- merges ---------------------------------------------------------------------


def put_merge(con: apsw.Connection, memory_id: str, survivor_id: str, run_id: str, old_path: str | None,
              old_key: str | None) -> None:
    """Record that ``memory_id`` was merged into ``survivor_id``."""
    con.execute(
        "INSERT OR REPLACE INTO state.merges (memory_id, survivor_id, run_id, old_path, old_key, at) VALUES (?,?,?,?,?,?)",
        (memory_id, survivor_id, run_id, old_path, old_key, rec.now_iso()),
    )


def merged_into(con: apsw.Connection, memory_id: str) -> tuple[str, str] | None:
    """(survivor id, run id) of a merged memory, or None."""
    row = con.execute("SELECT survivor_id, run_id FROM state.merges WHERE memory_id = ?", (memory_id,)).fetchone()
    return (row[0], row[1]) if row else None


def merged_members(con: apsw.Connection, survivor_id: str) -> list[str]:
    """The memories merged into ``survivor_id``, in the order they were merged."""
    return [r[0] for r in con.execute(
        "SELECT memory_id FROM state.merges WHERE survivor_id = ? ORDER BY at, memory_id", (survivor_id,)
    )]


def drop_merge(con: apsw.Connection, memory_id: str) -> None:
    """The merge of ``memory_id`` is undone."""
    con.execute("DELETE FROM state.merges WHERE memory_id = ?", (memory_id,))


# -- contradictions ------------------------------------------------------------------


_CON_COLS = "id, older_id, newer_id, kind, reason, run_id, status, created"


def put_contradiction(con: apsw.Connection, older: str, newer: str, kind: str, reason: str,
                      run_id: str | None) -> int:
    """Flag a contradiction (open); returns its id."""
    con.execute(
        "INSERT INTO state.contradictions (older_id, newer_id, kind, reason, run_id, created) VALUES (?,?,?,?,?,?)",
        (older, newer, kind, reason, run_id, rec.now_iso()),
    )
    return int(con.last_insert_rowid())


def contradictions(con: apsw.Connection, status: str | None = "open") -> list[Contradiction]:
    """Flagged contradictions (of one status, or all), oldest first."""
    where, params = ("WHERE status = ?", (status,)) if status else ("", ())
    return [Contradiction(*r) for r in con.execute(
        f"SELECT {_CON_COLS} FROM state.contradictions {where} ORDER BY id", params
    )]


def known_pairs(con: apsw.Connection) -> set[frozenset[str]]:
    """Every pair ever flagged, whatever its status (a dismissed pair is not flagged again)."""
    return {frozenset(r) for r in con.execute("SELECT older_id, newer_id FROM state.contradictions")}


def drop_contradiction(con: apsw.Connection, contradiction_id: int) -> None:
    """Forget a flag (its run is undone)."""
    con.execute("DELETE FROM state.contradictions WHERE id = ?", (contradiction_id,))


def set_contradiction_status(con: apsw.Connection, contradiction_id: int, status: str) -> None:
    """Resolve or dismiss a flag."""
    con.execute("UPDATE state.contradictions SET status = ? WHERE id = ?", (status, contradiction_id))


def outdated_by(con: apsw.Connection, ids: Iterable[str]) -> dict[str, str]:
    """For each of ``ids`` that is the older side of an open contradiction
    whose newer side is live: the newer trace's id."""
    ids = list(ids)
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {
        r[0]: r[1]
        for r in con.execute(
            f"SELECT c.older_id, c.newer_id FROM state.contradictions c JOIN traces t ON t.id = c.newer_id "
            f"WHERE c.status = 'open' AND t.status = 'active' AND c.older_id IN ({marks}) ORDER BY c.id",
            ids,
        )
    }


# -- links ---------------------------------------------------------------------------


def put_link(con: apsw.Connection, source_id: str, kind: str, target_id: str, run_id: str | None) -> None:
    """Record a link only memvault knows (and put its edge in the index)."""
    con.execute(
        "INSERT OR IGNORE INTO state.memory_links (source_id, kind, target_id, run_id, created) VALUES (?,?,?,?,?)",
        (source_id, kind, target_id, run_id, rec.now_iso()),
    )


def links_from(con: apsw.Connection, source_id: str, kind: str) -> list[str]:
    """Targets of one kind of link from ``source_id``."""
    return [r[0] for r in con.execute(
        "SELECT target_id FROM state.memory_links WHERE source_id = ? AND kind = ? ORDER BY target_id", (source_id, kind)
    )]


def drop_links(con: apsw.Connection, source_id: str) -> None:
    """Forget every link from ``source_id`` (its memory is discarded)."""
    con.execute("DELETE FROM state.memory_links WHERE source_id = ?", (source_id,))
