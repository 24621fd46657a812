"""The review answers (:mod:`memvault.store.answers.review`): conflict
copies, contradictions, identity, memory sources and the model's state
give the JSON ``--json``, ``status`` and the MCP tools have always printed
(keys, their order, nulls), and read back as the same answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import opened, write
from test_consolidate import TODAY, recalled, sample_vault

from memvault.store.answers.review import (
    CarriedConflict,
    Contradiction,
    CopySides,
    ModelStatus,
    OwnConflict,
    SettledCopy,
    SyncCopy,
)
from memvault.store.db.connection import write_transaction


def round_trip(answer: Any) -> None:
    assert type(answer).from_json(json.loads(json.dumps(answer.to_json()))) == answer


def test_conflict_copies_of_each_kind_keep_their_keys_in_order(vault: Path) -> None:
    write(vault, "Deploy.md", "# Deploy\n\nShip with make.\n")
    write(vault, "Deploy.sync-conflict-20260101-120000-ABCDEFG.md", "# Deploy\n\nShip with make ship.\n")
    write(vault, "Notes/copy.md", "---\nconflict_of: m-gone\n---\nThe store's text.\n")
    with opened(vault) as store:
        store.sync()
        recorded = store.conflicts()  # memvault's own copy, recorded when this device found it
        with write_transaction(store.con):
            store.con.execute("DELETE FROM state.conflicts")  # as if another device had written it
        copies = store.conflicts()
    assert [type(c) for c in recorded] == [OwnConflict, SyncCopy]
    assert list(recorded[0].to_json()) == ["id", "note", "conflict_note", "detail", "when", "kind", "side"]
    assert [type(c) for c in copies] == [CarriedConflict, SyncCopy]
    carried, synced = (c.to_json() for c in copies)
    assert list(carried) == ["id", "note", "conflict_note", "kind", "when", "detail", "side"]
    assert carried["id"] == "m-gone" and carried["note"] is None and carried["when"] is None
    assert list(synced) == ["id", "note", "conflict_note", "tool", "device", "differs", "kind", "when", "side",
                            "detail"]
    assert (synced["tool"], synced["device"], synced["differs"]) == ("Syncthing", "ABCDEFG", True)
    for answer in (*recorded, *copies):
        round_trip(answer)


def test_contradictions_identity_sources_and_the_model(vault: Path) -> None:
    sample_vault(vault)  # Has 2 cats / Has 3 cats, and one identity memory, m-who
    write(vault, "Profile.md", "---\nmemory: source\n---\n# Profile\n\n- Drinks coffee black\n")
    with opened(vault) as store:
        store.sync()
        recalled(store, "m-cats1", "2026-10-20")
        store.consolidate(today=TODAY)
        (flagged,) = store.contradictions()
        (run,) = store.consolidation_runs()
        identity = store.identity()
        (source,) = store.source_list()
        model = store.model_status()
    data = flagged.to_json()
    assert list(data) == ["id", "kind", "status", "reason", "run", "flagged", "newer", "older"]
    assert data["newer"] == {"id": "m-cats2", "content": "Has 3 cats", "path": "Memory/semantic/m-cats2.md"}
    assert isinstance(flagged, Contradiction) and flagged.run == run["run"]
    assert {i.id: i.to_json() for i in identity}["m-who"] == {
        "id": "m-who", "kind": "memory", "type": "identity", "path": "Memory/identity/m-who.md",
        "content": "Is called Jo by friends"}
    assert sorted(i.kind for i in identity) == ["fact", "memory"]
    assert list(source.to_json()) == ["path", "id", "marks", "facts", "redacted", "extractor", "extracted_at"]
    assert source.to_json()["marks"] == ["frontmatter"] and source.facts == 1
    assert list(model.to_json()) == ["model", "key", "chunks", "embedded", "unembedded", "queued",
                                     "unavailable"]
    assert model.to_json()["unavailable"] is None
    assert ModelStatus("none", None).to_json() == {"model": "none", "key": None}
    for answer in (flagged, source, model, ModelStatus("none", None), *identity):
        round_trip(answer)


SIDES_KEYS = ["copy", "note", "memory", "copy_side", "note_side", "copy_content", "note_content"]
LAPTOP = ".sync-conflict-20261123-142501-LAPTOP1.md"


def test_a_conflict_copy_side_by_side_and_settled(vault: Path) -> None:
    write(vault, "Deploy.md", "Ship with make.\n")
    write(vault, f"Deploy{LAPTOP}", "Ship with make ship.\n")
    with opened(vault) as store:
        made = store.add("Ships on Fridays", "semantic")
        assert made.path is not None
        note = vault / made.path
        copy = note.with_name(note.stem + LAPTOP)
        copy.write_text(note.read_text("utf-8").replace("Ships on Fridays", "Ships on Thursdays"), "utf-8")
        store.sync()
        sides = store.conflict_copy(f"Deploy{LAPTOP}")
        plain = store.settle_conflict_copy(f"Deploy{LAPTOP}", "copy")
        memory = store.settle_conflict_copy(copy.relative_to(vault).as_posix(), "note")
    assert isinstance(sides, CopySides) and list(sides.to_json()) == SIDES_KEYS
    assert (sides.note, sides.memory, sides.note_content, sides.copy_content) == (
        "Deploy.md", None, "Ship with make.", "Ship with make ship.")
    assert isinstance(plain, SettledCopy) and plain.kept_as is None
    assert list(plain.to_json()) == [*SIDES_KEYS, "took", "version", "note_trashed", "copy_trashed"]
    assert (plain.took, plain.note_trashed, plain.copy_trashed) == ("copy", ".trash/Deploy.md", f".trash/Deploy{LAPTOP}")
    # the note taken, the copy's text is kept as an earlier version: kept_as, before copy_trashed
    assert list(memory.to_json()) == [*SIDES_KEYS, "took", "version", "note_trashed", "kept_as", "copy_trashed"]
    assert (memory.memory, memory.kept_as, memory.version) == (made.id, f"{made.id}.v1", None)
    for answer in (sides, plain, memory):
        round_trip(answer)
