"""`export --format json` is lossless for everything memvault knows: forgotten
facts, merged-away memories, consolidation runs (undo works after a restore),
versions, forgets, strength, conflicts. Issue 19 item 8."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from helpers import opened, write

from memvault.store.flows.export import ExportOptions
from memvault.store.memory_store import MemoryStore
from memvault.store.queries.recall import ContextQuery

TODAY = date(2026, 11, 1)

SOURCE = """---
memory: source
---
# About me
- I live in Lisbon
- I drink coffee black
- I was born in 1990
"""


@pytest.fixture(autouse=True)
def no_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")


def _note(root: Path, mid: str, content: str, type_: str = "semantic", *, created: str = "2026-10-01",
          strength: float = 0.5, tags: tuple[str, ...] = ()) -> None:
    """A memory note as memvault writes them, with a chosen id and day."""
    tag_lines = "".join(f"  - {t}\n" for t in tags)
    write(root, f"Memory/{type_}/{mid}.md",
          f"---\nid: {mid}\ntype: {type_}\nscope: user\n" + (f"tags:\n{tag_lines}" if tags else "")
          + f"strength: {strength}\ncreated: '{created}T09:00:00+00:00'\nupdated: '{created}T09:00:00+00:00'\n"
          f"source: manual\n---\n{content}\n")


def _every_kind_of_state(root: Path) -> tuple[str, str, str]:
    """A store with memories of several types, an update with versions, a
    forget, a consolidation run that merges, archives, promotes and flags a
    contradiction, a forgotten fact and a recorded write conflict.
    Returns (the run's id, the merged-away memory's id, the forgotten fact's id)."""
    write(root, "About me.md", SOURCE)
    _note(root, "m-dup1", "Prefers dark mode in every editor", created="2026-09-01", tags=("ui",), strength=0.4)
    _note(root, "m-dup2", "prefers dark mode in every editor!", created="2026-09-03", tags=("editor",), strength=0.6)
    _note(root, "m-cats1", "Has 2 cats", created="2026-08-01")
    _note(root, "m-cats2", "Has 3 cats", created="2026-09-15")
    _note(root, "m-faded", "Used to like the old office coffee", created="2026-01-01", strength=0.1)
    for i, day in enumerate(("2026-10-06", "2026-10-13", "2026-10-20")):
        _note(root, f"m-ep{i}", ["Thursday climbing session with Ana", "Climbing session with Ana on Thursday",
                                 "Thursday climbing with Ana again"][i], "episodic", created=day)
    with opened(root) as store:
        store.sync()
        first = store.add("Deploys go out on Tuesdays", "procedural", tags=["work"])
        store.update(first.id, content="Deploys go out on Wednesdays", reason="the team moved it")
        gone = store.add("An idea to forget", "semantic")
        store.forget(gone.id, reason="obsolete")
        store.add("Is called Jo by friends", "identity")
        fact = next(f for f in store.facts("About me.md").facts if "coffee" in f.text)
        store.forget(fact.id, reason="wrong")
        store.context(ContextQuery("cats and dark mode")).to_json()  # recall statistics
        run = store.consolidate(today=TODAY)
        kinds = {a["kind"] for a in run.actions}
        assert {"merge", "contradiction", "archive", "promote"} <= kinds, kinds
        merged = next(a for a in run.actions if a["kind"] == "merge")["ids"][1]
        # a write conflict: the note edited in the vault while the store changes it
        pref = store.add("Prefers tea in the afternoon", "preference")
        note = root / pref.path
        note.write_text(note.read_text("utf-8").replace("tea", "green tea"), "utf-8")
        store.memories.before_write = None
        result = store.update(pref.id, content="Prefers coffee in the afternoon", reason="changed")
        assert result.action in ("conflict", "updated")
        return run.run_id, merged, fact.id


def _export(store: MemoryStore, out: Path) -> dict:
    store.export(ExportOptions(format="json", output=out))
    doc = json.loads(out.read_text("utf-8"))
    for key in ("exported_at", "vault"):  # per install: when, and this vault's name
        doc.pop(key)
    return doc


def test_export_import_export_is_the_same_and_undo_works_after_the_restore(tmp_path: Path) -> None:
    src, dst = tmp_path / "a", tmp_path / "b"
    src.mkdir()
    dst.mkdir()
    run_id, merged, fact_id = _every_kind_of_state(src)
    with opened(src) as store:
        first = _export(store, tmp_path / "1.json")
        src_data = store.data_dir
    with opened(dst) as store:
        assert store.data_dir != src_data  # a fresh vault and a fresh data dir
        assert store.import_("json", tmp_path / "1.json").errors == []
        second = _export(store, tmp_path / "2.json")
        for kind in first:
            assert second[kind] == first[kind], kind
        # the forgotten fact stays forgotten, the merged-away memory resolves
        assert store.show(fact_id).status != "active"
        assert store.show(merged).id == merged
        assert store.contradictions() and store.contradictions()[0].older.id == "m-cats1"
        undone = store.undo_consolidation(run_id)
        assert undone.refused == [] and undone.undone
        assert store.show(merged).status == "active"
        assert store.contradictions() == []
        assert (dst / "Memory/semantic/m-faded.md").is_file()
