"""An export's texts are hostile input too (issue 32: no credential in any file under the vault).

``import json`` writes an export's memory notes, sources, conflict copies and
durable rows (versions, reasons: the history log carries them into the
vault). Each text it writes new is redacted, and the report says how many
secrets; a ``related`` link that cannot be written as a link is left out
with one warning, the memory still written; a person's file already in the
vault keeps its bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
PASSWORD = "Xk9#mQ2!vLp7wZ"
MEMORY = {"type": "semantic", "status": "active", "scope": "user", "tags": [], "strength": 0.5,
          "created": "2026-01-01T00:00:00+00:00", "updated": "2026-01-01T00:00:00+00:00", "source": "manual"}


@pytest.fixture(autouse=True)
def no_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")


def export(tmp_path: Path) -> Path:
    version = {"id": "m-000000000001.v1", "version": 1, "reason": f"rotated, old password: {PASSWORD}",
               "superseded_at": "2026-01-01T00:00:00+00:00",
               "trace": {"id": "m-000000000001.v1", "kind": "memory", "type": "semantic", "content": f"The token was {TOKEN}",
                         "title": f"The token was {TOKEN}", "tags": [], "metadata": {}, "scope": "user",
                         "created": "2026-01-01T00:00:00+00:00", "updated": "2026-01-01T00:00:00+00:00"}}
    memories = [
        dict(MEMORY, id="m-000000000001", content=f"The db password is {PASSWORD} for prod",
             related=["Notes/a", "x]]\n---\nevil: 1\n---\n[[y"], path="Memory/semantic/one.md", versions=[version],
             extra={"api_key": "sk-" + "q" * 32}),
        dict(MEMORY, id="m-000000000002", content=f"token {TOKEN} here", path=f"Memory/semantic/{TOKEN}.md",
             note=f"---\nid: m-000000000002\ntype: semantic\n---\ntoken {TOKEN} here\n"),
    ]
    sources = [{"id": "n-000000000001", "path": "Src/s.md", "kind": "source",
                "text": f"---\nmemory: source\n---\n# S\n- my github token is {TOKEN}\n"},
               {"id": "n-000000000002", "path": "Mine/kept.md", "kind": "source", "text": "other text\n"}]
    conflicts = [{"trace_id": "m-000000000001", "path": "Notes/a.md", "conflict_path": "Notes/a (conflict).md",
                  "kind": "edit", "detail": "", "created": "2026-01-01", "text": f"password: {PASSWORD}\n"}]
    forgets = [{"id": "f-000000000001", "source_id": "n-000000000001", "reason": f"password: {PASSWORD}",
                "at": "2026-01-01T00:00:00+00:00"}]
    doc = {"format": "memvault-export", "version": 2, "memory_folder": "Memory", "memory": memories,
           "source": sources, "conflict": conflicts, "fact_forget": forgets}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc), "utf-8")
    return path


def files_holding(root: Path, *secrets: str) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file() and any(s.encode() in p.read_bytes() or s in p.name for s in secrets))


def run(vault: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


def test_an_import_writes_no_credential_into_the_vault_and_says_how_many(vault: Path, tmp_path: Path) -> None:
    write(vault, "Notes/a.md", "A note.\n")
    mine = write(vault, "Mine/kept.md", f"my own note, my own password: {PASSWORD}\n")
    r = run(vault, "import", "json", str(export(tmp_path)), "--json")
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    report = json.loads(next(line for line in r.stdout.splitlines() if line.startswith("{")))
    assert report["imported"] == 3 and report["errors"] == 0, report
    # Each secret of what was written counts once (the note's bytes hold the memory's content).
    assert report["redacted"] >= 8, report
    warned = [w for w in report["warnings"] if "related link" in w]
    assert len(warned) == 1 and "m-000000000001" in warned[0] and "left out" in warned[0], report["warnings"]
    assert run(vault, "sync").exit_code == 0
    # Nothing under the vault holds a credential (notes, names, conflict copies, the history log)...
    assert files_holding(vault, TOKEN, PASSWORD) == ["Mine/kept.md"]
    # ...but the person's own note, which the import left as it was, byte for byte.
    assert mine.read_bytes() == f"my own note, my own password: {PASSWORD}\n".encode()
    one = (vault / "Memory/semantic/one.md").read_text("utf-8")
    assert "The db password is [redacted] for prod" in one and "- [[Notes/a]]" in one and "evil" not in one
    assert "[redacted]" in (vault / "Notes/a (conflict).md").read_text("utf-8")
    with opened(vault) as store:
        history = store.history("m-000000000001")
        assert [v.content for v in history] == ["The db password is [redacted] for prod", "The token was [redacted]"]
        assert store.con.execute("SELECT count(*) FROM traces WHERE kind = 'memory' AND status = 'active'"
                                 ).fetchone()[0] == 2


def test_a_consolidation_run_in_an_export_is_redacted_before_it_is_kept(vault: Path, tmp_path: Path) -> None:
    # A merge's why, the texts its undo would restore and the run's summary are
    # durable rows the history log carries into the vault and to every device.
    run_record = {"id": "c-000000000001", "started": "2026-01-02T00:00:00+00:00",
                  "finished": "2026-01-02T00:00:01+00:00", "day": "2026-01-02", "trigger": "cli",
                  "status": "done", "summary": {"merge": 1, "note": f"token {TOKEN}"},
                  "actions": [{"seq": 1, "kind": "merge", "ids": ["m-000000000001", "m-000000000003"],
                               "reason": f"same claim; password: {PASSWORD}",
                               "detail": {"why": f"both say the db password is {PASSWORD}", "cosine": 0.97},
                               "undo": {"texts": {"m-000000000003": f"The token was {TOKEN}"},
                                        "paths": ["Memory/semantic/three.md"]}}]}
    doc = {"format": "memvault-export", "version": 2, "memory_folder": "Memory",
           "memory": [dict(MEMORY, id="m-000000000001", content="The db is on port 5432",
                           path="Memory/semantic/one.md")],
           "consolidation": [run_record]}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc), "utf-8")
    r = run(vault, "import", "json", str(path), "--json")
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    report = json.loads(next(line for line in r.stdout.splitlines() if line.startswith("{")))
    assert report["errors"] == 0 and report["redacted"] >= 4, report
    assert files_holding(vault, TOKEN, PASSWORD) == []
    with opened(vault) as store:
        rows = store.con.execute("SELECT reason, detail, undo FROM state.consolidation_actions").fetchall()
        summary = store.con.execute("SELECT summary FROM state.consolidation_runs").fetchall()
    assert len(rows) == 1 and len(summary) == 1
    kept = json.dumps([list(rows[0]), list(summary[0])])
    assert TOKEN not in kept and PASSWORD not in kept and "0.97" in kept and "three.md" in kept
