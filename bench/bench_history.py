"""What history in the vault costs (issue 20, item 5).

Device A makes ``--changes`` real changes through the store (updates with
a reason, and every tenth a forget), flushing its history log after each:

- **bytes appended per change**: how much the log grows per change (the
  sync traffic the log adds to the note's own bytes with a tool that sends
  what changed: git, rsync-like deltas), median and p95; and the bytes of
  the 128 KiB blocks each append changed (what Syncthing sends);
- **log size per 1,000 changes**: A's log files after them, and after a
  compaction (snapshot + empty tail);
- **merge on a cold start**: a device with an empty data dir reads the logs
  into its state (``sync_history`` on a fresh ``state.db``), median of
  ``--repeats``; also for ``--synthetic`` larger logs, made by repeating
  A's real records under new keys (one device each 10,000 records);
- **rebuild with a lost data dir**: ``rebuild`` of a copy of the vault
  whose data dir is gone (index, state from the logs, embedding off).

    python bench/bench_history.py                       # ~1-2 min
    python bench/bench_history.py --changes 1000 --synthetic 10000 50000
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import isolate_env, machine_info, mktemp, write_json  # noqa: E402

from memvault.store.db.connection import connect  # noqa: E402
from memvault.store.history import logfile, replicate  # noqa: E402
from memvault.store.memory_store import MemoryStore  # noqa: E402
from memvault.store.settings import load_settings  # noqa: E402

OVERRIDES = {"embedding.model": "none"}


def open_store(vault: Path, data: Path) -> MemoryStore:
    """A store with its own data dir, embedding off."""
    return MemoryStore(vault, load_settings({"vault": str(vault), **OVERRIDES}), data_dir=data)


def log_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in logfile.log_files(folder))


#: Syncthing's block size for files under 250 MiB: it sends whole changed blocks.
SYNCTHING_BLOCK = 128 * 1024


def tail_bytes(folder: Path) -> int:
    """The size of this device's tail (the file appended to)."""
    return sum(p.stat().st_size for p in logfile.log_files(folder) if not p.name.endswith(logfile.SNAPSHOT_SUFFIX))


def make_changes(store: MemoryStore, changes: int) -> tuple[list[int], list[int]]:
    """``changes`` changes on ``store``, flushing after each: bytes each
    appended, and the bytes of the 128 KiB blocks each append changed (what
    Syncthing sends; a compaction sends the snapshot whole)."""
    folder = store.history_folder
    ids = [store.add(f"Memory number {n} about topic {n % 37} and place {n % 11}", "semantic").id
           for n in range(max(10, changes // 5))]
    store._flush_history(store.con)
    grown, blocks = [], []
    for n in range(changes):
        before, tail = log_bytes(folder), tail_bytes(folder)
        target = ids[n % len(ids)]
        if n % 10 == 9 and len(ids) > 1:
            store.forget(target, reason=f"not true any more ({n})")
            ids.remove(target)
        else:
            store.update(target, content=f"Memory {target} now says {n} about topic {n % 37}",
                         reason=f"change {n}")
        store._flush_history(store.con)
        grown.append(log_bytes(folder) - before)
        blocks.append(tail_bytes(folder) - tail // SYNCTHING_BLOCK * SYNCTHING_BLOCK)
    return grown, blocks


def cold_merge(folder: Path, work: Path, repeats: int) -> tuple[float, int]:
    """Median seconds for a fresh state to read and merge every log in ``folder``; rows it set."""
    times, rows = [], 0
    for i in range(repeats):
        data = work / f"cold{i}"
        t0 = time.perf_counter()
        con = connect(data / "index.db")
        done = replicate.sync_history(con, folder, write=False)
        times.append(time.perf_counter() - t0)
        rows = len(done.changed)
        con.close()
        shutil.rmtree(data)
    return statistics.median(times), rows


def synthetic_logs(real: Path, out: Path, records: int) -> None:
    """Logs of ``records`` records, one device per 10,000, copying real records under new keys."""
    lines = [r for p in logfile.log_files(real) for line in p.read_bytes().splitlines() if line for r in [json.loads(line)] if "k" in r]
    out.mkdir(parents=True)
    for d in range(0, records, 10_000):
        device = f"{d // 10_000:012x}"
        batch = []
        for n in range(d, min(records, d + 10_000)):
            r = dict(lines[n % len(lines)], d=device, n=n - d + 1, t=1_700_000_000_000 + n)
            r["k"] = [f"{k}-{n}" if isinstance(k, str) else k for k in r["k"]]
            if r["r"] is not None:
                r["r"] = dict(r["r"], **{c: f"{r['r'][c]}-{n}" for c in replicate.TABLES[r["tb"]] if c in r["r"]
                                         and isinstance(r["r"][c], str)})
            batch.append(logfile.encode(r))
        logfile.append(logfile.tail_path(out, device), batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--synthetic", type=int, nargs="*", default=[10_000, 50_000])
    args = parser.parse_args()
    work = mktemp("history")
    isolate_env(work / "home")
    vault = work / "a" / "vault"
    vault.mkdir(parents=True)
    store = open_store(vault, work / "a" / "data")
    t0 = time.perf_counter()
    grown, blocks = make_changes(store, args.changes)
    made_s = time.perf_counter() - t0
    folder = store.history_folder
    size = log_bytes(folder)
    records = sum(len(p.read_bytes().splitlines()) for p in logfile.log_files(folder))
    store.close()
    merge_s, merged_rows = cold_merge(folder, work, args.repeats)

    copy = work / "b" / "vault"
    shutil.copytree(vault, copy)
    rebuild = []
    for i in range(args.repeats):
        b = open_store(copy, work / "b" / f"data{i}")
        t0 = time.perf_counter()
        b.rebuild()
        rebuild.append(time.perf_counter() - t0)
        b.close()

    con = connect(work / "a" / "data" / "index.db")
    with replicate.write_transaction(con):
        replicate.compact(con, folder, replicate.device_id(con))
    con.close()
    compacted = log_bytes(folder)

    synthetic = {}
    for n in args.synthetic:
        out = work / f"synthetic{n}"
        synthetic_logs(folder, out, n)
        s, rows = cold_merge(out, work, max(1, args.repeats // 2) if n > 20_000 else args.repeats)
        synthetic[n] = {"log_bytes": log_bytes(out), "cold_merge_s": s, "rows": rows}

    per = sorted(grown)
    result = {
        "machine": machine_info(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "changes": args.changes, "records": records, "seconds_to_make": made_s,
        "bytes_per_change_median": statistics.median(per), "bytes_per_change_p95": per[int(0.95 * (len(per) - 1))],
        "syncthing_block_bytes_per_change_median": statistics.median(blocks),
        "syncthing_block_bytes_per_change_mean": statistics.fmean(blocks),
        "log_bytes": size, "log_bytes_per_1000_changes": size * 1000 / args.changes,
        "log_bytes_after_compaction": compacted,
        "cold_merge_s": merge_s, "cold_merge_rows": merged_rows,
        "rebuild_lost_data_dir_s_median": statistics.median(rebuild), "synthetic": synthetic,
    }
    path = write_json("history", result)
    print(json.dumps(result, indent=1, default=str))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
