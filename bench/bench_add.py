#!/usr/bin/env python3
"""`memvault add` as a person runs it, with and without a daemon serving the vault.

    python bench/bench_add.py                  # 15 adds each way, tests' retrieval vault
    python bench/bench_add.py --adds 30

An ``add`` names the live memories the new one resembles by cosine, which
needs its vector: without a daemon the process loads the embedding model for
that; with one it asks the daemon's loaded model (the ``embed`` op) to put
the vectors into the shared cache. With a private MEMVAULT_HOME and a copy of
the retrieval fixture vault (embedded in-process first), each add is a fresh
``memvault add TEXT --json`` process; the wall time of the process is
measured. Results: a table on stdout, JSON in bench/out/.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    MEMVAULT_EXE,
    REPO,
    isolate_env,
    machine_info,
    mktemp,
    ms,
    summarize,
    table,
    wait_ready,
    write_json,
)

VAULT = REPO / "tests" / "fixtures" / "retrieval" / "vault"
TOPICS = ["green tea", "the billing service", "night trains", "sourdough", "the staging database"]


def run_adds(root: Path, env: dict[str, str], n: int, tag: str) -> tuple[list[float], list[str]]:
    """Wall seconds of ``n`` add processes, and the measure each reported."""
    times, measures = [], []
    for i in range(n):
        text = f"Prefers {TOPICS[i % len(TOPICS)]} ({tag} {i})."
        t0 = time.perf_counter()
        p = subprocess.run([str(MEMVAULT_EXE), "--vault", str(root), "add", text, "--json"], env=env,
                           capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - t0)
        if p.returncode != 0:
            raise SystemExit(f"add failed: {p.stderr.strip()}")
        similar = json.loads(p.stdout.splitlines()[-1]).get("similar_to") or []
        measures.extend(s["measure"] for s in similar[:1])
    return times, measures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--adds", type=int, default=15)
    args = ap.parse_args()
    tmp = mktemp("memvault-bench-add-")
    env = isolate_env(tmp / "home")
    env.pop("NOTIFY_SOCKET", None)
    root = tmp / "vault"
    shutil.copytree(VAULT, root)
    subprocess.run([str(MEMVAULT_EXE), "--vault", str(root), "sync"], env=env, check=True, capture_output=True)

    alone, alone_measures = run_adds(root, env, args.adds, "alone")
    sock_path = tmp / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(sock_path))
    proc = subprocess.Popen([str(MEMVAULT_EXE), "--vault", str(root), "daemon"],
                            env={**env, "NOTIFY_SOCKET": str(sock_path)}, stderr=subprocess.DEVNULL)
    try:
        wait_ready(sock, proc, timeout=300)
        # The daemon's first query loads its model; one add warms it (not measured).
        run_adds(root, env, 1, "warm-up")
        served, served_measures = run_adds(root, env, args.adds, "served")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        sock.close()
    rows = []
    for name, values, measures in (("no daemon", alone, alone_measures), ("daemon running", served, served_measures)):
        s = summarize(values)
        rows.append([name, ms(s["median"]), ms(s["p95"]), ", ".join(sorted(set(measures))) or "-"])
    print(table(rows, ["memvault add", "median", "p95", "similar_to measure"]))
    path = write_json("add", {"machine": machine_info(), "adds": args.adds,
                              "no_daemon": summarize(alone), "daemon": summarize(served),
                              "measures": {"no_daemon": alone_measures, "daemon": served_measures}})
    print(f"wrote {path}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
