"""Pausing memory: nothing an agent's session says is stored while memory is paused.

``memvault pause [--project PATH] [--for 2h]`` pauses all memory (scope
``*``), or one project's (its scope, :mod:`memvault.store.project`), until
``memvault resume`` or the time given. While a pause holds for a session's
project, every ingest path stores nothing (the hooks, the daemon's per-turn
ingest, ``memvault ingest``: :func:`check_capture` refuses with
:class:`MemoryPaused`) and the MCP server refuses ``remember`` and
``update``. Turns *said* during a pause are never stored, even when their
transcript is ingested after the resume (:func:`outside_pauses` drops them by
their time); a turn without a time counts as said when it is first ingested.

**Where the pause lives.** A pause is a row of ``state.pauses``, shared
through the vault's history logs like versions and forgets
(:mod:`memvault.store.history`): what two devices must agree on is in the
vault. A person who pauses on a laptop expects the agent on the desktop,
working on the same vault, to stop recording too, and a transcript ingested
later on either device must drop the same turns; a pause kept only in one
device's data dir would let the other store what was meant to be forgotten.
The rows merge by the history log's total order (the greatest stamp,
device, sequence wins per row), so every device holds the same pauses
whatever order it read the logs in. Each pause is its own row
(``<device>-<ms>``), never overwritten by another device's pause; ``resume``
sets ``resumed`` on the rows it ends, so past pauses stay known as windows.
A device that has not yet received the other's log records meanwhile (the
sync tool's delay), and a project's ``.memvault`` ``memory: off`` covers
what must never be recorded at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from memvault.vault_io.errors import MemvaultError, UsageError

if TYPE_CHECKING:
    import apsw

    from memvault.store.project import Project
    from memvault.vault_io.session_note import Turn

#: The scope of a pause of all memory.
ALL = "*"
_UNIT = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600, "hour": 3600, "d": 86400, "day": 86400,
         "w": 604800, "week": 604800}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+?)s?(?=\d|\s|$)")
#: Longest pause ``--for`` takes (a longer one is a pause until resumed).
MAX_FOR = timedelta(days=366)


class MemoryPaused(MemvaultError):
    """Memory is paused (or off) for this session: nothing was stored (exit 1)."""


def parse_for(text: str) -> timedelta:
    """``2h``, ``30m``, ``1h30m``, ``3 days``: a span; :class:`UsageError` otherwise."""
    value = text.strip().lower()
    total = 0.0
    pos = 0
    for m in _PART.finditer(value):
        if value[pos:m.start()].strip() or m.group(2) not in _UNIT:
            break
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    if not value or value[pos:].strip() or total <= 0:
        raise UsageError(f"--for {text!r} is not a span of time: give one such as 2h, 30m, 1h30m or 3 days")
    span = timedelta(seconds=total)
    if span > MAX_FOR:
        raise UsageError(f"--for {text!r} is over a year: pause without --for and resume when you are done")
    return span


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).replace(microsecond=0).isoformat()


def _now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class PauseRow:
    """One pause as ``state.pauses`` holds it."""

    id: str
    scope: str
    since: str
    until: str | None
    resumed: str | None
    reason: str | None

    @property
    def end(self) -> str | None:
        """When it ended or ends (None: not until resumed)."""
        ends = [t for t in (self.until, self.resumed) if t]
        return min(ends) if ends else None

    def holds(self, at: str) -> bool:
        """Whether it covers the moment ``at`` (ISO UTC)."""
        return self.since <= at and (self.end is None or at < self.end)

    def to_json(self) -> dict[str, str | None]:
        """JSON for ``--json``, ``status`` and exports (the row's columns)."""
        return {"id": self.id, "scope": self.scope, "since": self.since, "until": self.until,
                "resumed": self.resumed, "reason": self.reason}

    def describe(self) -> str:
        """``all memory``/``project X``, paused since ..., until ...: one line."""
        what = "all memory" if self.scope == ALL else f"project {self.scope}"
        until = f" until {self.until}" if self.until and not self.resumed else " until resumed"
        return f"{what} paused since {self.since}{until}" + (f" ({self.reason})" if self.reason else "")


#: A time as :func:`_iso` writes it; a row from another device's log with any other is not a pause.
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00\Z")


def _well_formed(r: PauseRow) -> bool:
    """Whether a row's times are as :func:`pause` writes them (a log line is input like any other)."""
    return (isinstance(r.scope, str) and bool(r.scope) and isinstance(r.since, str) and bool(_ISO.match(r.since))
            and all(t is None or (isinstance(t, str) and _ISO.match(t)) for t in (r.until, r.resumed)))


def _rows(con: "apsw.Connection", where: str = "", params: tuple[str, ...] = ()) -> list[PauseRow]:
    found = [PauseRow(*r) for r in con.execute(
        f"SELECT id, scope, since, until, resumed, reason FROM state.pauses {where} ORDER BY since, id", params)]
    return [r for r in found if _well_formed(r)]


def active(con: "apsw.Connection", scope: str | None = None, now: datetime | None = None) -> list[PauseRow]:
    """The pauses holding now (``scope``: those that cover that project: its own and ``*``)."""
    at = _iso(now or _now())
    rows = [r for r in _rows(con, "WHERE resumed IS NULL") if r.holds(at)]
    return rows if scope is None else [r for r in rows if r.scope in (ALL, scope)]


def pause(con: "apsw.Connection", device: str, scope: str = ALL, span: timedelta | None = None,
          reason: str | None = None, now: datetime | None = None) -> PauseRow:
    """Pause ``scope`` (``*``: all memory) from now, for ``span`` (None: until
    resumed); the caller holds a write transaction."""
    from memvault.vault_io.secrets import redact

    at = now or _now()
    why = redact(" ".join((reason or "").split())[:200])[0] or None  # the reason goes into the vault's history log
    row = PauseRow(f"{device}-{int(at.timestamp() * 1000)}", " ".join(scope.split())[:200] or ALL, _iso(at),
                   _iso(at + span) if span else None, None, why)
    con.execute("INSERT OR REPLACE INTO state.pauses (id, scope, since, until, resumed, reason) VALUES (?,?,?,?,?,?)",
                (row.id, row.scope, row.since, row.until, row.resumed, row.reason))
    return row


def resume(con: "apsw.Connection", scope: str | None = None, now: datetime | None = None) -> list[PauseRow]:
    """End the pauses holding now (``scope``: that scope's only; None: all of
    them); the caller holds a write transaction. The ones ended."""
    at = now or _now()
    ended = [r for r in active(con, None, at) if scope is None or r.scope == scope]
    for r in ended:
        con.execute("UPDATE state.pauses SET resumed = ? WHERE id = ?", (_iso(at), r.id))
    return ended


def check_capture(con: "apsw.Connection", project: "Project | None", what: str = "nothing was stored") -> None:
    """Raise :class:`MemoryPaused` when a session of ``project`` must store
    nothing now: its ``.memvault`` says ``memory: off``, or a pause holds for it."""
    if project is not None and project.memory_off:
        raise MemoryPaused(f"memory is off for project {project.scope} ({project.marker}): {what}")
    holding = active(con, project.scope if project is not None else None, None)
    if project is None:
        holding = [r for r in holding if r.scope == ALL]
    if holding:
        raise MemoryPaused(f"{holding[0].describe()}: {what} (`memvault resume` turns it back on)")


def outside_pauses(con: "apsw.Connection", scope: str | None, turns: "list[Turn]",
                   now: datetime | None = None) -> tuple[list["Turn"], int]:
    """``turns`` without those said while a pause held for ``scope`` (and
    ``*``); a turn without a time is taken as said ``now``. (kept, dropped count)."""
    windows = [r for r in _rows(con) if r.scope == ALL or r.scope == scope]
    if not windows:
        return turns, 0
    at_now = _iso(now or _now())
    kept = [t for t in turns if not any(w.holds(_turn_time(t.at) or at_now) for w in windows)]
    return kept, len(turns) - len(kept)


def _turn_time(at: str | None) -> str | None:
    """A turn's time as ISO UTC seconds (comparable with the pauses'), or None."""
    if not at:
        return None
    try:
        t = datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        return None
    return _iso(t if t.tzinfo else t.replace(tzinfo=timezone.utc))
