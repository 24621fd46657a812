"""A note a sync tool replaced so that its stat hardly moved (issue 20, seed 6).

Syncthing delivers a file by writing a hidden temp file, setting the sender's
mtime and renaming it over the note. When the other device's version has the
same size and mtime, only the inode (and the ctime, unless the rename fell in
the same timestamp tick as the last change) tells the new file from the one
indexed. In the two-device soak (seed 6) one daemon's index kept the hash of
bytes its note no longer held, with the note's current stat, and never read
the note again. These tests replace notes that way and check that ``sync``
and the daemon both end with the index describing the bytes on disk.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import wait_for, write
from two_devices import Device, _deliver

from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.index.lookup import find_trace
from memvault.store.memory_store import MemoryStore
from memvault.store.settings import load_settings
from memvault.vault_io.note import content_hash

#: An mtime long past, so no entry is racy by its mtime.
OLD_NS = 10**18


def store(root: Path) -> MemoryStore:
    root.mkdir(parents=True, exist_ok=True)
    return MemoryStore(root, load_settings({"vault": str(root)}), data_dir=root.parent / "data")


def indexed_hash(s: MemoryStore, rel: str) -> str | None:
    row = rec.get_file(s.con, rel)
    return row.hash if row else None


def on_disk(s: MemoryStore, rel: str) -> str:
    return content_hash((s.root / rel).read_bytes())


def deliver_same_stat(path: Path, data: bytes) -> None:
    """The other device's version of ``path``: same size, the old mtime kept,
    renamed into place from a temp file (a new inode)."""
    before = path.stat()
    assert len(data) == before.st_size and data != path.read_bytes()
    _deliver(path, data, before.st_mtime_ns)
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert after.st_ino != before.st_ino


def record_stat(s: MemoryStore, rel: str, **cols: int) -> None:
    """Set columns of the index's row for ``rel`` (what a race left there)."""
    sets = ", ".join(f"{k} = ?" for k in cols)
    with write_transaction(s.con):
        s.con.execute(f"UPDATE files SET {sets} WHERE path = ?", (*cols.values(), rel))


@pytest.fixture
def device(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    from memvault.store.index import reconcile

    # As if every file were indexed long after its last change (a reconcile
    # that waited for the write lock): no entry is racy by its timestamps.
    monkeypatch.setattr(reconcile, "RACY_NS", 0)
    s = store(tmp_path / "laptop" / "vault")
    yield s
    s.close()


def test_sync_reads_a_same_size_delivery_renamed_in_within_one_ctime_tick(device: MemoryStore) -> None:
    p = write(device.root, "A.md", "# A\n\nalpha words\n")
    os.utime(p, ns=(OLD_NS, OLD_NS))
    device.sync()
    assert rec.get_file(device.con, "A.md").ctime_ns != 0
    deliver_same_stat(p, b"# A\n\nomega words\n")
    # A rename in the tick of the replaced file's last change leaves the
    # ctime as recorded: mtime, size and ctime all match, the inode does not.
    record_stat(device, "A.md", ctime_ns=p.stat().st_ctime_ns)
    device.sync()
    assert indexed_hash(device, "A.md") == on_disk(device, "A.md")
    assert "omega" in find_trace(device.con, "A.md").content


def test_a_path_given_to_sync_paths_is_read_whatever_its_stat(device: MemoryStore) -> None:
    """What seed 6 left: the row holds the note's current stat, inode and
    all, with the hash of bytes it no longer has. The daemon's reconcile of
    a path it was told about reads the note (a hint is never trusted away)."""
    p = write(device.root, "A.md", "# A\n\nalpha words\n")
    os.utime(p, ns=(OLD_NS, OLD_NS))
    device.sync()
    deliver_same_stat(p, b"# A\n\nomega words\n")
    st = p.stat()
    record_stat(device, "A.md", mtime_ns=st.st_mtime_ns, size=st.st_size, ctime_ns=st.st_ctime_ns, inode=st.st_ino)
    device.sync_paths(["A.md"])
    assert indexed_hash(device, "A.md") == on_disk(device, "A.md")


def test_a_delivery_between_our_version_line_write_and_its_stat_is_read_again(
    device: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reconcile writes a hand-edited memory note's next version line,
    then stats the note; the sync tool delivered the other device's edit of
    the same size in between. That stat describes the delivered bytes, not
    the ones written: it must not make the next sync skip the note."""
    from memvault.vault_io import replace

    made = device.memories.add("Keeps the keys in the blue bowl.", "semantic")
    note = device.root / made.path
    note.write_text(note.read_text(encoding="utf-8").replace("blue", "gray"), encoding="utf-8")
    real = replace.replace_if_unchanged
    delivered: list[bytes] = []

    def then_the_sync_tool_delivers(path: Path, expected: str, new: bytes, trash: Path, **kw: object) -> bool:
        done = real(path, expected, new, trash, **kw)  # type: ignore[arg-type]
        if done and not delivered:
            delivered.append(new.replace(b"gray", b"pink"))
            deliver_same_stat(path, delivered[0])
        return done

    monkeypatch.setattr(replace, "replace_if_unchanged", then_the_sync_tool_delivers)
    device.sync()
    assert delivered, "the reconcile wrote no version line"
    monkeypatch.setattr(replace, "replace_if_unchanged", real)
    device.sync()
    assert indexed_hash(device, made.path) == on_disk(device, made.path)
    assert "pink" in device.read(made.id).content


def test_the_daemon_picks_up_a_same_size_delivery_with_the_old_mtime(tmp_path: Path) -> None:
    root = tmp_path / "laptop" / "Notes"
    p = write(root, "A.md", "# A\n\nalpha words\n")
    os.utime(p, ns=(OLD_NS, OLD_NS))
    laptop = Device("laptop", root, tmp_path / "laptop" / "data")
    laptop.start()
    try:
        assert laptop.cli is not None
        wait_for(lambda: indexed_hash(laptop.cli, "A.md") == on_disk(laptop.cli, "A.md"))
        deliver_same_stat(p, b"# A\n\nomega words\n")
        wait_for(lambda: indexed_hash(laptop.cli, "A.md") == on_disk(laptop.cli, "A.md"))
    finally:
        laptop.stop()


def test_an_older_read_by_another_connection_never_overwrites_a_newer_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CLI's reconcile reads a note, then waits (for the write lock); the
    sync tool delivers the other device's version and the daemon records it,
    its event handled. The CLI's older read must not be written over that:
    no event is left to make anyone read the note again."""
    from memvault.store.index import reconcile_pass

    root = tmp_path / "laptop" / "vault"
    daemon, cli = store(root), store(root)  # one data dir, two connections
    try:
        p = write(root, "A.md", "# A\n\nalpha words\n")
        daemon.sync()
        p.write_text("# A\n\nalpha words, edited\n", encoding="utf-8")
        real = reconcile_pass.read_notes

        def read_then_wait(*args, **kwargs):  # type: ignore[no-untyped-def]
            results = list(real(*args, **kwargs))  # the CLI has read the edit
            monkeypatch.setattr(reconcile_pass, "read_notes", real)
            _deliver(p, b"# A\n\nomega words from the desktop\n", p.stat().st_mtime_ns + 10**9)
            daemon.sync_paths(["A.md"])  # the delivery's event
            assert indexed_hash(daemon, "A.md") == on_disk(daemon, "A.md")
            yield from results

        monkeypatch.setattr(reconcile_pass, "read_notes", read_then_wait)
        cli.sync_paths(["A.md"])
        assert indexed_hash(cli, "A.md") == on_disk(cli, "A.md")
        assert "omega" in find_trace(cli.con, "A.md").content
    finally:
        cli.close()
        daemon.close()
