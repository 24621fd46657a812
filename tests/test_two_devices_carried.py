"""Which memory keeps the versions a rename carried (issue 20, seed 19).

A rename on one device racing an edit on the other leaves two notes with one
memory id; the identity rule keeps the id with one note and splits a new id
off for the other. A device that had the losing note indexed under the id
renames its trace (versions and all) to the split id, unless another note is
indexed under the id at that moment; a device that saw the notes the other
way round keeps the versions with the id. The history logs carry each
device's rows, and the merge settles every row by one order, so after both
devices have read both logs they hold the same versions under the same
memories, whatever order each saw the notes in.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import write

from memvault.store.answers.browse.history import MemoryVersion
from memvault.store.memory_store import MemoryStore
from memvault.store.settings import load_settings
from memvault.vault_io.frontmatter import file_frontmatter_id


def store(root: Path) -> MemoryStore:
    return MemoryStore(root, load_settings({"vault": str(root)}), data_dir=root.parent / "data")


def versions(s: MemoryStore) -> list[tuple]:
    return s.con.execute(
        "SELECT id, memory_id, version, json_extract(trace, '$.content') FROM state.memory_versions ORDER BY id"
    ).fetchall()


def live(s: MemoryStore) -> list[tuple]:
    return s.con.execute("SELECT id, path, content FROM traces WHERE kind = 'memory' AND status = 'active' "
                         "ORDER BY id").fetchall()


def shown(history: list[MemoryVersion]) -> list[tuple]:
    return [(v.id, v.status, v.content, v.updated) for v in history]


def copy_logs(src: Path, dst: Path) -> None:
    logs = src / "Memory" / ".memvault" / "history"
    for p in logs.glob("*"):
        target = dst / p.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_bytes() != p.read_bytes():
            shutil.copyfile(p, target)


def meet(sa: MemoryStore, sb: MemoryStore) -> None:
    """Sync both vault folders both ways until they hold the same notes and logs."""
    a, b = sa.root, sb.root
    for _ in range(4):
        for src, dst in ((a, b), (b, a)):
            for p in (src / "Memory").rglob("*.md"):
                rel = p.relative_to(src)
                if not (dst / rel).exists() or (dst / rel).read_bytes() != p.read_bytes():
                    write(dst, rel.as_posix(), p.read_text(encoding="utf-8"))
            copy_logs(src, dst)
        sa.sync()
        sb.sync()


def agree(sa: MemoryStore, sb: MemoryStore) -> None:
    assert live(sa) == live(sb)
    assert versions(sa) == versions(sb)
    for m, *_ in live(sa):
        assert shown(sa.history(m)) == shown(sb.history(m)), m


@pytest.mark.parametrize("loser_first_on_a", [True, False])
def test_both_devices_keep_the_carried_versions_under_the_same_memory(tmp_path: Path, loser_first_on_a: bool) -> None:
    a, b = tmp_path / "a" / "vault", tmp_path / "b" / "vault"
    a.mkdir(parents=True)
    sa = store(a)
    try:
        made = sa.memories.add("Plays chess on Sundays.", "semantic")
        sa.memories.update(made.id, content="Plays chess on Sundays, at the club.")
        sa.sync()
        shutil.copytree(a, b)
        sb = store(b)
        try:
            sb.sync()
            # The laptop (a) renames the note, the desktop (b) edits it; the
            # sync tool brings each the other's side.
            old = made.path
            moved = old.replace(".md", "-moved.md")
            (a / old).rename(a / moved)
            sa.sync_paths([old, moved])
            text = (b / old).read_text(encoding="utf-8").replace("Sundays", "Saturdays")
            (b / old).write_text(text, encoding="utf-8")
            sb.sync_paths([old])
            write(a, old, (b / old).read_text(encoding="utf-8"))
            order_a = [old, moved] if loser_first_on_a else [moved, old]
            for p in order_a:
                sa.sync_paths([p])
            # The laptop split an id off for one note; the sync tool brings the
            # desktop that note before the other.
            split = next(p for p in (old, moved) if file_frontmatter_id(a / p) != made.id)
            kept = moved if split == old else old
            for p in (split, kept):
                shutil.copyfile(a / p, b / p)
                sb.sync_paths([p])
            meet(sa, sb)
            assert len(live(sa)) == 2
            agree(sa, sb)
            # The note that kept the id is edited: its next version is numbered
            # past the versions its id's rows carry, on both devices alike.
            write(a, kept, (a / kept).read_text(encoding="utf-8").replace("club", "park"))
            meet(sa, sb)
            agree(sa, sb)
            assert len(versions(sa)) == 3
            # A lost data dir gets the same back from the vault.
            fresh = MemoryStore(a, load_settings({"vault": str(a)}), data_dir=tmp_path / "a" / "data2")
            try:
                fresh.sync()
                agree(fresh, sb)
            finally:
                fresh.close()
        finally:
            sb.close()
    finally:
        sa.close()
