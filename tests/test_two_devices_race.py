"""Renames racing edits across two devices: the machine of
``test_two_devices`` (two real daemons, a Syncthing-like sync, people and
agents on both sides) plus a person renaming memory notes, with the checks
of issue 20 items 1 and 2 at every quiet point:

- both devices list the same live memories with the same ids, contents,
  versions and created times;
- no two live memory notes on disk share a front-matter id;
- no live memory lacks its note (no phantoms), on either device;
- both devices hold the same history (earlier versions with their texts and
  reasons, forgotten memories and why) and show it (item 3: the history
  logs in the vault).

``MEMVAULT_TWO_DEVICE_EXAMPLES`` runs it longer.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter

from helpers import wait_for
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import rule
from test_two_devices import TwoDevices, caught_up, index_rows, token
from two_devices import Device, read_rows

from memvault.store.memory_store import MemoryStore
from memvault.store.settings import load_settings
from memvault.vault_io.parser import parse_note

RACES = {"renames": 0, "quiet_checks": 0}


class RacingDevices(TwoDevices):
    """TwoDevices, with renames and the stricter agreement of issue 20."""

    def settle(self) -> None:
        for d in self.devices:
            wait_for(lambda d=d: caught_up(d), timeout=30)

    @rule()
    def sync_tool_runs(self) -> None:
        """A round once both daemons have taken in what they saw: the harness's
        round checks both folders equal at its end, and a daemon now writes on
        its own (the version of an edit it read, a contested id), which a round
        running meanwhile would take for the sync tool leaving them different."""
        self.settle()
        self.sync.round()

    @rule(data=st.data())
    def rename_races_an_edit(self, data: st.DataObject) -> None:
        """The race itself: one device renames a memory note the other edits,
        both before the sync tool runs."""
        here, there = data.draw(st.permutations(self.devices), label="devices")
        mine, theirs = self.memory_notes(here), self.memory_notes(there)
        both = sorted(set(mine) & set(theirs))
        if not both:
            word = token()
            made = here.cli.add(f"Raced {word} here.", "fact")
            self.written.add(word)
            self.ids.append(made.id)
            self.settle()
            self.sync.round()
            self.settle()
            mine, theirs = self.memory_notes(here), self.memory_notes(there)
            both = sorted(set(mine) & set(theirs))
            if not both:
                return
        memory_id = both[data.draw(st.integers(0, 999), label="memory") % len(both)]
        word = token()
        edited = theirs[memory_id]
        edited.write_text(edited.read_text(encoding="utf-8") + f"\nEdited {word} while renamed.\n", encoding="utf-8")
        self.written.add(word)
        try:
            mine[memory_id].rename(mine[memory_id].with_name(f"renamed-{token()}.md"))
        except FileNotFoundError:
            return
        RACES["renames"] += 1

    def check_agreement(self) -> None:
        super().check_agreement()
        sql = ("SELECT id, content, created, json_extract(metadata, '$.version') FROM traces "
               "WHERE kind = 'memory' AND status = 'active' ORDER BY id")
        a, b = (index_rows(d, sql) for d in self.devices)
        assert a == b, f"the devices disagree on ids, versions or created: {set(a) ^ set(b)}"
        for d in self.devices:
            ids = Counter()
            folder = d.root / "Memory"
            for p in folder.rglob("*.md") if folder.exists() else []:
                note = parse_note(p.relative_to(d.root).as_posix(), p.read_bytes())
                if "conflict_of" in note.frontmatter or ".sync-conflict-" in p.name or not note.frontmatter.get("id"):
                    continue
                ids[str(note.frontmatter["id"])] += 1
            shared = {i: n for i, n in ids.items() if n > 1}
            assert not shared, f"two live notes share an id on the {d.name}: {shared}"
            phantoms = index_rows(d, "SELECT id FROM traces t WHERE kind = 'memory' AND status = 'active' "
                                     "AND NOT EXISTS (SELECT 1 FROM files f WHERE f.trace_id = t.id)")
            assert not phantoms, f"live memories without a note on the {d.name}: {phantoms}"
        self.check_history()
        RACES["quiet_checks"] += 1

    def check_history(self) -> None:
        versions = "SELECT id, json_extract(trace, '$.content'), reason FROM memory_versions ORDER BY id"
        va, vb = (state_rows(d, versions) for d in self.devices)
        assert va == vb, f"the devices disagree on earlier versions: {set(va) ^ set(vb)}"
        forgotten = "SELECT memory_id, reason FROM forgotten ORDER BY memory_id"
        fa, fb = (state_rows(d, forgotten) for d in self.devices)
        assert fa == fb, f"the devices disagree on forgotten memories: {set(fa) ^ set(fb)}"
        a, b = self.devices
        for (memory_id,) in index_rows(a, "SELECT id FROM traces WHERE kind = 'memory' AND status = 'active'"):
            shown = [[(v.id, v.content, v.reason) for v in d.cli.history(memory_id)] for d in (a, b)]
            assert shown[0] == shown[1], f"history of {memory_id} differs: {shown}"
        self.check_lost_data_dir(a, b, fa)

    def check_lost_data_dir(self, a: Device, b: Device, forgotten: list[tuple]) -> None:
        """The desktop's data dir lost: a rebuild from its vault alone (a copy
        taken now) gives back the laptop's list, history and forgotten set."""
        copy = self.tmp / f"lost-{RACES['quiet_checks']}"
        shutil.copytree(b.root, copy / "Notes")
        fresh = MemoryStore(copy / "Notes", load_settings({"vault": str(copy / "Notes")}), data_dir=copy / "data")
        try:
            fresh.rebuild()
            live = ("SELECT id, content, created, json_extract(metadata, '$.version') FROM traces "
                    "WHERE kind = 'memory' AND status = 'active' ORDER BY id")
            assert fresh.con.execute(live).fetchall() == index_rows(a, live), "a rebuilt device lists other memories"
            assert fresh.con.execute("SELECT memory_id, reason FROM state.forgotten ORDER BY memory_id").fetchall() \
                == forgotten, "a rebuilt device forgot other memories"
            for (memory_id, *_) in index_rows(a, live):
                mine = [(v.id, v.content, v.reason) for v in fresh.history(memory_id)]
                assert a.cli is not None
                assert mine == [(v.id, v.content, v.reason) for v in a.cli.history(memory_id)], memory_id
        finally:
            fresh.close()
            shutil.rmtree(copy, ignore_errors=True)


def state_rows(device, sql: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    """Rows of a device's durable state (read-only)."""
    return read_rows(device.data_dir, "state.db", sql)


RacingDevices.TestCase.settings = settings(
    max_examples=int(os.environ.get("MEMVAULT_TWO_DEVICE_EXAMPLES", "5")),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestRacingDevices = RacingDevices.TestCase


def test_the_machine_renamed_and_checked() -> None:
    """The checks matter only if renames and quiet checks happened."""
    import pytest

    if RACES["quiet_checks"] == 0 and RACES["renames"] == 0:
        pytest.skip("runs after TestRacingDevices in this file")
    assert RACES["quiet_checks"] > 0, RACES
    if RACES["renames"] == 0:
        # A rename can lose its race with the daemon setting the note aside;
        # test_two_devices_identity.py stages the race deterministically.
        pytest.skip(f"no rename won its race in this run's timing: {RACES}")
