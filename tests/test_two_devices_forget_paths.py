"""Other paths to a live memory that keeps its forget record (issue 20).

A memory whose note is live in the vault must not keep a row in
``state.forgotten``: a rebuilt device drops such a row (the vault wins),
so a device that kept it disagrees with one that rebuilt its data dir.
:mod:`test_two_devices_forget` pins the two paths found first (a takeover
of the id by the identity rule, an update of a note deleted unseen); these
are the others an audit of every path that makes a memory live found: a
merged memory whose note comes back.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from test_two_devices_forget import _note_of
from test_two_devices_history import Device, Sync, two


def _sync_both(a: Device, b: Device, carry: Sync) -> None:
    """Carry and sync twice: both devices settle what the other did."""
    for _ in range(2):
        carry()
        b.run("sync", "--no-embed")
        a.run("sync", "--no-embed")


def test_a_merged_memory_whose_edited_note_beats_the_merge_leaves_no_forget_record(tmp_path: Path) -> None:
    """One device merges two memories (the second is forgotten into the
    first, its note moved to the trash) while on the other a person edits
    the second one's note: the edit beats the deletion, the note comes back
    live, so the memory is live again and its forget record must go (before
    the fix it stayed: the merged member's trace is ``superseded``, not
    ``deleted``, and only a deleted one ended its deletion)."""
    a, b, carry = two(tmp_path)
    kept = a.add("Prefers dark mode in the editor")
    member = a.add("Likes a dark theme in editors")
    carry()
    b.run("sync", "--no-embed")
    b.run("merge", kept, member, "--content", "Prefers dark mode in every editor")
    note = _note_of(a.vault, member)
    note.write_text(note.read_text(encoding="utf-8") + "\nEdited tok9x on a.\n", encoding="utf-8")
    _sync_both(a, b, carry)  # a's edit beats b's deletion: the note comes back on b
    assert (member, "active") in {(i, s) for i, s, _ in b.listed()}
    assert a.forgotten() == b.forgotten() == set(), "a live memory keeps its forget record"
    seen = a.view()
    assert seen == b.view()

    shutil.rmtree(b.home)
    b.home.mkdir()
    b.run("rebuild", "--no-embed")
    assert b.view() == seen

