"""Two devices that numbered a memory's versions apart agree on its history;
a sync-conflict copy never takes a memory's id.

While a memory's id is contested (a rename on one device racing an edit on
the other), each device may keep another note's versions under it: two
version ids then claim one (memory, version) slot in the history logs.
``bench/bench_two_devices.py`` found the devices keeping different ones (the
slot went to whichever record a device read last) and showing different
``history``. The slot goes to the row whose newest record is the greatest,
whatever the order; a version the logs move to another memory moves in the
index too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import wait_for
from two_devices import Device

from memvault.store.db.connection import connect
from memvault.store.history import logfile, replicate
from memvault.store.memory_store import MemoryStore
from memvault.store.settings import load_settings

LOGS = "Memory/.memvault/history"


def _version(version_id: str, memory_id: str, version: int, text: str) -> dict:
    trace = {"id": version_id, "kind": "memory", "type": "semantic", "content": text, "status": "superseded",
             "metadata": {"version_of": memory_id, "version": version}}
    return {"id": version_id, "memory_id": memory_id, "version": version, "reason": "edited in the vault",
            "superseded_at": "2026-11-26T10:00:00+00:00", "trace": json.dumps(trace)}


def _read_in_order(tmp: Path, records: list[dict], order: list[str]) -> list[tuple]:
    """A fresh state that reads the devices' log files in ``order``, one file a sync."""
    folder = tmp / "logs"
    folder.mkdir(parents=True)
    con = connect(tmp / "data" / "index.db")
    try:
        for device in order:
            mine = [r for r in records if r["d"] == device]
            logfile.append(logfile.tail_path(folder, device), [logfile.encode(r) for r in mine])
            replicate.sync_history(con, folder, write=False)
        return con.execute("SELECT id, memory_id, version FROM state.memory_versions ORDER BY id").fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("stamps", [(5, 7), (7, 5), (6, 6)])
def test_two_ids_claiming_one_version_slot_end_the_same_in_either_order(tmp_path: Path, stamps: tuple) -> None:
    records = [
        {"d": "aaaa", "n": 1, "t": stamps[0], "tb": "memory_versions", "k": ["m-a.v1"],
         "r": _version("m-a.v1", "m-c", 1, "Kept on the laptop")},
        {"d": "bbbb", "n": 1, "t": stamps[1], "tb": "memory_versions", "k": ["m-c.v1"],
         "r": _version("m-c.v1", "m-c", 1, "Kept on the desktop")},
    ]
    one = _read_in_order(tmp_path / "x", records, ["aaaa", "bbbb"])
    other = _read_in_order(tmp_path / "y", records, ["bbbb", "aaaa"])
    assert one == other
    newest = max(records, key=lambda r: (r["t"], r["d"], r["n"]))
    assert one == [(newest["k"][0], "m-c", 1)]


def test_a_version_the_logs_move_to_another_memory_moves_in_the_index(tmp_path: Path) -> None:
    """A daemon reads another device's record giving a version of memory X
    to memory Y: ``history`` of Y shows it, X's does not, as on a device
    rebuilt from the vault."""
    root = tmp_path / "laptop" / "Notes"
    root.mkdir(parents=True)
    device = Device("laptop", root, tmp_path / "laptop" / "data")
    device.start()
    try:
        assert device.cli is not None
        x = device.cli.add("Parks on level two", "fact").id
        y = device.cli.add("Takes the early train", "fact").id
        device.cli.update(x, content="Parks on level three", reason="level two was full")
        con = device.cli.con
        row = replicate.current_row(con, "memory_versions", [f"{x}.v1"])
        assert row is not None
        trace = json.loads(row["trace"])
        trace["metadata"]["version_of"] = y
        moved = {**row, "memory_id": y, "trace": json.dumps(trace)}
        stamp = int(con.execute("SELECT max(stamp) FROM state.history_records").fetchone()[0]) + 1000
        other = logfile.tail_path(root / LOGS, "ffffffffffff")
        logfile.append(other, [logfile.encode(
            {"d": "ffffffffffff", "n": 1, "t": stamp, "tb": "memory_versions", "k": [f"{x}.v1"], "r": moved})])

        def shown(memory_id: str) -> list[str]:
            return [v.id for v in device.cli.history(memory_id)]

        wait_for(lambda: shown(y) == [y, f"{x}.v1"], timeout=30)
        assert shown(x) == [x]
    finally:
        device.stop()
    fresh = MemoryStore(root, load_settings({"vault": str(root)}), data_dir=tmp_path / "rebuilt")
    try:
        fresh.rebuild(embed=False)
        assert [v.id for v in fresh.history(y)] == [y, f"{x}.v1"]
        assert [v.id for v in fresh.history(x)] == [x]
    finally:
        fresh.close()


def test_a_sync_conflict_copy_arriving_with_a_rename_of_its_note_never_takes_the_memory_id(tmp_path: Path) -> None:
    """The note of a memory renamed here while the sync tool writes a
    conflict copy of it (same id in its front-matter), both seen in one
    sync: the renamed note keeps the memory, the copy is a note. Before, the
    copy (first by path) was taken for the moved note and held the id, and
    the renamed note got a derived id on this device only."""
    root = tmp_path / "vault"
    root.mkdir()
    store = MemoryStore(root, load_settings({"vault": str(root)}), data_dir=tmp_path / "data")
    try:
        made = store.add("Remember the blue door", "fact")
        note = root / made.path
        copy = note.with_name(f"{note.stem}.sync-conflict-20261126-101010-DESKTOP.md")
        copy.write_text(note.read_text(encoding="utf-8") + "\nEdited on the desktop.\n", encoding="utf-8")
        assert copy.name < "renamed.md"  # the copy comes first in the batch
        note.rename(note.with_name("renamed.md"))
        store.sync()
        rows = dict(store.con.execute("SELECT path, trace_id FROM files WHERE path LIKE 'Memory/%'").fetchall())
        assert rows[note.with_name("renamed.md").relative_to(root).as_posix()] == made.id
        assert rows[copy.relative_to(root).as_posix()] != made.id
        live = store.con.execute("SELECT id, path FROM traces WHERE kind = 'memory' AND status = 'active'").fetchall()
        assert live == [(made.id, note.with_name("renamed.md").relative_to(root).as_posix())]
    finally:
        store.close()


def test_an_id_change_onto_a_version_number_already_held_keeps_both_versions(tmp_path: Path) -> None:
    """A note's trace takes an id whose memory already has versions in the
    state (another device's log brought them before the note): a version
    number both hold stays under the old id instead of failing the batch
    (``UNIQUE constraint failed``, which left the daemon's index behind)."""
    from memvault.store.db import records as rec

    con = connect(tmp_path / "data" / "index.db")
    try:
        for version_id, memory_id in (("m-new.v1", "m-new"), ("m-old.v1", "m-old"), ("m-old.v2", "m-old")):
            row = _version(version_id, memory_id, int(version_id[-1]), version_id)
            con.execute("INSERT INTO state.memory_versions (id, memory_id, version, trace, reason, superseded_at) "
                        "VALUES (:id, :memory_id, :version, :trace, :reason, :superseded_at)", row)
        rec.rename_trace(con, "m-old", "m-new")
        assert con.execute("SELECT id, memory_id FROM state.memory_versions ORDER BY id").fetchall() == [
            ("m-new.v1", "m-new"), ("m-old.v1", "m-old"), ("m-old.v2", "m-new")]
    finally:
        con.close()


def test_a_version_whose_newest_record_loses_its_slot_is_gone_on_every_device(tmp_path: Path) -> None:
    """The newest record of a version moves it into a slot another id holds
    with a newer record: no device keeps the version's older row (a device
    that read the older record first kept it, and showed another history)."""
    import itertools

    records = [
        {"d": "cccc", "n": 1, "t": 3, "tb": "memory_versions", "k": ["m-a.v2"],
         "r": _version("m-a.v2", "m-a", 2, "Made on the desktop")},
        {"d": "aaaa", "n": 1, "t": 5, "tb": "memory_versions", "k": ["m-a.v2"],
         "r": _version("m-a.v2", "m-c", 2, "Moved on the laptop")},
        {"d": "bbbb", "n": 1, "t": 9, "tb": "memory_versions", "k": ["m-c.v2"],
         "r": _version("m-c.v2", "m-c", 2, "Kept on the tablet")},
    ]
    seen = {tuple(_read_in_order(tmp_path / "-".join(order), records, list(order)))
            for order in itertools.permutations(["aaaa", "bbbb", "cccc"])}
    assert seen == {(("m-c.v2", "m-c", 2),)}
