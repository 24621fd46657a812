"""One-shot sync: every change made while memvault was not running is picked up."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from helpers import opened, write

from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.index.lookup import find_trace
from memvault.store.memory_store import MemoryStore
from memvault.store.retrieval.keyword import keyword_search


def open_vault(root: Path) -> MemoryStore:
    return MemoryStore.open(str(root))


def sync(root: Path):
    v = open_vault(root)
    try:
        return v.sync()
    finally:
        v.close()


def trace_at(root: Path, path: str) -> rec.TraceRow | None:
    v = open_vault(root)
    try:
        return find_trace(v.con, path)
    finally:
        v.close()


def edges(root: Path, path: str) -> list[rec.EdgeRow]:
    v = open_vault(root)
    try:
        t = find_trace(v.con, path)
        assert t is not None
        return rec.edges_from(v.con, t.id)
    finally:
        v.close()


def search(root: Path, q: str) -> list[str]:
    v = open_vault(root)
    try:
        return [h.path for h in keyword_search(v.con, q)]
    finally:
        v.close()


def test_first_sync_then_idempotent(vault: Path) -> None:
    write(vault, "A.md", "# A\nalpha links to [[B]]\n")
    write(vault, "B.md", "beta")
    s = sync(vault)
    assert (s.added, s.updated, s.deleted, s.moved) == (2, 0, 0, 0)
    s2 = sync(vault)
    assert not s2.changed and (s2.added, s2.updated, s2.deleted, s2.moved, s2.errors) == (0, 0, 0, 0, 0)


def test_edit_is_picked_up_and_touch_is_not_a_change(vault: Path) -> None:
    p = write(vault, "A.md", "original words")
    sync(vault)
    p.write_text("replacement words", encoding="utf-8")
    s = sync(vault)
    assert s.updated == 1
    assert search(vault, "replacement") == ["A.md"] and search(vault, "original") == []
    os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 10**9))  # same bytes, new mtime
    assert not sync(vault).changed


def swap(a: Path, b: Path) -> None:
    tmp = a.with_name("swap.tmp")
    os.rename(a, tmp)
    os.rename(b, a)
    os.rename(tmp, b)


def test_same_size_swap_within_a_timestamp_tick_is_seen(vault: Path) -> None:
    # Written and indexed within one tick: mtime and size cannot tell the
    # files apart afterwards, so such "racy" entries are read again.
    one, two = write(vault, "S1.md", "one\n"), write(vault, "S2.md", "two\n")
    tick = time.time_ns()
    for p in (one, two):
        os.utime(p, ns=(tick, tick))
    sync(vault)
    swap(one, two)
    s = sync(vault)
    assert s.updated == 2
    assert search(vault, "two") == ["S1.md"] and search(vault, "one") == ["S2.md"]


def test_same_size_swap_of_old_files_is_seen_by_ctime(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memvault.store.index import reconcile as indexer

    monkeypatch.setattr(indexer, "RACY_NS", 0)  # as if the files were indexed long after their last change
    one, two = write(vault, "S1.md", "one\n"), write(vault, "S2.md", "two\n")
    for p in (one, two):
        os.utime(p, ns=(10**18, 10**18))
    sync(vault)
    assert not sync(vault).changed
    swap(one, two)
    assert (one.stat().st_mtime_ns, one.stat().st_size) == (two.stat().st_mtime_ns, two.stat().st_size)
    assert sync(vault).updated == 2
    assert search(vault, "two") == ["S1.md"]


def test_an_edit_within_the_tick_of_its_indexing_is_caught(vault: Path) -> None:
    """A file indexed right after a write may be written again within the same
    timestamp tick: same size, mtime and ctime, new bytes. Such a racy entry
    is recorded with ctime 0, so the next sync reads it again."""
    p = write(vault, "A.md", "one\n")
    assert sync(vault).added == 1
    v = open_vault(vault)
    try:
        assert rec.get_file(v.con, "A.md").ctime_ns == 0  # racy: written < 2 s before it was recorded
        p.write_text("two\n", encoding="utf-8")
        st = p.stat()
        # What a same-tick edit looks like to the scan: nothing moved.
        with write_transaction(v.con):
            v.con.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE path = 'A.md'", (st.st_mtime_ns, st.st_size))
    finally:
        v.close()
    assert sync(vault).updated == 1
    assert search(vault, "two") == ["A.md"]


def test_rename_and_move_keep_identity(vault: Path) -> None:
    write(vault, "Old name.md", "some stable content")
    sync(vault)
    before = trace_at(vault, "Old name.md")
    assert before
    (vault / "Sub").mkdir()
    os.rename(vault / "Old name.md", vault / "Sub" / "New name.md")
    s = sync(vault)
    assert (s.moved, s.added, s.deleted) == (1, 0, 0)
    after = trace_at(vault, "Sub/New name.md")
    assert after and after.id == before.id and after.created == before.created
    assert trace_at(vault, "Old name.md") is None


def test_move_with_edit_is_matched_by_frontmatter_id(vault: Path) -> None:
    write(vault, "a.md", "---\nid: keep-me\n---\nfirst")
    sync(vault)
    os.remove(vault / "a.md")
    write(vault, "b.md", "---\nid: keep-me\n---\nsecond, edited")
    s = sync(vault)
    assert (s.moved, s.added, s.deleted) == (1, 0, 0)
    t = trace_at(vault, "b.md")
    assert t and t.id == "keep-me" and "second" in t.content


def test_rename_with_an_edit_is_still_a_move(vault: Path) -> None:
    text = "A paragraph about sourdough starters, hydration and the long cold proof in the fridge overnight.\n"
    write(vault, "Bread.md", text)
    write(vault, "Other.md", "something else entirely, about bicycles")
    sync(vault)
    before = trace_at(vault, "Bread.md")
    assert before
    os.remove(vault / "Bread.md")
    write(vault, "Baking/Sourdough.md", text + "Added later: rye flour speeds it up.\n")
    s = sync(vault)
    assert (s.moved, s.added, s.deleted) == (1, 0, 0)
    after = trace_at(vault, "Baking/Sourdough.md")
    assert after and after.id == before.id and "rye flour" in after.content


def test_a_deleted_memory_is_never_taken_over_by_a_look_alike_note(vault: Path) -> None:
    text = "Deploys go out on Fridays after the review meeting with the whole team present.\n"
    write(vault, "Memory/semantic/deploys.md", text)
    sync(vault)
    memory = trace_at(vault, "Memory/semantic/deploys.md")
    assert memory and memory.kind == "memory"
    os.remove(vault / "Memory/semantic/deploys.md")
    write(vault, "Notes/Deploys.md", text + "Copied here by hand.\n")
    s = sync(vault)
    assert (s.moved, s.added, s.deleted) == (0, 1, 1)
    note = trace_at(vault, "Notes/Deploys.md")
    assert note and note.id != memory.id
    v = open_vault(vault)
    try:
        assert rec.get_trace(v.con, memory.id).status == "deleted"  # soft-deleted, restorable
    finally:
        v.close()


def test_a_new_note_that_shares_little_with_a_deleted_one_is_no_move(vault: Path) -> None:
    write(vault, "Bread.md", "sourdough starters hydration proof fridge overnight")
    sync(vault)
    os.remove(vault / "Bread.md")
    write(vault, "Bikes.md", "bicycles chains gears and the proof of a fast fridge")
    s = sync(vault)
    assert (s.moved, s.added, s.deleted) == (0, 1, 1)


def test_leftover_temp_files_of_a_dead_writer_are_removed(vault: Path) -> None:
    write(vault, "Memory/semantic/a.md", "a memory")
    old = write(vault, "Memory/semantic/.a.md.1a2b3c4d.memvault-tmp", "half a wri")
    young = write(vault, ".b.md.5e6f7a8b.memvault-tmp", "being written now")
    mine = write(vault, ".my-own-file.tmp", "not memvault's")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    os.utime(mine, (time.time() - 7200, time.time() - 7200))
    s = sync(vault)
    assert not old.exists() and young.exists() and mine.exists()
    assert any("Memory/semantic/.a.md.1a2b3c4d.memvault-tmp: removed" in w for w in s.warnings)


def test_delete_removes_trace_and_unresolves_links(vault: Path) -> None:
    write(vault, "A.md", "see [[B]]")
    write(vault, "B.md", "beta")
    sync(vault)
    assert edges(vault, "A.md")[0].target_path == "B.md"
    os.remove(vault / "B.md")
    s = sync(vault)
    assert s.deleted == 1
    assert trace_at(vault, "B.md") is None
    e = edges(vault, "A.md")[0]
    assert e.target_path is None and e.target_id is None


def test_unresolved_link_resolves_when_target_appears(vault: Path) -> None:
    write(vault, "A.md", "see [[Later note]] and ![[pic.png]]")
    sync(vault)
    assert [e.target_path for e in edges(vault, "A.md")] == [None, None]
    write(vault, "Deep/Later note.md", "now here")
    write(vault, "img/pic.png", b"\x89PNG")
    sync(vault)
    assert [e.target_path for e in edges(vault, "A.md")] == ["Deep/Later note.md", "img/pic.png"]
    later = trace_at(vault, "Deep/Later note.md")
    assert later and edges(vault, "A.md")[0].target_id == later.id


def test_a_link_resolves_when_its_target_appears_through_sync_paths(vault: Path) -> None:
    # The daemon's batches, memory writes and imports index single paths.
    write(vault, "A.md", "see [[Later note]]")
    with opened(vault) as v:
        v.sync()
        write(vault, "Deep/Later note.md", "now here")
        v.sync_paths(["Deep/Later note.md"])
    assert [e.target_path for e in edges(vault, "A.md")] == ["Deep/Later note.md"]


def test_case_variant_files_resolve_like_a_rebuild(vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(vault, "Note.md", "upper")
    write(vault, "note.md", "lower")
    write(vault, "L.md", "[[note]] [[Note]]")
    sync(vault)
    assert [(e.target_path, e.ambiguous) for e in edges(vault, "L.md")] == [("note.md", True), ("Note.md", True)]
    os.remove(vault / "Note.md")
    sync(vault)
    synced = [(e.target_path, e.ambiguous) for e in edges(vault, "L.md")]
    assert synced == [("note.md", False), ("note.md", False)]
    monkeypatch.setenv("MEMVAULT_HOME", str(tmp_path / "rebuilt"))
    sync(vault)
    assert [(e.target_path, e.ambiguous) for e in edges(vault, "L.md")] == synced


def test_new_duplicate_name_makes_link_ambiguous(vault: Path) -> None:
    write(vault, "Dir/A.md", "see [[Same]]")
    write(vault, "Other/Same.md", "x")
    sync(vault)
    e = edges(vault, "Dir/A.md")[0]
    assert (e.target_path, e.ambiguous) == ("Other/Same.md", False)
    write(vault, "Dir/Same.md", "closer")
    sync(vault)
    e = edges(vault, "Dir/A.md")[0]
    assert (e.target_path, e.ambiguous) == ("Dir/Same.md", True)


def test_frontmatter_id_is_trace_id_and_duplicates_are_reported(vault: Path) -> None:
    write(vault, "a.md", "---\nid: shared\n---\none")
    write(vault, "b.md", "---\nid: shared\n---\ntwo")
    s = sync(vault)
    ids = {trace_at(vault, "a.md").id, trace_at(vault, "b.md").id}
    assert "shared" in ids and len(ids) == 2
    assert any("already used" in e for e in s.parse_errors)


def test_invalid_yaml_is_indexed_with_error(vault: Path) -> None:
    write(vault, "T.md", "---\ncreated: {{date}}\n---\ntemplate body words\n")
    s = sync(vault)
    assert s.errors == 1 and "T.md" in s.parse_errors[0]
    assert search(vault, "template body") == ["T.md"]


def test_a_non_utf8_byte_does_not_hide_the_note_and_the_file_is_left_alone(vault: Path) -> None:
    p = write(vault, "A.md", "readable words")
    sync(vault)
    broken = b"readable words, then \xff\xfe broken \x80 bytes"
    p.write_bytes(broken)
    s = sync(vault)
    assert s.updated == 1 and s.skipped == 0
    assert [w for w in s.parse_errors if "UTF-8" in w] == [
        "A.md: not valid UTF-8 (byte 0xff at offset 21); indexed with replacement characters, "
        "fix the bytes in an editor"]
    assert search(vault, "broken") == ["A.md"]  # the rest of the note is searchable
    assert p.read_bytes() == broken  # never rewritten for it
    assert not sync(vault).changed  # indexed once, not again on every sync
    p.write_text("fixed words", encoding="utf-8")
    assert sync(vault).updated == 1
    assert search(vault, "fixed") == ["A.md"]


def test_huge_file_keeps_earlier_entry(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_MAX_FILE_SIZE", "1000")
    p = write(vault, "A.md", "small words")
    sync(vault)
    p.write_text("big " * 1000, encoding="utf-8")
    s = sync(vault)
    assert s.skipped == 1 and s.deleted == 0 and "A.md" in s.warnings[0]
    assert search(vault, "small") == ["A.md"]


def test_crlf_and_bom_files_index_like_lf(vault: Path) -> None:
    write(vault, "crlf.md", b"\xef\xbb\xbf---\r\ntags: [x]\r\n---\r\nline one [[Target]]\r\n#inline\r\n")
    write(vault, "Target.md", "t")
    sync(vault)
    t = trace_at(vault, "crlf.md")
    assert t and t.tags == ["x", "inline"] and "\r" not in t.content
    assert edges(vault, "crlf.md")[0].target_path == "Target.md"


def test_sync_on_real_vault_twice(vok: Path) -> None:
    s = sync(vok)
    assert s.added == 2721 and s.errors == 0
    assert not sync(vok).changed


def test_unlistable_folder_is_not_taken_for_deleted_notes(vault: Path) -> None:
    write(vault, "Locked/a.md", "secret words")
    write(vault, "Open/b.md", "open words")
    sync(vault)
    os.chmod(vault / "Locked", 0o000)
    try:
        if os.access(vault / "Locked", os.R_OK):
            pytest.skip("running as a user that can read any folder")
        s = sync(vault)
    finally:
        os.chmod(vault / "Locked", 0o755)
    assert s.deleted == 0 and any("Locked" in w and "cannot list" in w for w in s.warnings)
    assert search(vault, "secret") == ["Locked/a.md"]


def test_scan_that_loses_a_folder_keeps_its_notes(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # os.scandir failing on one folder (an unmounted share, a permission
    # change) must read as "unknown", not "deleted"; this works as root too.
    write(vault, "Share/a.md", "remote words")
    sync(vault)
    real = os.scandir

    def flaky(path):
        if str(path).endswith("Share"):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr("memvault.vault_io.scan.os.scandir", flaky)
    s = sync(vault)
    assert s.deleted == 0 and search(vault, "remote") == ["Share/a.md"]


def test_watcher_hint_for_an_ignored_path_is_not_indexed(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_IGNORE", "Private")
    write(vault, "Private/diary.md", "hidden words")
    write(vault, ".obsidian/x.md", "config words")
    v = open_vault(vault)
    try:
        s = v.sync_paths(["Private/diary.md", ".obsidian/x.md"])
        assert not s.changed and keyword_search(v.con, "hidden") == []
    finally:
        v.close()
