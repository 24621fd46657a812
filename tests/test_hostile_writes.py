"""Hostile input never writes outside its place (issue 32 item 1).

An export file being imported, a memory folder that is a symlink, a path
the durable state carries from elsewhere: whatever they name, memvault
writes no file in a hidden part of the vault (``.obsidian``, ``.git``, a
fake history log), none through a folder that leads out of the vault, and
each refusal is one line naming the file, with the rest imported.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli

MEMORY = {"type": "semantic", "status": "active", "scope": "user", "tags": [], "strength": 0.5,
          "created": "2026-01-01T00:00:00+00:00", "updated": "2026-01-01T00:00:00+00:00", "source": "manual"}
PLANTED = [
    ".obsidian/plugins/evil/main.js", ".obsidian/plugins/evil/main.js.md", ".obsidian/community-plugins.json",
    ".git/hooks/pre-commit", ".git/hooks/pre-commit.md", "Memory/.memvault/history/evil.jsonl",
    "Memory/.memvault/history/evil.md", "Memory/semantic/.hidden.md",
]


@pytest.fixture(autouse=True)
def no_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")


def run(vault: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


def hidden_files(vault: Path) -> list[str]:
    """Files in a hidden part of the vault, but memvault's own history log and trash."""
    found = []
    for p in vault.rglob("*"):
        rel = p.relative_to(vault).as_posix()
        if p.is_dir() or not any(part.startswith(".") for part in rel.split("/")):
            continue
        own_log = rel.startswith("Memory/.memvault/history/") and p.name.endswith(".jsonl") and \
            not p.name.startswith("evil")
        if not own_log and not rel.startswith(".trash/"):
            found.append(rel)
    return sorted(found)


def hostile_export(tmp_path: Path) -> Path:
    """A memvault export whose records name every place they must not write."""
    memories = [dict(MEMORY, id=f"m-{i:012x}", content=f"Planted memory {i}", path=path, note=f"planted {i}\n")
                for i, path in enumerate(PLANTED + ["Linked/escape.md", "Memory/../.obsidian/x.md"])]
    memories.append(dict(MEMORY, id="m-ffffffffffff", content="Forgotten with a hostile origin", status="deleted",
                         forgotten={"reason": "test", "at": "2026-01-02T00:00:00+00:00",
                                    "from": ".obsidian/plugins/evil/back.md"}))
    sources = [{"id": f"n-{i:012x}", "path": path, "kind": "source", "text": f"planted source {i}\n"}
               for i, path in enumerate(PLANTED + ["Linked/escape.md"])]
    sources.append({"id": "n-0000000000ff", "path": "Fine/source.md", "kind": "source", "text": "# Fine\n- ok\n"})
    conflicts = [{"trace_id": "m-000000000000", "path": "Notes/a.md", "conflict_path": path, "kind": "edit",
                  "detail": "", "created": f"2026-01-0{i + 1}", "text": "#!/bin/sh\necho pwned\n"}
                 for i, path in enumerate([".obsidian/community-plugins.json", ".git/hooks/pre-commit",
                                           "Linked/out.md", "Elsewhere/a (conflict).md"])]
    doc = {"format": "memvault-export", "version": 2, "memory_folder": "Memory", "memory": memories,
           "source": sources, "conflict": conflicts}
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc), "utf-8")
    return path


def test_an_import_writes_nothing_outside_its_place(vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault / "Linked").symlink_to(outside, target_is_directory=True)
    write(vault, "Notes/a.md", "A note.\n")
    export = hostile_export(tmp_path)
    r = run(vault, "import", "json", str(export))
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert hidden_files(vault) == [], hidden_files(vault)
    assert list(outside.iterdir()) == []
    errors = [line for line in r.output.splitlines() if line.startswith("error:")]
    assert errors and all(str(export) in line and "not written" in line for line in errors), errors
    # What was fine is imported: the plain source, and every memory (under a name of its own place).
    assert (vault / "Fine/source.md").read_text("utf-8") == "# Fine\n- ok\n"
    with opened(vault) as store:
        live = dict(store.con.execute("SELECT id, path FROM traces WHERE kind = 'memory' AND status = 'active'"))
    assert {f"m-{i:012x}" for i in range(len(PLANTED) + 2)} <= set(live)
    assert all(str(p).startswith("Memory/semantic/") for p in live.values()), live
    # A restore of the memory forgotten "from" a hidden place brings it back to its type's folder.
    r = run(vault, "restore", "m-ffffffffffff")
    assert r.exit_code == 0, r.output
    assert hidden_files(vault) == [], hidden_files(vault)


def test_a_memory_folder_symlinked_out_of_the_vault_is_refused(vault: Path, tmp_path: Path) -> None:
    """The memory is refused in one line, nothing is written there, and the
    store has no memory that would vanish at the next sync."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault / "Memory").symlink_to(outside, target_is_directory=True)
    r = run(vault, "add", "The plan for the launch")
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Memory/semantic/" in lines[0] and "outside the vault" in lines[0], lines
    assert list(outside.rglob("*")) == []
    r = run(vault, "list", "--json")
    assert r.exit_code == 0 and "The plan for the launch" not in r.output
    assert run(vault, "sync").exit_code == 0
    with opened(vault) as store:
        assert store.con.execute("SELECT count(*) FROM state.outbox").fetchone()[0] == 0


def test_a_trash_path_from_elsewhere_is_never_read_nor_deleted(vault: Path) -> None:
    """``restore`` takes a forgotten memory's copy from the trash and deletes
    it there; a trash path the durable state got from elsewhere (another
    device's log) that names a person's note is not the trash's: that note
    is neither taken as the copy nor deleted."""
    from memvault.store.db import records as rec

    plan = write(vault, "Projects/Plan.md", "My plan, not a memory.\n")
    with opened(vault) as store:
        store.sync()
        added = store.add("Likes quiet mornings", "semantic")
        store.forget(added.id)
        trace = rec.get_trace(store.con, added.id)
        assert trace is not None
        meta = dict(trace.metadata, trash_path="Projects/Plan.md", trashed_from=".git/hooks/pre-commit.md")
        store.con.execute("UPDATE traces SET metadata = ? WHERE id = ?", (json.dumps(meta), added.id))
        result = store.restore(added.id)
    assert plan.read_text("utf-8") == "My plan, not a memory.\n"
    assert result.path is not None and result.path.startswith("Memory/semantic/")
    assert not (vault / ".git").exists()
    assert "Likes quiet mornings" in (vault / result.path).read_text("utf-8")


def test_views_never_write_through_a_symlinked_memory_folder(vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault / "Memory").symlink_to(outside, target_is_directory=True)
    r = run(vault, "views", "install")
    assert r.exit_code == 1 and "Traceback" not in r.output and "outside the vault" in r.output, r.output
    assert list(outside.iterdir()) == []
    os.unlink(vault / "Memory")
