#!/usr/bin/env python3
"""Indexing benchmark: cold index, no-change re-sync, one-file-changed re-sync.

    python bench/bench_index.py                      # both vaults, defaults below
    python bench/bench_index.py --only gen --notes 20000 --seed 1
    python bench/bench_index.py --profile            # also cProfile cold + no-change sync

Vaults: (a) a private copy of ../shared/corpora/vaultofknowledge and (b) a
generated vault (bench/gen_vault.py; made once and kept in bench/vaults/, then
copied to a temp folder for each benchmark run, so edits never touch it).

For each vault, with a fresh private MEMVAULT_HOME (never the real one):

* cold index, in-process: ``MemoryStore.open(...).sync()`` into an empty
  index (``--cold-runs`` times, each into a fresh home); notes/s = notes added
  / wall seconds including opening and creating the index;
* no-change re-sync, in-process: ``Vault.open`` + ``indexer().sync()`` +
  ``close`` on an up-to-date index, ``--runs`` times after one untimed run
  (the first sync after a cold index is reported apart); plus the scan and
  load-files parts alone;
* no-change re-sync, process: wall time of ``memvault --vault V sync
  --no-embed`` (the flag only where sync embeds; one warm-up, then
  ``--runs`` timed runs); on vaults up to ``--embed-max-notes`` notes also
  the default ``memvault sync`` (its first run embeds every note; reported
  apart);
* one-file-changed re-sync, in-process: a different note gets a line appended
  before each of ``--runs`` full syncs (checked: exactly 1 updated, and the new
  word is then found by keyword search); plus the daemon's
  ``Indexer.sync_paths([path])`` for one changed file.

Percentiles are nearest-rank: with 5 runs, p95 is the maximum.
Results: a table on stdout and JSON in bench/out/bench_index-*.json.
The OS file cache is warm (the vault was just copied): the cold-index figure
is "empty index", not "cold disk".
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

COLD_BAR_NOTES_PER_S = 1000.0
NOCHANGE_BAR_S = 1.0


def _open_vault(path: Path):
    from memvault.store.memory_store import MemoryStore

    return MemoryStore.open(str(path))


def _data_dir_bytes(v) -> int:
    d = v.data_dir
    return sum(p.stat().st_size for p in d.iterdir() if p.is_file()) if d.exists() else 0


def cold_index(vault: Path, home: Path) -> dict[str, Any]:
    C.isolate_env(home)
    t0 = time.perf_counter()
    v = _open_vault(vault)
    summary = v.sync()
    elapsed = time.perf_counter() - t0
    attachments = v.con.execute("SELECT count(*) FROM files WHERE kind = 'attachment'").fetchone()[0]
    size = _data_dir_bytes(v)
    v.close()
    return {
        "seconds": elapsed,
        "sync_seconds": summary.seconds,
        "added": summary.added,
        "attachments": attachments,
        "errors": summary.errors,
        "skipped": summary.skipped,
        "notes_per_s": summary.added / elapsed,
        "index_bytes": size,
    }


def nochange_inprocess(vault: Path, runs: int) -> dict[str, Any]:
    totals, syncs = [], []
    first = None
    for i in range(runs + 1):
        t0 = time.perf_counter()
        v = _open_vault(vault)
        s = v.sync()
        v.close()
        elapsed = time.perf_counter() - t0
        assert not s.changed, f"no-change sync changed the index: {s.as_dict()}"
        if i == 0:  # the first sync after a cold index: reported, not counted
            first = elapsed
            continue
        totals.append(elapsed)
        syncs.append(s.seconds)
    # The two parts every full sync pays whatever changed.
    from memvault.store.db import records as rec
    from memvault.vault_io.scan import scan_vault

    v = _open_vault(vault)
    scans, loads = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        scan_vault(v.root, ignore=v.settings.ignore, max_file_size=v.settings.max_file_size)
        scans.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        rec.load_files(v.con)
        loads.append(time.perf_counter() - t0)
    v.close()
    return {
        "first_after_cold": first,
        "total": C.summarize(totals),
        "sync_only": C.summarize(syncs),
        "scan_vault": C.summarize(scans),
        "load_files": C.summarize(loads),
    }


_SECS = re.compile(r"\(([\d.]+)s\)")


def _sync_flags() -> list[str]:
    """``["--no-embed"]`` when this memvault's sync also embeds, else []."""
    p = subprocess.run([str(C.MEMVAULT_EXE), "sync", "--help"], capture_output=True, text=True)
    return ["--no-embed"] if "--no-embed" in p.stdout else []


def nochange_cli(vault: Path, runs: int, flags: list[str] | None = None) -> dict[str, Any]:
    """``memvault sync`` on an up-to-date index: one warm-up (reported as
    ``first_run``: for a default sync after a library-only index, that run
    embeds every note), then ``runs`` timed runs."""
    cmd = [str(C.MEMVAULT_EXE), "--vault", str(vault), "sync", *(_sync_flags() if flags is None else flags)]
    walls, internal = [], []
    first = None
    for i in range(runs + 1):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if p.returncode != 0 or "up to date" not in p.stdout:
            raise RuntimeError(f"{' '.join(cmd)} -> {p.returncode}: {p.stdout} {p.stderr}")
        if i == 0:
            first = wall  # warm-up
            continue
        walls.append(wall)
        m = _SECS.search(p.stdout)
        if m:
            internal.append(float(m.group(1)))
    return {"command": " ".join(cmd), "first_run": first, "wall": C.summarize(walls),
            "reported_sync_seconds": C.summarize(internal) if internal else None}


def _note_paths(vault: Path) -> list[str]:
    return sorted(
        p.relative_to(vault).as_posix()
        for p in vault.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(vault).parts)
    )


def one_changed(vault: Path, runs: int) -> dict[str, Any]:
    from memvault.store.retrieval.keyword import keyword_search

    paths = _note_paths(vault)
    picks = [paths[(i * 7919 + 13) % len(paths)] for i in range(runs + 1)]
    totals, syncs, checks = [], [], []
    for i, rel in enumerate(picks[:runs]):
        word = f"zqxbenchedit{i}"
        with open(vault / rel, "ab") as f:
            f.write(f"\nedited by the benchmark: {word}\n".encode())
        t0 = time.perf_counter()
        v = _open_vault(vault)
        s = v.sync()
        totals.append(time.perf_counter() - t0)
        syncs.append(s.seconds)
        assert (s.updated, s.added, s.deleted, s.moved) == (1, 0, 0, 0), s.as_dict()
        hits = keyword_search(v.con, word, limit=3)
        checks.append(bool(hits) and hits[0].path == rel)
        v.close()
    # The daemon's path: reconcile just the paths the watcher reported.
    rel = picks[runs]
    with open(vault / rel, "ab") as f:
        f.write(b"\nedited by the benchmark: zqxbenchpaths\n")
    v = _open_vault(vault)
    t0 = time.perf_counter()
    s = v.sync_paths([rel])
    sp = time.perf_counter() - t0
    assert s.updated == 1, s.as_dict()
    v.close()
    return {
        "total": C.summarize(totals),
        "sync_only": C.summarize(syncs),
        "new_word_found_by_search": all(checks),
        "sync_paths_one_file_seconds": sp,
        "files": picks,
    }


def profile_runs(vault: Path, work: Path, label: str) -> dict[str, str]:
    """cProfile a cold index (fresh home) and a no-change sync; stats to bench/out/."""
    C.OUT.mkdir(parents=True, exist_ok=True)
    out: dict[str, str] = {}
    home = work / f"home-{label}-profile"
    C.isolate_env(home)
    for name in ("cold", "nochange"):
        prof = cProfile.Profile()
        prof.enable()
        v = _open_vault(vault)
        v.sync()
        v.close()
        prof.disable()
        base = C.OUT / f"profile-index-{label}-{name}"
        prof.dump_stats(str(base) + ".prof")
        buf = io.StringIO()
        st = pstats.Stats(prof, stream=buf).strip_dirs()
        buf.write(f"==== {label} {name}: top by cumulative ====\n")
        st.sort_stats("cumulative").print_stats(35)
        buf.write(f"==== {label} {name}: top by own time ====\n")
        st.sort_stats("tottime").print_stats(35)
        Path(str(base) + ".txt").write_text(buf.getvalue())
        out[name] = str(base) + ".txt"
        print(f"  profile {label} {name}: {base}.txt / .prof", flush=True)
    return out


def bench_vault(label: str, src: Path, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    print(f"[{label}] copying {src} ...", flush=True)
    vault = C.copy_vault(src, work, label)
    notes = C.count_notes(vault)
    res: dict[str, Any] = {"label": label, "source": str(src), "notes_on_disk": notes,
                           "vault_bytes": C.tree_bytes(vault)}
    colds = []
    for i in range(args.cold_runs):
        home = work / f"home-{label}-{i}"
        c = cold_index(vault, home)
        print(f"[{label}] cold index {i + 1}/{args.cold_runs}: {c['added']} notes in {c['seconds']:.2f}s "
              f"= {c['notes_per_s']:.0f} notes/s", flush=True)
        colds.append(c)
        if i + 1 < args.cold_runs:
            shutil.rmtree(home)
    res["cold_runs"] = colds
    res["cold"] = {"seconds": C.summarize([c["seconds"] for c in colds]),
                   "notes_per_s": C.summarize([c["notes_per_s"] for c in colds])}
    res["peak_rss_mib_after_cold"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # The last cold home stays selected (isolate_env) for the runs below.
    res["nochange_inprocess"] = nochange_inprocess(vault, args.runs)
    print(f"[{label}] no-change in-process: median {C.ms(res['nochange_inprocess']['total']['median'])}", flush=True)
    res["nochange_cli"] = nochange_cli(vault, args.runs)
    print(f"[{label}] no-change `{' '.join(['memvault sync', *_sync_flags()])}`: median "
          f"{C.ms(res['nochange_cli']['wall']['median'])}", flush=True)
    if _sync_flags() and notes <= args.embed_max_notes:
        # The default sync also embeds; its first run here embeds every note.
        d = res["nochange_cli_default"] = nochange_cli(vault, args.runs, flags=[])
        print(f"[{label}] default `memvault sync` (embeds): first run {d['first_run']:.1f}s, then no-change median "
              f"{C.ms(d['wall']['median'])}", flush=True)
    res["one_changed"] = one_changed(vault, args.runs)
    print(f"[{label}] one-file-changed: median {C.ms(res['one_changed']['total']['median'])}", flush=True)
    if args.profile:
        res["profiles"] = profile_runs(vault, work, label)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=("vok", "gen"), help="run one vault only")
    ap.add_argument("--notes", type=int, default=20000, help="notes in the generated vault")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus", type=Path, default=C.CORPUS, help="the real vault to copy (vaultofknowledge)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs of each re-sync case")
    ap.add_argument("--cold-runs", type=int, default=3, help="cold index runs (each into a fresh home)")
    ap.add_argument("--profile", action="store_true", help="also cProfile a cold index and a no-change sync")
    ap.add_argument("--embed-max-notes", type=int, default=0,
                    help="also time the default (embedding) `memvault sync` on vaults up to this many notes "
                         "(off by default: its first run embeds every note, ~10 min for vaultofknowledge)")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder (vault copies and indexes)")
    args = ap.parse_args(argv)

    work = C.mktemp("memvault-bench-index-")
    C.isolate_env(work / "home-unused")
    info = C.machine_info()
    results: dict[str, Any] = {"benchmark": "index", "machine": info, "args": vars(args) | {"corpus": str(args.corpus)},
                               "vaults": []}
    try:
        if args.only in (None, "vok"):
            if not args.corpus.is_dir():
                print(f"corpus {args.corpus} not found; skipping it", file=sys.stderr)
            else:
                results["vaults"].append(bench_vault("vaultofknowledge", args.corpus, work, args))
        if args.only in (None, "gen"):
            src = C.generated_vault(args.notes, args.seed)
            results["vaults"].append(bench_vault(f"gen{args.notes}", src, work, args))
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    rows = []
    bars = []
    for r in results["vaults"]:
        cold, nci, ncc, one = r["cold"], r["nochange_inprocess"], r["nochange_cli"], r["one_changed"]
        rows.append([
            r["label"], str(r["cold_runs"][0]["added"]),
            f"{cold['seconds']['median']:.2f} s", f"{cold['notes_per_s']['median']:.0f}",
            f"{C.ms(nci['total']['median'])} / {C.ms(nci['total']['p95'])}",
            f"{C.ms(ncc['wall']['median'])} / {C.ms(ncc['wall']['p95'])}",
            f"{C.ms(one['total']['median'])} / {C.ms(one['total']['p95'])}",
            C.ms(one["sync_paths_one_file_seconds"]),
            f"{r['cold_runs'][-1]['index_bytes'] / 2**20:.0f} MiB",
        ])
        bars.append((f"cold index >= {COLD_BAR_NOTES_PER_S:.0f} notes/s [{r['label']}]",
                     f"{cold['notes_per_s']['median']:.0f} notes/s (median of {cold['notes_per_s']['n']})",
                     cold["notes_per_s"]["median"] >= COLD_BAR_NOTES_PER_S))
        if r["cold_runs"][0]["added"] >= 20000 or r["label"].startswith("gen"):
            bars.append((f"no-change re-sync < {NOCHANGE_BAR_S:.0f} s, in-process p95 [{r['label']}]",
                         C.ms(nci["total"]["p95"]), nci["total"]["p95"] < NOCHANGE_BAR_S))
            bars.append((f"no-change re-sync < {NOCHANGE_BAR_S:.0f} s, `memvault sync` process p95 [{r['label']}]",
                         C.ms(ncc["wall"]["p95"]), ncc["wall"]["p95"] < NOCHANGE_BAR_S))
    results["bars"] = [{"bar": b, "value": v, "pass": ok} for b, v, ok in bars]
    path = C.write_json("bench_index", results)

    print()
    print(f"machine: {info['nproc']} cores, {info['cpu']}, {info['memory']}, python {info['python']}, "
          f"sqlite {info.get('sqlite')}, git {info.get('git')}, {info['date']}")
    print(f"re-sync columns: median / p95 over {args.runs} runs (nearest rank: p95 = max); "
          f"cold: median of {args.cold_runs}")
    print(C.table(rows, ["vault", "notes", "cold index", "notes/s", "no-change (lib)",
                         f"no-change (`{' '.join(['memvault sync', *_sync_flags()])}`)",
                         "1 changed (lib, full sync)", "1 changed (sync_paths)", "index size"]))
    print()
    for r in results["vaults"]:
        nci = r["nochange_inprocess"]
        print(f"{r['label']}: no-change parts (median): scan_vault {C.ms(nci['scan_vault']['median'])}, "
              f"load_files {C.ms(nci['load_files']['median'])}, Indexer.sync {C.ms(nci['sync_only']['median'])}, "
              f"open+sync+close {C.ms(nci['total']['median'])}; peak RSS {r['peak_rss_mib_after_cold']:.0f} MiB; "
              f"edited word found by search: {r['one_changed']['new_word_found_by_search']}")
        if "nochange_cli_default" in r:
            d = r["nochange_cli_default"]
            print(f"{r['label']}: default `memvault sync` (text + embeddings): first run after a text-only index "
                  f"{d['first_run']:.1f}s (embeds every note), then no-change median {C.ms(d['wall']['median'])}, "
                  f"p95 {C.ms(d['wall']['p95'])}")
    print()
    print(C.table([[b, v, C.verdict(ok)] for b, v, ok in bars], ["bar", "measured", "result"]))
    print(f"\nJSON: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
