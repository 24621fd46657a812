"""Two devices on one synced vault converge.

Two real daemons watch two copies of a vault; a file-sync tool that behaves
like Syncthing (``two_devices.FileSync``) carries changes between them.
People edit notes and memory notes on both devices, agents add, update and
forget memories on both, the same memory is added on both within a second,
and the sync tool runs at any point. After quiet (every daemon idle, a sync
round that carries nothing):

- both devices hold the same live memories (same ids, same text);
- no text either side wrote is lost (on disk, or in an index as a version);
- no memory exists twice because the same content was added on both sides;
- a conflict copy, memvault's or the sync tool's, is never a memory, and the
  sync tool's are listed as conflicts;
- nothing writes during a quiet window: no ping-pong between the devices.

``HYPOTHESIS_PROFILE=dev`` runs it longer.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from helpers import wait_for
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from two_devices import Device, FileSync, files_of, read_rows

from memvault.store.memories.mirror import MemoryOpError
from memvault.vault_io.note import content_hash
from memvault.vault_io.parser import parse_note

_tokens = itertools.count()

#: What the machine staged across its runs, for :func:`test_the_machine_staged_real_conflicts`.
RUNS = {"machines": 0, "sync_conflicts": 0, "quiet_checks": 0, "same_adds": 0, "texts_in_flight": 0}


def token() -> str:
    return f"tok{next(_tokens)}x"


def index_rows(device: Device, sql: str, params: tuple = ()) -> list[tuple]:
    """Rows of a device's index, read-only."""
    return read_rows(device.data_dir, "index.db", sql, params)


def caught_up(device: Device) -> bool:
    """The device's index holds every note on its disk as it is now, and no
    store-side write is pending."""
    if not device.idle():
        return False
    on_disk = {
        p: content_hash(b) for p, b in files_of(device.root).items()
        if p.endswith(".md") and not any(part.startswith(".") for part in p.split("/"))
    }
    indexed = dict(index_rows(device, "SELECT path, hash FROM files WHERE kind = 'note'"))
    return indexed == on_disk and device.cli is not None and not device.cli.con.execute(
        "SELECT count(*) FROM state.outbox").fetchone()[0]


class TwoDevices(RuleBasedStateMachine):
    """People and agents on two devices, a sync tool between them."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="memvault-two-"))
        first = self.tmp / "laptop" / "Notes"
        first.mkdir(parents=True)
        (first / "Welcome.md").write_text("# Welcome\n\nThe shared vault.\n", encoding="utf-8")
        second = self.tmp / "desktop" / "Notes"
        shutil.copytree(first, second)
        self.devices = [Device("laptop", first, self.tmp / "laptop" / "data"),
                        Device("desktop", second, self.tmp / "desktop" / "data")]
        self.sync = FileSync(*self.devices)
        self.written: set[str] = set()
        self.ids: list[str] = []

    @initialize()
    def start(self) -> None:
        for d in self.devices:
            d.start()
        self.sync.round()
        RUNS["machines"] += 1

    def teardown(self) -> None:
        RUNS["sync_conflicts"] += self.sync.conflicts_written
        for d in self.devices:
            try:
                d.stop()
            except Exception:  # noqa: BLE001 - teardown must free the other device too
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers -----------------------------------------------------------------

    def device(self, data: st.DataObject) -> Device:
        return data.draw(st.sampled_from(self.devices), label="device")

    def memory_notes(self, d: Device) -> dict[str, Path]:
        out = {}
        folder = d.root / "Memory"
        for p in folder.rglob("*.md") if folder.exists() else []:
            note = parse_note(p.relative_to(d.root).as_posix(), p.read_bytes())
            if "conflict_of" in note.frontmatter or ".sync-conflict-" in p.name:
                continue
            if note.frontmatter.get("id"):
                out[str(note.frontmatter["id"])] = p
        return out

    # -- agents and people ---------------------------------------------------------

    @rule(data=st.data(), kind=st.sampled_from(["fact", "event", "todo"]))
    def agent_adds(self, data: st.DataObject, kind: str) -> None:
        word = token()
        result = self.device(data).cli.add(f"Remember {word} always.", kind)
        self.written.add(word)
        self.ids.append(result.id)

    @rule(kind=st.sampled_from(["fact", "lesson"]))
    def the_same_memory_added_on_both(self, kind: str) -> None:
        word = token()
        ids = {d.cli.add(f"Shared {word} on both.", kind).id for d in self.devices}
        assert len(ids) == 1, f"one content, two ids: {ids}"
        RUNS["same_adds"] += 1
        self.written.add(word)
        self.ids.extend(ids)

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def agent_updates(self, data: st.DataObject) -> None:
        word = token()
        try:
            self.device(data).cli.update(data.draw(st.sampled_from(self.ids)), content=f"Now {word} instead.")
        except MemoryOpError:
            return  # forgotten, or not yet on this device
        self.written.add(word)

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def agent_forgets(self, data: st.DataObject) -> None:
        try:
            self.device(data).cli.forget(data.draw(st.sampled_from(self.ids)))
        except MemoryOpError:
            pass

    @rule(data=st.data())
    def person_edits_a_memory_note(self, data: st.DataObject) -> None:
        d = self.device(data)
        notes = self.memory_notes(d)
        if not notes:
            return
        p = notes[data.draw(st.sampled_from(sorted(notes)))]
        word = token()
        p.write_text(p.read_text(encoding="utf-8") + f"\nEdited {word} on the {d.name}.\n", encoding="utf-8")
        self.written.add(word)

    @rule(data=st.data())
    def person_writes_a_note(self, data: st.DataObject) -> None:
        d = self.device(data)
        word = token()
        p = d.root / f"Journal/{data.draw(st.integers(0, 3))}.md"
        p.parent.mkdir(exist_ok=True)
        old = p.read_text(encoding="utf-8") if p.exists() else ""
        p.write_text(old + f"Wrote {word} on the {d.name}.\n", encoding="utf-8")
        self.written.add(word)

    @rule()
    def sync_tool_runs(self) -> None:
        self.sync.round()

    # -- quiet ----------------------------------------------------------------------

    @rule()
    def quiet(self) -> None:
        """Let everything settle, then check the devices agree."""
        for _ in range(20):
            for d in self.devices:
                wait_for(lambda d=d: caught_up(d), timeout=30)
            if self.sync.round() == 0:
                break
        else:
            pytest.fail("the devices never settled: they keep changing each other's files")
        for d in self.devices:
            wait_for(lambda d=d: caught_up(d), timeout=30)
        self.check_agreement()
        self.check_no_ping_pong()
        RUNS["quiet_checks"] += 1

    def live(self, d: Device) -> dict[str, str]:
        return dict(index_rows(d, "SELECT id, content FROM traces WHERE kind = 'memory' AND status = 'active'"))

    def check_agreement(self) -> None:
        a, b = (self.live(d) for d in self.devices)
        assert a == b, f"the devices disagree: {set(a.items()) ^ set(b.items())}"
        for d in self.devices:
            keys = [k for (k,) in index_rows(
                d, "SELECT content_key FROM traces WHERE kind = 'memory' AND status = 'active'")]
            assert len(keys) == len(set(keys)), "the same memory is live twice"
            copies = index_rows(d, "SELECT f.path, t.kind FROM files f JOIN traces t ON t.id = f.trace_id "
                                   "WHERE f.path LIKE '%.sync-conflict-%'")
            assert all(kind == "note" for _, kind in copies), f"a sync conflict copy is a memory: {copies}"
            listed = {c.conflict_note for c in d.cli.conflicts()}
            assert {p for p, _ in copies} <= listed, "a sync conflict copy is not listed"
            notes = self.memory_notes(d)
            assert set(notes) == set(a), f"live memories and memory notes differ on the {d.name}"

    def check_no_ping_pong(self) -> None:
        before = [files_of(d.root) for d in self.devices]
        end = time.monotonic() + 0.3
        while time.monotonic() < end:  # a quiet window: any write in it is a ping-pong
            assert [files_of(d.root) for d in self.devices] == before, "a device wrote with nothing to do"
            time.sleep(0.05)

    def missing_text(self) -> set[str]:
        """What was written and is now in no file of either vault and in
        no index (as a version, a fact, a trace)."""
        text = " ".join(b.decode("utf-8", "replace") for d in self.devices for b in files_of(d.root).values())
        for d in self.devices:
            text += " ".join(c for (c,) in index_rows(d, "SELECT content FROM traces"))
        return self.written - set(re.findall(r"tok\d+x", text))

    @invariant()
    def nothing_written_is_lost(self) -> None:
        if not self.missing_text():
            return
        RUNS["texts_in_flight"] += 1
        # A write in flight holds a person's text in its temp file for a
        # moment (the exchange-and-check replace swaps the note there before
        # it checks it), and files_of leaves temp files out as a sync tool
        # does: what is still missing once both devices have caught up is lost.
        for d in self.devices:
            wait_for(lambda d=d: caught_up(d), timeout=30)
        missing = self.missing_text()
        assert not missing, f"lost text: {sorted(missing)}"


TwoDevices.TestCase.settings = settings(
    max_examples=int(os.environ.get("MEMVAULT_TWO_DEVICE_EXAMPLES", "6")),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestTwoDevices = TwoDevices.TestCase


def test_the_machine_staged_real_conflicts() -> None:
    """The agreement checks matter only if sync conflicts and same-content adds happened."""
    if RUNS["machines"] == 0:
        pytest.skip("runs after TestTwoDevices in this file")
    assert RUNS["quiet_checks"] > 0 and RUNS["same_adds"] > 0, RUNS
    if RUNS["sync_conflicts"] == 0:
        # Whether a round meets two edits of one note depends on the daemons'
        # timing (they now write version lines of their own); the staged,
        # deterministic cases are in test_two_devices_conflicts.py.
        pytest.skip(f"no sync conflict happened in this run's timing: {RUNS}")
