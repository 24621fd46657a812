#!/usr/bin/env python3
"""Where a cold index spends its time, and what-if experiments.

    python bench/profile_index.py                       # 20,000-note generated vault
    python bench/profile_index.py --vault PATH          # any vault
    python bench/profile_index.py --experiments baseline,cache

Runs only against private temp homes; the project's code is never edited:
experiments change things from outside (a wrapped ``connect`` that sets a
pragma or drops a trigger in the temp index, a patched module constant) to
measure what a change *would* buy.

* ``plain``: a cold index, nothing added (the reference for the what-ifs);
* ``baseline``: a cold index with timers around the indexer's steps (parse,
  edges, trace/edge/file writes) and SQLite's own per-statement times
  (``Connection.set_profile``), grouped by statement;
* ``parse``: read + ``parse_note`` every note, no database, under cProfile;
* what-ifs, each a cold index into a fresh home:
  ``cache`` (PRAGMA cache_size=-262144, 256 MiB), ``nofts`` (FTS triggers
  dropped: the cost of full-text indexing), ``noedgeidx`` (the target_path,
  target_id and target_key indexes on ``edges`` dropped), ``batch`` (one transaction for all notes),
  ``cache+batch``; ``bulk`` (for an empty index: 256 MiB cache, FTS triggers
  and the three edge target indexes dropped while loading, then recreated
  and ``INSERT INTO traces_fts(traces_fts) VALUES('rebuild')``, all timed);
  ``parallel-parse`` (read+parse on a 2-process pool first, timed, then the
  indexer takes the parsed notes); ``bulk+parallel-parse``;
* ``fts``: FTS5 alone on the vault's texts, per configuration;
* ``edges``: writing the vault's edges alone, with and without indexes.

Output: a report on stdout and JSON in bench/out/profile_index-*.json.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import pstats
import re
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

EXPERIMENTS = ("plain", "baseline", "parse", "cache", "nofts", "noedgeidx", "batch", "cache+batch", "fts", "edges",
               "bulk", "parallel-parse", "bulk+parallel-parse")


class Timers:
    def __init__(self) -> None:
        self.t: dict[str, float] = defaultdict(float)
        self.n: dict[str, int] = defaultdict(int)

    def wrap(self, module: Any, name: str, label: str | None = None) -> None:
        fn = getattr(module, name)
        label = label or f"{module.__name__.rsplit('.', 1)[-1]}.{name}"

        @functools.wraps(fn)
        def timed(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.t[label] += time.perf_counter() - t0
                self.n[label] += 1

        setattr(module, name, timed)
        self._undo.append((module, name, fn))

    _undo: list[tuple[Any, str, Any]] = []

    def restore(self) -> None:
        while self._undo:
            module, name, fn = self._undo.pop()
            setattr(module, name, fn)


@functools.lru_cache(maxsize=4096)
def _norm_sql(sql: str) -> str:
    s = re.sub(r"\s+", " ", sql).strip()
    s = re.sub(r"\(\?(?:,\s*\?)*\)", "(?..)", s)
    return s[:110]


def _parse_file(args: tuple[str, str]):
    from memvault.vault_io.parser import parse_note

    root, rel = args
    return rel, parse_note(rel, (Path(root) / rel).read_bytes())


def cold_run(vault: Path, home: Path, *, after_connect=None, batch: int | None = None,
             statement_profile: bool = False, step_timers: bool = False, finish=None,
             parallel_parse: int = 0) -> dict[str, Any]:
    C.isolate_env(home)
    import memvault.store.context as ctx_module
    import memvault.store.db.records as rec
    import memvault.store.index.reconcile as ix
    import memvault.store.memory_store as app
    import memvault.vault_io.parser as parser_mod  # the indexer imports parse_note from here at each call

    orig_connect = ctx_module.connect  # every store connection is opened through the context
    orig_batch = ix.BATCH
    sql: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    timers = Timers()

    def connect(*a: Any, **k: Any):
        con = orig_connect(*a, **k)
        if after_connect:
            after_connect(con)
        if statement_profile:
            def prof(statement: str, ns: int) -> None:
                e = sql[_norm_sql(statement)]
                e[0] += 1
                e[1] += ns / 1e9
            con.set_profile(prof)
        return con

    ctx_module.connect = connect
    if batch:
        ix.BATCH = batch
    if step_timers:
        timers.wrap(parser_mod, "parse_note")
        timers.wrap(ix, "note_edges")
        timers.wrap(ix, "note_trace")
        timers.wrap(ix, "scan_vault")
        timers.wrap(rec, "put_trace")
        timers.wrap(rec, "replace_edges")
        timers.wrap(rec, "put_file")
        timers.wrap(rec, "load_files")
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        if parallel_parse:
            # What-if: the read+parse phase on a process pool (timed, pickling
            # included); the indexer then takes each ParsedNote from here.
            import multiprocessing as mp

            from memvault.vault_io.scan import scan_vault

            rels = [r for r, st in scan_vault(vault).files.items() if st.is_note]
            with mp.get_context("fork").Pool(parallel_parse) as pool:
                parsed = dict(pool.imap_unordered(_parse_file, [(str(vault), r) for r in rels], chunksize=64))
            real_parse = parser_mod.parse_note
            parser_mod.parse_note = lambda path, data, **k: parsed.pop(path, None) or real_parse(path, data, **k)
        try:
            v = app.MemoryStore.open(str(vault))
            s = v.sync()
            if finish:
                finish(v.con)
        finally:
            if parallel_parse:
                parser_mod.parse_note = real_parse
        t_sync = time.perf_counter() - t0
        cpu = time.process_time() - c0
        t1 = time.perf_counter()
        v.close()  # the last close checkpoints the WAL into the database
        t_close = time.perf_counter() - t1
    finally:
        ctx_module.connect = orig_connect
        ix.BATCH = orig_batch
        timers.restore()
    out: dict[str, Any] = {
        "seconds": t_sync, "cpu_seconds": cpu, "close_seconds": t_close, "added": s.added,
        "notes_per_s": s.added / t_sync,
    }
    if statement_profile:
        total_sql = sum(e[1] for e in sql.values())
        out["sql_seconds_total"] = total_sql
        out["sql_statements"] = [
            {"sql": k, "count": int(e[0]), "seconds": e[1]}
            for k, e in sorted(sql.items(), key=lambda kv: -kv[1][1])[:15]
        ]
    if step_timers:
        out["steps"] = {k: {"seconds": timers.t[k], "calls": timers.n[k]} for k in sorted(timers.t, key=lambda k: -timers.t[k])}
    return out


def parse_only(vault: Path) -> dict[str, Any]:
    from memvault.vault_io.parser import parse_note

    paths = sorted(p for p in vault.rglob("*.md") if not any(x.startswith(".") for x in p.relative_to(vault).parts))
    datas = [(p.relative_to(vault).as_posix(), p.read_bytes()) for p in paths]
    t0 = time.perf_counter()
    for rel, data in datas:
        parse_note(rel, data)
    plain = time.perf_counter() - t0
    prof = cProfile.Profile()
    prof.enable()
    for rel, data in datas:
        parse_note(rel, data)
    prof.disable()
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf).strip_dirs()
    st.sort_stats("tottime").print_stats(25)
    st.sort_stats("cumulative").print_stats(30)
    C.OUT.mkdir(parents=True, exist_ok=True)
    txt = C.OUT / "profile-parse.txt"
    txt.write_text(buf.getvalue())
    prof.dump_stats(str(C.OUT / "profile-parse.prof"))
    # Cumulative seconds of the parser's main steps, scaled to the unprofiled time.
    stats = st.stats  # type: ignore[attr-defined]
    cum: dict[str, float] = {}
    for (file, line, func), (_cc, _nc, _tt, ct, _callers) in stats.items():
        if func in ("load_frontmatter", "mask_markdown", "find_wikilinks", "find_markdown_links", "find_tags",
                    "find_headings", "find_blocks", "frontmatter_links", "key_lines", "split_frontmatter",
                    "_to_link", "line_starts", "blank_spans", "content_hash", "_dedupe_tags", "line_index"):
            cum[func] = cum.get(func, 0.0) + ct
    total_prof = sum(v for (f, l, fn), v in ((k, s[3]) for k, s in stats.items()) if fn == "parse_note")
    return {
        "notes": len(datas),
        "bytes": sum(len(d) for _, d in datas),
        "seconds": plain,
        "notes_per_s": len(datas) / plain,
        "profiled_seconds": total_prof,
        "step_share_of_parse_note": {k: round(v / total_prof, 3) for k, v in sorted(cum.items(), key=lambda kv: -kv[1])},
        "profile_text": str(txt),
    }


FTS_VARIANTS = {
    # name: (table options, after-create statements, bulk rebuild instead of per-row inserts)
    "current (porter unicode61 rd2, triggers)": ("tokenize='porter unicode61 remove_diacritics 2'", [], False),
    "no porter (unicode61 rd2)": ("tokenize='unicode61 remove_diacritics 2'", [], False),
    "current + detail=column": ("tokenize='porter unicode61 remove_diacritics 2', detail=column", [], False),
    "current + pgsz=16000": ("tokenize='porter unicode61 remove_diacritics 2'",
                              ["INSERT INTO f(f, rank) VALUES('pgsz', 16000)"], False),
    "current + automerge=16": ("tokenize='porter unicode61 remove_diacritics 2'",
                                ["INSERT INTO f(f, rank) VALUES('automerge', 16)"], False),
    "current + cache_size 256 MiB": ("tokenize='porter unicode61 remove_diacritics 2'", ["PRAGMA cache_size=-262144"], False),
    "current, rows first then 'rebuild'": ("tokenize='porter unicode61 remove_diacritics 2'", [], True),
    "current, one transaction": ("tokenize='porter unicode61 remove_diacritics 2'", ["-- batch all"], False),
    "current + automerge=16, one transaction": ("tokenize='porter unicode61 remove_diacritics 2'",
                                                 ["INSERT INTO f(f, rank) VALUES('automerge', 16)", "-- batch all"], False),
    "no FTS (rows only)": (None, [], False),
}


def fts_options(vault: Path, work: Path) -> dict[str, Any]:
    """Cost of FTS5 indexing alone, per configuration, on the vault's own texts."""
    import apsw

    from memvault.vault_io.parser import parse_note

    docs = []
    for p in sorted(vault.rglob("*.md")):
        rel = p.relative_to(vault).as_posix()
        if any(x.startswith(".") for x in rel.split("/")):
            continue
        n = parse_note(rel, p.read_bytes())
        docs.append((n.title, n.body, " ".join(n.tags)))
    out: dict[str, Any] = {"docs": len(docs), "mib": sum(len(d[1]) for d in docs) / 2**20, "variants": {}}
    for name, (opts, after, rebuild) in FTS_VARIANTS.items():
        path = work / "fts.db"
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        con = apsw.Connection(str(path))
        con.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL")
        con.execute("CREATE TABLE d (rowid INTEGER PRIMARY KEY, title TEXT, content TEXT, tags TEXT)")
        if opts:
            con.execute(f"CREATE VIRTUAL TABLE f USING fts5(title, content, tags, content='d', content_rowid='rowid', {opts})")
            if not rebuild:
                con.execute("CREATE TRIGGER d_ai AFTER INSERT ON d BEGIN INSERT INTO f(rowid, title, content, tags) "
                            "VALUES (new.rowid, new.title, new.content, new.tags); END")
        batch = 500
        for stmt in after:
            if stmt == "-- batch all":
                batch = len(docs)
                continue
            con.execute(stmt)
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(0, len(docs), batch):
            con.execute("BEGIN")
            con.executemany("INSERT INTO d (title, content, tags) VALUES (?,?,?)", docs[i : i + batch])
            con.execute("COMMIT")
        if rebuild:
            con.execute("INSERT INTO f(f) VALUES('rebuild')")
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        con.close()
        out["variants"][name] = {"wall": wall, "cpu": cpu, "mib_db": path.stat().st_size / 2**20}
        print(f"   {name}: {wall:.2f}s wall, {cpu:.2f}s CPU", flush=True)
    return out


_EDGE_TARGET_INDEXES = ("edges_target_path", "edges_target_id", "edges_target_key")
_FTS_TRIGGERS = ("traces_ai", "traces_ad", "traces_au")
_saved_sql: dict[str, str] = {}


def _bulk_start(con) -> None:
    """What-if "bulk mode" for an empty index: big page cache, no FTS triggers
    and no edge target indexes while loading (restored by _bulk_finish)."""
    con.execute("PRAGMA cache_size=-262144")
    for name in (*_FTS_TRIGGERS, *_EDGE_TARGET_INDEXES):
        _saved_sql[name] = con.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0]
        kind = "TRIGGER" if name in _FTS_TRIGGERS else "INDEX"
        con.execute(f"DROP {kind} {name}")


def _bulk_finish(con) -> None:
    con.execute("BEGIN IMMEDIATE")
    for name in (*_FTS_TRIGGERS, *_EDGE_TARGET_INDEXES):
        con.execute(_saved_sql[name])
    con.execute("INSERT INTO traces_fts(traces_fts) VALUES('rebuild')")
    con.execute("COMMIT")


def edges_only(vault: Path, work: Path) -> dict[str, Any]:
    """Cost of writing the vault's edges alone, with and without the target indexes."""
    from memvault.store.db import records as rec
    from memvault.store.db.connection import connect, write_transaction
    from memvault.store.index import reconcile as ix
    from memvault.store.index.identity import derived_id
    from memvault.vault_io.parser import parse_note
    from memvault.vault_io.resolve import LinkResolver

    notes = [parse_note(p.relative_to(vault).as_posix(), p.read_bytes())
             for p in sorted(vault.rglob("*.md")) if not any(x.startswith(".") for x in p.relative_to(vault).parts)]
    all_files: dict[str, str | None] = {n.path: derived_id(n.path) for n in notes}
    for p in vault.rglob("*"):
        rel = p.relative_to(vault).as_posix()
        if p.is_file() and not rel.endswith(".md") and not any(x.startswith(".") for x in rel.split("/")):
            all_files[rel] = None
    resolver = LinkResolver(all_files)
    c0 = time.process_time()
    edges = [(derived_id(n.path), ix.note_edges(n, resolver, all_files, "note")) for n in notes]
    out: dict[str, Any] = {"edges": sum(len(e) for _, e in edges), "note_edges_cpu": time.process_time() - c0,
                           "variants": {}}

    def drop(con) -> None:
        for i in _EDGE_TARGET_INDEXES:
            con.execute(f"DROP INDEX {i}")

    def create(con) -> None:
        for i, col in zip(_EDGE_TARGET_INDEXES, ("target_path", "target_id", "target_key")):
            con.execute(f"CREATE INDEX {i} ON edges({col})")

    variants = {
        "current (4 indexes)": (None, None),
        "no target_path/id/key indexes": (drop, None),
        "indexes created after the load": (drop, create),
        "current + cache_size 256 MiB": (lambda con: con.execute("PRAGMA cache_size=-262144"), None),
    }
    for name, (before, after) in variants.items():
        d = work / f"edges-{len(out['variants'])}"
        con = connect(d / "index.db")
        con.execute("PRAGMA foreign_keys=OFF")  # edges only: no trace rows to point at
        if before:
            before(con)
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(0, len(edges), 500):
            with write_transaction(con):
                for sid, es in edges[i : i + 500]:
                    rec.replace_edges(con, sid, es)
        if after:
            after(con)
        out["variants"][name] = {"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}
        con.close()
        shutil.rmtree(d, ignore_errors=True)
        print(f"   {name}: {out['variants'][name]['wall']:.2f}s wall, {out['variants'][name]['cpu']:.2f}s CPU", flush=True)
    return out


def _drop_fts(con) -> None:
    for t in ("traces_ai", "traces_ad", "traces_au"):
        con.execute(f"DROP TRIGGER IF EXISTS {t}")


def _drop_edge_indexes(con) -> None:
    # edges_source stays: without it every DELETE FROM edges WHERE source_id = ?
    # scans the whole table (a cold 20k index then takes ~10x longer).
    for i in ("edges_target_path", "edges_target_id", "edges_target_key"):
        con.execute(f"DROP INDEX IF EXISTS {i}")


def _cache(con) -> None:
    con.execute("PRAGMA cache_size=-262144")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vault", type=Path, help="vault to index (default: the generated one)")
    ap.add_argument("--notes", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--experiments", default=",".join(EXPERIMENTS))
    args = ap.parse_args(argv)
    exps = [e for e in args.experiments.split(",") if e]
    for e in exps:
        if e not in EXPERIMENTS:
            ap.error(f"unknown experiment {e!r}; choose from {', '.join(EXPERIMENTS)}")
    vault = args.vault or C.generated_vault(args.notes, args.seed)
    work = C.mktemp("memvault-profile-index-")
    res: dict[str, Any] = {"benchmark": "profile_index", "machine": C.machine_info(), "vault": str(vault),
                           "experiments": {}}
    import os
    try:
        for e in exps:
            home = work / f"home-{e.replace('+', '-')}"
            print(f"== {e} ...", flush=True)
            if e == "parse":
                r = parse_only(vault)
            elif e == "edges":
                r = edges_only(vault, work)
            elif e == "bulk":
                r = cold_run(vault, home, after_connect=_bulk_start, finish=_bulk_finish)
            elif e == "parallel-parse":
                r = cold_run(vault, home, parallel_parse=2)
            elif e == "bulk+parallel-parse":
                r = cold_run(vault, home, after_connect=_bulk_start, finish=_bulk_finish, parallel_parse=2)
            elif e == "fts":
                r = fts_options(vault, work)
            elif e == "plain":
                r = cold_run(vault, home)
            elif e == "baseline":
                r = cold_run(vault, home, statement_profile=True, step_timers=True)
            elif e == "cache":
                r = cold_run(vault, home, after_connect=_cache)
            elif e == "nofts":
                r = cold_run(vault, home, after_connect=_drop_fts)
            elif e == "noedgeidx":
                r = cold_run(vault, home, after_connect=_drop_edge_indexes)
            elif e == "batch":
                r = cold_run(vault, home, batch=10**9)
            elif e == "cache+batch":
                r = cold_run(vault, home, after_connect=_cache, batch=10**9)
            r["loadavg_after"] = os.getloadavg()
            res["experiments"][e] = r
            if "notes_per_s" in r:
                print(f"   {r.get('seconds', 0):.2f}s, {r['notes_per_s']:.0f} notes/s", flush=True)
            shutil.rmtree(home, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    ex = res["experiments"]
    print()
    if "baseline" in ex:
        b = ex["baseline"]
        print(f"baseline cold index: {b['seconds']:.2f}s ({b['notes_per_s']:.0f} notes/s), close/checkpoint "
              f"{b['close_seconds']:.2f}s; SQLite statements {b['sql_seconds_total']:.2f}s "
              f"({100 * b['sql_seconds_total'] / b['seconds']:.0f}%)")
        print(C.table([[s["sql"], str(s["count"]), f"{s['seconds']:.2f} s"] for s in b["sql_statements"][:10]],
                      ["statement (SQLite time incl. triggers)", "count", "total"]))
        print()
        print(C.table([[k, str(v["calls"]), f"{v['seconds']:.2f} s", f"{100 * v['seconds'] / b['seconds']:.0f}%"]
                       for k, v in b["steps"].items()], ["step (wall, nested steps overlap)", "calls", "total", "share"]))
        print()
    if "parse" in ex:
        p = ex["parse"]
        print(f"parse only: {p['notes']} notes, {p['bytes'] / 2**20:.1f} MiB in {p['seconds']:.2f}s = "
              f"{p['notes_per_s']:.0f} notes/s; share of parse_note time (cProfile): "
              + ", ".join(f"{k} {v:.0%}" for k, v in p["step_share_of_parse_note"].items()))
        print()
    rows = [[e, f"{r['seconds']:.2f} s", f"{r['cpu_seconds']:.2f} s", f"{r['added'] / r['cpu_seconds']:.0f}",
             f"{r['notes_per_s']:.0f}", f"{r['close_seconds']:.2f} s", "%.1f" % r["loadavg_after"][0]]
            for e, r in ex.items() if "close_seconds" in r]
    if rows:
        print(C.table(rows, ["cold index experiment", "wall", "CPU", "notes/CPU-s", "notes/wall-s",
                             "close (WAL checkpoint)", "load avg after"]))
        print()
    if "edges" in ex:
        g = ex["edges"]
        print(f"edges alone: {g['edges']} edges (note_edges CPU {g['note_edges_cpu']:.2f}s), 500-note transactions:")
        print(C.table([[k, f"{v['wall']:.2f} s", f"{v['cpu']:.2f} s"] for k, v in g["variants"].items()],
                      ["edges variant", "wall", "CPU"]))
        print()
    if "fts" in ex:
        f = ex["fts"]
        print(f"FTS5 alone: {f['docs']} docs, {f['mib']:.1f} MiB of text, 500-row transactions unless said:")
        print(C.table([[k, f"{v['wall']:.2f} s", f"{v['cpu']:.2f} s", f"{v['mib_db']:.0f} MiB"] for k, v in f["variants"].items()],
                      ["FTS5 variant", "wall", "CPU", "db size"]))
    path = C.write_json("profile_index", res)
    print(f"\nJSON: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
