"""Retrieval benchmark: quality on the labelled set, latency at scale, processes.

    python bench/bench_retrieval.py                  # everything
    python bench/bench_retrieval.py --only quality   # quality | latency | process | calibrate
    python bench/bench_retrieval.py --sizes 20000    # latency sizes (default 20000 100000)

* **quality**: recall@5, recall@10 and MRR of keyword, semantic and hybrid
  search over ``tests/fixtures/retrieval`` (paraphrase and keyword-exact
  queries), and how many unrelated queries return nothing.
* **calibrate**: the similarity of each paraphrase query's target versus the
  best similarity an unrelated query reaches, the data behind the relevance
  floor ``recall.min_similarity``.
* **latency**: in-process search latency (median, p95) per mode over
  synthetic indexes of N traces with random-but-realistic vectors (clustered
  unit vectors, so the top-k has structure), the model and matrix warm.
* **process**: wall time of ``memvault search`` (hybrid) and ``memvault
  context`` as whole processes, with and without a running QueryServer.

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

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
FIXTURE = REPO / "tests" / "fixtures" / "retrieval"
OUT = BENCH / "out"
MEMVAULT = Path(sys.executable).parent / "memvault"


def isolate(home: Path) -> None:
    """A private memvault home for this process and its children."""
    for key in list(os.environ):
        if key.startswith("MEMVAULT_"):
            del os.environ[key]
    home.mkdir(parents=True, exist_ok=True)
    os.environ["MEMVAULT_HOME"] = str(home)
    os.environ["MEMVAULT_CONFIG"] = str(home / "no-config.toml")


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
    from memvault.daemon.app import Vault
    from memvault.daemon.embedding import EmbeddingPipeline
    from memvault.store import location, vectors

    root = work / "retrieval-vault"
    if not root.exists():
        shutil.copytree(FIXTURE / "vault", root)
    data_dir = location.ensure_private_dir(location.vault_data_dir(root))
    if FIXTURE_CACHE.exists():
        shutil.copyfile(FIXTURE_CACHE, vectors.cache_path(data_dir))
    v = Vault.open(str(root))
    v.indexer().sync()
    p = EmbeddingPipeline.for_vault(v, v.con)
    report = p.run()
    print(f"labelled vault: embedded {report.embedded} texts in {report.seconds:.1f}s")
    if save_cache:
        vectors.prune_cache(p.cache, v.con, keep_days=-1)
        p.cache.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        p.cache.execute("VACUUM")
        shutil.copyfile(vectors.cache_path(data_dir), FIXTURE_CACHE)
    p.close()
    v.close()
    return root


def evaluate(root: Path, min_similarity: float | None = None) -> dict[str, Any]:
    """recall@5/@10 and MRR per mode and query set, and unrelated-query silence."""
    from memvault.daemon.app import Vault
    from memvault.daemon.retrieval import Retriever

    overrides = {"recall.min_similarity": min_similarity} if min_similarity is not None else None
    v = Vault.open(str(root), overrides)
    r = Retriever(v, v.read_con())
    sets = json.loads((FIXTURE / "queries.json").read_text(encoding="utf-8"))
    out: dict[str, Any] = {}
    for mode in ("keyword", "semantic", "hybrid"):
        for name in ("paraphrase", "keyword"):
            r5 = r10 = rr = 0.0
            misses = []
            for item in sets[name]:
                hits = [h["path"] for h in r.search(item["query"], mode=mode, limit=10)["hits"]]
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
        silent = sum(1 for q in sets["unrelated"] if not r.search(q, mode=mode, limit=10)["hits"])
        out[f"{mode}/unrelated_silent"] = f"{silent}/{len(sets['unrelated'])}"
    r.close()
    v.close()
    return out


def calibrate(root: Path) -> dict[str, Any]:
    """Target similarities of paraphrase queries against the best similarity
    of unrelated ones: the floor must sit between the two."""
    from memvault.daemon.app import Vault
    from memvault.daemon.retrieval import Retriever

    v = Vault.open(str(root))
    r = Retriever(v, v.read_con())
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=["quality", "calibrate", "latency", "process"], action="append")
    ap.add_argument("--sizes", type=int, nargs="*", default=[20000, 100000])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--save-cache", action="store_true", help="Write the labelled vault's vectors to the test fixture.")
    args = ap.parse_args()
    parts = args.only or ["quality", "calibrate", "latency", "process"]
    work = Path(tempfile.mkdtemp(prefix="bench-retrieval-", dir=BENCH / "out"))
    isolate(work / "home")
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
            from bench_latency import latency_runs

            results["latency"] = latency_runs(work, args.sizes, args.runs)
        if "process" in parts:
            from bench_latency import process_runs

            results["process"] = process_runs(root)  # type: ignore[arg-type]
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
    sys.path.insert(0, str(BENCH))
    main()
