#!/usr/bin/env python3
"""Where keyword-search time goes, and what-if query strategies, on the
bench_search query set (run bench_search.py first: it builds the index).

    python bench/profile_search.py [--notes 20000 --seed 1 --rounds 5]

Variants, each over the same ~200 queries (latency median/p95 per category)
and checked against memvault's own results (same ids in the same order):

* ``current``: ``memvault.store.retrieval.keyword.keyword_search`` as it is;
* ``no snippet``: the current SQL without the ``snippet()`` column -- SQLite
  evaluates the select list for *every* match before ORDER BY ... LIMIT, so
  this is the cost of snippets for rows that are then thrown away;
* ``two-phase``: rank in FTS5 alone (``SELECT rowid, bm25(...) ... ORDER BY
  rank LIMIT K``, K = max(50, 5 x limit)), then join ``traces``, apply the
  filters and compute ``snippet()`` for the returned rows only; when fewer
  than ``limit`` rows survive the filters and FTS5 had more than K matches,
  fall back to the current query (so results are never lost);
* ``snippet last``: rank and filter as now but without ``snippet()``, then
  snippets for the returned rows only (always exact, no fallback);
* ``hybrid``: two-phase when only the default status filter applies,
  snippet-last when tag/path/type filters are given;
* ``hybrid + mmap``: the same with ``PRAGMA mmap_size=268435456``.

Variants are interleaved query by query (each round times every variant on
query 1, then on query 2, ...), so load from other processes on this shared
machine falls on all of them alike.

Nothing in the project is changed; the variants are written here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402
import bench_search as BS  # noqa: E402  (the query set)


def _variants():
    from memvault.store.retrieval import keyword as S

    w_title, w_content, w_tags = S.BM25_WEIGHTS
    bm25 = f"bm25(traces_fts, {w_title}, {w_content}, {w_tags})"
    snip = f"snippet(traces_fts, -1, '{S.MARK_START}', '{S.MARK_END}', '…', {S.SNIPPET_TOKENS})"

    def hits(rows):
        return [S.Hit(id=r[0], title=r[1], type=r[2], kind=r[3], path=r[4], status=r[5], score=round(-r[6], 4),
                      snippet=r[7]) for r in rows]

    def run_nosnippet(con, match, filters, limit):
        where, params = S._filter_sql(filters)
        sql = f"""SELECT t.id, t.title, t.type, t.kind, t.path, t.status, {bm25} AS rank, ''
                  FROM traces_fts JOIN traces t ON t.rowid = traces_fts.rowid
                  WHERE traces_fts MATCH ? {where} ORDER BY rank LIMIT ?"""
        return hits(con.execute(sql, (match, *params, limit)).fetchall())

    def run_twophase(con, match, filters, limit):
        where, params = S._filter_sql(filters)
        k = max(50, 5 * limit)
        sql = f"""WITH top AS MATERIALIZED (
                      SELECT rowid AS rid, {bm25} AS rank FROM traces_fts WHERE traces_fts MATCH ?1
                      ORDER BY rank LIMIT ?2)
                  SELECT t.id, t.title, t.type, t.kind, t.path, t.status, top.rank,
                         (SELECT {snip} FROM traces_fts WHERE traces_fts MATCH ?1 AND rowid = top.rid)
                  FROM top JOIN traces t ON t.rowid = top.rid
                  WHERE 1 {where.replace('?', '?%d')} ORDER BY top.rank LIMIT ?3"""
        n = 4
        while "?%d" in sql:
            sql = sql.replace("?%d", f"?{n}", 1)
            n += 1
        rows = con.execute(sql, (match, k, limit, *params)).fetchall()
        if len(rows) < limit:
            total = con.execute("SELECT count(*) FROM traces_fts WHERE traces_fts MATCH ?", (match,)).fetchone()[0]
            if total > k:  # filters dropped too many of the top K: rank all matches
                return S._run(con, match, filters, limit)
        return hits(rows)

    def run_snippet_last(con, match, filters, limit):
        # Rank and filter as now, but without snippet(); snippets for the survivors only.
        where, params = S._filter_sql(filters)
        sql = f"""WITH top AS MATERIALIZED (
                      SELECT t.rowid AS rid, {bm25} AS rank FROM traces_fts JOIN traces t ON t.rowid = traces_fts.rowid
                      WHERE traces_fts MATCH ?1 {where.replace('?', '?%d')} ORDER BY rank LIMIT ?2)
                  SELECT t.id, t.title, t.type, t.kind, t.path, t.status, top.rank,
                         (SELECT {snip} FROM traces_fts WHERE traces_fts MATCH ?1 AND rowid = top.rid)
                  FROM top JOIN traces t ON t.rowid = top.rid ORDER BY top.rank"""
        n = 3
        while "?%d" in sql:
            sql = sql.replace("?%d", f"?{n}", 1)
            n += 1
        return hits(con.execute(sql, (match, limit, *params)).fetchall())

    def run_hybrid(con, match, filters, limit):
        only_status = not (filters.types or filters.kinds or filters.tags or filters.path_glob)
        return (run_twophase if only_status else run_snippet_last)(con, match, filters, limit)

    def make(run):
        def search(con, query, *, limit=10, filters=None, raw=False):
            filters = filters or S.Filters()
            for expr in S.natural_match_expressions(query):
                h = run(con, expr, filters, limit)
                if h:
                    return h
            return []
        return search

    return {
        "current": (S.keyword_search, None),
        "no snippet": (make(run_nosnippet), None),
        "snippet last": (make(run_snippet_last), None),
        "two-phase": (make(run_twophase), None),
        "hybrid": (make(run_hybrid), None),
        "hybrid + mmap": (make(run_hybrid), lambda con: con.execute("PRAGMA mmap_size=268435456")),
    }


def interleaved(vault: Path, queries: list, rounds: int, variants: dict) -> dict[str, Any]:
    import statistics
    import time

    from memvault.store.memory_store import MemoryStore
    from memvault.store.retrieval.keyword import Filters

    filters = [Filters(tags=q.tags, path_glob=q.path_glob) for q in queries]
    cons = {}
    vaults = []
    for name, (_fn, setup) in variants.items():
        v = MemoryStore.open(str(vault))
        vaults.append(v)
        con = v.read_con()
        if setup:
            setup(con)
        cons[name] = con
    ids: dict[str, list[list[str]]] = {n: [] for n in variants}
    times: dict[str, list[list[float]]] = {n: [[] for _ in queries] for n in variants}
    for i, (q, f) in enumerate(zip(queries, filters)):  # untimed first pass; results kept
        for name, (fn, _s) in variants.items():
            ids[name].append([h.id for h in fn(cons[name], q.text, limit=10, filters=f)])
    for _ in range(rounds):
        for i, (q, f) in enumerate(zip(queries, filters)):
            for name, (fn, _s) in variants.items():
                t0 = time.perf_counter()
                fn(cons[name], q.text, limit=10, filters=f)
                times[name][i].append(time.perf_counter() - t0)
    for v in vaults:
        v.close()
    base = next(iter(variants))
    out: dict[str, Any] = {}
    for name in variants:
        per_query = times[name]
        cats = {}
        for cat in dict.fromkeys(q.category for q in queries):
            ts = [t for j, q in enumerate(queries) if q.category == cat for t in per_query[j]]
            cats[cat] = C.summarize(ts)
        out[name] = {
            "all": C.summarize([t for ts in per_query for t in ts]),
            "categories": cats,
            "differs_from_current": [queries[j].label() for j in range(len(queries)) if ids[name][j] != ids[base][j]],
            "slowest": sorted(((statistics.median(per_query[j]) * 1000, queries[j].label()) for j in range(len(queries))),
                              reverse=True)[:8],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    vault = C.generated_vault(args.notes, args.seed)
    home = C.VAULTS / f"home-{vault.name}"
    if not home.exists():
        print(f"no index at {home}: run bench/bench_search.py first", file=sys.stderr)
        return 2
    C.isolate_env(home)
    manifest = json.loads((vault / ".bench-manifest.json").read_text())
    queries = BS.build_queries(manifest, args.seed)
    res: dict[str, Any] = {"benchmark": "profile_search", "machine": C.machine_info(), "variants": {}}
    res["variants"] = interleaved(vault, queries, args.rounds, _variants())
    path = C.write_json("profile_search", res)
    cats = list(next(iter(res["variants"].values()))["categories"])
    rows = []
    for name, r in res["variants"].items():
        rows.append([name, f"{r['all']['median'] * 1000:.2f}", f"{r['all']['p95'] * 1000:.2f}",
                     f"{r['all']['max'] * 1000:.1f}"]
                    + [f"{r['categories'][c]['p95'] * 1000:.1f}" for c in cats]
                    + [str(len(r["differs_from_current"]))])
    print()
    print(f"keyword search what-ifs, {len(queries)} queries x {args.rounds} rounds, ms "
          f"(category columns are p95):")
    print(C.table(rows, ["variant", "median", "p95", "max", *cats, "results differ"]))
    for name, r in res["variants"].items():
        if r["differs_from_current"] and name != "no snippet":
            print(f"{name}: differs on {r['differs_from_current'][:5]}")
    print(f"\nJSON: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
