"""Ranking pieces: recency, strength, fusion, graph damping, MMR."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from memvault.store.embedding.vectors import VectorMatrix
from memvault.store.retrieval import rank as R
from memvault.store.retrieval.candidate import Candidate
from memvault.store.retrieval.graph import GRAPH_DAMPING, add_graph

NOW = datetime(2026, 11, 22, tzinfo=timezone.utc)


def cand(i: int, **kw) -> Candidate:
    base = dict(rowid=i, id=f"t{i}", title=f"T{i}", type="note", kind="note", path=f"{i}.md", status="active",
                tags=[], strength=None, stamp="")
    base.update(kw)
    return Candidate(**base)


@pytest.mark.parametrize(
    ("type_", "days", "halved"),
    [("episodic", 14, 0.5), ("episodic", 28, 0.25), ("semantic", 90, 0.5), ("procedural", 45, 0.5 ** 0.5),
     ("identity", 180, 0.5), ("prospective", 400, 1.0)],
)
def test_recency_halves_per_half_life_above_its_floor(type_: str, days: int, halved: float) -> None:
    """The decaying part halves per half-life; the factor never falls below
    RECENCY_FLOOR (unbounded decay by event time buried every earlier session)."""
    c = cand(1, kind="memory", type=type_, stamp=(NOW - timedelta(days=days)).isoformat())
    floor = R.RECENCY_FLOOR if halved < 1.0 else 0.0
    assert R.recency_factor(c, R.RankParams(), NOW) == pytest.approx(floor + (1 - floor) * halved, rel=1e-6)
    assert R.recency_factor(c, R.RankParams(recency_floor=0.0), NOW) == pytest.approx(halved, rel=1e-6)
    ancient = cand(2, kind="memory", type=type_, stamp=(NOW - timedelta(days=100 * 365)).isoformat())
    assert R.recency_factor(ancient, R.RankParams(), NOW) >= R.RECENCY_FLOOR


def test_notes_and_evergreen_memories_do_not_decay() -> None:
    old = (NOW - timedelta(days=3000)).isoformat()
    assert R.recency_factor(cand(1, stamp=old), R.RankParams(), NOW) == 1.0
    ever = cand(2, kind="memory", type="episodic", stamp=old, tags=["Evergreen"])
    assert R.recency_factor(ever, R.RankParams(), NOW) == 1.0
    decaying_notes = R.RankParams(half_lives={**R.DEFAULT_HALF_LIVES, "note": 10.0}, recency_floor=0.0)
    assert R.recency_factor(cand(3, stamp=(NOW - timedelta(days=10)).isoformat()), decaying_notes, NOW) == pytest.approx(0.5)


def test_strength_factor_defaults_to_neutral() -> None:
    assert R.strength_factor(None) == 1.0
    assert R.strength_factor(0.5) == 1.0
    assert R.strength_factor(1.0) == 1.5 and R.strength_factor(0.0) == 0.5
    assert R.strength_factor(7) == 1.5  # clamped


def test_rrf_counts_strong_keyword_fully_and_weak_by_its_weight() -> None:
    strong = cand(1, keyword_rank=1, keyword_strong=True)
    weak = cand(2, keyword_rank=1, keyword_strong=False, keyword_weight=0.25)
    vector = cand(3, vector_rank=1)
    assert R._rrf(strong) == pytest.approx(1 / (R.RRF_K + 1))
    assert R._rrf(weak) == pytest.approx(0.25 / (R.RRF_K + 1))
    assert R._rrf(vector) > R._rrf(weak)
    both = cand(4, keyword_rank=3, keyword_strong=True, vector_rank=2)
    assert R._rrf(both) > R._rrf(strong)


def matrix(vectors: list[list[float]]) -> VectorMatrix:
    m = np.asarray(vectors, dtype=np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    n = len(vectors)
    return VectorMatrix("m", 0, np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64), m)


def test_mmr_drops_near_duplicates_and_prefers_novelty() -> None:
    mx = matrix([[1, 0, 0], [1, 0.01, 0], [0.8, 0.6, 0], [0, 0, 1]])
    cs = [cand(i, chunk_id=i, score=s) for i, s in enumerate([1.0, 0.99, 0.9, 0.5])]
    picked = [c.id for c in R.mmr(cs, mx, 10)]
    assert picked[0] == "t0" and "t1" not in picked  # t1 is t0 said twice
    assert set(picked) == {"t0", "t2", "t3"}
    # a superseded version is not a duplicate of the active one
    cs[1].status = "superseded"
    assert "t1" in [c.id for c in R.mmr(cs, mx, 10)]


def test_graph_neighbour_rises_towards_its_seed_never_past_it() -> None:
    seed = cand(1, fused=0.09)
    neighbour = cand(2, fused=0.03)
    kept = {1: seed, 2: neighbour}
    class FakeCon:
        def execute(self, sql, params):
            if "source_id IN" in sql:
                return [("t1", "t2")]
            return []
    mx = matrix([[1, 0], [0, 1]])
    add_graph(FakeCon(), kept, mx, np.zeros(2, dtype=np.float32), R.Filters(), 0.2)  # type: ignore[arg-type]
    assert neighbour.graph == pytest.approx(GRAPH_DAMPING * (0.09 - 0.03))
    assert neighbour.fused + neighbour.graph < seed.fused + seed.graph


def test_a_weak_keyword_hit_weighs_the_share_of_the_query_idf_it_and_its_neighbours_match(
    tmp_path: Path, memvault_env: Path
) -> None:
    """A weak hit on the query's rare word counts nearly as a strong one, a
    hit on a word every other turn carries counts little, and a reply is
    weighed with the words of the turn it answers."""
    from helpers import write

    from memvault.store.memory_store import MemoryStore
    from memvault.store.retrieval.keyword import Filters

    turns = ["Did you see the lighthouse on the cape?", "Yes, it was lovely.", "Mel said the weather was fine."]
    turns += [f"Mel talked about ordinary thing number {n}." for n in range(12)]
    for n, text in enumerate(turns, 1):
        write(tmp_path, f"chat/t{n}.md", f"---\ntype: episodic\nsession: s1\nturn: {n}\n---\n{text}\n")
    store = MemoryStore.open(str(tmp_path))
    store.sync()
    con = store.read_con()
    kw = R.keyword_hits(con, "Mel lighthouse", Filters(), 20)
    weights = R.weak_weights(con, kw)
    row = {r: p for r, p in con.execute("SELECT rowid, path FROM traces")}
    by_path = {row[r]: w for r, w in weights.items()}
    idf = R.idf(con, ["mel", "lighthouse"])
    assert idf["lighthouse"] > idf["mel"] > 0
    share = idf["lighthouse"] / (idf["lighthouse"] + idf["mel"])
    assert by_path["chat/t1.md"] == pytest.approx(share)
    assert by_path["chat/t2.md"] == pytest.approx(1.0)  # its words and the question's before it
    assert by_path["chat/t5.md"] == pytest.approx(1 - share)
    store.close()


def test_a_turn_by_a_speaker_the_query_names_is_found(tmp_path: Path, memvault_env: Path) -> None:
    """named_speakers: traces whose front-matter speaker (text) has a word among the query's (any case)."""
    from helpers import write

    from memvault.store.memory_store import MemoryStore

    write(tmp_path, "chat/a.md", "---\ntype: episodic\nspeaker: Teodor Smith\nsession: s\nturn: 1\n---\nI painted a lake.\n")
    write(tmp_path, "chat/b.md", "---\ntype: episodic\nspeaker: Noor\nsession: s\nturn: 2\n---\nNice lake!\n")
    write(tmp_path, "notes/c.md", "---\nspeaker: Teodor\n---\nA note that is a turn too.\n")
    write(tmp_path, "notes/d.md", "---\nspeaker: [Teodor]\n---\nNo speaker: not a name.\n")
    store = MemoryStore.open(str(tmp_path))
    store.sync()
    con = store.read_con()
    path = dict(con.execute("SELECT rowid, path FROM traces").fetchall())
    found = R.named_speakers(con, "What did teodor paint?", list(path))
    assert {path[r] for r in found} == {"chat/a.md", "notes/c.md"}
    assert R.named_speakers(con, "What was painted?", list(path)) == set()
    store.close()
