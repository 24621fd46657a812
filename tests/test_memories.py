"""Memories written through the store and mirrored as notes; edits flowing back."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import write
from memvault.cli.main import cli
from memvault.daemon.app import Vault
from memvault.daemon.memories import Memories, MemoryOpError
from memvault.store import memories as mem
from memvault.store import records as rec
from memvault.store.db import write_transaction
from memvault.store.memtypes import UnknownTypeError
from memvault.store.query import find_trace
from memvault.vault_io.note import content_hash


@pytest.fixture
def mv(vault: Path):
    write(vault, "Editor setup.md", "# Editor setup\n")
    v = Vault.open(str(vault))
    v.indexer().sync()
    m = Memories(v)
    yield m
    v.close()


def notes(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))


def memory_notes(root: Path) -> list[str]:
    return [p for p in notes(root) if p.startswith("Memory/")]


def test_add_writes_note_by_type_and_dedups(mv: Memories) -> None:
    r = mv.add("Prefers dark mode in every editor.", "preference", tags=["ui", "#UI", "x"], links=["Editor setup"])
    assert r.action == "added" and r.id.startswith("m-")
    assert r.path == f"Memory/semantic/prefers-dark-mode-in-every-editor-{r.id[2:10]}.md"
    text = (mv.root / r.path).read_text(encoding="utf-8")
    assert text.startswith(f"---\nid: {r.id}\ntype: semantic\nscope: user\ntags:\n  - ui\n  - x\nstrength: 0.5\n")
    assert text.endswith("---\nPrefers dark mode in every editor.\n\n## Related\n- [[Editor setup]]\n")
    t = find_trace(mv.con, r.id)
    assert t and t.kind == "memory" and t.type == "semantic" and t.path == r.path
    related = [e for e in rec.edges_from(mv.con, r.id) if e.kind == "related"]
    assert [e.target_path for e in related] == ["Editor setup.md"]
    again = mv.add("  Prefers dark   mode in every editor. ", "fact")
    assert (again.action, again.id, again.path) == ("exists", r.id, r.path)
    assert memory_notes(mv.root) == [r.path]
    # a different scope is a different memory
    assert mv.add("Prefers dark mode in every editor.", "semantic", scope="work").id != r.id


def test_unknown_type_is_refused(mv: Memories) -> None:
    with pytest.raises(UnknownTypeError, match="unknown memory type 'feeling'"):
        mv.add("x y z", "feeling")


def test_update_keeps_history_and_type_change_moves_note(mv: Memories) -> None:
    r = mv.add("Use ruff for linting.", "lesson")
    path = mv.root / r.path
    os.chmod(path, 0o600)
    u = mv.update(r.id, content="Use ruff for linting and formatting.", reason="ruff formats too")
    assert u.action == "updated" and u.path == r.path
    assert "linting and formatting" in path.read_text(encoding="utf-8")
    u2 = mv.update(r.id, type_="skill")  # alias of procedural: same type, nothing to do
    assert u2.action == "unchanged"
    u3 = mv.update(r.id, type_="semantic", tags=["tools"])
    assert u3.path == r.path.replace("/procedural/", "/semantic/")
    assert not path.exists() and memory_notes(mv.root) == [u3.path]
    assert stat.S_IMODE((mv.root / u3.path).stat().st_mode) == 0o600
    chain = mv.history(r.id)
    assert [t.status for t in chain] == ["active", "superseded", "superseded"]
    assert chain[0].content == "Use ruff for linting and formatting." and chain[0].type == "semantic"
    assert chain[-1].content == "Use ruff for linting." and chain[-1].reason == "ruff formats too"
    assert mv.history(chain[-1].id)[0].id == r.id  # from an old version, the chain is the same
    with pytest.raises(MemoryOpError, match="old version"):
        mv.update(chain[-1].id, content="x y z")


def test_unchanged_update_never_rewrites(mv: Memories) -> None:
    r = mv.add("Coffee at nine.", "event")
    before = (mv.root / r.path).stat().st_mtime_ns
    assert mv.update(r.id, content="Coffee at nine.").action == "unchanged"
    assert (mv.root / r.path).stat().st_mtime_ns == before


def test_forget_and_restore(mv: Memories) -> None:
    r = mv.add("The wifi password is on the fridge.", "fact")
    f = mv.forget(r.id, reason="moved house")
    assert f.path == f".trash/{Path(r.path).name}" and (mv.root / f.path).exists()
    assert not (mv.root / r.path).exists()
    t = find_trace(mv.con, r.id)
    assert t and t.status == "deleted" and t.reason == "moved house"
    with pytest.raises(MemoryOpError, match="restore"):
        mv.update(r.id, content="x y z")
    back = mv.restore(r.id)
    assert back.path == r.path and (mv.root / r.path).exists() and not (mv.root / f.path).exists()
    t = find_trace(mv.con, r.id)
    assert t and t.status == "active" and t.path == r.path
    with pytest.raises(MemoryOpError, match="not deleted"):
        mv.restore(r.id)


def test_person_edits_flow_back_and_unknown_keys_survive(mv: Memories) -> None:
    r = mv.add("Standup is at 10:00.", "event", tags=["work"])
    p = mv.root / r.path
    text = p.read_text(encoding="utf-8")
    text = text.replace("scope: user\n", "scope: user\nmood: cheerful  # mine\n")
    text = text.replace("Standup is at 10:00.", "Standup moved to 10:30.").replace("  - work\n", "  - work\n  - team\n")
    p.write_text(text, encoding="utf-8")
    mv.indexer.sync()
    t = find_trace(mv.con, r.id)
    assert t and t.content == "Standup moved to 10:30." and t.tags == ["work", "team"]
    assert t.metadata["frontmatter"] == {"mood": "cheerful"}
    mv.update(r.id, tags=["work"])
    after = p.read_text(encoding="utf-8")
    assert "mood: cheerful  # mine\n" in after and "Standup moved to 10:30." in after
    assert "  - team\n" not in after
    # only the tags lines and `updated` changed
    diff = set(text.splitlines()) ^ set(after.splitlines())
    assert {line.split(":")[0].strip() for line in diff} <= {"- team", "updated"}


def test_person_changes_type_in_frontmatter(mv: Memories) -> None:
    r = mv.add("Renew passport before March.", "todo")
    p = mv.root / r.path
    p.write_text(p.read_text(encoding="utf-8").replace("type: prospective", "type: goal"), encoding="utf-8")
    mv.indexer.sync()
    assert find_trace(mv.con, r.id).type == "prospective"
    p.write_text(p.read_text(encoding="utf-8").replace("type: goal", "type: event"), encoding="utf-8")
    mv.indexer.sync()
    assert find_trace(mv.con, r.id).type == "episodic"


def test_rename_move_and_delete_in_vault(mv: Memories) -> None:
    r = mv.add("Likes hiking in autumn.", "preference")
    os.rename(mv.root / r.path, mv.root / "Memory" / "hiking.md")
    s = mv.indexer.sync()
    assert s.moved == 1
    t = find_trace(mv.con, r.id)
    assert t and t.path == "Memory/hiking.md" and t.status == "active" and t.type == "semantic"
    os.remove(mv.root / "Memory" / "hiking.md")
    mv.indexer.sync()
    t = find_trace(mv.con, r.id)
    assert t and t.status == "deleted" and t.path is None  # soft-deleted, text kept
    assert "hiking" in t.content
    # moved out of the memory folder, a note is an ordinary note again (same id)
    back = mv.restore(r.id)
    (mv.root / "Elsewhere").mkdir()
    os.rename(mv.root / back.path, mv.root / "Elsewhere" / "hiking.md")
    mv.indexer.sync()
    t = find_trace(mv.con, r.id)
    assert t and t.kind == "note" and t.path == "Elsewhere/hiking.md"


def test_note_created_in_memory_folder_is_a_memory_and_reading_never_writes(mv: Memories) -> None:
    p = write(mv.root, "Memory/procedural/Deploy steps.md", "Run the tests, then tag the release.\n")
    before = p.read_bytes()
    mv.indexer.sync()
    t = find_trace(mv.con, "Memory/procedural/Deploy steps.md")
    assert t and t.kind == "memory" and t.type == "procedural" and t.id.startswith("m-")
    assert p.read_bytes() == before  # no id added just because we read it
    mv.update(t.id, tags=["release"])
    text = p.read_text(encoding="utf-8")
    assert text.startswith(f"---\nid: {t.id}\n") and "Run the tests, then tag the release." in text
    mv.indexer.sync()
    assert find_trace(mv.con, t.id).path == "Memory/procedural/Deploy steps.md"


def test_memory_frontmatter_marks_memory_outside_folder(mv: Memories) -> None:
    write(mv.root, "Journal/2026-01-01.md", "---\nmemory: event\n---\nNew year's party at Sam's.\n")
    write(mv.root, "Journal/plain.md", "---\ntype: semantic\n---\nJust a note.\n")
    mv.indexer.sync()
    assert find_trace(mv.con, "Journal/2026-01-01.md").type == "episodic"
    assert find_trace(mv.con, "Journal/plain.md").kind == "note"


def _stage_store_change(mv: Memories, trace_id: str, new_content: str) -> None:
    """A store change whose writer died before writing the note (crash)."""
    t = rec.get_trace(mv.con, trace_id)
    t.content = new_content
    with write_transaction(mv.con):
        rec.put_trace(mv.con, t)
        mem.put_outbox(mv.con, trace_id, "write", t.path, "0" * 64)


def test_conflict_keeps_both_versions(mv: Memories) -> None:
    r = mv.add("Dentist on Friday.", "event")
    _stage_store_change(mv, r.id, "Dentist moved to Monday.")
    p = mv.root / r.path
    p.write_text(p.read_text(encoding="utf-8").replace("Dentist on Friday.", "Dentist on Friday at 3pm."), encoding="utf-8")
    res = mv.flush(r.id)
    assert res and res.conflict and res.conflict_path
    assert "(conflict " in res.conflict_path and res.conflict_path.startswith("Memory/episodic/")
    assert "Dentist on Friday at 3pm." in p.read_text(encoding="utf-8")  # the person's text stays
    theirs = (mv.root / res.conflict_path).read_text(encoding="utf-8")
    assert "Dentist moved to Monday." in theirs and f"conflict_of: {r.id}" in theirs and "\nid:" not in theirs
    assert find_trace(mv.con, r.id).content == "Dentist on Friday at 3pm."
    assert [c.trace_id for c in mem.conflicts(mv.con)] == [r.id]


def test_edit_beats_deletion(mv: Memories) -> None:
    r = mv.add("Plant the tulips in October.", "todo")
    with write_transaction(mv.con):
        rec.set_status(mv.con, r.id, "deleted", "forgotten")
        mem.put_outbox(mv.con, r.id, "trash", r.path, None)
    p = mv.root / r.path
    p.write_text(p.read_text(encoding="utf-8") + "And the daffodils.\n", encoding="utf-8")
    res = mv.flush(r.id)
    assert res and res.conflict and "forget cancelled" in res.conflict
    assert p.exists() and "daffodils" in p.read_text(encoding="utf-8")
    assert find_trace(mv.con, r.id).status == "active"


def test_deleted_note_is_rewritten_when_store_edits_it(mv: Memories) -> None:
    r = mv.add("Call grandma on Sundays.", "todo")
    _stage_store_change(mv, r.id, "Call grandma every Sunday evening.")
    os.remove(mv.root / r.path)
    res = mv.flush(r.id)
    assert res and not res.conflict
    assert "every Sunday evening" in (mv.root / r.path).read_text(encoding="utf-8")


def test_interrupted_write_is_finished_by_sync(mv: Memories, runner: CliRunner | None = None) -> None:
    r = mv.add("Water the plants.", "todo")
    _stage_store_change(mv, r.id, "Water the plants twice a week.")
    with write_transaction(mv.con):
        mv.con.execute("UPDATE outbox SET created = created - 60")
    res = CliRunner().invoke(cli, ["--vault", str(mv.root), "sync"])
    assert res.exit_code == 0, res.output
    assert "twice a week" in (mv.root / r.path).read_text(encoding="utf-8")
    assert mv.con.execute("SELECT count(*) FROM outbox").fetchone()[0] == 0


def test_watcher_style_reindex_skips_own_pending_write(mv: Memories) -> None:
    r = mv.add("Tea, not coffee.", "preference")
    p = mv.root / r.path
    new = p.read_text(encoding="utf-8").replace("Tea, not coffee.", "Green tea, not coffee.")
    with write_transaction(mv.con):
        mem.put_outbox(mv.con, r.id, "write", r.path, content_hash(new.encode()))
    p.write_text(new, encoding="utf-8")
    s = mv.indexer.sync_paths([r.path])
    assert not s.changed  # our own write in flight: left to its writer


# -- CLI ---------------------------------------------------------------------


def run(vault: Path, *args: str):
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


def test_cli_memory_commands(vault: Path) -> None:
    assert run(vault, "sync").exit_code == 0
    r = run(vault, "add", "Prefers window seats on trains.", "--type", "preference", "--tag", "travel", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    mid, path = data["id"], data["path"]
    assert data["action"] == "added" and path.startswith("Memory/semantic/")
    r = run(vault, "add", "Prefers window seats on trains.", "--type", "preference")
    assert r.exit_code == 0 and f"Already remembered as {mid}" in r.output
    r = run(vault, "update", mid, "--content", "Prefers aisle seats on trains.", "--reason", "legroom")
    assert r.exit_code == 0 and f"Updated {mid}" in r.output
    r = run(vault, "history", mid, "--json")
    rows = [json.loads(x) for x in r.output.splitlines()]
    assert [x["status"] for x in rows] == ["active", "superseded"] and rows[1]["reason"] == "legroom"
    r = run(vault, "history", mid)
    assert "superseded (legroom)" in r.output
    assert run(vault, "search", "aisle", "--json").output.count(mid) == 1
    assert run(vault, "search", "window").stdout.strip() == ""
    r = run(vault, "search", "window", "--include-superseded", "--json")
    assert json.loads(r.output.splitlines()[0])["status"] == "superseded"
    r = run(vault, "forget", mid)
    assert r.exit_code == 0 and ".trash/" in r.output
    assert run(vault, "search", "aisle", "--json").output == ""
    r = run(vault, "search", "aisle", "--include-deleted", "--json")
    assert json.loads(r.output)["status"] == "deleted"
    r = run(vault, "restore", mid)
    assert r.exit_code == 0 and path in r.output
    r = run(vault, "search", "aisle", "--type", "fact", "--json")
    assert json.loads(r.output)["id"] == mid


def test_cli_memory_errors(vault: Path) -> None:
    assert run(vault, "sync").exit_code == 0
    r = run(vault, "add", "x y z", "--type", "feeling")
    assert r.exit_code == 2 and "unknown memory type" in r.output and "Traceback" not in r.output
    r = run(vault, "update", "m-nope", "--content", "x")
    assert r.exit_code == 1 and "no memory matches 'm-nope'" in r.output
    r = run(vault, "update", "m-nope")
    assert r.exit_code == 2 and "nothing to update" in r.output
    r = run(vault, "add", "   ")
    assert r.exit_code == 1 and "needs some content" in r.output
    write(vault, "Plain.md", "plain note")
    run(vault, "sync")
    r = run(vault, "forget", "Plain.md")
    assert r.exit_code == 1 and "ordinary note" in r.output
    r = run(vault, "search", "x", "--type", "nonsense")
    assert r.exit_code == 2
