#!/usr/bin/env python3
"""Issue 34's bars in one command: cold ``sync --no-embed`` and keyword search
as whole processes, this install beside a second one and ``python -c pass``.

    python bench/bench_speed.py --base /work/wt/speed-base/.venv          # both vaults (~5 min on a quiet box)
    python bench/bench_speed.py --base BASE_VENV --runs 11 --only gen

Vaults: a generated one (``bench/gen_vault.py``, 6,600 notes, seed 1, made
once in ``bench/vaults/``) and a copy of ``../shared/corpora/vaultofknowledge``;
each is copied once to a temp folder (mtimes kept) and never changed.

Each round runs, one after the other so that both installs meet the same
load: ``python -c pass`` (this venv's interpreter), then each install's
processes. Per install and vault:

* cold index: ``memvault --vault V sync --no-embed`` into a fresh private
  ``MEMVAULT_HOME`` (an empty index), wall time and CPU time (user + system
  of the process and the parse workers it waits for); notes/s = notes / wall;
* keyword search on the index that install built: ``memvault --vault V search
  WORD --mode keyword --json`` and the same with human output, the query
  words taken in turn from ``--queries-gen`` / ``--queries-vok``.

One untimed warm-up of every command first (it also writes the .pyc files:
the environment's PYTHONDONTWRITEBYTECODE is dropped for the children).
Medians and nearest-rank p95 (with 11 runs, p95 is the maximum). The load
average is printed before and after: wall times mean something only on a
quiet machine (load < 0.5); CPU times are the better guide on a busy one.
Results: a table on stdout and JSON in bench/out/bench_speed-*.json.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

#: Issue 34's bars (medians, whole processes, a quiet 2-core machine).
COLD_GEN_NOTES_PER_S = 3000.0
COLD_VOK_S = 0.9
SEARCH_JSON_S = 0.120
SEARCH_HUMAN_S = 0.100


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, children included) of one process; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_") and k != "PYTHONDONTWRITEBYTECODE"}
    home.mkdir(parents=True, exist_ok=True)
    env.update(MEMVAULT_HOME=str(home), MEMVAULT_CONFIG=str(home / "no-config.toml"))
    return env


def _summary(samples: list[tuple[float, float]]) -> dict[str, Any]:
    return {"wall": C.summarize([w for w, _ in samples]), "cpu": C.summarize([c for _, c in samples])}


def bench_vault(vault: Path, notes: int, queries: list[str], installs: dict[str, Path], runs: int,
                work: Path) -> dict[str, Any]:
    """Cold index and keyword search of every install on ``vault``, interleaved by round."""
    python = str(Path(sys.executable))
    res: dict[str, dict[str, list[tuple[float, float]]]] = {"python -c pass": {"process": []}}
    homes = {name: work / f"home-{name}" for name in installs}
    for name in installs:
        res[name] = {"cold": [], "search --json": [], "search": []}

    def cold(name: str, i: int) -> tuple[float, float]:
        home = work / f"cold-{name}-{i}"
        try:
            return _timed([str(installs[name]), "--vault", str(vault), "sync", "--no-embed"], _env(home))
        finally:
            shutil.rmtree(home, ignore_errors=True)

    def search(name: str, word: str, json_out: bool) -> tuple[float, float]:
        cmd = [str(installs[name]), "--vault", str(vault), "search", word, "--mode", "keyword"]
        return _timed(cmd + (["--json"] if json_out else []), _env(homes[name]))

    for name in installs:  # warm-up: .pyc files, the search indexes, the OS file cache
        cold(name, -1)
        _timed([str(installs[name]), "--vault", str(vault), "sync", "--no-embed"], _env(homes[name]))
        search(name, queries[0], True)
    _timed([python, "-c", "pass"], _env(work / "pass"))
    for i in range(runs):
        word = queries[i % len(queries)]
        res["python -c pass"]["process"].append(_timed([python, "-c", "pass"], _env(work / "pass")))
        for name in installs:
            res[name]["cold"].append(cold(name, i))
            res[name]["search --json"].append(search(name, word, True))
            res[name]["search"].append(search(name, word, False))
        print(f"  round {i + 1}/{runs} done", flush=True)
    return {"notes": notes, "queries": queries,
            "results": {name: {case: _summary(s) for case, s in cases.items()} for name, cases in res.items()}}


def report(label: str, data: dict[str, Any], this: str) -> tuple[list[list[str]], list[list[str]]]:
    """Table rows (every measure) and bar rows (this install) of one vault."""
    rows, bars = [], []
    notes = data["notes"]
    for name, cases in data["results"].items():
        for case, s in cases.items():
            w, c = s["wall"], s["cpu"]
            rate = f"{notes / w['median']:.0f}" if case == "cold" else ""
            rows.append([label, name, case, C.ms(w["median"]), C.ms(w["p95"]), C.ms(c["median"]), C.ms(c["p95"]), rate])
    mine = data["results"][this]
    cold_wall = mine["cold"]["wall"]["median"]
    if label == "gen":
        bars.append([f"cold sync --no-embed, {notes} generated notes", f">= {COLD_GEN_NOTES_PER_S:.0f} notes/s",
                     f"{notes / cold_wall:.0f} notes/s", C.verdict(notes / cold_wall >= COLD_GEN_NOTES_PER_S)])
        for case, bar in (("search --json", SEARCH_JSON_S), ("search", SEARCH_HUMAN_S)):
            got = mine[case]["wall"]["median"]
            bars.append([f"{case} --mode keyword, {notes} notes", f"< {C.ms(bar)}", C.ms(got), C.verdict(got < bar)])
    else:
        bars.append([f"cold sync --no-embed, {label} ({notes} notes)", f"<= {COLD_VOK_S:.1f} s", f"{cold_wall:.2f} s",
                     C.verdict(cold_wall <= COLD_VOK_S)])
    return rows, bars


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, help="a second install's venv (e.g. dc46757's), run beside this one")
    ap.add_argument("--only", choices=("gen", "vok"), help="one vault only")
    ap.add_argument("--runs", type=int, default=11, help="timed rounds (default 11)")
    ap.add_argument("--notes", type=int, default=6600, help="notes in the generated vault")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus", type=Path, default=C.CORPUS, help="the real vault to copy (vaultofknowledge)")
    ap.add_argument("--queries-gen", default="theory,history,network", help="comma-separated query words")
    ap.add_argument("--queries-vok", default="brahman,light,karma", help="comma-separated query words")
    args = ap.parse_args(argv)

    installs = {"this": C.MEMVAULT_EXE}
    if args.base is not None:
        exe = args.base / "bin" / "memvault"
        if not exe.exists():
            ap.error(f"--base: no memvault in {args.base / 'bin'}")
        installs["base"] = exe
    if args.only != "gen" and not args.corpus.is_dir():
        ap.error(f"--corpus: no folder at {args.corpus}")
    work = C.mktemp("memvault-bench-speed-")
    load_before = os.getloadavg()
    out: dict[str, Any] = {"machine": C.machine_info(), "installs": {k: str(v) for k, v in installs.items()},
                           "runs": args.runs, "load_before": load_before}
    rows: list[list[str]] = []
    bars: list[list[str]] = []
    try:
        vaults = []
        if args.only != "vok":
            vaults.append(("gen", C.generated_vault(args.notes, args.seed), args.queries_gen))
        if args.only != "gen":
            vaults.append(("vok", args.corpus, args.queries_vok))
        for label, src, queries in vaults:
            vault = C.copy_vault(src, work, label)
            notes = C.count_notes(vault)
            print(f"{label}: {notes} notes, {args.runs} rounds", flush=True)
            out[label] = bench_vault(vault, notes, queries.split(","), installs, args.runs, work)
            r, b = report(label, out[label], "this")
            rows += r
            bars += b
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out["load_after"] = os.getloadavg()
    print()
    print(C.table(rows, ["vault", "install", "process", "wall median", "wall p95", "CPU median", "CPU p95", "notes/s"]))
    print()
    print(C.table(bars, ["bar (this install, wall median)", "bar", "measured", ""]))
    print(f"\nload average before {load_before[0]:.2f}, after {out['load_after'][0]:.2f} "
          "(wall times hold on a quiet machine only)")
    out["bars"] = bars
    print(f"JSON: {C.write_json('bench_speed', out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
