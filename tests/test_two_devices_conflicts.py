"""Sync tools' conflict copies on a shared vault: counted once in `status`
(text and JSON), named by whose version they hold, never parse errors, and
settled by `memvault conflicts --copy PATH --take note|copy` with nothing
dropped (the side not taken is an earlier version; the copy goes to .trash/).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import write

from memvault.cli.main import cli


@pytest.fixture(autouse=True)
def no_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")


def run(vault: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


def lines(out: str) -> list[dict]:
    """A --json output: one object per line (or one list)."""
    items: list[dict] = []
    for line in out.splitlines():
        value = json.loads(line)
        items += value if isinstance(value, list) else [value]
    return items


COPY = "a.sync-conflict-20261123-142501-LAPTOP1"


def added(vault: Path, text: str) -> dict:
    result = run(vault, "add", text, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def sync_copy_of(vault: Path, memory: dict, text: str) -> str:
    """What Syncthing leaves when the other device changed the note too: the
    same note (same id) with that device's text, under a conflict name."""
    note = vault / memory["path"]
    original = note.read_text(encoding="utf-8")
    body = original.split("---\n", 2)[2]
    copy = note.with_name(note.stem + ".sync-conflict-20261123-142501-LAPTOP1.md")
    copy.write_text(original.replace(body, text + "\n"), encoding="utf-8")
    return copy.relative_to(vault).as_posix()


def test_status_counts_copies_once_names_the_device_and_no_parse_error(vault: Path) -> None:
    write(vault, "a.md", "# A note\n")
    memories = [added(vault, f"Memory number {n} about tea.") for n in range(3)]
    copies = [sync_copy_of(vault, m, f"The laptop's text {n}.") for n, m in enumerate(memories)]
    write(vault, f"{COPY}.md", "# A note\nwritten on the laptop\n")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    data = json.loads(run(vault, "status", "--json").stdout)
    listed = {c["conflict_note"] for c in data["conflict_list"]}
    assert listed == {*copies, f"{COPY}.md"}
    assert data["conflicts"] == len(data["conflict_list"]) == data["index"]["conflicts"] == 4
    assert data["index"]["parse_errors"] == 0, "a conflict copy was counted as a parse error"
    assert all(c["device"] == "LAPTOP1" for c in data["conflict_list"])
    text = run(vault, "status").stdout
    assert "conflicts:   4 open (4 from file sync" in text
    assert "store version" not in text, "another device's copy is called the store version"
    assert text.count("(device LAPTOP1's; the note holds the one Syncthing kept)") == 4
    assert "0 parse errors" in text
    ids = {m["id"] for m in lines(run(vault, "list", "--json").stdout)}
    assert {m["id"] for m in memories} <= ids and len(ids) == 3, "a conflict copy became a memory"


def test_taking_the_copy_keeps_the_note_as_an_earlier_version(vault: Path) -> None:
    memory = added(vault, "Prefers green tea.")
    copy = sync_copy_of(vault, memory, "Prefers black tea.")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    shown = run(vault, "conflicts", "--copy", copy)
    assert shown.exit_code == 0, shown.output
    assert "Prefers green tea." in shown.stdout and "Prefers black tea." in shown.stdout
    assert "device LAPTOP1's version" in shown.stdout
    done = run(vault, "conflicts", "--copy", copy, "--take", "copy", "--json")
    assert done.exit_code == 0, done.output
    assert not (vault / copy).exists() and (vault / ".trash" / Path(copy).name).exists()
    (item,) = [m for m in lines(run(vault, "list", "--json").stdout) if m["id"] == memory["id"]]
    assert item["preview"] == "Prefers black tea." and item["version"] == 2
    texts = [v["content"] for v in lines(run(vault, "history", memory["id"], "--json").stdout)]
    assert "Prefers green tea." in texts, "the side not taken was dropped"
    status = json.loads(run(vault, "status", "--json").stdout)
    assert status["conflicts"] == 0


def test_keeping_the_note_keeps_the_copy_as_an_earlier_version(vault: Path) -> None:
    memory = added(vault, "Runs on Sundays.")
    copy = sync_copy_of(vault, memory, "Runs on Saturdays.")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    note_before = (vault / memory["path"]).read_bytes()
    done = run(vault, "conflicts", "--copy", copy, "--take", "note")
    assert done.exit_code == 0, done.output
    assert (vault / memory["path"]).read_bytes() == note_before, "keeping the note rewrote it"
    assert not (vault / copy).exists() and (vault / ".trash" / Path(copy).name).exists()
    texts = [v["content"] for v in lines(run(vault, "history", memory["id"], "--json").stdout)]
    assert texts[0] == "Runs on Sundays." and "Runs on Saturdays." in texts


def test_an_ordinary_notes_copy_taken_puts_the_note_in_the_trash(vault: Path) -> None:
    write(vault, "a.md", "# A note\nmine\n")
    write(vault, f"{COPY}.md", "# A note\ntheirs\n")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    done = run(vault, "conflicts", "--copy", f"{COPY}.md", "--take", "copy")
    assert done.exit_code == 0, done.output
    assert (vault / "a.md").read_text(encoding="utf-8") == "# A note\ntheirs\n"
    trashed = sorted(p.read_text(encoding="utf-8") for p in (vault / ".trash").iterdir())
    assert trashed == ["# A note\nmine\n", "# A note\ntheirs\n"]


def test_take_without_copy_is_a_usage_error(vault: Path) -> None:
    write(vault, "a.md", "# A note\n")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    assert run(vault, "conflicts", "--take", "note").exit_code == 2


def test_memvaults_conflict_note_from_another_device_is_listed_as_theirs(vault: Path) -> None:
    memory = added(vault, "Parks on level two.")
    note = vault / memory["path"]
    theirs = note.read_text(encoding="utf-8").replace(f"id: {memory['id']}\n", f"conflict_of: {memory['id']}\n")
    copy = note.with_name(note.stem + " (conflict 2026-11-23 142501).md")
    copy.write_text(theirs.replace("level two", "level three"), encoding="utf-8")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    data = json.loads(run(vault, "status", "--json").stdout)
    (item,) = data["conflict_list"]
    assert item["kind"] == "memvault" and item["side"] == "a store version written on another device"
    assert item["note"] == memory["path"] and data["conflicts"] == 1
    text = run(vault, "status").stdout
    assert "this device's store version" not in text and "written on another device" in text
    done = run(vault, "conflicts", "--copy", copy.relative_to(vault).as_posix(), "--take", "copy")
    assert done.exit_code == 0, done.output
    texts = [v["content"] for v in lines(run(vault, "history", memory["id"], "--json").stdout)]
    assert texts[0] == "Parks on level three." and "Parks on level two." in texts


def test_a_file_put_at_the_notes_name_meanwhile_is_never_replaced(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Taking a copy moves the note to the trash, then writes the copy's text at
    # its name: a file a sync tool (or a person) puts there in between wins.
    from memvault.vault_io.gate import Gate

    write(vault, "a.md", "# A note\nmine\n")
    write(vault, f"{COPY}.md", "# A note\ntheirs\n")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    to_trash = Gate.to_trash

    def then_a_sync_tool_writes(self: Gate, rel: str) -> str:
        out = to_trash(self, rel)
        if rel == "a.md":
            (vault / "a.md").write_text("# A note\nsynced in meanwhile\n", encoding="utf-8")
        return out

    monkeypatch.setattr(Gate, "to_trash", then_a_sync_tool_writes)
    done = run(vault, "conflicts", "--copy", f"{COPY}.md", "--take", "copy")
    assert done.exit_code == 1 and "a file appeared there" in done.output and "Traceback" not in done.output
    assert (vault / "a.md").read_text(encoding="utf-8") == "# A note\nsynced in meanwhile\n"
    assert (vault / f"{COPY}.md").read_text(encoding="utf-8") == "# A note\ntheirs\n"
    assert [p.read_text(encoding="utf-8") for p in (vault / ".trash").iterdir()] == ["# A note\nmine\n"]
