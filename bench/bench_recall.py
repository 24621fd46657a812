"""Recall on conversational memory: memvault's modes against plain baselines.

    python bench/bench_recall.py                    # both splits, every system
    python bench/bench_recall.py --split dev        # tune on dev only
    python bench/bench_recall.py --dialogues d02    # one dialogue

Each dialogue of ``tests/fixtures/conversations`` becomes its own vault, one
episodic memory note per turn (``type: episodic``, ``session_date``,
``speaker``, ``session``, ``turn`` in its front-matter, the text as body;
:mod:`fixtures.conversations.support`), synced and embedded with the bundled
MiniLM (vectors cached in ``bench/out/conv-cache/``). Every question is asked
of its dialogue's vault by:

* memvault ``keyword``, ``semantic`` and ``hybrid`` search (``Retriever.search``,
  the call ``memvault search`` makes in-process or in the daemon, limit 10);
* **bm25**: plain SQLite FTS5 ``bm25()`` over the turn texts alone (same
  tokenizer as memvault: porter, unicode61, diacritics folded), the
  question's words OR-ed;
* **cosine**: plain MiniLM cosine between the question and each turn text;
* **rrf**: reciprocal-rank fusion (k = 60) of those two rankings.

Reported per split and question kind: evidence recall@5 and @10 (share of a
question's evidence turns in the top 5/10), hit@10 (any evidence turn in the
top 10) and MRR (first evidence turn). The baselines are computed in the same
run, so every figure can be read against them. Also: ``memvault context``
(default budget) per kind (evidence recall and hit in the block), and whether
the unrelated queries of the paraphrase set return nothing from ``context``.

"Now" for recency is one week after each dialogue's last session (questions
asked soon after the conversation, where recency matters most); ``--now
real`` uses the clock.

Results go to ``bench/out/bench_recall-<time>.json`` and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from memvault.store.queries.recall import ContextQuery
from memvault.store.queries.search import SearchQuery

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO / "tests"))
from _common import isolate_env, machine_info  # noqa: E402
from fixtures.conversations import support  # noqa: E402

OUT = BENCH / "out"
CACHE = OUT / "conv-cache" / "embeddings.db"
PARAPHRASE_QUERIES = REPO / "tests" / "fixtures" / "retrieval" / "queries.json"
MEMVAULT_MODES = ("keyword", "semantic", "hybrid")
BASELINES = ("bm25", "cosine", "rrf")
SYSTEMS = MEMVAULT_MODES + BASELINES


def last_session(did: str) -> datetime:
    """When the dialogue's last session started (UTC)."""
    date = support.dialogue(did)["sessions"][-1]["date"]
    return datetime.fromisoformat(date).replace(tzinfo=timezone.utc)


def run_dialogue(work: Path, did: str, now_mode: str, context: bool) -> dict[str, Any]:
    """Every question of one dialogue through every system; per-question scores."""
    from memvault.store.embedding import vectors as vec
    from memvault.store.memory_store import MemoryStore
    from memvault.store.retrieval.retriever import Retriever

    root = work / did
    t0 = time.perf_counter()
    report = support.build(root, [did], cache=CACHE)
    support.save_cache(root, CACHE)
    built = time.perf_counter() - t0
    store = MemoryStore.open(str(root))
    r = Retriever(store.ctx, store.read_con())
    if now_mode == "end+7d":
        fixed = last_session(did) + timedelta(days=7)
        r.clock = lambda: fixed  # type: ignore[method-assign]
    cache = vec.open_cache(CACHE.parent, create=False)
    base = support.Baselines(did, r.embedder(), cache, r.model_key or "")
    rows = []
    for q in support.questions(did):
        ranked: dict[str, list[str]] = {}
        for mode in MEMVAULT_MODES:
            hits = r.search(SearchQuery(q["question"], mode=mode, limit=10)).to_json()["hits"]
            ranked[mode] = [t for t in (support.turn_of_path(h["path"]) for h in hits) if t]
        qvec = r.embedder().embed_query(q["question"])
        ranked["bm25"] = base.bm25(q["question"])
        ranked["cosine"] = base.cosine(qvec)
        ranked["rrf"] = support.Baselines.rrf(ranked["bm25"], ranked["cosine"])
        row = {"id": q["id"], "kind": q["kind"], "evidence": q["evidence"],
               "scores": {s: support.score(ranked[s], q["evidence"]) for s in SYSTEMS},
               "top": {s: ranked[s][:10] for s in SYSTEMS}}
        if context:
            res = r.context(ContextQuery(q["question"], record=False)).to_json()
            found = [t for t in (support.turn_of_path(i["path"]) for i in res["items"]) if t]
            ev = set(q["evidence"])
            row["context"] = {"recall": len(ev & set(found)) / len(ev), "hit": 1.0 if ev & set(found) else 0.0,
                              "items": len(found), "tokens": res["tokens"]}
        rows.append(row)
    silent = None
    if context:
        unrelated = json.loads(PARAPHRASE_QUERIES.read_text(encoding="utf-8"))["unrelated"]
        silent = sum(1 for u in unrelated if not r.context(ContextQuery(u, record=False)).to_json()["items"])
        silent = f"{silent}/{len(unrelated)}"
    if cache is not None:
        cache.close()
    r.close()
    store.close()
    return {"dialogue": did, "split": support.dialogue(did)["split"], "build_s": round(built, 1),
            "embedded": report.get("embedded"), "questions": rows, "context_unrelated_silent": silent}


def aggregate(results: list[dict[str, Any]], split: str) -> dict[str, Any]:
    """Mean scores per system and question kind (and "all") over one split's dialogues."""
    rows = [q for d in results if split in ("all", d["split"]) for q in d["questions"]]
    out: dict[str, Any] = {}
    for kind in (*support.KINDS, "all"):
        sel = [q for q in rows if kind in ("all", q["kind"])]
        out[kind] = {s: support.mean_scores([q["scores"][s] for q in sel]) for s in SYSTEMS}
        ctx = [q["context"] for q in sel if "context" in q]
        if ctx:
            out[kind]["context"] = {"recall": round(sum(c["recall"] for c in ctx) / len(ctx), 3),
                                    "hit": round(sum(c["hit"] for c in ctx) / len(ctx), 3),
                                    "items": round(sum(c["items"] for c in ctx) / len(ctx), 1)}
    return out


def print_table(name: str, agg: dict[str, Any]) -> None:
    """One split's figures: a row per kind and system."""
    print(f"\n== {name} ==")
    print(f"{'kind':10} {'system':8} {'n':>4} {'R@5':>6} {'R@10':>6} {'hit10':>6} {'MRR':>6}")
    for kind, by_sys in agg.items():
        for s in SYSTEMS:
            m = by_sys[s]
            print(f"{kind:10} {s:8} {m['n']:4d} {m['r5']:6.3f} {m['r10']:6.3f} {m['hit10']:6.3f} {m['mrr']:6.3f}")
        if "context" in by_sys:
            c = by_sys["context"]
            print(f"{kind:10} {'context':8} {'':4} recall {c['recall']:.3f} hit {c['hit']:.3f} items {c['items']}")
    a = agg["all"]
    best_part = max(a["keyword"]["r10"], a["semantic"]["r10"])
    print(f"hybrid R@10 - rrf R@10 = {a['hybrid']['r10'] - a['rrf']['r10']:+.3f}; "
          f"hybrid - best part = {a['hybrid']['r10'] - best_part:+.3f}; "
          f"keyword - bm25 per kind: " + ", ".join(f"{k} {agg[k]['keyword']['r10'] - agg[k]['bm25']['r10']:+.3f}"
                                                  for k in support.KINDS))


def main(argv: list[str] | None = None, hook: Callable[[], None] | None = None) -> dict[str, Any]:
    """Run the benchmark; ``hook`` runs after the environment is isolated
    (what-if scripts patch constants there)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", choices=["dev", "test", "all"], default="all")
    ap.add_argument("--dialogues", nargs="*", help="Only these dialogues (e.g. d01 d02).")
    ap.add_argument("--now", choices=["end+7d", "real"], default="end+7d")
    ap.add_argument("--no-context", action="store_true", help="Skip the context measurements (faster).")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--save-fixture-cache", action="store_true",
                    help=f"Write the vectors of {support.CI_DIALOGUE} to the test fixture's cache.")
    args = ap.parse_args(argv)
    dids = args.dialogues or support.dialogue_ids(None if args.split == "all" else args.split)
    OUT.mkdir(exist_ok=True)
    CACHE.parent.mkdir(exist_ok=True)
    if not CACHE.exists() and support.CACHE.exists():
        shutil.copyfile(support.CACHE, CACHE)
    work = Path(tempfile.mkdtemp(prefix="bench-recall-", dir=OUT))
    isolate_env(work / "home")
    if hook is not None:
        hook()
    started = time.perf_counter()
    results = []
    try:
        for did in dids:
            results.append(run_dialogue(work, did, args.now, not args.no_context))
            if not args.quiet:
                print(f"{did}: built in {results[-1]['build_s']} s ({results[-1]['embedded']} embedded), "
                      f"context silent on unrelated: {results[-1]['context_unrelated_silent']}", flush=True)
        if args.save_fixture_cache:
            fixture_cache(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    splits = sorted({d["split"] for d in results}) + (["all"] if len(results) > 1 else [])
    out = {"when": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": machine_info(), "now": args.now,
           "seconds": round(time.perf_counter() - started, 1),
           "aggregate": {s: aggregate(results, s) for s in splits}, "dialogues": results}
    if not args.quiet:
        for s in splits:
            print_table(s, out["aggregate"][s])
    stamp = time.strftime("%Y%m%d-%H%M%S")
    text = json.dumps(out, indent=1)
    (OUT / f"bench_recall-{stamp}.json").write_text(text)
    (OUT / "bench_recall-latest.json").write_text(text)
    return out


def fixture_cache(work: Path) -> None:
    """Rebuild the test fixture's vector cache: the CI dialogue's texts only."""
    from memvault.store import location
    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.cache import prune
    from memvault.store.memory_store import MemoryStore

    root = work / support.CI_DIALOGUE
    store = MemoryStore.open(str(root))
    cache = vec.open_cache(location.vault_data_dir(root), create=False)
    assert cache is not None
    prune(cache, store.con, keep_days=-1, max_bytes=2**40)
    cache.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    cache.execute("VACUUM")
    cache.close()
    store.close()
    shutil.copyfile(vec.cache_path(location.vault_data_dir(root)), support.CACHE)
    print(f"wrote {support.CACHE}")


if __name__ == "__main__":
    main()
