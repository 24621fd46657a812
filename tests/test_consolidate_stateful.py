"""The two-sided state machine with consolidation in it: merges, consolidation
runs (on today and on a day far enough ahead that memories fade and are
archived), taking a merged memory back out, and undoing a run, interleaved
with a person's edits, renames and deletions and the store's own changes.

Every rule and invariant of :class:`MirrorMachine` holds as well: no text
either side wrote is lost, every live memory has exactly one note, reading
never writes, and a rebuild (with or without the durable state) gives back
what it must.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from test_mirror_stateful import MirrorMachine

from memvault.store.memories.mirror import MemoryOpError, MemoryWriteError

#: Runs, merges and undos the machines made, for the check below.
CONSOLIDATED = {"runs": 0, "merges": 0, "undos": 0, "archived": 0}


class ConsolidateMachine(MirrorMachine):
    """MirrorMachine, plus merge and consolidate steps."""

    def live_ids(self) -> list[str]:
        """The machine's memories that are live now."""
        if not self.ids:
            return []
        marks = ",".join("?" * len(self.ids))
        return [r[0] for r in self.vault.con.execute(
            f"SELECT id FROM traces WHERE status = 'active' AND kind = 'memory' AND id IN ({marks}) ORDER BY id",
            self.ids)]

    def merge_some(self, data: st.DataObject, racing: bool) -> None:
        """Merge two or three live memories; ``racing``: the person saves one
        of the notes between the store's commit and its write."""
        live = self.live_ids()
        if len(live) < 2:
            return
        chosen = data.draw(st.lists(st.sampled_from(live), min_size=2, max_size=3, unique=True))
        if racing:
            self.race_with_person()
        try:
            outcome = self.vault.merge(chosen)
        except MemoryWriteError:
            raise  # a note that could not be written is a failure here, not a refusal
        except MemoryOpError:
            return  # deleted or edited meanwhile: refused, nothing written
        finally:
            self.mem.before_write = None
        CONSOLIDATED["merges"] += bool(outcome.merged)

    @precondition(lambda self: len(self.ids) >= 2)
    @rule(data=st.data())
    def store_merge(self, data: st.DataObject) -> None:
        self.merge_some(data, racing=False)

    @precondition(lambda self: len(self.ids) >= 2)
    @rule(data=st.data())
    def store_merge_racing_person_save(self, data: st.DataObject) -> None:
        self.merge_some(data, racing=True)

    @rule(ahead=st.sampled_from([0, 400]))
    def store_consolidate(self, ahead: int) -> None:
        today = (datetime.now(timezone.utc) + timedelta(days=ahead)).date()
        report = self.vault.consolidate(today=today)
        assert not [f for f in report.failed if "could not be written" in f["error"]], report.failed
        CONSOLIDATED["runs"] += 1
        CONSOLIDATED["archived"] += report.counts().get("archive", 0)

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def store_restore_merged(self, data: st.DataObject) -> None:
        merged = [r[0] for r in self.vault.con.execute("SELECT memory_id FROM state.merges ORDER BY memory_id")]
        if not merged:
            return
        try:
            self.vault.restore(data.draw(st.sampled_from(merged)))
        except MemoryWriteError:
            raise
        except MemoryOpError:
            pass

    @rule()
    def store_undo_latest_run(self) -> None:
        runs = [r for r in self.vault.consolidation_runs(5) if r["status"] == "done"]
        if not runs:
            return
        try:
            self.vault.undo_consolidation(runs[0]["run"])
        except MemoryWriteError:
            raise
        except MemoryOpError:
            return
        CONSOLIDATED["undos"] += 1


# The parent's settings, with fewer examples: each step here does more.
ConsolidateMachine.TestCase.settings = settings(MirrorMachine.TestCase.settings, max_examples=20)
TestConsolidateMirror = ConsolidateMachine.TestCase


def test_the_machine_merged_consolidated_and_undid() -> None:
    """The consolidation rules assert only when they acted: make sure they did."""
    if CONSOLIDATED["runs"] == 0:
        import pytest

        pytest.skip("runs after TestConsolidateMirror in this file")
    assert CONSOLIDATED["merges"] > 0 and CONSOLIDATED["undos"] > 0 and CONSOLIDATED["archived"] > 0, CONSOLIDATED
