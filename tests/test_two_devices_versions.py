"""Versions and creation times travel with the note: two devices with their
own data dirs read the same `version` and `created` from the same file, so
`--expect-version` read on one device holds on the other.

Each test copies files between two vault folders the way a sync tool does
(bytes only; every device keeps its own memvault data dir).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import write

from memvault.store.memories.guard import VersionConflict
from memvault.store.memory_store import MemoryStore
from memvault.store.settings import load_settings


def store(root: Path) -> MemoryStore:
    root.mkdir(parents=True, exist_ok=True)
    return MemoryStore(root, load_settings({"vault": str(root)}), data_dir=root.parent / "data")


def carry(src: MemoryStore, dst: MemoryStore) -> None:
    """The sync tool: the source vault's files replace the destination's."""
    for p in sorted(src.root.rglob("*.md")):
        rel = p.relative_to(src.root)
        if rel.parts[0].startswith("."):
            continue
        target = dst.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_bytes() != p.read_bytes():
            shutil.copy2(p, target)


def view(s: MemoryStore, memory_id: str) -> tuple[int, str, str]:
    item = s.read(memory_id)
    return item.version, item.created, item.content


@pytest.fixture
def devices(tmp_path: Path):  # type: ignore[no-untyped-def]
    a, b = store(tmp_path / "a" / "vault"), store(tmp_path / "b" / "vault")
    yield a, b
    a.close()
    b.close()


def test_a_new_memory_reads_version_1_and_one_created_time_everywhere(devices) -> None:  # type: ignore[no-untyped-def]
    a, b = devices
    made = a.memories.add("Keeps keys in the blue bowl.", "semantic")
    text = (a.root / made.path).read_text(encoding="utf-8")
    assert "\nversion: 1\n" in text and "\nversion_hash: " in text
    carry(a, b)
    b.sync()
    assert view(a, made.id) == view(b, made.id)


def test_the_same_memory_added_on_both_devices_agrees_on_created_after_the_sync(devices, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from memvault.store.db import records

    a, b = devices
    first = a.memories.add("Waters the fern on Fridays.", "semantic")
    monkeypatch.setattr(records, "now_iso", lambda: "2030-01-01T00:00:00+00:00")  # b adds it later
    second = b.memories.add("Waters the fern on Fridays.", "semantic")
    monkeypatch.undo()
    assert first.id == second.id
    assert view(a, first.id)[1] != view(b, first.id)[1]
    carry(a, b)  # the sync tool keeps one file: a's
    b.sync()
    assert view(a, first.id) == view(b, first.id)


def test_an_edit_in_obsidian_is_one_version_on_both_devices_in_either_order(devices) -> None:  # type: ignore[no-untyped-def]
    a, b = devices
    made = a.memories.add("Takes the 8:10 train.", "semantic")
    carry(a, b)
    b.sync()
    note_a = a.root / made.path
    note_a.write_text(note_a.read_text(encoding="utf-8").replace("8:10", "8:40"), encoding="utf-8")
    # b gets the edited file (its bytes and mtime, as a sync tool carries them) before a has read it: both
    # count the edit, and both write the edit's time (its mtime) as `updated`
    shutil.copy2(note_a, b.root / made.path)
    b.sync()
    a.sync()
    assert (a.root / made.path).read_bytes() == (b.root / made.path).read_bytes(), "the devices wrote different bytes"
    assert "\nversion: 2\n" in note_a.read_text(encoding="utf-8")
    assert view(a, made.id) == view(b, made.id) and view(a, made.id)[0] == 2
    before = note_a.read_bytes()
    a.sync()
    b.sync()
    assert note_a.read_bytes() == before == (b.root / made.path).read_bytes(), "a settled note was written again"


def test_expect_version_read_on_one_device_holds_on_the_other(devices) -> None:  # type: ignore[no-untyped-def]
    a, b = devices
    made = a.memories.add("Meets Sam on Tuesdays.", "semantic")
    a.memories.update(made.id, content="Meets Sam on Wednesdays.")
    carry(a, b)
    b.sync()
    seen = a.read(made.id).version
    assert seen == 2 == b.read(made.id).version
    result = b.memories.update(made.id, content="Meets Sam on Thursdays.", expect_version=seen)
    assert result.version == 3
    carry(b, a)
    a.sync()
    assert a.read(made.id).version == 3
    with pytest.raises(VersionConflict):
        a.memories.update(made.id, content="Meets Sam on Fridays.", expect_version=seen)


def test_an_edit_carried_from_the_other_device_moves_the_version_the_guard_checks(devices) -> None:  # type: ignore[no-untyped-def]
    a, b = devices
    made = a.memories.add("Drinks oat milk.", "semantic")
    carry(a, b)
    b.sync()
    seen = b.read(made.id).version
    note_a = a.root / made.path
    note_a.write_text(note_a.read_text(encoding="utf-8").replace("oat", "soy"), encoding="utf-8")
    a.sync()
    carry(a, b)  # the person's edit on a reaches b; b's agent read before it
    with pytest.raises(VersionConflict):
        b.memories.update(made.id, content="Drinks almond milk.", expect_version=seen)


def test_a_note_without_a_counter_is_not_written_on_read(tmp_path: Path) -> None:
    s = store(tmp_path / "vault")
    try:
        note = write(s.root, "Memory/semantic/hand.md", "---\ntype: semantic\n---\nLikes hand-written notes.\n")
        s.sync()
        before = note.read_bytes()
        note.write_text(note.read_text(encoding="utf-8") + "Also pencils.\n", encoding="utf-8")
        s.sync()
        assert note.read_bytes() == before + b"Also pencils.\n", "reading a note without a counter wrote it"
    finally:
        s.close()


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "aside"])
def test_the_version_write_never_overwrites_a_file_changed_under_it(
        tmp_path: Path, monkeypatch, exchange: bool) -> None:  # type: ignore[no-untyped-def]
    """The write of a version counter swaps its bytes in atomically and checks
    what came out (or, without renameat2, checks the note aside): a save or a
    sync tool's delivery landing at that moment is kept, never overwritten."""
    import memvault.vault_io.replace as replace
    from memvault.vault_io.note import content_hash

    if not exchange:
        monkeypatch.setattr(replace, "_exchange", lambda a, b: None)
    note = write(tmp_path / "vault", "n.md", "read\n")
    trash = tmp_path / "vault" / ".trash"
    expected = content_hash(b"read\n")
    assert replace.replace_if_unchanged(note, expected, b"ours\n", trash)
    assert note.read_bytes() == b"ours\n"
    # changed before the write: put back, ours not written
    assert not replace.replace_if_unchanged(note, expected, b"ours again\n", trash)
    assert note.read_bytes() == b"ours\n"
    # a delivery at the very moment of the write: it is what the note holds after
    note.write_bytes(b"read\n")
    if exchange:
        real = replace._exchange

        def delivery_first(a, b):  # type: ignore[no-untyped-def]
            note.write_bytes(b"delivered\n")
            return real(a, b)

        monkeypatch.setattr(replace, "_exchange", delivery_first)
    else:
        import os

        real_link = os.link

        def delivery_first(src, dst, *args, **kwargs):  # type: ignore[no-untyped-def]
            if str(dst) == str(note) and str(src).endswith(".memvault-tmp"):
                note.write_bytes(b"delivered\n")
            return real_link(src, dst, *args, **kwargs)

        monkeypatch.setattr(os, "link", delivery_first)
    assert not replace.replace_if_unchanged(note, expected, b"ours\n", trash)
    monkeypatch.undo()
    assert note.read_bytes() == b"delivered\n"
    if not exchange:  # set aside, what was read is kept
        assert [p.read_bytes() for p in trash.iterdir()] == [b"read\n"]
    leftovers = [p.name for p in note.parent.iterdir() if p.name.startswith(".n.md")]
    assert leftovers == []
