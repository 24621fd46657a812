"""History logs from other devices are hostile input (issue 32 item 1).

Anyone who can write the vault can put a file in the history folder, or a
line in another device's log. A line that is not a record of its file's
device is never read; one stamped far in the future is not read until the
clock reaches it (a deletion stamped in 2090 removes nothing now, on any
device, and drags no device's clock there); ``doctor`` names both.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened

from memvault.cli.main import cli
from memvault.store.history import lines, logfile

LOGS = "Memory/.memvault/history"
YEAR_MS = 365 * 24 * 3600 * 1000


@pytest.fixture(autouse=True)
def no_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")


def plant(vault: Path, name: str, records: list[dict]) -> None:
    path = vault / LOGS / name
    with open(path, "ab") as fh:
        fh.write(b"".join(logfile.encode(r) for r in records))


def a_memory_with_a_version(vault: Path) -> tuple[str, str]:
    with opened(vault) as store:
        store.sync()
        added = store.add("Deploys go out on Tuesdays", "procedural")
        store.update(added.id, content="Deploys go out on Wednesdays", reason="moved")
        version = store.history(added.id)[1].id
    return added.id, version


def versions(vault: Path, memory: str) -> list[str]:
    with opened(vault) as store:
        store.sync()
        return [v.content for v in store.history(memory)]


def test_a_deletion_stamped_far_ahead_removes_nothing_and_waits(vault: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    memory, version = a_memory_with_a_version(vault)
    future = int(time.time() * 1000) + 60 * YEAR_MS
    plant(vault, "ffffffffffff.jsonl", [{"d": "ffffffffffff", "n": 1, "t": future, "tb": "memory_versions",
                                         "k": [version], "r": None}])
    other = tmp_path / "other-device"
    shutil.copytree(vault, other)
    assert versions(vault, memory) == ["Deploys go out on Wednesdays", "Deploys go out on Tuesdays"]
    monkeypatch.setenv("MEMVAULT_HOME", str(tmp_path / "home-b"))
    assert versions(other, memory) == ["Deploys go out on Wednesdays", "Deploys go out on Tuesdays"]
    with opened(vault) as store:  # no clock dragged to 2090: a change now is stamped now
        store.update(memory, content="Deploys go out on Thursdays")
        store.sync()
        stamp = store.con.execute("SELECT max(stamp) FROM state.history_records").fetchone()[0]
    assert stamp < int(time.time() * 1000) + lines.FUTURE_SKEW_MS
    r = CliRunner().invoke(cli, ["--vault", str(vault), "doctor"])
    assert "ffffffffffff.jsonl line 1: stamped 20" in r.output and "not read until then" in r.output, r.output
    # Once the clock reaches it, it is read like any record, on every device alike.
    monkeypatch.setattr(lines, "now_ms", lambda: future)
    assert versions(other, memory) == ["Deploys go out on Wednesdays"]


def test_a_line_planted_in_another_device_s_file_is_never_read(vault: Path) -> None:
    memory, version = a_memory_with_a_version(vault)
    with opened(vault) as store:
        device = store.device_id()
    now = int(time.time() * 1000)
    planted = [{"d": "aaaaaaaaaaaa", "n": 99, "t": now, "tb": "memory_versions", "k": [version], "r": None},
               {"d": device, "n": 98, "t": now, "tb": "forgotten", "k": ["m-1"], "r": {"memory_id": "m-2"}}]
    plant(vault, "bbbbbbbbbbbb.jsonl", planted[:1])
    plant(vault, f"{device}.jsonl", planted[1:])
    assert versions(vault, memory) == ["Deploys go out on Wednesdays", "Deploys go out on Tuesdays"]
    r = CliRunner().invoke(cli, ["--vault", str(vault), "doctor", "--json"])
    found = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    details = [f["detail"] for obj in found for f in obj.get("findings", []) if f["check"] == "history"]
    assert any("bbbbbbbbbbbb.jsonl line 1: names device 'aaaaaaaaaaaa'" in d for d in details), r.output
    assert any(f"{device}.jsonl" in d and "a row whose key is not the record's" in d for d in details), r.output
    assert all(f["warning"] for obj in found for f in obj.get("findings", []) if f["check"] == "history")


def test_every_shape_of_bad_line_is_refused_with_a_reason() -> None:
    tables = {"forgotten": ("memory_id",)}
    good = {"d": "ab12", "n": 1, "t": 5, "tb": "forgotten", "k": ["m1"], "r": {"memory_id": "m1", "reason": "x"}}
    assert lines.refused(good, "ab12", tables) is None
    assert lines.refused(dict(good, r=None), "ab12", tables) is None
    assert lines.refused(dict(good, r={"memory_id": "m1", "new_column": 1}), "ab12", tables) is None
    for bad, why in [
        ([1, 2], "not a record"), (dict(good, d=None), "missing"), (dict(good, n=0), "below zero"),
        (dict(good, t=-1), "below zero"), (dict(good, d="cd34"), "names device"), (dict(good, tb="x"), "no shared"),
        (dict(good, k=["m1", "m2"]), "key"), (dict(good, k=[{"a": 1}]), "key"), (dict(good, r=[1]), "plain values"),
        (dict(good, r={"memory_id": {"a": 1}}), "plain values"), (dict(good, r={"memory_id": "m2"}), "key is not"),
    ]:
        assert why in (lines.refused(bad, "ab12", tables) or ""), (bad, why)
    assert lines.file_device(Path("ab12.sync-conflict-20260101-000000-XYZ.jsonl")) == "ab12"
    assert lines.file_device(Path("ab12 (conflicted copy 2026-01-01).jsonl")) == "ab12"
    assert lines.file_device(Path("ab12.snapshot.jsonl")) == "ab12"
    assert not lines.waits(dict(good, t=1000 + lines.FUTURE_SKEW_MS), 1000)
    assert lines.waits(dict(good, t=1001 + lines.FUTURE_SKEW_MS), 1000)


def test_a_deeply_nested_line_is_one_doctor_finding_and_the_rest_is_read(vault: Path) -> None:
    memory, version = a_memory_with_a_version(vault)
    now = int(time.time() * 1000)
    path = vault / LOGS / "cccccccccccc.jsonl"
    deep = b'{"d":"cccccccccccc","n":1,"t":1,"tb":"forgotten","k":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    after = {"d": "cccccccccccc", "n": 2, "t": now, "tb": "memory_versions", "k": [version], "r": None}
    path.write_bytes(deep + logfile.encode(after))
    # The line after it is still a record of that device, read like any other.
    assert versions(vault, memory) == ["Deploys go out on Wednesdays"]
    r = CliRunner().invoke(cli, ["--vault", str(vault), "doctor"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert "Traceback" not in r.output and "RecursionError" not in r.output
    found = [line for line in r.output.splitlines() if "cccccccccccc.jsonl" in line]
    assert len(found) == 1 and "line 1: not JSON (it nests too deeply to read)" in found[0], r.output
