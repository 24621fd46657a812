"""Helpers shared by the tests (plain functions; fixtures live in conftest.py)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from memvault.store.memory_store import MemoryStore

CORPORA = Path(__file__).resolve().parent.parent.parent / "shared" / "corpora"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def copy_corpus(name: str, dest: Path) -> Path:
    """Copy one of ../shared/corpora into ``dest`` (tests never write there)."""
    src = CORPORA / name
    if not src.exists():
        pytest.skip(f"corpus {name} not available at {src}")
    target = dest / name
    shutil.copytree(src, target, symlinks=True)
    for p in [target, *target.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | 0o200)  # the source tree is read-only
    return target


def write(root: Path, rel: str, text: str | bytes) -> Path:
    """Write a vault file, creating folders."""
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def wait_for(condition: Callable[[], object], timeout: float = 10.0, interval: float = 0.02) -> object:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout``."""
    end = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"condition not met within {timeout}s: {condition}")
        time.sleep(interval)


@contextmanager
def opened(root: Path) -> "Iterator[MemoryStore]":
    """``with opened(root) as v``: the vault at ``root`` with a fresh index
    connection, closed on exit."""
    from memvault.store.memory_store import MemoryStore

    v = MemoryStore.open(str(root))
    try:
        yield v
    finally:
        v.close()


def run_scheduled_consolidation(v: "MemoryStore") -> None:
    """One run of the daemon's scheduled consolidation on ``v``, at once (the
    vault quiet for ever), with its own runner, closed after."""
    from memvault.daemon.consolidate_service import ConsolidateService

    runner = v.consolidation_runner()
    try:
        ConsolidateService(v, quiet_for=lambda: 1e9, interval=3600, quiet=0)._run_once(runner)
    finally:
        runner.close()
