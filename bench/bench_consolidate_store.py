"""Consolidation quality measured in a store: every memory of a labelled set
added to one store (``add``), then the plan (``consolidate --dry-run``).

    python bench/bench_consolidate_store.py FILE [FILE...]     # a pair set or dev/test
    python bench/bench_consolidate_store.py --tuning           # every tuning set of tests/fixtures/consolidation
    python bench/bench_consolidate_store.py FILE --json        # the raw figures, one object per set
    python bench/bench_consolidate_store.py FILE --wrong       # also list wrong and missed pairs (tuning only!)

How the store is filled and what is scored: bench/labelled_store.py. Each
figure stands beside plain cosine of the same run. A frozen set is scored
once, without ``--wrong``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from _common import OUT, REPO, isolate_env
from labelled_store import COSINE_CONTRADICTION, COSINE_DUPLICATE, score_file

SETS = REPO / "tests" / "fixtures" / "consolidation"
TUNING = ["dev.json", "test.json", "fresh/fresh.json", "fresh2/fresh2.json", "fresh3/fresh3.json",
          "fresh4/fresh4.json", "fresh5/blind-tune.json"]


def _pr(d: dict) -> str:
    return f"{d['precision']:.3f} / {d['recall']:.3f} ({d['true']}/{d['predicted']}, of {d['labelled']})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--tuning", action="store_true", help="every tuning set")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--wrong", action="store_true", help="list wrong and missed pairs (tuning sets only)")
    ap.add_argument("--no-vectors", action="store_true", help="a store without vectors (no daemon, no embedding)")
    args = ap.parse_args()
    files = list(args.files) + ([SETS / f for f in TUNING if (SETS / f).exists()] if args.tuning else [])
    if not files:
        ap.error("give a set file or --tuning")
    for f in files:
        if not f.is_file():
            print(f"bench_consolidate_store: no such file: {f}", file=sys.stderr)
            return 2
    isolate_env(OUT / "home-store-quality")
    results = []
    for f in files:
        r = score_file(f, vectors=not args.no_vectors)
        results.append(r)
        if args.json:
            if not args.wrong:
                r = {k: v for k, v in r.items() if k != "wrong"}
            print(json.dumps(r), flush=True)
            continue
        print(f"\n{r['set']}: {r['memories']} memories, {r['stored']} stored, {r['vectors']} with vectors; "
              f"plan {r['plan_seconds']} s, add median {r['add_ms_median']} ms")
        m, c, w = r["merges"], r["contradictions"], r["write_conflicts"]
        print("| | precision / recall | outside the labels |\n|---|---|---|")
        print(f"| merges (plan + refused at write: {m['at_write']}) | {_pr(m)} | {m['outside_labels']} |")
        print(f"| plain cosine >= {COSINE_DUPLICATE} (merges baseline) | {_pr(r['cosine_merges'])} | |")
        print(f"| contradictions flagged (newer right: {c['newer_right']}) | {_pr(c)} | {c['outside_labels']} |")
        print(f"| plain cosine >= {COSINE_CONTRADICTION} (contradictions baseline) | "
              f"{_pr(r['cosine_contradictions'])} | |")
        print(f"| write-time conflicts (`contradicts`) | {_pr(w)} | |")
        print(f"distinct claims refused: {r['distinct_refused']}; other memories refused that are no labelled "
              f"duplicate: {len(r['other_refused'])}")
        print(f"merge recall by kind: {m['by_kind']}")
        print(f"contradiction recall by kind: {c['by_kind']}")
        print(f"write-time recall by kind: {w['by_kind']}")
        if args.wrong:
            for k, v in r["wrong"].items():
                print(f"{k}: {v}")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "consolidate_store_quality.json").write_text(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
