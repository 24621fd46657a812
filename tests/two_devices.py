"""A harness for two devices that share one vault through a file-sync tool.

Each :class:`Device` is a vault folder with its own memvault data dir and its
own running daemon (a real :class:`DaemonRunner`: watcher, reconcile, outbox),
plus a second store standing in for the CLI commands a person or an agent
runs there. :class:`FileSync` plays Syncthing between the two folders:

- a round copies what changed on one side since the last round to the other
  (a rename arrives as a delete and a create), through a hidden temp file
  and a rename, as Syncthing does;
- the same path changed on both sides to different bytes: the newer version
  (by mtime, then by device name) keeps the name on both sides, the other is
  written beside it as ``NAME.sync-conflict-YYYYMMDD-HHMMSS-DEVICEID.md``;
- changed on one side and deleted on the other: the change wins;
- identical bytes on both sides are no conflict.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from helpers import wait_for

from memvault.daemon.runner import DaemonRunner
from memvault.store.memory_store import MemoryStore
from memvault.store.settings import load_settings

#: A memory note as memvault writes one (fill in id and text).
MEMORY_NOTE = """---
id: {id}
type: semantic
created: '2026-11-20T10:00:00+00:00'
updated: '2026-11-20T10:00:00+00:00'
source: manual
---
{text}
"""


#: How long a daemon waits after an event before it reconciles (ms).
DEBOUNCE_MS = 40


def files_of(root: Path) -> dict[str, bytes]:
    """Every file a sync tool would carry: all but memvault's temp files."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            if name.endswith(".memvault-tmp") or name.startswith(".syncthing."):
                continue
            p = Path(dirpath) / name
            out[p.relative_to(root).as_posix()] = p.read_bytes()
    return out


def read_rows(data_dir: Path, db: str, sql: str, params: tuple = ()) -> list[tuple]:
    """Rows of one of a device's databases in ``data_dir`` (``index.db``,
    ``state.db``), read-only, waiting out its daemon's writes."""
    import apsw

    con = apsw.Connection(str(data_dir / db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        con.set_busy_timeout(5000)
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def _digest(files: dict[str, bytes]) -> dict[str, str]:
    return {p: hashlib.sha256(b).hexdigest() for p, b in files.items()}


@dataclass
class Device:
    """One machine: a vault copy, its daemon, and a store for its CLI."""

    name: str
    root: Path
    data_dir: Path
    runner: DaemonRunner | None = None
    cli: MemoryStore | None = None

    def start(self) -> None:
        """Start the daemon (ready after its first full sync) and open the CLI's store."""
        settings = load_settings({"vault": str(self.root)})
        self.runner = DaemonRunner(
            MemoryStore(self.root, settings, data_dir=self.data_dir),
            debounce_ms=DEBOUNCE_MS, rescan_interval=0, background=False,
        )
        self.runner.start()
        wait_for(lambda: self.runner.ready.is_set() or self.runner.error, timeout=30)
        assert self.runner.error is None, self.runner.error
        self.cli = MemoryStore(self.root, settings, data_dir=self.data_dir)

    def stop(self) -> None:
        """Stop the daemon and close the CLI's store."""
        if self.cli is not None:
            self.cli.close()
        if self.runner is not None:
            self.runner.stop()

    def idle(self) -> bool:
        """Whether the daemon has nothing queued (events seen, batches done)."""
        assert self.runner is not None
        return len(self.runner.queue) == 0


@dataclass
class FileSync:
    """Syncthing between two device folders (see the module docstring)."""

    a: Device
    b: Device
    base: dict[str, str] = field(default_factory=dict)  # path -> digest both sides agreed on
    conflicts_written: int = 0
    rounds: int = 0

    def round(self) -> int:
        """One sync round both ways; returns how many files it changed."""
        self.rounds += 1
        fa, fb = files_of(self.a.root), files_of(self.b.root)
        da, db = _digest(fa), _digest(fb)
        changed = 0
        agreed: dict[str, str | None] = {}  # what both sides hold once this round delivered
        for path in sorted(set(da) | set(db) | set(self.base)):
            base, ha, hb = self.base.get(path), da.get(path), db.get(path)
            agreed[path] = ha
            if ha == hb:
                continue
            if ha == base:  # only b changed it
                changed += self._copy(path, fb, self.b, self.a)
                agreed[path] = hb
            elif hb == base:  # only a changed it
                changed += self._copy(path, fa, self.a, self.b)
            elif ha is None or hb is None:  # changed on one side, deleted on the other: the change wins
                winner, src = (self.a, fa) if ha is not None else (self.b, fb)
                changed += self._copy(path, src, winner, self.b if winner is self.a else self.a)
                agreed[path] = ha or hb
            else:
                changed += self._conflict(path, fa, fb, agreed)
        self._settle(agreed)
        return changed

    def _settle(self, agreed: dict[str, str | None]) -> None:
        """The base of the next round: what both sides hold now; a file a
        daemon wrote while this round ran (memvault's own history log, a
        note's version line) differs, and the next round carries it."""
        now_a, now_b = _digest(files_of(self.a.root)), _digest(files_of(self.b.root))
        self.base = {}
        for path in set(now_a) | set(now_b) | set(agreed):
            ha, hb = now_a.get(path), now_b.get(path)
            if ha != hb:
                assert agreed.get(path) in (ha, hb), f"the sync tool left the devices different: {path}"
            value = ha if ha == hb else agreed.get(path)
            if value is not None:
                self.base[path] = value

    def _copy(self, path: str, files: dict[str, bytes], src: Device, dst: Device) -> int:
        target = dst.root / path
        if path not in files:
            if target.exists():
                target.unlink()
                return 1
            return 0
        _deliver(target, files[path], (src.root / path).stat().st_mtime_ns)
        return 1

    def _conflict(self, path: str, fa: dict[str, bytes], fb: dict[str, bytes], agreed: dict[str, str | None]) -> int:
        ma, mb = ((d.root / path).stat().st_mtime_ns for d in (self.a, self.b))
        (win, wf, wm), (lose, lf, lm) = sorted(
            [(self.a, fa, ma), (self.b, fb, mb)], key=lambda x: (x[2], x[0].name), reverse=True
        )
        copy = self._copy_name(path, lose, lm, agreed)
        for d in (self.a, self.b):
            _deliver(d.root / copy, lf[path], lm)
        _deliver(lose.root / path, wf[path], wm)
        agreed[copy], agreed[path] = _digest({copy: lf[path]})[copy], _digest({path: wf[path]})[path]
        self.conflicts_written += 1
        return 2


    def _copy_name(self, path: str, lose: Device, mtime_ns: int, agreed: dict[str, str | None]) -> str:
        """A free name for the losing side's conflict copy: named by its mtime's
        second, and a second later while that name is taken on either side or
        by this round (two conflicts of one note within a second must not
        write one copy over the other)."""
        p, second = Path(path), int(mtime_ns // 1_000_000_000)
        while True:
            stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(second))
            copy = str(p.with_name(f"{p.stem}.sync-conflict-{stamp}-{lose.name.upper()[:7]:0<7}{p.suffix}"))
            taken = copy in agreed or copy in self.base or any((d.root / copy).exists() for d in (self.a, self.b))
            if not taken:
                return copy
            second += 1


def _deliver(target: Path, data: bytes, mtime_ns: int) -> None:
    """Write a received file the way Syncthing does: a hidden temp file in the
    same folder, renamed over the name, keeping the sender's mtime."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".syncthing.{target.name}.tmp")
    tmp.write_bytes(data)
    os.utime(tmp, ns=(mtime_ns, mtime_ns))
    os.replace(tmp, target)
