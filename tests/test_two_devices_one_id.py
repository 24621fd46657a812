"""One id, one note, in each device's index (issue 20, seeds 10 and 12).

In the contended two-device soak a memory ended live in one device's index
only, with a note whose id no live memory had there: that device's index
held two notes under one trace id, and a rename of the trace (one of the
notes taking the id another device split off for it) dragged the other
note's row along to an id its note does not name. Two causes, one test each:

- the daemon's cached path index (path -> trace id) adopted, unseen, the
  changes another connection (a CLI's writer) committed to the files table
  while a reconcile ran, and later settled ids against paths that no longer
  held them: a note arriving with an id took it though another note had it;
- ``rename_trace`` moves every file row holding the old id, so with two rows
  under one id a note changing its id took the other note's row with it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import write
from two_devices import MEMORY_NOTE

from memvault.store.db.connection import write_transaction
from memvault.store.memory_store import MemoryStore
from memvault.store.settings import load_settings
from memvault.vault_io.frontmatter import file_frontmatter_id

NOTE = MEMORY_NOTE

ID = "m-0123456789ab"


def store(root: Path) -> MemoryStore:
    root.mkdir(parents=True, exist_ok=True)
    return MemoryStore(root, load_settings({"vault": str(root)}), data_dir=root.parent / "data")


def shared_ids(s: MemoryStore) -> list[tuple[str, int]]:
    return s.con.execute(
        "SELECT trace_id, count(*) FROM files WHERE trace_id IS NOT NULL GROUP BY trace_id HAVING count(*) > 1"
    ).fetchall()


def indexed_id(s: MemoryStore, path: str) -> str | None:
    row = s.con.execute("SELECT trace_id FROM files WHERE path = ?", (path,)).fetchone()
    return row[0] if row else None


def live(s: MemoryStore) -> dict[str, str]:
    return dict(s.con.execute("SELECT id, path FROM traces WHERE kind = 'memory' AND status = 'active'").fetchall())


def test_a_commit_by_another_connection_during_a_reconcile_reaches_its_path_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memvault.store.index import reconcile_pass

    root = tmp_path / "laptop" / "vault"
    daemon, cli = store(root), store(root)  # one data dir, two connections: the daemon's and a CLI's
    try:
        write(root, "Memory/semantic/original.md", NOTE.format(id=ID, text="Prefers tea."))
        write(root, "Journal.md", "# Journal\n\nfirst\n")
        daemon.sync()
        real = reconcile_pass.read_notes

        def meanwhile(*args, **kwargs):  # type: ignore[no-untyped-def]
            # While the daemon's reconcile runs, a person renames the memory's
            # note and the CLI's store indexes the move.
            monkeypatch.setattr(reconcile_pass, "read_notes", real)
            os.rename(root / "Memory/semantic/original.md", root / "Memory/semantic/moved.md")
            cli.sync_paths(["Memory/semantic/original.md", "Memory/semantic/moved.md"])
            assert indexed_id(cli, "Memory/semantic/moved.md") == ID
            return real(*args, **kwargs)

        monkeypatch.setattr(reconcile_pass, "read_notes", meanwhile)
        write(root, "Journal.md", "# Journal\n\nsecond\n")
        daemon.sync_paths(["Journal.md"])
        # The other device renamed the same note otherwise and edited it; the
        # sync tool brings that note, id and all.
        write(root, "Memory/semantic/renamed.md", NOTE.format(id=ID, text="Prefers tea, green."))
        daemon.sync_paths(["Memory/semantic/renamed.md"])
        assert shared_ids(daemon) == []
        # The identity rule settled it: "moved.md" is first in byte order and keeps the id.
        assert indexed_id(daemon, "Memory/semantic/moved.md") == ID
        split = file_frontmatter_id(root / "Memory/semantic/renamed.md")
        assert split not in (None, ID) and indexed_id(daemon, "Memory/semantic/renamed.md") == split
        assert live(daemon) == {ID: "Memory/semantic/moved.md", split: "Memory/semantic/renamed.md"}
    finally:
        cli.close()
        daemon.close()


def test_a_note_taking_a_new_id_leaves_another_note_indexed_under_the_old_one(tmp_path: Path) -> None:
    root = tmp_path / "laptop" / "vault"
    s = store(root)
    try:
        write(root, "Memory/semantic/original.md", NOTE.format(id=ID, text="Prefers tea."))
        write(root, "Memory/semantic/renamed.md", NOTE.format(id=ID, text="Prefers tea, green.").replace(
            f"id: {ID}\n", ""))
        s.sync()
        # Two rows under one id, as a stale path cache left them (the test above).
        with write_transaction(s.con):
            s.con.execute("UPDATE files SET trace_id = ? WHERE path = 'Memory/semantic/renamed.md'", (ID,))
        # The other device split an id off for renamed.md; the sync tool brings it.
        other = "m-0bfbf1b5f345"
        write(root, "Memory/semantic/renamed.md", NOTE.format(id=other, text="Prefers tea, green."))
        s.sync_paths(["Memory/semantic/renamed.md"])
        assert indexed_id(s, "Memory/semantic/original.md") == ID, "original.md's row followed renamed.md's new id"
        assert indexed_id(s, "Memory/semantic/renamed.md") == other
        now = live(s)
        assert (now[ID], now[other]) == ("Memory/semantic/original.md", "Memory/semantic/renamed.md")
    finally:
        s.close()


def test_a_version_carried_away_by_a_trace_rename_is_never_overwritten(tmp_path: Path) -> None:
    """Seed 19: a note indexed under X takes the id Y split off for it on
    the other device, and its trace, versions and all, becomes Y (the
    versions keep their ``X.v<n>`` ids). The note that kept X then has its
    own next version: numbered 1 again it would be ``X.v1`` and replace,
    in the durable state, the version Y carried away."""
    from memvault.vault_io.fm_edit import edit_frontmatter

    root = tmp_path / "laptop" / "vault"
    s = store(root)
    try:
        made = s.memories.add("Prefers tea.", "semantic")
        s.memories.update(made.id, content="Prefers tea, always.")
        assert [v for (v,) in s.con.execute(
            "SELECT id FROM state.memory_versions WHERE memory_id = ?", (made.id,))] == [f"{made.id}.v1"]
        note = root / made.path
        split = "m-0bfbf1b5f345"
        note.write_text(edit_frontmatter(note.read_text(encoding="utf-8"), {"id": split}), encoding="utf-8")
        s.sync_paths([made.path])
        carried = s.con.execute("SELECT id, memory_id, trace FROM state.memory_versions ORDER BY id").fetchall()
        assert [(v, m) for v, m, _ in carried] == [(f"{made.id}.v1", split)]
        # The note that kept the id arrives, and is edited.
        kept = "Memory/semantic/kept.md"
        write(root, kept, NOTE.format(id=made.id, text="Prefers tea, green."))
        s.sync_paths([kept])
        write(root, kept, NOTE.format(id=made.id, text="Prefers tea, green, no sugar."))
        s.sync_paths([kept])
        rows = s.con.execute("SELECT id, memory_id, trace FROM state.memory_versions ORDER BY id").fetchall()
        assert (carried[0][0], split, carried[0][2]) in rows, "the carried version was overwritten"
        mine = [v for v, m, _ in rows if m == made.id]
        assert len(mine) == 1 and mine[0] != carried[0][0]
    finally:
        s.close()
