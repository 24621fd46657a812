"""A merge killed halfway (issue 32 item 8): ``kill -9`` after the survivor
took the members' text and before every member was forgotten left a
half-applied merge (a member still live beside the survivor holding its
text, the run marked running) that ``doctor`` called in order.

Now ``doctor`` names it (exit 1), ``doctor --repair`` (or the next merge,
run or undo) finishes it as the merge would have, and the whole merge can
be undone as one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli
from memvault.store.index.lookup import find_trace

KILL_AT_FORGET = """
import os, signal, sys
from memvault.store.memory_store import MemoryStore
from memvault.store.memories.mirror import Memories

real = Memories.forget
def forget(self, ref, reason=None):
    result = real(self, ref, reason)
    os.kill(os.getpid(), signal.SIGKILL)  # the first member is forgotten, the second not yet
Memories.forget = forget
store = MemoryStore.open(sys.argv[1])
store.merge(["m-a", "m-b", "m-c"])
"""


def _note(root: Path, mid: str, content: str) -> None:
    write(root, f"Memory/semantic/{mid}.md", f"---\nid: {mid}\ntype: semantic\nscope: user\n"
                                             f"created: '2026-03-01T00:00:00+00:00'\nsource: manual\n---\n{content}\n")


@pytest.fixture
def killed(vault: Path, memvault_env: Path) -> Path:
    """A vault whose ``merge m-a m-b m-c`` was killed after forgetting m-b."""
    _note(vault, "m-a", "Prefers dark mode")
    _note(vault, "m-b", "Likes dark themes in every editor she uses")
    _note(vault, "m-c", "Dark mode, always and everywhere")
    with opened(vault) as v:
        v.sync()
    env = {**os.environ, "MEMVAULT_EMBEDDING_MODEL": "none"}
    done = subprocess.run([sys.executable, "-c", KILL_AT_FORGET, str(vault)], env=env, capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr.decode()
    return vault


def doctor(vault: Path, *args: str) -> tuple[int, dict]:
    r = CliRunner().invoke(cli, ["--vault", str(vault), "doctor", "--json", *args])
    return r.exit_code, json.loads(r.stdout.splitlines()[-1])


def test_doctor_names_a_merge_killed_halfway_and_repair_finishes_it(killed: Path) -> None:
    vault = killed
    code, report = doctor(vault)
    assert code == 1 and report["healthy"] is False, report
    found = [f for f in report["findings"] if f["check"] == "consolidation"]
    assert found and "cut short" in found[0]["detail"] and "m-c" in found[0]["detail"], report
    code, report = doctor(vault, "--repair")
    assert code == 0 and "recover" in report.get("repaired", []), report
    with opened(vault) as v:
        for mid in ("m-b", "m-c"):  # both merged, as the merge would have done
            t = find_trace(v.con, mid)
            assert (t.status, t.metadata.get("merged_into")) == ("superseded", "m-a"), (mid, t.status)
        assert find_trace(v.con, "m-a").content == "Likes dark themes in every editor she uses"
        (run,) = v.consolidation_runs()
        v.undo_consolidation(run["run"])  # and undone as one
        for mid, text in (("m-a", "Prefers dark mode"), ("m-b", "Likes dark themes in every editor she uses"),
                          ("m-c", "Dark mode, always and everywhere")):
            t = find_trace(v.con, mid)
            assert (t.status, t.content) == ("active", text), mid
    assert doctor(vault)[0] == 0
