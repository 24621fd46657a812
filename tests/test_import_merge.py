"""An export imported into a vault that already has its notes (issue 32 item 7).

The usual new device: the sync tool brought the notes first, a sync indexed
them, then the person imports the export of the old device. The notes are
left as they are, and what only the old device's memvault knew still comes
in: a fact forgotten there stays forgotten, a memory keeps its earlier
versions, the history of facts is there.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import opened, write

from memvault.store.flows.export import ExportOptions
from memvault.store.memory_store import MemoryStore
from memvault.store.queries.search import SearchQuery

SOURCE = "---\nmemory: source\n---\n# About me\n- I live in Lisbon\n- I drink coffee black\n"


@pytest.fixture(autouse=True)
def no_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")


def _other_device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_HOME", str(tmp_path / "home-b"))


def _fact(store: MemoryStore, word: str) -> str:
    return next(f.id for f in store.facts("About me.md").facts if word in f.text)


def test_an_import_into_a_vault_with_the_notes_applies_forgets_and_versions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "About me.md", SOURCE)
    with opened(a) as store:
        store.sync()
        coffee = _fact(store, "coffee")
        store.forget(coffee, reason="wrong: I drink tea")
        memory = store.add("Deploys go out on Tuesdays", "procedural")
        store.update(memory.id, content="Deploys go out on Wednesdays", reason="the team moved it")
        export = tmp_path / "a.json"
        store.export(ExportOptions(format="json", output=export))
    # The new device: the sync tool carried the notes (not the dot-folders), a sync indexed them.
    shutil.copytree(a, b, ignore=shutil.ignore_patterns(".*"))
    _other_device(tmp_path, monkeypatch)
    with opened(b) as store:
        store.sync()
        assert _fact(store, "coffee") == coffee
        assert store.read(coffee).status == "active"  # nothing here knows it was forgotten yet
        report = store.import_("json", export)
        assert not report.errors, report.errors
        fact = store.read(coffee)
        assert (fact.status, fact.reason) == ("deleted", "wrong: I drink tea")
        hits = store.search(SearchQuery("coffee", mode="keyword")).to_json()["hits"]
        assert coffee not in [h["id"] for h in hits]
        versions = store.history(memory.id)
        assert [v.content for v in versions] == ["Deploys go out on Wednesdays", "Deploys go out on Tuesdays"]
        assert versions[1].reason == "the team moved it"
        # A rebuild keeps it so: the forget is in this device's durable state now.
        store.rebuild()
        assert store.read(coffee).status == "deleted"
        assert len(store.history(memory.id)) == 2
