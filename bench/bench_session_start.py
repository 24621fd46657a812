#!/usr/bin/env python3
"""Session-start benchmark: identity, lessons, ongoing work and the rest, with a daemon.

    python bench/bench_session_start.py              # 30 runs of each
    python bench/bench_session_start.py --runs 10    # a quick look
    python bench/bench_session_start.py --model      # the daemon embeds with the bundled model (slower setup)

With a private MEMVAULT_HOME (never the real one), two small vaults of one
project (scope ``atlas``): the same identity (5), lessons (8) and other
memories (150) in each, and 8 ``ongoing`` memories in the second only (the
plainest baseline: the same session start with no ongoing work to show);
a third holds the second's and an ingested session whose digest has 8 open
action items (``## Open action items``).
For each, with its daemon running (vectors off unless ``--model``):

1. floor: ``python -I -c pass`` (the interpreter's own start);
2. the daemon's answer alone: one ``session_start`` request on its socket
   from this process, its wall time, and the daemon's CPU time for it (from
   ``/proc``: clock ticks, so the figure is the mean over the runs);
3. the assembly in this process on a warm store (what the daemon runs:
   ``Retriever.session_start``), wall and CPU: the cost with no wait for a core;
4. the session-start hook as a client runs it (``memvault --vault V hook
   session-start``, its JSON on stdin): process start to exit.

The bar (issue 36): session start under 150 ms with a daemon. Load average
is recorded: the figures are wall times on a shared machine, CPU times beside.
Results: a table on stdout, JSON in bench/out/.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    MEMVAULT_EXE,
    isolate_env,
    machine_info,
    mktemp,
    ms,
    start_daemon,
    summarize,
    table,
    verdict,
    write_json,
)

BUDGET = 1000
#: (type, scope, how many, text): what each vault holds; ongoing work only in the second.
MEMORIES = [
    ("identity", "user", 5, "Identity detail {n}: works on the payments platform from Lisbon"),
    ("procedural", "atlas", 8, "Lesson {n} for atlas: run the smoke tests before deploy step {n}"),
    ("semantic", "atlas", 100, "Atlas fact {n}: service {n} of the billing ledger keeps its state in Postgres"),
    ("semantic", "user", 50, "Preference {n}: likes reviews of change {n} in the morning"),
]
ONGOING = ("ongoing", "atlas", 8, "Workstream {n} of atlas in progress: migration step {n}, next its dry run")
#: Open action items of the third vault's session.
ACTIONS = 8


def timed(cmd: list[str], stdin: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, input=stdin.encode(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def build(vault: Path, ongoing: bool, actions: bool = False) -> None:
    """A vault with the memories of :data:`MEMORIES` (and :data:`ONGOING`; and a
    session of :data:`ACTIONS` open action items)."""
    from memvault.store.memory_store import MemoryStore

    (vault / "Notes").mkdir(parents=True)
    (vault / "Notes" / "Atlas.md").write_text("# Atlas\n\nThe atlas billing ledger and its deploys.\n")
    store = MemoryStore.open(str(vault))
    try:
        store.sync()
        for type_, scope, count, text in [*MEMORIES, *([ONGOING] if ongoing else [])]:
            for n in range(count):
                store.add(text.format(n=n), type_, scope=scope)
        if actions:
            said = " ".join(f"I'll run the dry run of atlas step {n} tomorrow." for n in range(ACTIONS))
            lines = [{"role": "user", "content": said, "timestamp": "2026-11-23T10:00:00Z"},
                     {"role": "assistant", "content": "Noted.", "timestamp": "2026-11-23T10:01:00Z"}]
            store.ingest(io.StringIO("".join(json.dumps(line) + "\n" for line in lines)), session="bench-actions")
    finally:
        store.close()


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def in_process(vault: Path, runs: int) -> list[tuple[float, float]]:
    """(wall, CPU) of the session-start assembly on a warm store in this process."""
    from memvault.store.memory_store import MemoryStore
    from memvault.store.queries.recall import SessionStartQuery

    store = MemoryStore.open(str(vault))
    try:
        q = SessionStartQuery(project="atlas", budget=BUDGET)
        store.answer_by_words(q)  # warm: the tokenizer, the connection, the first queries
        out = []
        for _ in range(runs):
            start, cpu0 = time.perf_counter(), time.process_time()
            store.answer_by_words(q)
            out.append((time.perf_counter() - start, time.process_time() - cpu0))
        return out
    finally:
        store.close()


def measure(vault: Path, project: Path, tmp: Path, runs: int, model: bool) -> dict[str, object]:
    """Floor, the daemon's answer and the hook process, interleaved ``runs`` times."""
    from memvault.daemon.client import ask
    from memvault.store.location import vault_data_dir

    data_dir = vault_data_dir(vault)
    local = in_process(vault, runs)
    proc = start_daemon(vault, tmp / f"notify-{vault.name}.sock", model=model)
    floor, answer, hook, tokens, sections = [], [], [], 0, 0
    daemon_cpu = 0.0
    stdin = json.dumps({"session_id": "bench", "cwd": str(project), "hook_event_name": "SessionStart"})
    cmd = [str(MEMVAULT_EXE), "--vault", str(vault), "hook", "session-start", "--budget", str(BUDGET)]
    try:
        for _ in range(runs):
            floor.append(timed([sys.executable, "-I", "-c", "pass"], ""))
            start, cpu0 = time.perf_counter(), cpu_of(proc.pid)
            result = ask(data_dir, "session_start", {"project": "atlas", "budget": BUDGET}, timeout=10)
            answer.append((time.perf_counter() - start, 0.0))
            daemon_cpu += cpu_of(proc.pid) - cpu0
            if result is None:
                raise SystemExit("the daemon did not answer session_start")
            tokens, sections = int(result["tokens"]), str(result["text"]).count("\n## ") + 1
            hook.append(timed(cmd, stdin))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    out: dict[str, object] = {"tokens": tokens, "sections": sections, "daemon_cpu_mean": daemon_cpu / runs}
    for name, values in (("floor", floor), ("answer", answer), ("local", local), ("hook", hook)):
        out[name] = {"wall": summarize([w for w, _ in values]), "cpu": summarize([c for _, c in values])}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--model", action="store_true", help="the daemon embeds with the bundled model")
    args = ap.parse_args()
    tmp = mktemp("memvault-bench-session-start-")
    try:
        run(tmp, args.runs, args.model)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp: Path, runs: int, model: bool) -> None:
    """The benchmark in ``tmp`` (module docstring)."""
    isolate_env(tmp / "home")
    if not model:
        os.environ["MEMVAULT_EMBEDDING_MODEL"] = "none"
    project = tmp / "atlas"
    (project / ".git").mkdir(parents=True)
    load_before = os.getloadavg()
    results = {}
    for label, ongoing, actions in (("without ongoing work", False, False), ("with ongoing work", True, False),
                                    ("with ongoing work and action items", True, True)):
        vault = tmp / ("actions" if actions else "with" if ongoing else "without")
        build(vault, ongoing, actions)
        results[label] = measure(vault, project, tmp, runs, model)
    load = os.getloadavg()

    rows = []
    for label, r in results.items():
        for name, what in (("floor", "`python -I -c pass` (floor)"), ("answer", "daemon's answer (socket, warm)"),
                           ("local", "assembly in-process, warm store"), ("hook", "hook process, daemon running")):
            m = r[name]  # type: ignore[index]
            bar = f"median < 150 ms: {verdict(m['wall']['median'] < 0.150)}" if name != "floor" else ""
            cpu = (f"daemon: {ms(r['daemon_cpu_mean'])} mean" if name == "answer"  # type: ignore[arg-type]
                   else f"{ms(m['cpu']['median'])} / {ms(m['cpu']['p95'])}")
            rows.append([label, what, f"{ms(m['wall']['median'])} / {ms(m['wall']['p95'])}", cpu, bar])
        rows.append([label, f"text: {r['tokens']} tokens of {BUDGET}, {r['sections']} sections", "", "", ""])
    print(table(rows, ["vault", "what", "wall median / p95", "CPU median / p95", "bar"]))
    print(f"load average before / after: {load_before[0]:.2f} / {load[0]:.2f}")
    out = write_json("session_start", {"runs": runs, "model": model, "budget": BUDGET, "machine": machine_info(),
                                       "load_before": load_before, "load_after": load, "results": results})
    print(f"results: {out}")


if __name__ == "__main__":
    main()
