"""Recall quality on conversational memory: one dialogue of the conversational set, cached vectors.

The bars that hold on every split of the set (bench/bench_recall.py measures
all of it): keyword search is never below plain BM25 over the same turn
texts in any question kind; hybrid beats each of its parts and plain
reciprocal-rank fusion of BM25 and cosine. Exact figures are the
benchmark's business, not this test's.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from fixtures.conversations import support

from memvault.store.embedding import vectors as vec
from memvault.store.memory_store import MemoryStore
from memvault.store.queries.search import SearchQuery
from memvault.store.retrieval.retriever import Retriever

DIALOGUE = support.CI_DIALOGUE
MODES = ("keyword", "semantic", "hybrid")


@pytest.fixture(scope="module")
def scores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, float]]:
    """Mean recall@10 per system and question kind (and "all") on the CI dialogue."""
    import os

    base = tmp_path_factory.mktemp("conversation")
    old = os.environ.get("MEMVAULT_HOME")
    os.environ["MEMVAULT_HOME"] = str(base / "home")
    try:
        report = support.build(base / DIALOGUE, [DIALOGUE])
        assert report.get("embedded", 0) == 0, "the shipped vectors are stale: bench/bench_recall.py --save-fixture-cache"
        store = MemoryStore.open(str(base / DIALOGUE))
        r = Retriever(store.ctx, store.read_con())
        last = support.dialogue(DIALOGUE)["sessions"][-1]["date"]
        now = datetime.fromisoformat(last).replace(tzinfo=timezone.utc) + timedelta(days=7)
        r.clock = lambda: now  # type: ignore[method-assign]
        cache = vec.open_cache(store.data_dir, create=False)
        plain = support.Baselines(DIALOGUE, r.embedder(), cache, r.model_key or "")
        rows: dict[str, list[dict[str, float]]] = {}
        for q in support.questions(DIALOGUE):
            ranked = {m: [support.turn_of_path(h["path"]) or "" for h in r.search(SearchQuery(q["question"], mode=m)).to_json()["hits"]] for m in MODES}
            ranked["bm25"] = plain.bm25(q["question"])
            ranked["rrf"] = support.Baselines.rrf(ranked["bm25"], plain.cosine(r.embedder().embed_query(q["question"])))
            for kind in (q["kind"], "all"):
                rows.setdefault(kind, []).append({s: support.score(v, q["evidence"])["r10"] for s, v in ranked.items()})
        if cache is not None:
            cache.close()
        r.close()
        store.close()
    finally:
        if old is None:
            os.environ.pop("MEMVAULT_HOME", None)
        else:
            os.environ["MEMVAULT_HOME"] = old
    return {kind: {s: sum(x[s] for x in xs) / len(xs) for s in xs[0]} for kind, xs in rows.items()}


@pytest.mark.parametrize("kind", [*support.KINDS, "all"])
def test_keyword_search_is_never_below_plain_bm25(scores: dict[str, dict[str, float]], kind: str) -> None:
    s = scores[kind]
    assert s["keyword"] >= s["bm25"], s


def test_hybrid_beats_each_part_and_plain_fusion(scores: dict[str, dict[str, float]]) -> None:
    s = scores["all"]
    assert s["hybrid"] > max(s["keyword"], s["semantic"]), s
    assert s["hybrid"] >= s["rrf"] + 0.05, s


def test_the_loader_writes_one_episodic_memory_per_turn(tmp_path: Path) -> None:
    support.write_vault(tmp_path, [DIALOGUE])
    turns = support.turns(DIALOGUE)
    notes = sorted(tmp_path.rglob("*.md"))
    assert len(notes) == len(turns)
    first = (tmp_path / support.turn_path(turns[0].id)).read_text(encoding="utf-8")
    assert first.startswith("---\ntype: episodic\nsession_date: ") and f"speaker: {turns[0].speaker}\n" in first
    assert support.turn_of_path(support.turn_path(turns[0].id)) == turns[0].id
    assert support.score(["x", turns[0].id], [turns[0].id, turns[1].id]) == {"r5": 0.5, "r10": 0.5, "hit10": 1.0, "mrr": 0.5}
