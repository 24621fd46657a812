"""No edit is lost to memvault's own write (issue 32 item 6).

Each writer of a file a person can edit checks the file, then replaces it.
A person's save that lands in between (Obsidian saves in place a moment
after typing) must survive: in the note, or, where memvault's change cannot
be put on top of it, with memvault's version beside it as a conflict copy.
Each test saves an edit exactly in that window, through a hook at the step
between the check and the write (deterministic: no sleeps, no threads).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import FIXTURES, opened, write

from memvault.cli.main import cli

EDIT = "A line the person saved meanwhile."


@pytest.fixture(autouse=True)
def no_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")


def run(vault: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


def save_once(path: Callable[[], Path], real: Callable[..., Any]) -> Callable[..., Any]:
    """``real``, preceded (the first time only) by the person saving ``EDIT``
    at the end of the file at ``path()``, in place, as an editor does."""
    saved: list[bool] = []

    def step(*args: Any, **kwargs: Any) -> Any:
        if not saved:
            saved.append(True)
            target = path()
            with open(target, "r+b") as fh:  # in place: the same file, as Obsidian saves
                fh.seek(0, 2)
                fh.write(f"\n{EDIT}\n".encode())
        return real(*args, **kwargs)

    return step


def everything(vault: Path) -> str:
    """The text of every note in the vault but its trash."""
    return "\n".join(p.read_text("utf-8") for p in vault.rglob("*.md") if ".trash" not in p.parts)


def test_an_edit_saved_during_update_is_kept(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``update`` checks the note, renders the new one, replaces it: an edit
    in between stays in the note, and the update goes beside it."""
    from memvault.store.memories import writer

    assert run(vault, "sync").exit_code == 0
    added = json.loads(run(vault, "add", "Waters the plants on Mondays", "--json").stdout)
    note = vault / added["path"]
    monkeypatch.setattr(writer, "render_note", save_once(lambda: note, writer.render_note))
    r = run(vault, "update", added["id"], "--content", "Waters the plants on Fridays", "--json")
    assert r.exit_code == 0, r.output
    assert EDIT in note.read_text("utf-8"), "the person's edit was lost"
    assert "Fridays" in everything(vault), "the update was lost"
    assert json.loads(r.stdout)["action"] == "conflict"


def test_an_edit_saved_during_a_type_change_is_kept(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A type change writes the note in its new folder and removes the old
    one: an edit of the old one in between is never deleted with it."""
    from memvault.store.memories import writer

    assert run(vault, "sync").exit_code == 0
    added = json.loads(run(vault, "add", "Keeps receipts in a box", "--json").stdout)
    note = vault / added["path"]
    monkeypatch.setattr(writer, "render_note", save_once(lambda: note, writer.render_note))
    r = run(vault, "update", added["id"], "--type", "procedural")
    assert r.exit_code == 0, r.output
    assert EDIT in everything(vault), "the person's edit was lost"


def test_an_edit_saved_while_a_grown_session_is_written_is_kept(vault: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``ingest`` of a grown transcript reads the session note, revises it
    and replaces it: an edit in between is in the note with the new turns."""
    from memvault.store.flows import unindexed

    lines = (FIXTURES / "imports" / "claude-code-session.jsonl").read_text("utf-8").splitlines(keepends=True)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(lines[:5]), "utf-8")
    with opened(vault) as store:
        first = store.ingest(transcript)
    note = vault / first.path
    transcript.write_text("".join(lines), "utf-8")
    monkeypatch.setattr(unindexed, "will_write", save_once(lambda: note, unindexed.will_write))
    with opened(vault) as store:
        grown = store.ingest(transcript)
    assert grown.action == "updated"
    text = note.read_text("utf-8")
    assert EDIT in text, "the person's edit was lost"
    assert text.count("^t") == 5, "the new turns were not written"


def test_an_edit_saved_while_source_add_marks_the_note_is_kept(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``source add`` reads the note, inserts ``memory: source`` and
    replaces it: an edit in between is in the note with the marker."""
    from memvault.store.facts import source_notes

    note = write(vault, "About me.md", "# About me\n- I live in Porto\n")
    assert run(vault, "sync").exit_code == 0
    monkeypatch.setattr(source_notes, "mark_text", save_once(lambda: note, source_notes.mark_text))
    r = run(vault, "source", "add", "About me.md")
    assert r.exit_code == 0, r.output
    text = note.read_text("utf-8")
    assert EDIT in text, "the person's edit was lost"
    assert "memory: source" in text


def test_an_edit_saved_while_views_are_updated_is_kept(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``views install`` brings memvault's older view up to date: a change a
    person saves in between is kept, not overwritten."""
    from memvault.vault_io import memory_views
    from memvault.vault_io.bases import stamp
    from memvault.vault_io.memory_views import render_view

    assert run(vault, "views", "install").exit_code == 0
    view = vault / "Memory" / "Memories.base"
    older = render_view("Memories.base", "Memory").split(b"\n", 1)[1].replace(b"# Written by", b"# Written long ago by")
    view.write_bytes(stamp(older.decode("utf-8")))  # memvault's own, an older version nobody changed
    monkeypatch.setattr(memory_views, "ownership", save_once(lambda: view, memory_views.ownership))
    r = run(vault, "views", "install")
    assert r.exit_code == 0, r.output
    assert EDIT in view.read_text("utf-8"), "the person's change was lost"


MINE = "A note of my own, made at that very name.\n"


def made_first(vault: Path, real: Callable[..., Any], wanted: Callable[[str], bool]) -> Callable[..., Any]:
    """The gate's ``place`` (the last look before a write), preceded the
    first time it is asked for a path ``wanted`` says yes to by the person
    (or a sync tool) making a note there."""
    done: list[str] = []

    def place(self: Any, rel: str, *args: Any, **kwargs: Any) -> Any:
        if not done and wanted(rel):
            done.append(rel)
            (vault / rel).parent.mkdir(parents=True, exist_ok=True)
            (vault / rel).write_text(MINE, "utf-8")
        return real(self, rel, *args, **kwargs)

    place.done = done  # type: ignore[attr-defined]
    return place


def test_a_note_made_at_a_new_memory_s_name_meanwhile_is_never_replaced(
        vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new memory's note goes to a free name; a note made there a moment
    before it is written (by the person, or a sync tool from another device)
    keeps its bytes, and the memory is written at another free name."""
    from memvault.vault_io.gate import Gate

    assert run(vault, "sync").exit_code == 0
    place = made_first(vault, Gate.place, lambda rel: rel.startswith("Memory/semantic/"))
    monkeypatch.setattr(Gate, "place", place)
    r = run(vault, "add", "Feeds the cat at seven", "--json")
    assert r.exit_code == 0, r.output
    mine = vault / place.done[0]
    assert mine.read_text("utf-8") == MINE, "the note made meanwhile was replaced"
    written = json.loads(r.stdout)["path"]
    assert written != place.done[0] and "Feeds the cat at seven" in (vault / written).read_text("utf-8")


def test_a_note_deleted_and_made_again_during_update_is_kept(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``update`` finds the note gone at its exchange (deleted meanwhile: an
    edit beats a deletion, so it writes the note again); a note made there
    again before that write is not replaced: the update goes beside it."""
    from memvault.vault_io.gate import Gate

    assert run(vault, "sync").exit_code == 0
    added = json.loads(run(vault, "add", "Waters the ferns on Sundays", "--json").stdout)
    note = vault / added["path"]
    real_replace = Gate.replace

    def deleted_first(self: Gate, rel: str, *args: Any, **kwargs: Any) -> bool:
        if not note.exists() or note.read_text("utf-8") == MINE:
            return real_replace(self, rel, *args, **kwargs)
        note.unlink()
        exchanged = real_replace(self, rel, *args, **kwargs)
        # Made again after the exchange found it gone, before the write that follows.
        monkeypatch.setattr(Gate, "place", made_first(vault, Gate.place, lambda r: r == added["path"]))
        return exchanged

    monkeypatch.setattr(Gate, "replace", deleted_first)
    r = run(vault, "update", added["id"], "--content", "Waters the ferns on Mondays", "--json")
    assert r.exit_code == 0, r.output
    # The note there is the memory's, edited by the person: it keeps their text (and gets the memory's id).
    assert MINE in note.read_text("utf-8"), "the note made again was replaced"
    assert "Waters the ferns on Mondays" in everything(vault), "the update was lost"
    assert json.loads(r.stdout)["action"] == "conflict"
