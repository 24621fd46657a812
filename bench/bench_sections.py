"""Section-level recall: does ``context --what all`` quote the section that answers?

    python bench/bench_sections.py                 # index (once, cached), then score
    python bench/bench_sections.py --budget 800    # the recall budget (default: recall.budget)

Over ``tests/fixtures/sections/questions.json`` (40 questions, each answered
by one section of one note of ``../shared/corpora/vaultofknowledge``): for
each question the recall block of ``MemoryStore.context(question, what="all")``
is built in-process, and it counts as a hit when the block contains the
question's ``answer_quote`` (whitespace collapsed on both sides). It also
reports how often the block names the right note at all, so "found the
note, quoted the wrong part" can be told from "missed the note".

The vault is indexed and embedded into ``bench/out/sections-home`` the first
time (the embedding cache is kept there: later runs re-index in seconds and
embed nothing). Skips (exit 0) when the corpus is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from memvault.store.queries.recall import ContextQuery

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
from _common import CORPUS, OUT, isolate_env, machine_info, write_json  # noqa: E402

QUESTIONS = REPO / "tests" / "fixtures" / "sections" / "questions.json"
HOME = OUT / "sections-home"


def norm(text: str) -> str:
    """Whitespace collapsed: the block joins a passage's words with single spaces."""
    return " ".join(text.split())


def context_block(store: object, question: str, budget: int | None) -> dict:
    """The recall block for ``question`` over notes too."""
    return store.context(ContextQuery(question, budget=budget, what="all", record=False)).to_json()  # type: ignore[attr-defined]


def main() -> int:
    """Index (cached), run every question, print and save the hit rate."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=None)
    ap.add_argument("--show-misses", action="store_true")
    ap.add_argument("--vault", type=Path, default=CORPUS, help="the vaultofknowledge corpus")
    ap.add_argument("--home", type=Path, default=HOME, help="memvault home (index and embedding cache)")
    args = ap.parse_args()
    if not args.vault.exists():
        print(f"corpus not available at {args.vault}; skipped")
        return 0
    isolate_env(args.home)
    from memvault.store.memory_store import MemoryStore

    store = MemoryStore.open(str(args.vault))
    t = time.perf_counter()
    report = store.sync(embed=True)
    print(f"sync + embed: {time.perf_counter() - t:.1f}s ({report.summary.added} added)", flush=True)
    questions = json.loads(QUESTIONS.read_text())
    rows = []
    latencies = []
    for q in questions:
        t = time.perf_counter()
        result = context_block(store, q["question"], args.budget)
        latencies.append(time.perf_counter() - t)
        block = result["text"]
        quoted = norm(q["answer_quote"]) in norm(block)
        named = any(i.get("path") == q["path"] for i in result["items"])
        rows.append({"id": q["id"], "quoted": quoted, "note_named": named, "tokens": result["tokens"]})
        if args.show_misses and not quoted:
            print(f"--- {q['id']} {q['path']} # {q['heading']}\n{q['question']}\n{block}\n")
    hits = sum(r["quoted"] for r in rows)
    named = sum(r["note_named"] for r in rows)
    store.close()
    latencies.sort()
    data = {
        "machine": machine_info(),
        "questions": len(rows),
        "quoted": hits,
        "quoted_rate": round(hits / len(rows), 3),
        "note_named": named,
        "median_context_ms": round(latencies[len(latencies) // 2] * 1000, 1),
        "rows": rows,
    }
    path = write_json("bench_sections", data)
    print(f"answer quoted in the block: {hits}/{len(rows)} ({hits / len(rows):.0%}); "
          f"right note named: {named}/{len(rows)}; median context {data['median_context_ms']} ms")
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
