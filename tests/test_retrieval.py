"""Retrieval quality on the labelled set, and the search command's modes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures.retrieval import support
from helpers import write

from memvault.cli.main import cli
from memvault.store.memory_store import MemoryStore
from memvault.store.queries.search import SearchQuery
from memvault.store.retrieval import rank as R
from memvault.store.retrieval.retriever import Retriever


@pytest.fixture(scope="session")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(vault root, memvault home) of the labelled vault, indexed once."""
    return support.session_vault(tmp_path_factory.mktemp("labelled"))


@pytest.fixture
def retriever(labelled, monkeypatch: pytest.MonkeyPatch):
    root, home = labelled
    monkeypatch.setenv("MEMVAULT_HOME", str(home))
    v = MemoryStore.open(str(root))
    r = Retriever(v.ctx, v.read_con())
    yield r
    r.close()
    v.close()


def recall_at(r: Retriever, items: list[dict], mode: str, k: int = 10) -> tuple[int, list[str]]:
    found, missed = 0, []
    for item in items:
        paths = [h["path"] for h in r.search(SearchQuery(item["query"], mode=mode, limit=k)).to_json()["hits"]]
        if set(paths) & set(item["relevant"]):
            found += 1
        else:
            missed.append(item["query"])
    return found, missed


def test_hybrid_finds_what_each_mode_finds_and_more(retriever: Retriever) -> None:
    q = support.queries()
    para = {m: recall_at(retriever, q["paraphrase"], m)[0] for m in ("keyword", "semantic", "hybrid")}
    kw = {m: recall_at(retriever, q["keyword"], m)[0] for m in ("keyword", "semantic", "hybrid")}
    # paraphrases: meaning beats words, and fusion beats either alone
    assert para["hybrid"] > max(para["keyword"], para["semantic"]), para
    assert para["semantic"] > para["keyword"], para
    # exact words: keyword is perfect and hybrid keeps it so
    assert kw["hybrid"] >= max(kw["keyword"], kw["semantic"]), kw
    assert kw["hybrid"] == len(q["keyword"]), kw
    total = {m: para[m] + kw[m] for m in para}
    assert total["hybrid"] > max(total["keyword"], total["semantic"]), total
    assert para["hybrid"] >= 0.8 * len(q["paraphrase"])


def top_paths(r: Retriever, query: str, mode: str, k: int = 10) -> list[str]:
    return [h["path"] for h in r.search(SearchQuery(query, mode=mode, limit=k)).to_json()["hits"]]


def test_hybrid_finds_per_query_whatever_a_single_mode_finds(retriever: Retriever) -> None:
    """Query by query: a target in keyword's or semantic's top 10 is in
    hybrid's top 10 too (weak keyword hits below the similarity floor were
    dropped: "caching results in an array instead of recalculating" had
    Lookup Tables at keyword #1 and hybrid returned nothing)."""
    q = support.queries()
    lost = []
    for item in q["paraphrase"] + q["keyword"]:
        rel = set(item["relevant"])
        found_by = [m for m in ("keyword", "semantic") if rel & set(top_paths(retriever, item["query"], m))]
        if found_by and not rel & set(top_paths(retriever, item["query"], "hybrid")):
            lost.append((item["query"], found_by))
    assert lost == []


def mrr(r: Retriever, items: list[dict], mode: str) -> float:
    total = 0.0
    for item in items:
        ranks = [n for n, p in enumerate(top_paths(r, item["query"], mode), 1) if p in item["relevant"]]
        total += 1 / ranks[0] if ranks else 0.0
    return total / len(items)


def test_hybrid_ranks_paraphrase_targets_at_least_as_well_as_semantic(retriever: Retriever) -> None:
    para = support.queries()["paraphrase"]
    assert mrr(retriever, para, "hybrid") >= mrr(retriever, para, "semantic")


def test_stop_and_common_words_do_not_skip_the_floor(retriever: Retriever) -> None:
    """Every word of "what is the time" is in "Impulse" (keyword #1), but
    three are stop words and "time" is in 17% of the notes: its similarity
    (0.10) decides, and it is out. Only hits over the floor remain."""
    hits = retriever.search(SearchQuery("what is the time", mode="hybrid", explain=True)).to_json()["hits"]
    assert "Impulse" not in [h["title"] for h in hits]
    # what passes is similar enough; search lists others just under the floor, marked
    floor = 0.3 - R.SEARCH_FLOOR_MARGIN
    assert all(h["explain"]["vector_similarity"] >= floor and h["explain"]["passed"] in ("similarity", "") for h in hits), hits
    assert retriever.search(SearchQuery("what is the", mode="hybrid")).to_json()["hits"] == []


def test_a_rare_word_matched_exactly_skips_the_floor(retriever: Retriever) -> None:
    """"compersion" is in one note, whose similarity to the bare word is
    0.16: the exact match on a rare word is the evidence."""
    hits = retriever.search(SearchQuery("compersion", mode="hybrid", explain=True)).to_json()["hits"]
    e = hits[0]["explain"]
    assert hits[0]["title"] == "Non-Monogamous Relationships"
    assert e["passed"] == "distinctive word" and e["keyword_match"] == "all" and e["vector_similarity"] < 0.3


def test_unrelated_queries_return_nothing(retriever: Retriever) -> None:
    for query in support.queries()["unrelated"]:
        assert retriever.search(SearchQuery(query, mode="hybrid")).to_json()["hits"] == [], query
        assert retriever.search(SearchQuery(query, mode="semantic")).to_json()["hits"] == [], query


def test_default_mode_is_hybrid_when_vectors_exist(retriever: Retriever) -> None:
    assert retriever.search(SearchQuery("Dolby Atmos")).to_json()["mode"] == "hybrid"
    assert retriever.search(SearchQuery("Dolby Atmos", raw=True)).to_json()["mode"] == "keyword"


def test_explain_shows_every_signal(retriever: Retriever) -> None:
    hits = retriever.search(SearchQuery("Diffie-Hellman shared secret", explain=True)).to_json()["hits"]
    e = hits[0]["explain"]
    assert set(e) == {"mode", "keyword_rank", "keyword_match", "keyword_bm25", "vector_rank", "vector_similarity", "passed",
                      "similarity_alone", "keyword_neighbours", "keyword_weight", "graph", "fused", "time_match", "speaker_match",
                      "event_time", "recency", "strength"}
    assert e["mode"] == "hybrid" and e["keyword_rank"] == 1 and e["keyword_bm25"] > 0
    assert e["vector_similarity"] > 0.3 and e["passed"] == "similarity" and e["recency"] == 1.0 and e["strength"] == 1.0


def test_explain_in_keyword_mode_gives_rank_and_bm25(retriever: Retriever) -> None:
    """Keyword mode used to explain its #1 hit as "keyword -, fused 0": it
    now carries its rank, match and BM25, and says what it does not apply."""
    for query, match in (("Dolby Atmos", "all"), ("Dolby surround zebra", "any")):
        hits = retriever.search(SearchQuery(query, mode="keyword", explain=True)).to_json()["hits"]
        assert hits
        for n, h in enumerate(hits, 1):
            e = h["explain"]
            assert e == {"mode": "keyword", "keyword_rank": n, "keyword_match": match, "keyword_bm25": h["score"],
                         "keyword_neighbours": 0.0, "vector_rank": None, "vector_similarity": None, "not_applied": ["graph", "recency", "strength"]}
    raw = retriever.search(SearchQuery("dolby OR atmos", raw=True, explain=True)).to_json()["hits"]
    assert raw[0]["explain"]["keyword_match"] == "raw" and raw[0]["explain"]["keyword_rank"] == 1


def test_explain_in_the_keyword_fallback(labelled, monkeypatch: pytest.MonkeyPatch) -> None:
    """A configured model that is not on this machine: hybrid falls back to
    keyword search (no download), and explains it as keyword mode."""
    root, home = labelled
    monkeypatch.setenv("MEMVAULT_HOME", str(home))
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "BAAI/bge-small-en-v1.5")
    v = MemoryStore.open(str(root))
    r = Retriever(v.ctx, v.read_con())
    try:
        res = r.search(SearchQuery("Dolby Atmos", mode="hybrid", explain=True)).to_json()
    finally:
        r.close()
        v.close()
    assert res["mode"] == "keyword" and res["notices"]
    e = res["hits"][0]["explain"]
    assert e["mode"] == "keyword" and e["keyword_rank"] == 1 and e["keyword_bm25"] == res["hits"][0]["score"]


def test_filters_apply_to_vector_hits(retriever: Retriever) -> None:
    hits = retriever.search(SearchQuery("how to release the billing service safely", what="memories")).to_json()["hits"]
    assert hits and all(h["path"].startswith("Memory/") for h in hits)
    assert "m-proc-deploy" in [h["id"] for h in hits[:3]]
    hits = retriever.search(SearchQuery("how to release the billing service safely", types=["episodic"])).to_json()["hits"]
    assert all(h["type"] == "episodic" for h in hits)
    hits = retriever.search(SearchQuery("colour", path_glob="kepano-obsidian/*", mode="semantic")).to_json()["hits"]
    assert all(h["path"].startswith("kepano-obsidian/") for h in hits)


def test_cli_search_modes_json_keys_and_explain(labelled, monkeypatch: pytest.MonkeyPatch) -> None:
    root, home = labelled
    monkeypatch.setenv("MEMVAULT_HOME", str(home))
    runner = CliRunner()
    for mode in ("keyword", "semantic", "hybrid"):
        r = runner.invoke(cli, ["--vault", str(root), "search", "sound server linux", "--mode", mode, "--json", "-n", "3"])
        assert r.exit_code == 0, r.output
        rows = [json.loads(x) for x in r.stdout.splitlines()]
        assert rows and all(set(row) == {"id", "title", "type", "path", "uri", "score", "snippet", "passage"} for row in rows)
    r = runner.invoke(cli, ["--vault", str(root), "search", "sound server linux", "--explain"])
    assert r.exit_code == 0 and "similarity" in r.stdout and "recency x" in r.stdout
    r = runner.invoke(cli, ["--vault", str(root), "search", "x", "--mode", "fuzzy"])
    assert r.exit_code == 2


def test_keyword_search_process_imports_no_heavy_modules(labelled) -> None:
    root, home = labelled
    code = (
        "import sys\n"
        "from memvault.cli.main import cli\n"
        "try:\n"
        f"    cli(['--vault', {str(root)!r}, 'search', 'Dolby', '--mode', 'keyword'], prog_name='memvault')\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted(m for m in ('numpy', 'fastembed', 'onnxruntime', 'tokenizers') if m in sys.modules)\n"
        "print('HEAVY', heavy)\n"
    )
    env = {"MEMVAULT_HOME": str(home), "PATH": "/usr/bin:/bin", "HOME": str(home)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert "HEAVY []" in r.stdout, r.stdout + r.stderr
    assert "Surround Sound Formats" in r.stdout


def test_superseded_and_deleted_versions(vault: Path) -> None:
    from memvault.store.embedding.pipeline import EmbeddingPipeline

    v = MemoryStore.open(str(vault))
    v.sync()
    mem = v.memories
    res = mem.add("Prefers window seats on long flights.", "semantic")
    mem.update(res.id, content="Prefers aisle seats on long flights.")
    other = mem.add("Keeps a paper notebook for meeting notes.", "semantic")
    mem.forget(other.id)
    p = EmbeddingPipeline.for_ctx(v.ctx, v.con)
    p.run()
    r = Retriever(v.ctx, v.con)
    hits = r.search(SearchQuery("where does she like to sit on a plane", mode="semantic")).to_json()["hits"]
    assert [h["id"] for h in hits][:1] == [res.id] and all("status" not in h for h in hits)
    hits = r.search(SearchQuery("where does she like to sit on a plane", mode="semantic", include_superseded=True)).to_json()["hits"]
    statuses = {h.get("status", "active") for h in hits}
    assert statuses == {"active", "superseded"}  # both versions, the old one marked
    assert not r.search(SearchQuery("paper notebook for meetings", mode="hybrid")).to_json()["hits"]
    hits = r.search(SearchQuery("paper notebook for meetings", mode="hybrid", include_deleted=True)).to_json()["hits"]
    assert hits[0]["id"] == other.id and hits[0]["status"] == "deleted"
    r.close()
    p.close()
    v.close()


def test_facts_embed_with_their_note_context(vault: Path) -> None:
    """A fact trace (title "Note > Heading") is embedded with that context and
    brings its source note in through the derived_from edge."""
    from memvault.store.db import records as rec
    from memvault.store.db.connection import write_transaction
    from memvault.store.embedding.pipeline import EmbeddingPipeline

    write(vault, "Runbook.md", "# Deploys\nWe ship on Fridays after the freeze lifts.\n\n# Rollback\nKeep the previous image tagged.\n")
    v = MemoryStore.open(str(vault))
    v.sync()
    note_id = v.con.execute("SELECT id FROM traces WHERE path = 'Runbook.md'").fetchone()[0]
    with write_transaction(v.con):
        rec.put_trace(v.con, rec.TraceRow(id="f-1", kind="fact", type="semantic", title="Runbook > Deploys",
                                          content="Releases go out on Fridays.", path="Runbook.md"))
        rec.add_edges(v.con, "f-1", [rec.EdgeRow(kind="derived_from", target_id=note_id, target_path="Runbook.md")])
    p = EmbeddingPipeline.for_ctx(v.ctx, v.con)
    p.run()
    text = v.con.execute("SELECT c.start, c.stop FROM chunks c JOIN traces t ON t.rowid = c.trace_rowid WHERE t.id = 'f-1'").fetchall()
    assert text == [(0, len("Releases go out on Fridays."))]
    r = Retriever(v.ctx, v.con)
    hits = r.search(SearchQuery("which weekday do we release", mode="hybrid", explain=True)).to_json()["hits"]
    ids = [h["id"] for h in hits]
    assert "f-1" in ids and note_id in ids
    r.close()
    p.close()
    v.close()
