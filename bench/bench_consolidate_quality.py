"""Consolidation quality on the labelled sets (tests/fixtures/consolidation).

    python bench/bench_consolidate_quality.py            # dev and test, with and without vectors
    python bench/bench_consolidate_quality.py --json     # the raw figures
    python bench/bench_consolidate_quality.py --pairs tests/fixtures/consolidation/fresh/fresh.json
                                                         # an independent-pairs set (the frozen fresh set: once)

Embeds every memory with the bundled model (the vectors a store would have;
cached in bench/out/), runs the one planner over each set, and scores every
rule next to its plain baseline (see bench/labelled.py).
dev and test are tuning sets (the rules were shaped on them); the fresh set
(tests/fixtures/consolidation/fresh, written blind to the rules) is frozen
and reported once. Every figure stands beside plain baselines of the same
run: normalised text equal, and plain cosine at the duplicate threshold.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
from _common import OUT, REPO, isolate_env
from labelled import load_set, score

from memvault.store.embedding.model import load_embedder, resolve_model

SETS = REPO / "tests" / "fixtures" / "consolidation"


def embedder():
    """The bundled model, loaded once."""
    from memvault.store import location

    return load_embedder(resolve_model("default"), location.data_home())


def vectors_for(texts: dict[str, str]) -> dict[str, np.ndarray]:
    """Unit vectors (as a store would hold them: float16) for ``texts``, cached by content."""
    key = hashlib.sha256(json.dumps(sorted(texts.items())).encode()).hexdigest()[:16]
    path = OUT / f"consolidation-vectors-{key}.npz"
    if path.exists():
        data = np.load(path)
        return {k: data[k].astype(np.float64) for k in data.files}
    ids = sorted(texts)
    matrix = embedder().embed([texts[i] for i in ids]).astype(np.float16)
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez(path, **dict(zip(ids, matrix)))
    out = {}
    for i, row in zip(ids, matrix.astype(np.float64)):
        out[i] = row / np.linalg.norm(row)
    return out


def statement_similarity(a: str, b: str) -> float:
    """How close two statements are in meaning (cosine of their embeddings)."""
    m = embedder().embed([a, b])
    return round(float(m[0] @ m[1]), 3)


def pair_set(path) -> dict:
    """Score an independent-pairs set (e.g. the frozen fresh set) with vectors from the bundled model."""
    from labelled import score_pairs

    pairs = json.loads(path.read_text(encoding="utf-8"))["pairs"]
    texts = {f"{p['id']}:{side}": p[side] for p in pairs for side in ("a", "b")}
    return score_pairs(path, vectors_for(texts))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--pairs", type=Path, action="append", default=[], help="an independent-pairs set to score")
    args = ap.parse_args()
    isolate_env(OUT / "home-quality")
    if args.pairs:
        return _report_pairs([pair_set(p) for p in args.pairs], args.json)
    results = []
    for name in ("dev", "test"):
        s = load_set(SETS / f"{name}.json")
        vectors = vectors_for({r.id: r.content for r in s.records})
        for mode, vecs in (("vectors", vectors), ("no vectors", {})):
            figures = score(s, vecs, similarity=statement_similarity if vecs else None)
            figures["mode"] = mode
            results.append(figures)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "consolidate_quality.json").write_text(json.dumps(results, indent=1, default=str))
    if args.json:
        for r in results:
            print(json.dumps(r, default=str))
        return 0
    def pr(d: dict) -> str:
        return f"{d['precision']:.3f} / {d['recall']:.3f}"
    print("| set | mode | add refused P/R | merge rule P/R | merge groups P/R | text baseline P/R | cosine 0.70 P/R "
          "| contr. P/R | contr. baseline P/R | archive P/R | protected archived | promote matched | tasks |")
    print("|---" * 13 + "|")
    for r in results:
        c = r["contradictions"]
        p = r["promote"]
        print(f"| {r['set']} | {r['mode']} | {pr(r['duplicates_refused'])} | {pr(r['duplicates_rule'])} | "
              f"{pr(r['duplicates_merge'])} | {pr(r['duplicates_baseline'])} | {pr(r['duplicates_cosine'])} | {pr(c)} (dated {c['dated_recall']:.2f}, undated "
              f"{c['undated_recall']:.2f}) | {pr(r['contradictions_baseline'])} | {pr(r['archive'])} | "
              f"{r['archive']['protected_archived']} | {p['matched']}/{p['groups']} of {p['planned']} planned"
              f"{'' if p['statement_similarity'] is None else ', statement cos ' + str(p['statement_similarity'])} | "
              f"{r['due_tasks']['made_episodic']}/{r['due_tasks']['done_past_due']} |")
    return 0


def _report_pairs(results: list[dict], as_json: bool) -> int:
    for r in results:
        if as_json:
            print(json.dumps(r))
            continue
        print(f"{r['set']}: {r['pairs']} pairs")
        print("| | precision | recall | predicted |\n|---|---|---|---|")
        for label, key in (("add refused (wrong: %d)" % r["wrong_refusals"], "refused"),
                           ("merges proposed (pair alone)", "merged"),
                           (f"merges proposed in a store (candidates at cosine >= {r['candidate_floor']:.2f})",
                            "merged_in_store"),
                           ("plain cosine >= 0.70 (baseline)", "cosine"),
                           ("contradictions flagged", "flagged")):
            d = r[key]
            print(f"| {label} | {d['precision']:.3f} | {d['recall']:.3f} | {d['predicted']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
