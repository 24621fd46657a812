"""A memory note write that failed is shown by sync, status and doctor, is
retried by the next sync, and `doctor --repair` says "repaired" only for what
it repaired; notes a killed import wrote are indexed by the next command
(issue 19 item 12)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from helpers import opened, write

from memvault.cli.main import cli
from memvault.store.flows.export import ExportOptions


@pytest.fixture(autouse=True)
def no_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")


def run(vault: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


class DiskFull:
    """The memory writer's note writes fail (ENOSPC) while ``on``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from memvault.vault_io.gate import Gate

        self.on = True
        for name in ("write", "create", "replace"):  # a new note, a note rewritten, one exchanged: the same disk
            monkeypatch.setattr(Gate, name, self._full(getattr(Gate, name)))

    def _full(self, real: Any) -> Any:
        def call(gate: Any, rel: str, *args: Any, **kw: Any) -> bool:
            if self.on:
                raise OSError(errno.ENOSPC, "No space left on device", str(gate.root / rel))
            return bool(real(gate, rel, *args, **kw))

        return call


def test_a_failed_note_write_is_shown_retried_and_not_claimed_repaired(vault: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(vault, "sync").exit_code == 0
    disk = DiskFull(monkeypatch)
    added = run(vault, "add", "Prefers dark mode in every editor", "--json")
    assert added.exit_code == 1 and "could not be written" in added.output
    memory_id = json.loads(run(vault, "list", "--json").output.splitlines()[0])["id"]

    # The next sync retries it at once (not after 30 s) and says it failed.
    synced = run(vault, "sync")
    assert synced.exit_code == 1 and memory_id in synced.output and "No space left" in synced.output
    status = json.loads(run(vault, "status", "--json").output)
    assert [(p["id"], p["action"], p["failed"]) for p in status["pending_writes"]] == [(memory_id, "write", True)]
    assert f"{memory_id}: write" in run(vault, "status").output
    doctor = run(vault, "doctor")
    assert doctor.exit_code == 1 and f"1 memory notes wait to be written: {memory_id}" in doctor.output

    # A repair that cannot write it does not say it repaired it, and says why.
    repair = run(vault, "doctor", "--repair")
    assert repair.exit_code == 1
    assert not [line for line in repair.output.splitlines() if line.startswith("repaired:")]
    assert "not repaired:" in repair.output and memory_id in repair.output and "No space left" in repair.output

    disk.on = False
    synced = run(vault, "sync", "--json")
    assert synced.exit_code == 0, synced.output
    assert json.loads(synced.output.splitlines()[0])["pending"] == []
    assert len(list((vault / "Memory").rglob("*.md"))) == 1
    assert json.loads(run(vault, "status", "--json").output)["pending_writes"] == []


def test_doctor_repair_says_repaired_when_it_wrote_the_note(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(vault, "sync").exit_code == 0
    disk = DiskFull(monkeypatch)
    assert run(vault, "add", "Prefers tea in the afternoon").exit_code == 1
    disk.on = False
    repair = run(vault, "doctor", "--repair")
    assert repair.exit_code == 0 and "repaired: sync" in repair.output and "not repaired" not in repair.output
    assert len(list((vault / "Memory").rglob("*.md"))) == 1


KILLED_IMPORT = """
import os, sys
from memvault.store.flows import sink
from memvault.store.memory_store import MemoryStore

def killed(self):
    os._exit(9)  # killed after writing its notes, before indexing them

sink.ImportSink.finish = killed
MemoryStore.open(sys.argv[1]).import_("json", sys.argv[2])
"""


def test_notes_of_a_killed_import_are_indexed_by_the_next_command(tmp_path: Path) -> None:
    src, dst = tmp_path / "a", tmp_path / "b"
    write(src, "About me.md", "---\nmemory: source\n---\n# About me\n- I keep a quokka called Biscuit\n")
    with opened(src) as store:
        store.sync()
        store.export(ExportOptions(format="json", output=tmp_path / "e.json"))
    dst.mkdir()
    assert run(dst, "sync").exit_code == 0
    done = subprocess.run([sys.executable, "-c", KILLED_IMPORT, str(dst), str(tmp_path / "e.json")],
                          env=dict(os.environ), capture_output=True, text=True, timeout=120)
    assert done.returncode == 9, done.stderr
    assert (dst / "About me.md").is_file()
    hits = run(dst, "search", "quokka", "--mode", "keyword", "--json")
    assert hits.exit_code == 0 and "About me.md" in hits.output
