"""Obsidian's regex "Excluded files" filters run in linear time.

A ``/regex/`` in ``userIgnoreFilters`` (``.obsidian/app.json``) is matched
against every path of the vault. Python's backtracking engine takes time
exponential in the path's length on a catastrophic one (``/^(a+)+$/``
against ``aaaa...a!.md``): one such filter hung ``sync``. They run on RE2
(linear time, whatever the pattern); a filter RE2 cannot run (a
backreference, a lookaround) is not applied and said once, naming app.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from helpers import write

from memvault.vault_io.scan import IgnoreRules

MEMVAULT = Path(sys.executable).parent / "memvault"
SLOW_NAME = "a" * 60 + "!.md"  # 2^60 ways to split the a's for a backtracking (a+)+


def test_a_catastrophic_filter_is_matched_in_linear_time() -> None:
    rules = IgnoreRules(["/^(a+)+$/", "/(x|x)*y/", "/(\\w*)*\\.canvas$/"])
    started = time.process_time()
    assert not rules.ignored(SLOW_NAME) and not rules.ignored("x" * 5000)
    assert rules.ignored("aaaa") and rules.ignored("Boards/plan.canvas")
    assert time.process_time() - started < 1.0  # microseconds each; a backtracking engine: forever
    assert rules.problems == []


def test_obsidian_filters_keep_their_meaning() -> None:
    rules = IgnoreRules(["/^Templates\\//", "/\\.excalidraw\\.md$/", "Archive", "/(^|\\/)_[^/]*$/", "/[/"])
    assert rules.ignored("Templates/x.md") and not rules.ignored("My Templates/x.md")
    assert rules.ignored("Drawings/a.excalidraw.md") and not rules.ignored("Drawings/a.md")
    assert rules.ignored("Archive 2020/x.md") and rules.ignored("Notes/_draft.md")
    assert not rules.ignored("Notes/a_b.md")
    assert rules.problems == ["the excluded-files filter '/[/' is not a valid regex; it is not applied"]


def test_sync_with_a_catastrophic_and_an_unsupported_filter_finishes_and_says_so_once(
    vault: Path, memvault_env: Path
) -> None:
    write(vault, ".obsidian/app.json", json.dumps(
        {"userIgnoreFilters": ["/^(a+)+$/", "/(?=Private)/", "/^Templates\\//"]}))
    write(vault, SLOW_NAME, "A note whose name a backtracking engine cannot get past.\n")
    write(vault, "Templates/t.md", "A template.\n")
    write(vault, "Notes/n.md", "A note.\n")
    for run in range(2):  # the first sync and one with nothing to do: each says it once
        r = subprocess.run([str(MEMVAULT), "--vault", str(vault), "sync", "--no-embed"], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        out = r.stdout + r.stderr
        assert out.count("(?=Private)") == 1 and ".obsidian/app.json" in out, out
        assert "Traceback" not in out
    r = subprocess.run([str(MEMVAULT), "--vault", str(vault), "stats", "--json"], capture_output=True, text=True,
                       timeout=60)
    assert json.loads(r.stdout)["notes"] == 2  # the slow name and Notes/n.md; Templates/ excluded
