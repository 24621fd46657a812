"""Recall quotes the passage: `context --what all` quotes a note's best-matching section,
not its opening; search hits carry the passage's plain text; a few notes of the
section-level question set (tests/fixtures/sections) are answered by their section."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import CORPORA, FIXTURES, opened, write

from memvault.store.memory_store import MemoryStore
from memvault.store.queries.recall import ContextQuery
from memvault.store.queries.search import SearchQuery

GUIDE = """# Home server guide

This guide collects what we learned running a small home server over the years,
from picking hardware to keeping the family photos safe. Read the parts you need.

## Hardware

A fanless mini PC with two disks is plenty. Prefer ECC memory if the board allows it,
and buy disks from two different batches so they do not fail together.

## Backups

Run restic every night at 02:00 to the external disk, and once a week to the
offsite bucket. Test a restore of one folder on the first Sunday of each month.

## Networking

Give the server a fixed address in the router, and put the admin pages behind the VPN only.
"""

RECIPES = """# Recipes

Our family recipes, in no order.

## Pancakes

Mix two eggs, a cup of flour and a cup of milk; rest the batter ten minutes.

## Lentil soup

Red lentils, one onion, cumin and a lemon at the end; simmer twenty minutes.
"""


def norm(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def guide_vault(vault: Path) -> Path:
    write(vault, "Guides/Home server.md", GUIDE)
    write(vault, "Recipes.md", RECIPES)
    write(vault, "Memory/semantic/m-tea.md", "---\nid: m-tea\ntype: semantic\n---\nPrefers green tea.\n")
    return vault


@pytest.mark.parametrize("embed", [False, True], ids=["words", "vectors"])
def test_context_quotes_the_matching_section_not_the_opening(guide_vault: Path, embed: bool) -> None:
    with opened(guide_vault) as store:
        store.sync(embed=embed)
        result = store.context(ContextQuery("how often do the backups run and when do we test a restore", what="all",
                               record=False)).to_json()
        block = norm(result["text"])
        assert "Run restic every night at 02:00" in block
        assert "This guide collects" not in block  # not the note's first lines
        passage = next(i for i in result["items"] if i["path"] == "Guides/Home server.md")
        assert passage["heading"].endswith("Backups") and passage["source"].endswith("> Backups")
        assert "(Home server > Home server guide > Backups)" in result["text"]  # a note by its name
        hits = store.search(SearchQuery("restic offsite bucket", limit=3)).to_json()["hits"]
        assert hits[0]["path"] == "Guides/Home server.md"
        assert "Run restic every night" in hits[0]["passage"] and "**" not in hits[0]["passage"]
        tea = store.search(SearchQuery("green tea", limit=3)).to_json()["hits"]
        assert tea[0]["passage"] == "Prefers green tea."  # a short memory: its whole text


def test_default_context_admits_a_note_only_when_it_beats_the_memories(guide_vault: Path) -> None:
    with opened(guide_vault) as store:
        store.sync()
        # Nothing remembered answers it: the note's passage does (issue 35: auto).
        backups = store.context(ContextQuery("how often do the backups run", record=False)).to_json()["text"]
        assert "Run restic every night" in backups
        only = ContextQuery("how often do the backups run", what="memories", record=False)
        assert store.context(only).to_json()["text"] == ""
        tea = store.context(ContextQuery("what tea do I like", record=False)).to_json()["text"]
        assert "green tea" in tea and "restic" not in tea


def test_two_strong_sections_of_one_note_share_the_budget(vault: Path) -> None:
    write(vault, "Ops.md", "# Ops\n\nGeneral notes.\n\n## Restic backups at night\n\nRestic backs up the "
          "photos every night.\n\n## Restic restore drills\n\nRestic restores are tested every month.\n\n"
          "## Coffee\n\nThe machine needs descaling.\n")
    with opened(vault) as store:
        store.sync(embed=True)
        result = store.context(ContextQuery("restic backups and restic restores", what="all", record=False)).to_json()
        headings = [i.get("heading") for i in result["items"] if i["path"] == "Ops.md"]
        assert len(headings) == 2 and not any("Coffee" in (h or "") for h in headings)


QUESTION_IDS = ("s01", "s05", "s12", "s20")


def test_section_set_sample_from_the_real_vault(tmp_path: Path, memvault_env: Path) -> None:
    """A few questions of the labelled set, over their notes copied into a vault of their own."""
    corpus = CORPORA / "vaultofknowledge"
    if not corpus.exists():
        pytest.skip("vaultofknowledge corpus not available")
    questions = [q for q in json.loads((FIXTURES / "sections" / "questions.json").read_text())
                 if q["id"] in QUESTION_IDS]
    root = tmp_path / "vault"
    for q in questions:
        (root / q["path"]).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus / q["path"], root / q["path"])
    store = MemoryStore.open(str(root))
    try:
        store.sync(embed=True)
        for q in questions:
            block = store.context(ContextQuery(q["question"], what="all", record=False)).to_json()["text"]
            assert norm(q["answer_quote"]) in norm(block), (q["id"], block)
    finally:
        store.close()
