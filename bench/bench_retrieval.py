"""Retrieval benchmark: quality on the labelled set, latency at scale, processes.

    python bench/bench_retrieval.py                  # everything
    python bench/bench_retrieval.py --only quality   # quality | latency | process | calibrate
    python bench/bench_retrieval.py --sizes 20000    # latency sizes (default 20000 100000)

* **quality**: recall@5, recall@10 and MRR of keyword, semantic and hybrid
  search over ``tests/fixtures/retrieval`` (paraphrase and keyword-exact
  queries), and how many unrelated queries return nothing from search and
  from ``context`` (notes included).
* **calibrate**: the similarity of each paraphrase query's target versus the
  best similarity an unrelated query reaches, the data behind the relevance
  floor ``recall.min_similarity``.
* **latency**: in-process search latency (median, p95) per mode over
  synthetic indexes of N traces with random-but-realistic vectors (clustered
  unit vectors, so the top-k has structure), the model and matrix warm.
* **process**: wall time of ``memvault search`` (hybrid) and ``memvault
  context`` as whole processes, with and without a running ``memvault daemon``.

Results go to ``bench/out/bench_retrieval-<time>.json`` and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memvault.store.queries.recall import ContextQuery
from memvault.store.queries.search import SearchQuery

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
FIXTURE = REPO / "tests" / "fixtures" / "retrieval"
sys.path.insert(0, str(BENCH))
from _common import isolate_env  # noqa: E402

OUT = BENCH / "out"
MEMVAULT = Path(sys.executable).parent / "memvault"


def summarize(xs: list[float]) -> dict[str, float]:
    """Median, p95 and mean of seconds, in milliseconds."""
    s = sorted(xs)
    p95 = s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))]
    return {"n": len(s), "median_ms": round(statistics.median(s) * 1000, 2), "p95_ms": round(p95 * 1000, 2),
            "mean_ms": round(statistics.fmean(s) * 1000, 2)}


# -- quality ---------------------------------------------------------------------


#: Vectors of the labelled vault's texts, shipped so tests need not embed
#: them (keyed by model and text hash: stale entries are simply not used).
FIXTURE_CACHE = FIXTURE / "embeddings.db"


def labelled_vault(work: Path, save_cache: bool = False) -> Path:
    """A copy of the labelled vault, synced and embedded (seeded from the
    shipped embedding cache; ``save_cache`` writes the cache back)."""
    from memvault.store import location
    from memvault.store.embedding import vectors
    from memvault.store.embedding.pipeline import EmbeddingPipeline
    from memvault.store.memory_store import MemoryStore

    root = work / "retrieval-vault"
    if not root.exists():
        shutil.copytree(FIXTURE / "vault", root)
    data_dir = location.ensure_private_dir(location.vault_data_dir(root))
    if FIXTURE_CACHE.exists():
        shutil.copyfile(FIXTURE_CACHE, vectors.cache_path(data_dir))
    v = MemoryStore.open(str(root))
    v.sync()
    p = EmbeddingPipeline.for_ctx(v.ctx, v.con)
    report = p.run()
    print(f"labelled vault: embedded {report.embedded} texts in {report.seconds:.1f}s")
    if save_cache:
        from memvault.store.embedding.cache import prune

        prune(p.cache, v.con, keep_days=-1, max_bytes=2**40)
        p.cache.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        p.cache.execute("VACUUM")
        shutil.copyfile(vectors.cache_path(data_dir), FIXTURE_CACHE)
    p.close()
    v.close()
    return root


def evaluate(root: Path, min_similarity: float | None = None) -> dict[str, Any]:
    """recall@5/@10 and MRR per mode and query set, and unrelated-query silence."""
    from memvault.store.memory_store import MemoryStore
    from memvault.store.retrieval.retriever import Retriever

    overrides = {"recall.min_similarity": min_similarity} if min_similarity is not None else None
    v = MemoryStore.open(str(root), overrides)
    r = Retriever(v.ctx, v.read_con())
    sets = json.loads((FIXTURE / "queries.json").read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    for mode in ("keyword", "semantic", "hybrid"):
        for name in ("paraphrase", "keyword"):
            r5 = r10 = rr = 0.0
            misses = []
            for item in sets[name]:
                hits = [h["path"] for h in r.search(SearchQuery(item["query"], mode=mode, limit=10)).to_json()["hits"]]
                rel = set(item["relevant"])
                ranks = [i for i, p in enumerate(hits, 1) if p in rel]
                first = ranks[0] if ranks else None
                r5 += bool(first and first <= 5)
                r10 += bool(first)
                rr += 1 / first if first else 0
                if not first:
                    misses.append(item["query"])
            n = len(sets[name])
            out[f"{mode}/{name}"] = {"recall@5": round(r5 / n, 3), "recall@10": round(r10 / n, 3), "mrr": round(rr / n, 3),
                                     "misses": misses}
        silent = sum(1 for q in sets["unrelated"] if not r.search(SearchQuery(q, mode=mode, limit=10)).to_json()["hits"])
        out[f"{mode}/unrelated_silent"] = f"{silent}/{len(sets['unrelated'])}"
    silent = sum(1 for q in sets["unrelated"] if not r.context(ContextQuery(q, what="all", record=False)).to_json()["items"])
    out["context/unrelated_silent"] = f"{silent}/{len(sets['unrelated'])}"
    r.close()
    v.close()
    return out


def calibrate(root: Path) -> dict[str, Any]:
    """Target similarities of paraphrase queries against the best similarity
    of unrelated ones: the floor must sit between the two."""
    from memvault.store.memory_store import MemoryStore
    from memvault.store.retrieval.retriever import Retriever

    v = MemoryStore.open(str(root))
    r = Retriever(v.ctx, v.read_con())
    m = r.matrix()
    e = r.embedder()
    con = r.con
    sets = json.loads((FIXTURE / "queries.json").read_text(encoding="utf-8"))
    rowid_of = {p: rid for rid, p in con.execute("SELECT rowid, path FROM traces")}
    targets, unrelated = [], []
    for item in sets["paraphrase"]:
        sims = m.similarities(e.embed_query(item["query"]))
        best = max(float(sims[m.rows_of_trace(rowid_of[p])].max()) for p in item["relevant"])
        targets.append(round(best, 4))
    for q in sets["unrelated"]:
        unrelated.append(round(float(m.similarities(e.embed_query(q)).max()), 4))
    ts, us = sorted(targets), sorted(unrelated)
    out = {"target_similarity": ts, "unrelated_best_similarity": us,
           "target_p10": ts[len(ts) // 10], "target_min": ts[0], "unrelated_max": us[-1]}
    for floor in (0.25, 0.28, 0.30, 0.32, 0.35, 0.38, 0.40):
        out[f"floor {floor:.2f}"] = {"targets_kept": sum(t >= floor for t in ts) / len(ts),
                                     "unrelated_silenced": sum(u < floor for u in us) / len(us)}
    r.close()
    v.close()
    return out


# -- latency at scale -----------------------------------------------------------------


def _sample_texts(n: int, rng: random.Random) -> list[tuple[str, str]]:
    """(title, body) pairs from the generated benchmark vault, reused round-robin."""
    src = BENCH / "vaults" / "gen-20000-s1"
    files = sorted(src.rglob("*.md"))[:5000] if src.exists() else []
    pool: list[tuple[str, str]] = []
    for f in files:
        try:
            pool.append((f.stem, f.read_text(encoding="utf-8")[:1500]))
        except (OSError, UnicodeDecodeError):
            continue
    if not pool:  # no generated vault: words from the labelled fixture
        for f in sorted((FIXTURE / "vault").rglob("*.md")):
            pool.append((f.stem, f.read_text(encoding="utf-8")[:1500]))
    return [pool[i % len(pool)] for i in range(n)]


def synthetic_index(work: Path, n: int, dim: int = 384, clusters: int = 256, seed: int = 1) -> Path:
    """A vault folder whose index holds ``n`` traces with realistic text and one
    chunk each, and whose embedding cache holds clustered unit vectors for them."""
    import hashlib

    import numpy as np

    from memvault.store.db import records as rec
    from memvault.store.db.connection import write_transaction
    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.model import resolve_model
    from memvault.store.memory_store import MemoryStore

    root = work / f"synthetic-{n}"
    root.mkdir(parents=True, exist_ok=True)
    v = MemoryStore.open(str(root))
    con = v.con
    rng = random.Random(seed)
    texts = _sample_texts(n, rng)
    types = ["note"] * 8 + ["semantic", "episodic", "procedural", "identity"]
    start = time.perf_counter()
    with write_transaction(con):
        for i, (title, body) in enumerate(texts):
            t = rng.choice(types)
            rec.put_trace(con, rec.TraceRow(
                id=f"s-{i}", kind="note" if t == "note" else "memory", type=t, title=f"{title} {i}", content=body,
                path=f"S/{i}.md", updated="2026-10-01T00:00:00+00:00", strength=None if t == "note" else 0.5))
        con.execute("DELETE FROM embed_queue")
        con.executemany(
            "INSERT INTO chunks (trace_rowid, seq, start, stop, heading, tokens, hash) "
            "SELECT rowid, 0, 0, length(content), '', 128, ? FROM traces WHERE id = ?",
            [(hashlib.sha256(f"s-{i}".encode()).digest(), f"s-{i}") for i in range(n)],
        )
    nprng = np.random.default_rng(seed)
    centers = nprng.standard_normal((clusters, dim)).astype(np.float32)
    assign = nprng.integers(0, clusters, n)
    m = centers[assign] + 0.8 * nprng.standard_normal((n, dim)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    cache = vec.open_cache(v.data_dir)
    key = resolve_model("default").key
    blobs = vec.encode_vectors(m)
    for i in range(0, n, 5000):
        vec.put_vectors(cache, key, [(hashlib.sha256(f"s-{j}".encode()).digest(), blobs[j]) for j in range(i, min(n, i + 5000))])
    vec.bump_generation(con)
    cache.close()
    v.close()
    print(f"synthetic index of {n} traces built in {time.perf_counter() - start:.1f}s")
    return root


def first_pass_recall(matrix: Any, query_vectors: list[Any]) -> dict[str, Any]:
    """Recall@10 of the vector search memvault runs (a binary first pass above
    EXACT_BELOW rows) against exact cosine search over the same matrix, for
    real query vectors; and both timings."""
    import numpy as np

    from memvault.store.embedding.vectors import EXACT_BELOW, rescored

    recall, fast, exact = [], [], []
    for qv in query_vectors:
        t = time.perf_counter()
        s = matrix.similarities(qv)
        top = set(np.argpartition(-s, 10)[:10])
        fast.append(time.perf_counter() - t)
        t = time.perf_counter()
        e = matrix.matrix @ qv
        truth = set(np.argpartition(-e, 10)[:10])
        exact.append(time.perf_counter() - t)
        recall.append(len(top & truth) / 10)
    n = len(matrix)
    return {
        "recall_at_10": round(float(np.mean(recall)), 4), "min_recall_at_10": min(recall),
        "rescored": rescored(n) if n >= EXACT_BELOW else n,
        "first_pass": summarize(fast), "exact": summarize(exact),
    }


def latency_at(work: Path, n: int, runs: int) -> dict[str, Any]:
    """In-process search latency per mode over ``n`` traces (model and matrix warm)."""
    from memvault.store.memory_store import MemoryStore
    from memvault.store.retrieval.retriever import Retriever

    root = synthetic_index(work, n)
    v = MemoryStore.open(str(root))
    r = Retriever(v.ctx, v.read_con())
    t = time.perf_counter()
    r.warm()
    load = time.perf_counter() - t
    rng = random.Random(5)
    words = [w for title, _ in _sample_texts(400, rng) for w in title.split() if len(w) > 3]
    queries = [" ".join(rng.sample(words, 3)) for _ in range(50)] + [
        "how do I restore a backup", "notes about colour spaces", "which database do we use",
        "retry with exponential backoff", "meeting notes from last week",
    ]
    out: dict[str, Any] = {"matrix_load_and_warm_s": round(load, 2), "vectors": len(r.matrix() or [])}
    for mode in ("keyword", "semantic", "hybrid"):
        times = []
        for i in range(runs):
            q = queries[i % len(queries)]
            t = time.perf_counter()
            r.search(SearchQuery(q, mode=mode, limit=10)).to_json()
            times.append(time.perf_counter() - t)
        out[mode] = summarize(times)
        print(f"{n:>7} traces  {mode:8}  median {out[mode]['median_ms']:7.2f} ms  p95 {out[mode]['p95_ms']:7.2f} ms")
    # where the time goes in one hybrid query

    qv = r.embedder().embed_query(queries[0])
    parts: dict[str, list[float]] = {"embed_query": [], "matmul_topk": [], "keyword_lists": []}
    from memvault.store.retrieval.keyword import Filters
    from memvault.store.retrieval.rank import keyword_hits

    for i in range(min(runs, 100)):
        q = queries[i % len(queries)]
        t = time.perf_counter(); r.embedder().embed_query(q); parts["embed_query"].append(time.perf_counter() - t)
        t = time.perf_counter(); m = r.matrix(); s = m.similarities(qv); m.best_per_trace(s, 50); parts["matmul_topk"].append(time.perf_counter() - t)
        t = time.perf_counter(); keyword_hits(r.con, q, Filters(), 50); parts["keyword_lists"].append(time.perf_counter() - t)
    out["hybrid_parts"] = {k: summarize(v_) for k, v_ in parts.items()}
    import numpy as np

    m = r.matrix()
    near = np.random.default_rng(11)
    neighbours = []  # queries near stored vectors: what a query about something the vault holds looks like
    for i in near.integers(0, len(m), 50):
        q = m.matrix[i] + 0.5 * near.standard_normal(m.matrix.shape[1]).astype(np.float32) / np.sqrt(m.matrix.shape[1])
        neighbours.append(q / np.linalg.norm(q))
    out["first_pass"] = {
        "near_stored_vectors": first_pass_recall(m, neighbours),
        "unrelated_text_queries": first_pass_recall(m, [r.embedder().embed_query(q) for q in queries[:50]]),
    }
    for kind, fp in out["first_pass"].items():
        print(f"   vector first pass ({kind}): recall@10 vs exact {fp['recall_at_10']:.3f}, "
              f"{fp['rescored']} of {out['vectors']} rows rescored, p95 {fp['first_pass']['p95_ms']} ms "
              f"(exact {fp['exact']['p95_ms']} ms)")
    print("   hybrid parts: " + ", ".join(f"{k} {v_['median_ms']} ms (p95 {v_['p95_ms']})" for k, v_ in out["hybrid_parts"].items()))
    r.close()
    v.close()
    return out


# -- whole processes --------------------------------------------------------------------


def _time_process(cmd: list[str], runs: int) -> dict[str, float]:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        if p.returncode != 0:
            raise RuntimeError(f"{cmd} failed: {p.stderr}")
    return summarize(times)


def process_runs(root: Path, runs: int) -> dict[str, Any]:
    """``memvault search`` (hybrid, and keyword) and ``memvault context`` as
    processes, without and then with a real ``memvault daemon`` process
    serving the vault (model and vectors warm)."""
    from memvault.daemon.client import ask
    from memvault.store.memory_store import MemoryStore

    base = [str(MEMVAULT), "--vault", str(root)]
    cmds = {
        "search keyword": base + ["search", "Dolby Atmos", "--mode", "keyword"],
        "search hybrid": base + ["search", "low latency sound server for linux"],
        "context": base + ["context", "the checkout fails with SSL errors again", "--no-record"],
    }
    out: dict[str, Any] = {}
    for name, cmd in cmds.items():
        out[f"{name} (no daemon)"] = _time_process(cmd, max(5, runs // 4) if name != "search keyword" else runs)
    v = MemoryStore.open(str(root))
    daemon = subprocess.Popen(base + ["daemon"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        from memvault.store.queries.search import SearchQuery
        probe = SearchQuery("warm", limit=1, record=False).to_json()
        while ask(v.data_dir, "search", probe, config=v.settings.values) is None:  # ready and warm
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"memvault daemon did not answer: {daemon.stderr.read() if daemon.stderr else ''}")
            time.sleep(0.2)
        for name, cmd in cmds.items():
            if name == "search keyword":
                continue
            out[f"{name} (daemon)"] = _time_process(cmd, runs)
        out["daemon idle with the model loaded"] = _idle(daemon.pid, 20.0)
    finally:
        daemon.terminate()
        daemon.wait(30)
        v.close()
    for k, val in out.items():
        if "median_ms" in val:
            print(f"process {k:32} median {val['median_ms']:7.1f} ms  p95 {val['p95_ms']:7.1f} ms")
        else:
            print(f"{k}: {val}")
    return out


def _idle(pid: int, seconds: float) -> dict[str, float]:
    """CPU share and resident memory of process ``pid`` over ``seconds`` of quiet."""

    def ticks() -> int:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime

    def rss_mib() -> float:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    hz = os.sysconf("SC_CLK_TCK")
    before, t = ticks(), time.monotonic()
    time.sleep(seconds)  # the measurement window itself
    used = (ticks() - before) / hz
    return {"seconds": seconds, "cpu_percent": round(100 * used / (time.monotonic() - t), 3), "rss_mib": round(rss_mib(), 1)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["quality", "calibrate", "latency", "process"], action="append")
    ap.add_argument("--sizes", type=int, nargs="*", default=[20000, 100000])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--process-runs", type=int, default=20)
    ap.add_argument("--save-cache", action="store_true", help="Write the labelled vault's vectors to the test fixture.")
    args = ap.parse_args()
    parts = args.only or ["quality", "calibrate", "latency", "process"]
    work = Path(tempfile.mkdtemp(prefix="bench-retrieval-", dir=BENCH / "out"))
    isolate_env(work / "home")
    results: dict[str, Any] = {"when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    try:
        root = labelled_vault(work, args.save_cache) if {"quality", "calibrate", "process"} & set(parts) else None
        if "quality" in parts:
            results["quality"] = evaluate(root)  # type: ignore[arg-type]
            _print_quality(results["quality"])
        if "calibrate" in parts:
            results["calibrate"] = calibrate(root)  # type: ignore[arg-type]
            print(json.dumps({k: v for k, v in results["calibrate"].items() if k.startswith("floor") or "_m" in k}, indent=1))
        if "latency" in parts:
            results["latency"] = {str(n): latency_at(work, n, args.runs) for n in args.sizes}
        if "process" in parts:
            results["process"] = process_runs(root, args.process_runs)  # type: ignore[arg-type]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    OUT.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    text = json.dumps(results, indent=1)
    (OUT / f"bench_retrieval-{stamp}.json").write_text(text)
    (OUT / "bench_retrieval-latest.json").write_text(text)


def _print_quality(q: dict[str, Any]) -> None:
    print(f"{'mode/set':28} {'R@5':>6} {'R@10':>6} {'MRR':>6}")
    for key, val in q.items():
        if isinstance(val, dict):
            print(f"{key:28} {val['recall@5']:6.3f} {val['recall@10']:6.3f} {val['mrr']:6.3f}")
        else:
            print(f"{key:28} {val}")


if __name__ == "__main__":
    main()
