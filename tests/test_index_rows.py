"""A first index built fast (a bulk load, notes parsed and their trace rows
drafted in worker processes) holds exactly the rows the plain path builds
(in-process, row by row, FTS through its triggers): every table of the index
and the durable state, and every place of every term in the full-text index
(bench/index_rows.py reads them all)."""

from __future__ import annotations

import datetime
import shutil
import sys
from pathlib import Path

import pytest
from helpers import opened, write

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from index_rows import differences, snapshot  # noqa: E402

from memvault.store.queries.search import SearchQuery  # noqa: E402

SESSION = (
    '{"role": "user", "name": "Ana", "content": "We moved the standup to 9:30 on Tuesdays.", '
    '"session_id": "s-1", "timestamp": "2026-11-20T09:00:00+00:00"}\n'
    '{"role": "assistant", "name": "Bot", "content": "Noted: standup at 9:30, Tuesdays.", '
    '"session_id": "s-1", "timestamp": "2026-11-20T09:01:00+00:00"}\n'
)


def _vault(root: Path) -> None:
    """A little of everything a reconcile classifies differently."""
    for i in range(40):
        fm = f"---\ntags: [t{i % 4}, area/x{i % 3}]\naliases: [Alias {i}]\ncreated: 2026-0{1 + i % 9}-1{i % 9}\n---\n"
        write(root, f"d{i % 3}/Note {i}.md", (fm if i % 2 else "") + f"# Note {i}\n\nword{i} #inline{i % 5} "
              f"[[Note {(i + 1) % 40}]] [[d{i % 3}/Note {(i * 7) % 40}#Heading|shown]] ![[img.png]] "
              f"[[Missing {i}]]\n\n## Heading\n\nmore text ^b{i}\n")
    write(root, "img.png", b"\x89PNG\r\n\x1a\n")
    write(root, "Secrets.md", "my password: Tr0ub4dor&3xyzQ\naws_secret_access_key = "
          "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nand prose after\n")
    write(root, "Broken.md", "---\ncreated: {{date}}\ntags: [a\n---\nbody of a note with bad YAML\n")
    write(root, "Memory/semantic/tea.md", "---\nid: m-tea\ntype: semantic\ntags: [drink]\n---\nAna prefers green tea.\n")
    write(root, "Memory/procedural/deploy.md", "---\nid: m-deploy\n---\nDeploy with make ship; token=abcd1234efgh5678\n")
    write(root, "Elsewhere/habit.md", "---\nmemory: episodic\ncreated: 2026-11-01\n---\nRan 5 km in the park.\n")
    write(root, "Memory/semantic/tea (Ana's conflicted copy 2026-11-23).md",
          "---\nid: m-tea\n---\nAna prefers black tea.\n")
    write(root, "Memory/semantic/tea.sync-conflict-20261123-142501-ABCDEFG.md", "---\nid: m-tea\n---\nOolong.\n")
    write(root, "Memory/semantic/copy.md", "---\nconflict_of: m-tea\n---\nAna prefers white tea.\n")
    # Two memory notes naming one id: the identity rule settles it (one gives its id up).
    write(root, "Memory/semantic/one.md", "---\nid: m-same\ncreated: 2026-01-01\n---\nFirst claim.\n")
    write(root, "Memory/semantic/two.md", "---\nid: m-same\ncreated: 2026-02-01\n---\nSecond claim.\n")
    write(root, "crlf.md", "---\r\ntags: [w]\r\n---\r\nline one\r\n[[Note 1]]\r\n")


def test_a_fast_first_index_holds_the_rows_of_the_plain_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "source"
    source.mkdir()
    _vault(source)
    with opened(source) as store:  # a session note with its turns, as ingest writes it
        import io

        store.ingest(io.BytesIO(SESSION.encode()), client="generic")
    shutil.rmtree(tmp_path / "home", ignore_errors=True)
    since = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")

    def cold(name: str) -> dict[str, list[tuple[object, ...]]]:
        root = tmp_path / name
        shutil.copytree(source, root)
        with opened(root) as store:
            summary = store.sync()
            assert summary.added > 50 and not summary.updated
            assert [h.path for h in store.search(SearchQuery("standup", mode="keyword", what="all")).hits]
            data_dir = store.data_dir
        return snapshot(data_dir, since)

    monkeypatch.setattr("memvault.store.index.reconcile.BULK_MIN", 1)
    monkeypatch.setattr("memvault.store.index.reconcile_pass.BULK_MIN", 1)
    monkeypatch.setattr("memvault.vault_io.bulk.POOL_MIN", 1)
    monkeypatch.setattr("memvault.vault_io.bulk.CHUNK", 7)
    fast = cold("fast")
    monkeypatch.setattr("memvault.store.index.reconcile.BULK_MIN", 10**9)
    monkeypatch.setattr("memvault.store.index.reconcile_pass.BULK_MIN", 10**9)
    monkeypatch.setattr("memvault.vault_io.bulk.POOL_MIN", 10**9)
    plain = cold("plain")
    assert sum(1 for row in fast["main.traces"] if row[2] == "turn") == 2
    assert sum(1 for row in fast["main.traces"] if row[2] == "memory") >= 4
    diff = differences(fast, plain)
    assert not diff, "\n".join(diff)
