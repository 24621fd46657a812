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
from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.index.lookup import find_trace
from memvault.store.memories import rows as mem
from memvault.store.memories.memtypes import UnknownTypeError
from memvault.store.memories.mirror import Memories, MemoryOpError
from memvault.store.memory_store import MemoryStore
from memvault.vault_io.note import content_hash


@pytest.fixture
def store(vault: Path):
    write(vault, "Editor setup.md", "# Editor setup\n")
    v = MemoryStore.open(str(vault))
    v.sync()
    yield v
    v.close()


@pytest.fixture
def mv(store: MemoryStore) -> Memories:
    return store.memories


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
    assert (again.action, again.id, again.path) == ("duplicate_of", r.id, r.path)
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
    # only the tags lines, `updated`, `supersedes` (the version it replaced) and the
    # version counter with its fingerprint (issue 20) changed
    diff = set(text.splitlines()) ^ set(after.splitlines())
    assert {line.split(":")[0].strip() for line in diff} <= {
        "- team", "updated", "supersedes", "version", "version_hash"}
    # the person's edit kept the first text as version 1; the update kept theirs as version 2
    assert f"supersedes: {r.id}.v2\n" in after
    versions = mv.history(r.id)
    assert [(v.id, v.content, v.reason) for v in versions[1:]] == [
        (f"{r.id}.v2", "Standup moved to 10:30.", None or versions[1].reason),
        (f"{r.id}.v1", "Standup is at 10:00.", "edited in the vault"),
    ]


def test_person_changes_type_in_frontmatter(mv: Memories) -> None:
    r = mv.add("Renew passport before March.", "todo")
    p = mv.root / r.path
    p.write_text(p.read_text(encoding="utf-8").replace("type: prospective", "type: goal"), encoding="utf-8")
    mv.indexer.sync()
    assert find_trace(mv.con, r.id).type == "prospective"
    p.write_text(p.read_text(encoding="utf-8").replace("type: goal", "type: event"), encoding="utf-8")
    mv.indexer.sync()
    assert find_trace(mv.con, r.id).type == "episodic"
    # a store change leaves the person's spelling of an unchanged type alone
    mv.update(r.id, content="Renew passport before April.")
    assert "\ntype: event\n" in p.read_text(encoding="utf-8")
    mv.update(r.id, type_="todo")  # back to the type of the folder it is in: no move, no " 2" name
    assert "\ntype: prospective\n" in p.read_text(encoding="utf-8") and memory_notes(mv.root) == [r.path]


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


def test_note_created_in_memory_folder_is_a_memory_and_gets_its_id_and_created_once(mv: Memories) -> None:
    """A memory note made by hand gets its id and ``created`` (its mtime)
    written in, those lines alone, when first read: every device and a
    rebuild then read the same ones (issue 20). Its text is untouched, and
    the next read writes nothing."""
    p = write(mv.root, "Memory/procedural/Deploy steps.md", "Run the tests, then tag the release.\n")
    saved = 1767323045
    os.utime(p, (saved, saved))
    mv.indexer.sync()
    t = find_trace(mv.con, "Memory/procedural/Deploy steps.md")
    assert t and t.kind == "memory" and t.type == "procedural" and t.id.startswith("m-")
    assert p.read_text(encoding="utf-8") == (
        f"---\nid: {t.id}\ncreated: '2026-01-02T03:04:05+00:00'\n---\nRun the tests, then tag the release.\n")
    assert t.created == "2026-01-02T03:04:05+00:00"
    once = p.read_bytes()
    mv.indexer.sync()
    assert p.read_bytes() == once  # written once: reading it again writes nothing
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
        mem.put_outbox(mv.con, t, "write", t.path, "0" * 64)


def _edit_dentist_note(mv: Memories) -> tuple[str, Path]:
    """A memory with a store change not yet written, and a person's edit of its note."""
    r = mv.add("Dentist on Friday.", "event")
    _stage_store_change(mv, r.id, "Dentist moved to Monday.")
    p = mv.root / r.path
    p.write_text(p.read_text(encoding="utf-8").replace("Dentist on Friday.", "Dentist on Friday at 3pm."), encoding="utf-8")
    return r.id, p


def test_an_edit_made_while_a_store_change_waits_is_not_imported_over_it(store: MemoryStore, mv: Memories) -> None:
    mid, p = _edit_dentist_note(mv)
    s = store.sync()
    assert any("waits to be written" in w for w in s.warnings)
    assert find_trace(mv.con, mid).content == "Dentist moved to Monday."  # the store's change stands
    res = mv.flush(mid)
    assert res and res.conflict and res.conflict_path
    assert "Dentist on Friday at 3pm." in p.read_text(encoding="utf-8")
    assert "Dentist moved to Monday." in (mv.root / res.conflict_path).read_text(encoding="utf-8")
    assert find_trace(mv.con, mid).content == "Dentist on Friday at 3pm."


def test_conflict_keeps_both_versions(mv: Memories) -> None:
    mid, p = _edit_dentist_note(mv)
    r = rec.get_trace(mv.con, mid)
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
        mem.put_outbox(mv.con, rec.get_trace(mv.con, r.id), "trash", r.path, None)
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
        mv.con.execute("UPDATE state.outbox SET created = created - 60")
    res = CliRunner().invoke(cli, ["--vault", str(mv.root), "sync"])
    assert res.exit_code == 0, res.output
    assert "twice a week" in (mv.root / r.path).read_text(encoding="utf-8")
    assert mv.con.execute("SELECT count(*) FROM state.outbox").fetchone()[0] == 0


def test_watcher_style_reindex_skips_own_pending_write(mv: Memories) -> None:
    r = mv.add("Tea, not coffee.", "preference")
    p = mv.root / r.path
    new = p.read_text(encoding="utf-8").replace("Tea, not coffee.", "Green tea, not coffee.")
    with write_transaction(mv.con):
        mem.put_outbox(mv.con, rec.get_trace(mv.con, r.id), "write", r.path, content_hash(new.encode()))
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


# -- audit fixes -------------------------------------------------------------------

LONG_NAME = "漢" * 80 + ".md"  # 243 bytes: a legal name close to the 255-byte limit


def _cli_id(vault: Path, ref: str) -> str:
    r = run(vault, "show", ref, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.output.splitlines()[0])["id"]


def test_update_of_a_note_with_a_long_multibyte_name(vault: Path) -> None:
    write(vault, f"Memory/semantic/{LONG_NAME}", "Some long named memory.\n")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    mid = _cli_id(vault, f"Memory/semantic/{LONG_NAME}")
    r = run(vault, "update", mid, "--content", "Rewritten through the store.")
    assert r.exit_code == 0, r.output
    assert "Rewritten through the store." in (vault / "Memory/semantic" / LONG_NAME).read_text(encoding="utf-8")
    assert query_outbox(vault) == []
    assert sorted(p.name for p in (vault / "Memory/semantic").iterdir()) == [LONG_NAME]  # no temp file left


def test_conflict_copy_of_a_long_name_fits(mv: Memories) -> None:
    p = write(mv.root, f"Memory/episodic/{LONG_NAME}", "Dentist on Friday.\n")
    mv.indexer.sync()
    mid = find_trace(mv.con, f"Memory/episodic/{LONG_NAME}").id
    _stage_store_change(mv, mid, "Dentist moved to Monday.")
    p.write_text("Dentist on Friday at 3pm.\n", encoding="utf-8")
    res = mv.flush(mid)
    assert res and res.conflict_path
    name = Path(res.conflict_path).name
    assert len(name.encode("utf-8")) <= 255 and " (conflict " in name and name.endswith(").md")
    assert name.startswith("漢" * 60)  # the stem was shortened, on a character boundary
    assert "Dentist moved to Monday." in (mv.root / res.conflict_path).read_text(encoding="utf-8")


def query_outbox(vault: Path) -> list[tuple]:
    v = MemoryStore.open(str(vault))
    try:
        return v.con.execute("SELECT trace_id, action, expected_path FROM outbox").fetchall()
    finally:
        v.close()


def test_a_failing_write_is_one_line_and_retried(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from memvault.store.memories import writer as memories_mod

    assert run(vault, "sync").exit_code == 0
    mid = json.loads(run(vault, "add", "Backups run on Sunday.", "--json").output)["id"]
    path = vault / find_path(vault, mid)
    from memvault.vault_io.gate import Gate

    real_write, real_replace, real_create = Gate.write, Gate.replace, Gate.create

    def full_disk(gate: Gate, rel: str, *args: object, **kw: object) -> bool:
        target = gate.root / rel
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target.parent / f".{target.name}.0000.memvault-tmp"))

    monkeypatch.setattr(Gate, "write", full_disk)
    monkeypatch.setattr(Gate, "replace", full_disk)
    monkeypatch.setattr(Gate, "create", full_disk)
    r = run(vault, "update", mid, "--content", "Backups run on Saturday.")
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit)
    err = r.output.strip()
    assert len(err.splitlines()) == 1, err
    assert "No space left on device" in err and mid in err and str(path.relative_to(vault)) in err
    assert "Backups run on Sunday." in path.read_text(encoding="utf-8")  # the file is untouched
    assert [row[:2] for row in query_outbox(vault)] == [(mid, "write")]  # kept for the retry
    # every later command on it retries first, and fails the same clean way
    r = run(vault, "update", mid, "--tag", "ops")
    assert r.exit_code == 1 and "No space left on device" in r.output and "Traceback" not in r.output
    # a sync finishing old writes reports it in one line and keeps going
    errors: list[str] = []
    v = MemoryStore.open(str(vault))
    try:
        assert memories_mod.flush_outbox(v.memories, older_than=0, errors=errors) == []
    finally:
        v.close()
    assert len(errors) == 1 and "No space left on device" in errors[0]
    # `memvault sync` names the write it could not finish and exits 1
    v = MemoryStore.open(str(vault))
    try:
        v.con.execute("UPDATE outbox SET created = created - 60")
    finally:
        v.close()
    r = run(vault, "sync")
    assert r.exit_code == 1 and "No space left on device" in r.stderr and "1 memory note(s) could not be written" in r.stderr
    assert "Traceback" not in r.output and query_outbox(vault)
    # the disk has room again: the next command finishes the write, then applies its own
    monkeypatch.setattr(Gate, "write", real_write)
    monkeypatch.setattr(Gate, "replace", real_replace)
    monkeypatch.setattr(Gate, "create", real_create)
    r = run(vault, "update", mid, "--tag", "ops")
    assert r.exit_code == 0, r.output
    text = path.read_text(encoding="utf-8")
    assert "Backups run on Saturday." in text and "  - ops\n" in text
    assert query_outbox(vault) == []


def test_daemon_style_flush_logs_a_failing_write_once(vault: Path, monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    import errno
    import logging

    from memvault.store.memories import writer as memories_mod

    v = MemoryStore.open(str(vault))
    try:
        m = v.memories
        r = m.add("Logs rotate weekly.", "fact")
        _stage_store_change(m, r.id, "Logs rotate daily.")

        from memvault.vault_io.gate import Gate

        def read_only(gate: Gate, rel: str, *args: object, **kw: object) -> bool:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(gate.root / rel))

        monkeypatch.setattr(Gate, "write", read_only)
        monkeypatch.setattr(Gate, "replace", read_only)
        monkeypatch.setattr(Gate, "create", read_only)
        caplog.set_level(logging.WARNING, logger="memvault")
        for _ in range(3):  # three daemon batches
            assert memories_mod.flush_outbox(v.memories, older_than=0) == []
        lines = [rec_ for rec_ in caplog.records if "Read-only file system" in rec_.getMessage()]
        assert len(lines) == 1 and lines[0].exc_info is None
        assert mem.get_outbox(v.con, r.id) is not None
    finally:
        v.close()


def find_path(vault: Path, mid: str) -> str:
    v = MemoryStore.open(str(vault))
    try:
        return mem.trace_path(v.con, mid) or ""
    finally:
        v.close()


def test_conflict_copy_is_an_ordinary_note_and_listed_until_deleted(mv: Memories) -> None:
    r = mv.add("The spare key is under the mat.", "fact")
    _stage_store_change(mv, r.id, "The spare key is with the neighbour.")
    p = mv.root / r.path
    p.write_text(p.read_text(encoding="utf-8").replace("under the mat", "in the shed"), encoding="utf-8")
    res = mv.flush(r.id)
    assert res and res.conflict_path
    mv.indexer.sync()
    copy = find_trace(mv.con, res.conflict_path)
    assert copy and copy.kind == "note" and copy.type == "note"
    live = mv.con.execute("SELECT id FROM traces WHERE kind = 'memory' AND status = 'active'").fetchall()
    assert live == [(r.id,)]
    # forgetting the memory does not leave the store's text live as a memory elsewhere
    mv.forget(r.id)
    mv.indexer.sync()
    assert mv.con.execute("SELECT count(*) FROM traces WHERE kind = 'memory' AND status = 'active'").fetchone()[0] == 0
    status = json.loads(run(mv.root, "status", "--json").output)
    assert [c["conflict_note"] for c in status["conflict_list"]] == [res.conflict_path]
    (mv.root / res.conflict_path).unlink()
    mv.indexer.sync()
    status = json.loads(run(mv.root, "status", "--json").output)
    assert status["conflict_list"] == []


def test_extra_keys_survive_a_rewrite_of_a_deleted_note(mv: Memories) -> None:
    r = mv.add("Book the train early.", "todo")
    p = mv.root / r.path
    p.write_text(
        p.read_text(encoding="utf-8").replace("scope: user\n", "scope: user\ndue: 2026-03-01\nproject: '[[Travel]]'\n"),
        encoding="utf-8",
    )
    mv.indexer.sync()
    # the store changes it while the person deletes it: the store's write brings it back whole
    _stage_store_change(mv, r.id, "Book the train two weeks early.")
    os.remove(p)
    mv.flush(r.id)
    text = p.read_text(encoding="utf-8")
    assert "due: 2026-03-01\n" in text and "project: '[[Travel]]'\n" in text and "two weeks early" in text
    # forgotten, its trash copy lost, restored: the keys come back too
    mv.forget(r.id)
    t = find_trace(mv.con, r.id)
    (mv.root / t.metadata["trash_path"]).unlink()
    back = mv.restore(r.id)
    text = (mv.root / back.path).read_text(encoding="utf-8")
    assert "due: 2026-03-01\n" in text and "project: '[[Travel]]'\n" in text
    mv.indexer.sync()
    assert find_trace(mv.con, r.id).metadata["frontmatter"] == {"due": "2026-03-01", "project": "[[Travel]]"}


def test_update_beats_a_deletion_the_index_has_not_seen(vault: Path) -> None:
    assert run(vault, "sync").exit_code == 0
    data = json.loads(run(vault, "add", "Feed the cat at seven.", "--type", "todo", "--json").output)
    mid, path = data["id"], data["path"]
    (vault / ".trash").mkdir()
    os.rename(vault / path, vault / ".trash" / Path(path).name)  # deleted in Obsidian, no daemon running
    r = run(vault, "update", mid, "--content", "Feed the cat at eight.", "--reason", "new routine")
    assert r.exit_code == 0, r.output
    assert f"Updated {mid} -> {path}" in r.stdout
    assert "deleted in the vault" in r.stderr and "update wins" in r.stderr
    assert "Feed the cat at eight." in (vault / path).read_text(encoding="utf-8")
    rows = [json.loads(x) for x in run(vault, "history", mid, "--json").output.splitlines()]
    assert [(x["status"], x["content"]) for x in rows] == [
        ("active", "Feed the cat at eight."), ("superseded", "Feed the cat at seven.")]
    assert run(vault, "sync").exit_code == 0
    assert json.loads(run(vault, "show", mid, "--json").output.splitlines()[0])["path"] == path


def test_content_update_keeps_person_spelled_lines(mv: Memories) -> None:
    r = mv.add("Water the garden.", "todo", tags=["home"])
    p = mv.root / r.path
    text = p.read_text(encoding="utf-8")
    created = next(line for line in text.splitlines() if line.startswith("created:"))
    text = text.replace(created, "created: 2024-01-05").replace("tags:\n  - home\n", "tags: [home]\n")
    text = text.replace("strength: 0.5\n", "strength: .5\n")
    p.write_text(text, encoding="utf-8")
    mv.indexer.sync()
    mv.update(r.id, content="Water the garden twice a week.")
    after = p.read_text(encoding="utf-8")
    head_before = text.split("---\n")[1].splitlines()
    head_after = after.split("---\n")[1].splitlines()
    changed = {line.split(":")[0] for line in set(head_before) ^ set(head_after)}
    assert changed <= {"updated", "supersedes", "version", "version_hash"}
    assert "created: 2024-01-05\n" in after and "tags: [home]\n" in after and "strength: .5\n" in after


def test_person_written_note_keeps_its_date_unquoted(vault: Path) -> None:
    note = write(vault, "Memory/semantic/Tea.md", "---\ncreated: 2024-01-05\ntags: [drinks]\n---\nLikes green tea.\n")
    assert run(vault, "sync").exit_code == 0
    mid = _cli_id(vault, "Memory/semantic/Tea.md")
    r = run(vault, "update", mid, "--content", "Likes green tea, no sugar.")
    assert r.exit_code == 0, r.output
    text = note.read_text(encoding="utf-8")
    assert "\ncreated: 2024-01-05\ntags: [drinks]\n" in text and "'2024-01-05'" not in text


def test_update_writes_supersedes_and_reads_it_back(mv: Memories) -> None:
    r = mv.add("Prefers tabs.", "preference")
    mv.update(r.id, content="Prefers spaces.")
    mv.update(r.id, content="Prefers four spaces.")
    text = (mv.root / r.path).read_text(encoding="utf-8")
    assert f"\nsupersedes: {r.id}.v2\n" in text
    mv.indexer.sync_paths([r.path])
    t = find_trace(mv.con, r.id)
    assert t.metadata["supersedes"] == f"{r.id}.v2"
    assert [h.id for h in mv.history(r.id)] == [r.id, f"{r.id}.v2", f"{r.id}.v1"]
    assert find_trace(mv.con, f"{r.id}.v2").content == "Prefers spaces."


def test_strength_is_rounded_in_the_note(mv: Memories) -> None:
    r = mv.add("Runs on Tuesdays.", "event")
    with write_transaction(mv.con):  # four recalls: 0.5 + 0.02 * 4 in floating point
        mv.con.execute("UPDATE traces SET strength = ? WHERE id = ?", (0.5 + 0.02 + 0.02 + 0.02 + 0.02, r.id))
    mv.update(r.id, content="Runs on Tuesdays and Fridays.")
    text = (mv.root / r.path).read_text(encoding="utf-8")
    assert "\nstrength: 0.58\n" in text


def test_forget_of_a_note_already_deleted_in_the_vault(mv: Memories) -> None:
    r = mv.add("Old gym code 4411.", "fact")
    os.remove(mv.root / r.path)  # deleted by hand, the index does not know yet
    res = mv.forget(r.id)
    assert res.action == "forgotten" and "already been deleted" in res.warnings[0]
    t = find_trace(mv.con, r.id)
    assert t.status == "deleted" and mem.get_outbox(mv.con, r.id) is None
    assert mv.restore(r.id).action == "restored" and (mv.root / r.path).exists()
