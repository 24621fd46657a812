"""The test harness's sync tool (``tests/two_devices.py``): its own losses
would be counted as memvault's, so it must keep every side it does not take."""

from __future__ import annotations

import os
from pathlib import Path

from two_devices import Device, FileSync, files_of


def _write(device: Device, path: str, text: str, mtime_s: int) -> None:
    """A change on one device, with a chosen mtime (the second a conflict copy is named by)."""
    p = device.root / path
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    os.utime(p, ns=(mtime_s * 10**9, mtime_s * 10**9))


def test_two_conflicts_of_one_note_in_one_second_keep_both_copies(tmp_path: Path) -> None:
    """Two conflicts of one note, each lost by the same device within one
    second: the second copy gets a free name instead of overwriting the first."""
    a = Device("laptop", tmp_path / "a", tmp_path / "da")
    b = Device("desktop", tmp_path / "b", tmp_path / "db")
    sync = FileSync(a, b)
    base = 1_795_713_000
    _write(a, "n.md", "start\n", base)
    sync.round()
    _write(a, "n.md", "laptop one\n", base + 1)
    _write(b, "n.md", "desktop one\n", base + 2)  # newer: the laptop's side is the copy
    sync.round()
    _write(a, "n.md", "laptop two\n", base + 1)  # the same second again
    _write(b, "n.md", "desktop two\n", base + 3)
    sync.round()
    sync.round()
    fa, fb = files_of(a.root), files_of(b.root)
    assert fa == fb
    copies = sorted(p for p in fa if ".sync-conflict-" in p)
    assert len(copies) == 2, copies
    assert sorted(fa[c] for c in copies) == [b"laptop one\n", b"laptop two\n"]
    assert fa["n.md"] == b"desktop two\n"
    assert sync.conflicts_written == 2
