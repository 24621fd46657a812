"""The polling fallback: a real polling observer whose pause grows with the
CPU cost of listing the vault, so a large vault stays near idle."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import wait_for, write
from watchdog.events import FileSystemEventHandler

from memvault.daemon import watch


class Recorder(FileSystemEventHandler):
    def __init__(self) -> None:
        self.paths: list[str] = []

    def on_any_event(self, event) -> None:  # type: ignore[no-untyped-def]
        self.paths.append(str(event.src_path))


def emitter(observer) -> watch.AdaptivePollingEmitter:  # type: ignore[no-untyped-def]
    (em,) = observer.emitters
    return em


def test_cheap_listing_keeps_the_configured_interval(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch, "POLL_CPU_SHARE", 1.0)  # any listing is cheap next to the pause
    write(vault, "a.md", "a")
    rec = Recorder()
    observer = watch.start_polling(vault, rec, 0.05)
    try:
        write(vault, "b.md", "b")
        wait_for(lambda: any(p.endswith("b.md") for p in rec.paths))
        assert emitter(observer).timeout == pytest.approx(0.05)
    finally:
        watch.stop_observer(observer)


def test_expensive_listing_stretches_the_pause_up_to_the_cap(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(200):
        write(vault, f"d{i % 10}/n{i}.md", "x")
    # As if a listing cost a great deal: any cost / tiny share > the cap.
    monkeypatch.setattr(watch, "POLL_CPU_SHARE", 1e-9)
    monkeypatch.setattr(watch, "POLL_MAX_INTERVAL", 0.5)
    rec = Recorder()
    observer = watch.start_polling(vault, rec, 0.05)
    try:
        wait_for(lambda: emitter(observer).timeout == pytest.approx(0.5))
        write(vault, "late.md", "still seen, later")
        wait_for(lambda: any(p.endswith("late.md") for p in rec.paths))
    finally:
        watch.stop_observer(observer)
