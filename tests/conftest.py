"""Shared fixtures: an isolated memvault home, vault copies, leak checks."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import copy_corpus
from hypothesis import HealthCheck, settings

# CI must be deterministic: fixed example order, bounded work, no deadlines
# that a loaded 2-core machine could miss.
settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile("dev", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))



@pytest.fixture(autouse=True)
def memvault_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point memvault's data dir and config at temp folders for every test,
    and clear any MEMVAULT_* variable the developer's shell may carry."""
    for key in list(os.environ):
        if key.startswith("MEMVAULT_"):
            monkeypatch.delenv(key)
    home = tmp_path_factory.mktemp("memvault-home")
    monkeypatch.setenv("MEMVAULT_HOME", str(home))
    monkeypatch.setenv("MEMVAULT_CONFIG", str(home / "config.toml"))
    return home


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    """Fail a test that leaves threads running (observers, timers, servers)."""
    before = set(threading.enumerate())
    yield
    deadline = 5.0
    import time

    end = time.monotonic() + deadline
    while True:
        leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not leaked or time.monotonic() > end:
            break
        time.sleep(0.02)
    assert not leaked, f"test leaked threads: {[t.name for t in leaked]}"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """An empty vault folder."""
    root = tmp_path / "vault"
    root.mkdir()
    return root


@pytest.fixture
def kepano(tmp_path: Path) -> Path:
    """A writable copy of the kepano-obsidian vault."""
    return copy_corpus("kepano-obsidian", tmp_path)


@pytest.fixture
def vok(tmp_path: Path) -> Path:
    """A writable copy of the vaultofknowledge vault (2,721 notes)."""
    return copy_corpus("vaultofknowledge", tmp_path)
