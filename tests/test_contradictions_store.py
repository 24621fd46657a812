"""Contradictions as people's memory holds them: claims added one by one to
one store (``memvault add``), then judged by the plan (``consolidate
--dry-run``), never pair by pair (issue 33)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault.cli.main import cli

#: Issue 33's reproduction: six single-slot changes a store of twelve memories missed (older, newer).
ISSUE_33 = [
    ("Partner is named Rui", "Partner is named Tomas"),
    ("Supports Benfica", "Supports Sporting"),
    ("The desktop runs Fedora", "The desktop runs Windows 10"),
    ("Leases the car", "Owns the car"),
    ("Works at Siemens", "Left Siemens and now works at Bosch"),
    ("Lives in Porto", "Lives in Lisbon"),
]


@pytest.fixture
def ticking(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's clock moves a minute at every reading: each ``add`` is
    later than the one before (the store keeps whole seconds)."""
    from memvault.store.db import records as rec

    moment = [datetime(2026, 10, 1, 9, 0, tzinfo=timezone.utc)]

    def now_iso() -> str:
        moment[0] += timedelta(minutes=1)
        return moment[0].isoformat()

    monkeypatch.setattr(rec, "now_iso", now_iso)


def _add(runner: CliRunner, vault: Path, text: str) -> dict:
    done = runner.invoke(cli, ["--vault", str(vault), "add", text, "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.output.splitlines()[-1])


def _flags(runner: CliRunner, vault: Path) -> dict[frozenset[str], dict]:
    done = runner.invoke(cli, ["--vault", str(vault), "consolidate", "--dry-run", "--json"])
    assert done.exit_code == 0, done.output
    lines = [json.loads(line) for line in done.output.splitlines() if line.startswith("{")]
    return {frozenset(a["ids"]): a for a in lines if a.get("kind") == "contradiction"}


def test_issue_33_every_older_claim_a_store_holds_meets_its_newer_one(vault: Path, ticking: None) -> None:
    """All twelve in one store, every older claim first: each pair is flagged
    (the newer over the older), and nothing else is."""
    runner = CliRunner()
    ids = {text: _add(runner, vault, text)["id"] for older, _ in ISSUE_33 for text in [older]}
    ids |= {text: _add(runner, vault, text)["id"] for _, newer in ISSUE_33 for text in [newer]}
    flags = _flags(runner, vault)
    for older, newer in ISSUE_33:
        found = flags.get(frozenset((ids[older], ids[newer])))
        assert found is not None, (older, newer)
        assert found["detail"]["newer"] == ids[newer], (older, newer)
    assert len(flags) == len(ISSUE_33), [a["reason"] for a in flags.values()]
