#!/usr/bin/env python3
"""Memory flows benchmark: a big ChatGPT import, a long session ingest, a big export.

    python bench/bench_flows.py                 # all three (~4 min on 2 cores, first run +1 min)
    python bench/bench_flows.py --only import   # import, ingest, export (comma separated)

Each with a private MEMVAULT_HOME, vectors off (``MEMVAULT_EMBEDDING_MODEL=none``:
the bars are for the import itself; vectors are the daemon's or the next
sync's work, as for notes):

1. **ChatGPT import**: ``bench/gen_chatgpt_export.py`` makes a 5,000-conversation
   export (100,000 visible messages, ~100 MB; kept in bench/vaults/), then
   ``memvault import chatgpt`` runs as a process on an empty, indexed vault.
   Reported: wall time, user+system CPU and peak RSS of that process (from
   ``wait4``), the counts, and a keyword search right after; then the same
   import again (nothing to do). Bars: < 60 s, peak RSS < 500 MB.
2. **Session ingest**: a Claude Code transcript of 500 turns (user prompts,
   assistant answers with tool calls, tool results), ingested in-process:
   the first ingest, the same again (no change), and the transcript grown by
   20 turns (append). Median of ``--runs`` runs each, on fresh vaults.
3. **Export**: a vault of 50,000 memory notes (written directly, then one
   ``sync``; a tenth updated once, so they have versions), then ``memvault
   export`` as a process to json, jsonl and csv: wall time and peak RSS.

Results: a summary on stdout and JSON in bench/out/bench_flows-*.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402

# Peak RSS is a high-water mark that survives fork and exec: a child forked
# from this (large) benchmark process would report this process's size. A
# small fresh interpreter runs the command instead and reports its rusage.
_WRAPPER = """
import json, os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as fh:
    json.dump({"exit": os.waitstatus_to_exitcode(status), "cpu": usage.ru_utime + usage.ru_stime,
               "peak_rss_mb": usage.ru_maxrss / 1024}, fh)
"""


def run_measured(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run a process; its wall time, CPU time, peak RSS (``wait4``) and output."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        usage = Path(tmp) / "usage.json"
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _WRAPPER, str(usage), *args], env=env,
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
        measured = json.loads(usage.read_text())
    return {"seconds": wall, **measured, "stdout": done.stdout[-2000:], "stderr": done.stderr[-2000:]}


def memvault(*args: str) -> list[str]:
    return [str(C.MEMVAULT_EXE), *args]


# -- 1. import ----------------------------------------------------------------------------


def bench_import(env: dict[str, str], tmp: Path, conversations: int, messages: int) -> dict[str, Any]:
    import gen_chatgpt_export

    export = C.VAULTS / f"chatgpt-{conversations}-{messages}-s1.json"
    if not export.exists():
        print(f"generating {export} ...", flush=True)
        counts = gen_chatgpt_export.generate(export, conversations, messages, 1)
        print(f"  {counts}", flush=True)
    vault = tmp / "import-vault"
    vault.mkdir()
    subprocess.run(memvault("--vault", str(vault), "sync"), env=env, check=True, capture_output=True)
    print("importing ...", flush=True)
    first = run_measured(memvault("--vault", str(vault), "import", "chatgpt", str(export), "--json"), env)
    report = json.loads(first["stdout"].strip().splitlines()[-1])
    probe = run_measured(memvault("--vault", str(vault), "search", "migrate", "--mode", "keyword", "--json"), env)
    again = run_measured(memvault("--vault", str(vault), "import", "chatgpt", str(export), "--json"), env)
    return {
        "export_bytes": export.stat().st_size, "conversations": conversations, "messages": messages,
        "first": {k: v for k, v in first.items() if k not in ("stdout", "stderr")}, "report": report,
        "searchable_after": bool(probe["stdout"].strip()),
        "again": {k: v for k, v in again.items() if k not in ("stdout", "stderr")},
        "again_report": json.loads(again["stdout"].strip().splitlines()[-1]),
    }


# -- 2. ingest ----------------------------------------------------------------------------


def claude_code_lines(turns: int, seed: int = 1) -> list[str]:
    """A Claude Code transcript of about ``turns`` turns, one JSON object a line.

    Each message line names the one before it in ``parentUuid`` (the first
    ``null``), as Claude Code writes them (tests/fixtures/imports/
    claude-code-session.jsonl): the reader follows that chain back from the
    last message (the branch Claude Code shows), so lines without it would
    each be a root and the session would read as its last turn alone."""
    rng = random.Random(seed)
    words = "the deploy script server config test index build cache error log thread python sqlite".split()
    lines = [json.dumps({"type": "summary", "summary": "A long working session", "leafUuid": "x"})]
    t = 1_767_225_600.0
    n = 0
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/ada/p", "sessionId": "bench-session",
            "version": "2.1.0", "gitBranch": "main"}

    parent: str | None = None

    def stamp() -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t))

    def message(kind: str, uuid: str, body: dict[str, Any]) -> str:
        nonlocal parent
        line = json.dumps({"parentUuid": parent, **base, "type": kind, "uuid": uuid, "timestamp": stamp(),
                           "message": body})
        parent = uuid
        return line

    while n < turns:
        t += rng.uniform(5, 60)
        prompt = " ".join(rng.choice(words) for _ in range(rng.randint(8, 40)))
        if rng.random() < 0.1:
            prompt += ". I prefer small commits with tests."
        lines.append(message("user", f"u{n}", {"role": "user", "content": prompt}))
        n += 1
        if rng.random() < 0.4 and n < turns:
            lines.append(message("assistant", f"a{n}", {"id": f"msg_{n}", "role": "assistant", "content": [
                {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash", "input": {"command": "pytest -q tests/"}}]}))
            lines.append(message("user", f"r{n}", {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{n}",
                 "content": "....\n" * rng.randint(1, 40) + "42 passed"}]}))
            n += 2
        answer = " ".join(rng.choice(words) for _ in range(rng.randint(30, 200)))
        lines.append(message("assistant", f"b{n}", {"id": f"msg_b{n}", "role": "assistant", "content": [
            {"type": "text", "text": answer}]}))
        n += 1
    return lines


def bench_ingest(tmp: Path, turns: int, runs: int) -> dict[str, Any]:
    from memvault.store.memory_store import MemoryStore

    made = claude_code_lines(turns + 40)
    first_n, grown_n = (next(i for i in range(1, len(made) + 1) if _turns(made[:i]) >= n) for n in (turns, turns + 20))
    lines = made[:grown_n]  # the grown transcript: 20 turns more than the first
    times: dict[str, list[float]] = {"first": [], "unchanged": [], "grown": []}
    written = {}
    for run in range(runs):
        vault = tmp / f"ingest-{run}"
        vault.mkdir()
        transcript = tmp / f"session-{run}.jsonl"
        transcript.write_text("\n".join(lines[:first_n]) + "\n")
        store = MemoryStore.open(str(vault))
        try:
            store.sync()
            for kind, content in (("first", lines[:first_n]), ("unchanged", lines[:first_n]), ("grown", lines)):
                transcript.write_text("\n".join(content) + "\n")
                t = time.perf_counter()
                report = store.ingest(transcript)
                times[kind].append(time.perf_counter() - t)
                written[kind] = {"action": report.action, "turns": len(report.plan.conv.turns),
                                 "new_turns": report.plan.new_turns, "facts": report.facts}
        finally:
            store.close()
    # A transcript the reader takes for fewer turns than were written would time something else (it once
    # read this one as its last turn alone): refuse to report figures for it.
    expected = {"first": _turns(lines[:first_n]), "grown": _turns(lines)}
    if any(written[kind]["turns"] != n for kind, n in expected.items()):
        raise SystemExit(f"ingest read {written['first']['turns']} / {written['grown']['turns']} turns of "
                         f"{expected['first']} / {expected['grown']} written: the figures would not be for them")
    return {"turns": written["first"]["turns"], "runs": runs, "results": written,
            **{k: C.summarize(v) for k, v in times.items()}}


def _turns(lines: list[str]) -> int:
    return sum(1 for line in lines if '"type": "user"' in line or '"type": "assistant"' in line)


# -- 3. export ----------------------------------------------------------------------------


def memory_vault(root: Path, count: int, seed: int = 1) -> None:
    """``count`` memory notes in the memory-note format, written directly."""
    from memvault.vault_io.memory_note import MemoryDoc, memory_filename, render_memory

    rng = random.Random(seed)
    words = "prefers dark mode tabs coffee deploy friday review python sqlite vault daemon notes editor".split()
    types = ["semantic", "identity", "procedural", "episodic", "prospective"]
    for i in range(count):
        content = " ".join(rng.choice(words) for _ in range(rng.randint(5, 30))) + f" {i}"
        type_ = rng.choice(types)
        doc = MemoryDoc(id=f"m-{i:012x}", type=type_, content=content, tags=[rng.choice(words)], strength=0.5,
                        created="2026-01-01T00:00:00+00:00", updated="2026-01-01T00:00:00+00:00", source="bench")
        path = root / "Memory" / type_ / memory_filename(content, doc.id[2:10])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_memory(doc), "utf-8")


def bench_export(env: dict[str, str], tmp: Path, count: int) -> dict[str, Any]:
    from memvault.store.memory_store import MemoryStore

    vault = tmp / "export-vault"
    vault.mkdir()
    print(f"writing {count} memory notes ...", flush=True)
    memory_vault(vault, count)
    store = MemoryStore.open(str(vault))
    try:
        store.sync()
        for i in range(0, count, 10 * max(1, count // 5000)):  # some versions to export too
            store.update(f"m-{i:012x}", content=f"changed memory {i}", reason="bench")
    finally:
        store.close()
    out: dict[str, Any] = {"memories": count}
    for fmt in ("json", "jsonl", "csv"):
        target = tmp / f"export.{fmt}"
        r = run_measured(memvault("--vault", str(vault), "export", "--format", fmt, "--output", str(target)), env)
        out[fmt] = {"seconds": r["seconds"], "cpu": r["cpu"], "peak_rss_mb": r["peak_rss_mb"], "exit": r["exit"],
                    "bytes": target.stat().st_size if target.exists() else None}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="import,ingest,export")
    parser.add_argument("--conversations", type=int, default=5000)
    parser.add_argument("--messages", type=int, default=100000)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--memories", type=int, default=50000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    tmp = C.mktemp("bench-flows-")
    env = C.isolate_env(tmp / "home")
    env["MEMVAULT_EMBEDDING_MODEL"] = os.environ["MEMVAULT_EMBEDDING_MODEL"] = "none"
    only = set(args.only.split(","))
    result: dict[str, Any] = {"machine": C.machine_info()}
    rows = []
    if "import" in only:
        r = result["import"] = bench_import(env, tmp, args.conversations, args.messages)
        first = r["first"]
        rows.append([f"import chatgpt, {args.conversations} conversations ({r['export_bytes'] / 1e6:.0f} MB)",
                     f"{first['seconds']:.1f} s (CPU {first['cpu']:.1f} s)", "< 60 s",
                     C.verdict(first["seconds"] < 60 and first["exit"] in (0, 1))])
        rows.append(["  peak RSS", f"{first['peak_rss_mb']:.0f} MB", "< 500 MB", C.verdict(first["peak_rss_mb"] < 500)])
        rows.append(["  the same import again (nothing to do)", f"{r['again']['seconds']:.1f} s", "", ""])
    if "ingest" in only:
        r = result["ingest"] = bench_ingest(tmp, args.turns, args.runs)
        rows.append([f"ingest a {r['turns']}-turn session (median)", C.ms(r["first"]["median"]), "", ""])
        rows.append(["  same transcript again / grown by 20 turns", f"{C.ms(r['unchanged']['median'])} / "
                     f"{C.ms(r['grown']['median'])}", "", ""])
    if "export" in only:
        r = result["export"] = bench_export(env, tmp, args.memories)
        for fmt in ("json", "jsonl", "csv"):
            rows.append([f"export {args.memories} memories, {fmt}", f"{r[fmt]['seconds']:.1f} s, "
                         f"{r[fmt]['peak_rss_mb']:.0f} MB peak", "", ""])
    result["loadavg_at_end"] = os.getloadavg()
    print(C.table(rows, ["what", "figure", "bar", ""]))
    print(f"load average at start {result['machine']['loadavg_at_start']}, at end {result['loadavg_at_end']}")
    print(f"results: {C.write_json('bench_flows', result)}")


if __name__ == "__main__":
    main()
