"""A forget that loses to a live note (issue 20, seed 25): one device
forgets a memory while on the other a rename racing an edit leaves two
notes with its id; the sync tool brings both back (an edit beats a
deletion). The memory is live again, so its forget record must go on the
device that sees the notes come back, and with it (through its history log)
everywhere: a device that kept it disagrees with one that rebuilt its data
dir (a rebuild drops the forget of a memory whose note is live).

Before the fix, the note that keeps the id by the identity rule, when read
after the other one in its batch (the order of a daemon's events, or of a
directory listing), was indexed as a takeover of the id, which skipped the
step that ends a memory's deletion: the memory came back live with its
forget record still in ``state.forgotten``. The order within a batch is set
here (``read_first``), so both orders are checked on every machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_two_devices_history import agree_then_rebuild, two

from memvault.store.index.reconcile import Indexer
from memvault.store.memory_store import MemoryStore
from memvault.store.settings import load_settings


def _note_of(vault: Path, memory_id: str) -> Path:
    """The memory note whose name carries the id's hex (a new memory's name)."""
    return next(p for p in (vault / "Memory").rglob("*.md") if memory_id[2:10] in p.name)


def _in_order(monkeypatch: pytest.MonkeyPatch, first: str) -> None:
    """Make a reconcile read the note at ``first`` before the others of its batch."""
    original = Indexer._reconcile

    def ordered(self: Indexer, scan: Any, *args: Any, **kwargs: Any) -> Any:
        scan.files = dict(sorted(scan.files.items(), key=lambda item: item[0] != first))
        return original(self, scan, *args, **kwargs)

    monkeypatch.setattr(Indexer, "_reconcile", ordered)


@pytest.mark.parametrize("read_first", ["the renamed copy", "the note"])
def test_a_forget_undone_by_two_notes_coming_back_leaves_no_forget_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_first: str,
) -> None:
    a, b, carry = two(tmp_path)
    m = a.add("Remember tok5x always")
    carry()
    b.run("sync", "--no-embed")
    note = _note_of(a.vault, m)
    text = note.read_text(encoding="utf-8")
    b.run("forget", m, "--reason", "bench forgets")  # b moves its note to .trash/
    # On a, meanwhile: the note edited, and a renamed copy of it edited too
    # (what a rename racing an edit leaves once the sync tool delivered both);
    # the sync tool runs before a's memvault settled which one keeps the id.
    note.write_text(text + "\nEdited tok8x on a.\n", encoding="utf-8")
    copy = note.with_name("renamed-a.md")
    copy.write_text(text + "\nEdited tok15x while renamed.\n", encoding="utf-8")
    carry()  # a's edit beats b's deletion: both notes reach b at once
    paths = [p.relative_to(a.vault).as_posix() for p in (note, copy)]
    _in_order(monkeypatch, paths[1] if read_first == "the renamed copy" else paths[0])
    monkeypatch.setenv("MEMVAULT_HOME", str(b.home))
    store = MemoryStore(b.vault, load_settings({"vault": str(b.vault)}), data_dir=b.data_dir)
    try:
        store.sync_paths(paths)  # b's daemon: one batch for both deliveries
    finally:
        store.close()
    monkeypatch.undo()
    for _ in range(2):
        b.run("sync", "--no-embed")
        a.run("sync", "--no-embed")
        carry()
    assert (m, "active") in {(i, s) for i, s, _ in b.listed()}
    assert b.forgotten() == set(), "a live memory keeps its forget record"
    agree_then_rebuild(a, b)


def test_an_update_that_beats_the_notes_deletion_leaves_no_forget_record(tmp_path: Path) -> None:
    """``update`` of a memory whose note was deleted in the vault unseen
    brings the memory back (an edit beats a deletion); the forget record the
    deletion made on the way must go with it (it stayed before the fix)."""
    a, b, carry = two(tmp_path)
    m = a.add("Remember tok5x always")
    carry()
    b.run("sync", "--no-embed")
    _note_of(a.vault, m).unlink()  # deleted by hand, no memvault looking
    a.run("update", m, "--content", "Remember tok6x instead")
    for _ in range(2):
        carry()
        b.run("sync", "--no-embed")
        a.run("sync", "--no-embed")
    assert (m, "active") in {(i, s) for i, s, _ in a.listed()}
    assert a.forgotten() == b.forgotten() == set()
    agree_then_rebuild(a, b)
