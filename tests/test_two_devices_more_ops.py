"""What people do by hand on two devices that share a vault (issue 20,
bench_two_devices batch 9): a memory note written by hand in a type's
folder, with no ``id`` and no ``created``.

Without help each device would take its own clock for ``created`` (when it
first indexed the note), so two devices would list one memory with two
creation times and a rebuilt data dir a third, and a device that first sees
the note under another name (renamed before it arrived) would derive
another id. Issue 20's rule says what two devices must agree on is in the
vault: memvault writes the id and ``created`` (the note's mtime, which a
sync tool such as Syncthing carries) into such a note once, those lines
alone, when it first reads it (``NoteIdentity.write_identity``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from test_two_devices_history import Device, two
from two_devices import read_rows

from memvault.vault_io.parser import parse_note

LIVE = ("SELECT id, content, created FROM traces WHERE kind = 'memory' AND status = 'active' ORDER BY id")

#: When the person saved the note (its mtime): 2026-01-02T03:04:05Z.
SAVED = 1767323045

def _live(d: Device) -> list[tuple]:
    return read_rows(d.data_dir, "index.db", LIVE)


def test_a_memory_note_written_by_hand_has_one_id_and_created_everywhere(tmp_path: Path) -> None:
    a, b, carry = two(tmp_path)
    note = a.vault / "Memory" / "semantic" / "hand-1.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("Hand wrote tok1x on a.\n", encoding="utf-8")
    os.utime(note, (SAVED, SAVED))
    a.run("sync", "--no-embed")
    carry()
    b.run("sync", "--no-embed")
    a.run("sync", "--no-embed")

    front = parse_note("Memory/semantic/hand-1.md", note.read_bytes()).frontmatter
    [(memory_id, content, created)] = _live(a)
    assert front.get("id") == memory_id, "the id is not in the vault"
    assert str(front.get("created")) == created == "2026-01-02T03:04:05+00:00"
    assert content == "Hand wrote tok1x on a."
    assert _live(b) == _live(a)
    assert (b.vault / "Memory" / "semantic" / "hand-1.md").read_bytes() == note.read_bytes()

    # b's data dir is lost: a rebuild reads the same memory from the vault.
    shutil.rmtree(b.home)
    b.home.mkdir()
    b.run("rebuild", "--no-embed")
    assert _live(b) == _live(a)


def test_a_hand_note_renamed_before_the_other_device_saw_it_keeps_its_id(tmp_path: Path) -> None:
    """The id is the note's from its first read: a rename afterwards (on a
    device that had not read it, or after a rebuild) does not change it."""
    a, b, carry = two(tmp_path)
    note = a.vault / "Memory" / "episodic" / "hand-2.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("---\ntags:\n  - tag3\n---\nHand wrote tok2x on a.\n", encoding="utf-8")
    a.run("sync", "--no-embed")
    [(memory_id, _, _)] = _live(a)
    carry()
    moved = b.vault / "Memory" / "episodic" / "hand-2-renamed.md"
    (b.vault / "Memory" / "episodic" / "hand-2.md").rename(moved)
    b.run("sync", "--no-embed")
    carry()
    a.run("sync", "--no-embed")
    assert [r[0] for r in _live(a)] == [r[0] for r in _live(b)] == [memory_id]
    assert _live(a) == _live(b)
    shutil.rmtree(a.home)
    a.home.mkdir()
    a.run("rebuild", "--no-embed")
    assert _live(a) == _live(b)
