"""Other paths to a live memory that keeps its forget record (issue 20).

A memory whose note is live in the vault must not keep a row in
``state.forgotten``: a rebuilt device drops such a row (the vault wins),
so a device that kept it disagrees with one that rebuilt its data dir.
:mod:`test_two_devices_forget` pins the two paths found first (a takeover
of the id by the identity rule, an update of a note deleted unseen); these
are the others an audit of every path that makes a memory live found: a
merged memory whose note comes back, a note whose ``id`` changes while a
forget from another device waits for the sync tool; and, the same wait
for a merge, a merge whose log arrives before its member's note moves.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from test_two_devices_forget import _note_of
from test_two_devices_history import LOGS, Device, Sync, agree_then_rebuild, two
from two_devices import read_rows


def _sync_both(a: Device, b: Device, carry: Sync) -> None:
    """Carry and sync twice: both devices settle what the other did."""
    for _ in range(2):
        carry()
        b.run("sync", "--no-embed")
        a.run("sync", "--no-embed")


def _log_first(src: Device, dst: Device) -> None:
    """The sync tool delivers ``src``'s history log alone, before the notes."""
    (dst.vault / LOGS).mkdir(parents=True, exist_ok=True)
    for p in (src.vault / LOGS).glob("*.jsonl"):
        shutil.copy2(p, dst.vault / LOGS / p.name)


def merged_on_b(tmp_path: Path) -> tuple[Device, Device, Sync, str, str]:
    """Two memories added on a, carried to b, merged there (the second into the first)."""
    a, b, carry = two(tmp_path)
    kept = a.add("Prefers dark mode in the editor")
    member = a.add("Likes a dark theme in editors")
    carry()
    b.run("sync", "--no-embed")
    b.run("merge", kept, member, "--content", "Prefers dark mode in every editor")
    return a, b, carry, kept, member


def test_a_merged_memory_whose_edited_note_beats_the_merge_leaves_no_forget_record(tmp_path: Path) -> None:
    """One device merges two memories (the second is forgotten into the
    first, its note moved to the trash) while on the other a person edits
    the second one's note: the edit beats the deletion, the note comes back
    live, so the memory is live again and its forget record must go (before
    the fix it stayed: the merged member's trace is ``superseded``, not
    ``deleted``, and only a deleted one ended its deletion)."""
    a, b, carry, kept, member = merged_on_b(tmp_path)
    note = _note_of(a.vault, member)
    note.write_text(note.read_text(encoding="utf-8") + "\nEdited tok9x on a.\n", encoding="utf-8")
    _sync_both(a, b, carry)  # a's edit beats b's deletion: the note comes back on b
    assert (member, "active") in {(i, s) for i, s, _ in b.listed()}
    assert a.forgotten() == b.forgotten() == set(), "a live memory keeps its forget record"
    agree_then_rebuild(a, b)


def test_a_note_that_changes_its_id_while_its_forget_waits_leaves_no_forget_record(tmp_path: Path) -> None:
    """A forget from another device's log arrives before the sync tool
    moves the note away (the memory stays live meanwhile: that is no bug);
    then the note's front-matter ``id`` changes here (a person's edit, or a
    device's identity rule rewriting the line, delivered by the sync tool),
    and the edit beats the deletion. The note is live under its new id: the
    forget belongs to the old one. Before the fix the rename of the trace
    carried the forget record to the new id, live with its note."""
    a, b, carry = two(tmp_path)
    m = a.add("Remember tok5x always")
    carry()
    b.run("sync", "--no-embed")
    b.run("forget", m, "--reason", "bench forgets")
    _log_first(b, a)
    a.run("sync", "--no-embed")
    note = _note_of(a.vault, m)
    new_id = "m-0123456789ab"
    note.write_text(note.read_text(encoding="utf-8").replace(f"id: {m}", f"id: {new_id}") + "\nEdited on a.\n",
                    encoding="utf-8")
    a.run("sync", "--no-embed")
    assert new_id not in {i for i, _ in a.forgotten()}, "a live memory keeps its forget record"
    _sync_both(a, b, carry)
    assert (new_id, "active") in {(i, s) for i, s, _ in a.listed()}
    assert a.forgotten() == b.forgotten() == {(m, "bench forgets")}
    agree_then_rebuild(a, b)


def test_a_merge_that_arrives_before_the_members_note_moves_is_kept(tmp_path: Path) -> None:
    """The merge's history (the member forgotten into the survivor, its
    ``state.merges`` row) comes in one device's log before the sync tool
    moves the member's note away: the member is still live there, and that
    is no reason to end the merge (before the fix that device took the live
    note for one a person brought back and dropped the merge on both
    devices: one showed the member deleted, the other merged)."""
    a, b, carry, kept, member = merged_on_b(tmp_path)
    _log_first(b, a)
    a.run("sync", "--no-embed")
    _sync_both(a, b, carry)
    for d in (a, b):
        assert read_rows(d.data_dir, "state.db", "SELECT memory_id, survivor_id FROM merges") == [(member, kept)]
    assert member not in {i for i, _, _ in a.listed()}
    agree_then_rebuild(a, b)
