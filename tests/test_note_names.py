"""A memory note's file name (issue 35): `restore` of a note deleted in the
vault writes it back under its own name, the one links use; an `update` that
changes the text keeps the name (the note's identity in Obsidian: links, an
open tab), as does a name a person gave it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import write

from memvault.cli.main import cli
from memvault.store.memory_store import MemoryStore
from memvault.vault_io.frontmatter import file_frontmatter_id
from memvault.vault_io.memory_note import memory_filename


@pytest.fixture
def store(vault: Path):  # type: ignore[no-untyped-def]
    s = MemoryStore.open(str(vault))
    yield s
    s.close()


def memory_notes(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "Memory").rglob("*.md"))


def test_restore_of_a_note_deleted_in_the_vault_keeps_its_name(store: MemoryStore) -> None:
    made = store.memories.add("Keeps the spare key under the blue pot.", "semantic")
    assert made.path is not None
    (store.root / made.path).unlink()  # deleted in Obsidian (or the file manager)
    store.sync()
    assert store.read(made.id).status == "deleted"
    back = store.memories.restore(made.id)
    assert back.action == "restored" and back.path == made.path
    assert memory_notes(store.root) == [made.path] and file_frontmatter_id(store.root / made.path) == made.id
    # Restored where it was: a link to it resolves again.
    write(store.root, "Home.md", f"# Home\n\nSee [[{Path(made.path).stem}]].\n")
    store.sync()
    assert [b.source_path for b in store.backlinks(made.id)] == ["Home.md"]


def test_restore_of_a_renamed_then_deleted_note_takes_the_name_it_had(store: MemoryStore) -> None:
    made = store.memories.add("Waters the fern on Fridays.", "semantic")
    assert made.path is not None
    renamed = "Memory/semantic/Fern.md"
    (store.root / made.path).rename(store.root / renamed)  # the person's own name
    store.sync()
    (store.root / renamed).unlink()
    store.sync()
    r = CliRunner().invoke(cli, ["--vault", str(store.root), "restore", made.id])
    assert r.exit_code == 0, r.output
    assert memory_notes(store.root) == [renamed]


def test_an_update_keeps_the_name_and_restore_after_it_too(store: MemoryStore) -> None:
    """The name is the note's identity in Obsidian (links, an open tab): an
    update that changes the text keeps it, and a restore after the note was
    deleted writes it back under that name, not the slug of its new text."""
    made = store.memories.add("Prefers dark mode in every editor.", "semantic")
    assert made.path is not None
    write(store.root, "Setup.md", f"# Setup\n\nMy editor: [[{Path(made.path).stem}]].\n")
    new = store.memories.update(made.id, content="Prefers light mode in every editor.")
    assert new.path == made.path and memory_notes(store.root) == [made.path]
    assert "light mode" in (store.root / made.path).read_text(encoding="utf-8")
    (store.root / made.path).unlink()
    store.sync()
    back = store.memories.restore(made.id)
    assert back.path == made.path != f"Memory/semantic/{memory_filename('Prefers light mode in every editor.', made.id[2:10])}"
    assert memory_notes(store.root) == [made.path]
    store.sync()
    assert [b.source_path for b in store.backlinks(made.id)] == ["Setup.md"]  # the link resolves again


def test_a_name_a_person_gave_the_note_stays(store: MemoryStore) -> None:
    made = store.memories.add("Runs on Tuesdays and Thursdays.", "semantic")
    assert made.path is not None
    mine = "Memory/semantic/Running.md"
    (store.root / made.path).rename(store.root / mine)
    store.sync()
    after = store.memories.update(made.id, content="Runs on Mondays and Thursdays.")
    assert after.path == mine and memory_notes(store.root) == [mine]
