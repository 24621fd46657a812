"""The relevance floor: which keyword evidence may stand in for similarity."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fixtures.retrieval import support
from helpers import write

from memvault.store.memory_store import MemoryStore
from memvault.store.queries.search import SearchQuery
from memvault.store.retrieval import rank as R
from memvault.store.retrieval.candidate import Candidate
from memvault.store.retrieval.retriever import Retriever

FLOOR = R.MIN_SIMILARITY


def cand(**kw) -> Candidate:
    base = dict(rowid=1, id="t1", title="T", type="note", kind="note", path="t.md", status="active", tags=[],
                strength=None, stamp="")
    base.update(kw)
    return Candidate(**base)


def test_similarity_over_the_floor_passes_whatever_the_words() -> None:
    assert R.floor_rule(cand(similarity=FLOOR), FLOOR, 3, False) == "similarity"
    assert R.floor_rule(cand(similarity=FLOOR - 0.01), FLOOR, 3, False) == ""


def test_a_strong_match_skips_the_floor_only_on_a_rare_word() -> None:
    strong = cand(keyword_rank=1, keyword_strong=True, similarity=0.05, words_matched=1)
    assert R.floor_rule(strong, FLOOR, 1, rare_matched=True) == "distinctive word"
    assert R.floor_rule(strong, FLOOR, 1, rare_matched=False) == ""


def test_shared_content_words_lower_the_floor_for_top_keyword_hits_only() -> None:
    near = FLOOR - R.KEYWORD_FLOOR_MARGIN
    two = cand(keyword_rank=R.KEYWORD_FLOOR_RANK, similarity=near, words_matched=2)
    assert R.floor_rule(two, FLOOR, 5, False) == "keyword words"
    assert R.floor_rule(cand(keyword_rank=R.KEYWORD_FLOOR_RANK + 1, similarity=near, words_matched=2), FLOOR, 5, False) == ""
    assert R.floor_rule(cand(keyword_rank=1, similarity=near, words_matched=1), FLOOR, 5, False) == ""
    assert R.floor_rule(cand(keyword_rank=1, similarity=near - 0.01, words_matched=3), FLOOR, 5, False) == ""


def test_without_a_vector_half_the_content_words_must_match() -> None:
    assert R.floor_rule(cand(keyword_rank=1, words_matched=2), FLOOR, 3, False) == "keyword (no vector)"
    assert R.floor_rule(cand(keyword_rank=1, words_matched=1), FLOOR, 3, False) == ""
    assert R.floor_rule(cand(keyword_rank=1, words_matched=1), FLOOR, 1, False) == "keyword (no vector)"
    assert R.floor_rule(cand(keyword_rank=1, keyword_strong=True, words_matched=0), FLOOR, 0, False) == ""  # stop words only


def test_content_words_drop_stop_words_common_words_and_repeats() -> None:
    assert R.content_words(["How", "should", "I", "test", "a", "Capacitor", "capacitor", "time"], {"time"}) == [
        "test", "capacitor"]


@pytest.fixture
def vault_with_an_identifier(tmp_path: Path, memvault_env: Path) -> Path:
    """The labelled vault plus a long incident log that names an error code
    once: the log's meaning is not the code's, so its similarity is low."""
    root = tmp_path / "vault"
    shutil.copytree(support.VAULT, root)
    write(root, "Logs/Incident log.md", (
        "# Incident log\n\nMonday: the quarterly planning meeting ran long and the roadmap slipped a week. "
        "Tuesday: lunch with the design team about the new onboarding screens and their colour palette. "
        "Wednesday: a customer in Porto saw ERR_CONNECTION_RESET when opening the dashboard; it went away "
        "after they restarted their router. Thursday: reviewed hiring plans and the budget for next year. "
        "Friday: wrote the monthly newsletter about gardening tips and a recipe for lemon cake.\n"
    ))
    support.build(root)  # embeds the new note for real (the bundled model, offline)
    return root


def test_an_identifier_matched_exactly_is_found_below_the_floor(vault_with_an_identifier: Path) -> None:
    v = MemoryStore.open(str(vault_with_an_identifier))
    r = Retriever(v.ctx, v.read_con())
    try:
        hits = r.search(SearchQuery("ERR_CONNECTION_RESET", mode="hybrid", explain=True)).to_json()["hits"]
        common = r.search(SearchQuery("what is the time", mode="hybrid", explain=True)).to_json()["hits"]
    finally:
        r.close()
        v.close()
    assert hits and hits[0]["path"] == "Logs/Incident log.md"
    e = hits[0]["explain"]
    assert e["vector_similarity"] < FLOOR and e["keyword_match"] == "all" and e["passed"] == "distinctive word"
    # stop words and a common word are no evidence: only similarity lets a
    # hit in; search lists the others near the floor below it, marked
    assert any(h["explain"]["passed"] == "similarity" for h in common)
    for h in common:
        e = h["explain"]
        assert e["passed"] == "similarity" or (e["passed"] == "" and e["vector_similarity"] >= FLOOR - R.SEARCH_FLOOR_MARGIN)
