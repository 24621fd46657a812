"""Consolidation quality on the labelled sets (tests/fixtures/consolidation).

    python bench/bench_consolidate_quality.py            # dev and test, with and without vectors
    python bench/bench_consolidate_quality.py --json     # the raw figures
    python bench/bench_consolidate_quality.py --grid     # calibrate the duplicate rule's margins on dev

Embeds every memory with the bundled model (the vectors a store would have;
cached in bench/out/), runs the one planner over each set, and scores every
rule next to its plain baseline (see memvault.store.consolidation.labelled).
Thresholds are calibrated on dev only; test is scored with the same ones.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys

import numpy as np
from _common import OUT, REPO, isolate_env

from memvault.store.consolidation import paraphrase, rules
from memvault.store.consolidation.labelled import duplicate_pairs, load_set, score
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


def grid() -> int:
    """The duplicate rule's margins (memvault.store.consolidation.paraphrase)
    over a grid, scored on dev only: the settings with the best recall at
    precision >= 0.95, best first."""
    import itertools

    s = load_set(SETS / "dev.json")
    vectors = vectors_for({r.id: r.content for r in s.records})
    book = rules.NameBook.of(r.memo.f for r in s.records)
    gold = {frozenset(p) for g in s.labels["duplicate_groups"] for p in itertools.combinations(g, 2)}
    saved = paraphrase.EXPLAINED, paraphrase.LIGHT_CHANGE, paraphrase.HEAVY_CHANGE, paraphrase.LIGHT_WORDS
    rows = []
    try:
        for e, lc, h, lw in itertools.product((-0.3, -0.25, -0.2, -0.15, -0.1), (-0.15, -0.12, -0.1, -0.05, 0.0),
                                              (0.0, 0.03, 0.05, 0.08, 0.1), (1, 2, 3)):
            paraphrase.EXPLAINED, paraphrase.LIGHT_CHANGE, paraphrase.HEAVY_CHANGE, paraphrase.LIGHT_WORDS = e, lc, h, lw
            paraphrase.FLOOR = -e
            got = duplicate_pairs(s.records, vectors, 0.70, book)
            tp = len(got & gold)
            rows.append((tp / len(gold), tp / len(got) if got else 1.0, (e, lc, h, lw)))
    finally:
        paraphrase.EXPLAINED, paraphrase.LIGHT_CHANGE, paraphrase.HEAVY_CHANGE, paraphrase.LIGHT_WORDS = saved
        paraphrase.FLOOR = -saved[0]
    print("| EXPLAINED | LIGHT_CHANGE | HEAVY_CHANGE | LIGHT_WORDS | dev P / R |")
    print("|---|---|---|---|---|")
    for r, p, (e, lc, h, lw) in sorted((x for x in rows if x[1] >= 0.95), key=lambda x: (-x[0], -x[1]))[:20]:
        print(f"| {e} | {lc} | {h} | {lw} | {p:.3f} / {r:.3f} |")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--grid", action="store_true", help="calibrate the duplicate rule's margins on dev")
    args = ap.parse_args()
    isolate_env(OUT / "home-quality")
    if args.grid:
        return grid()
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
    print("| set | mode | dup rule P/R | dup merge P/R | dup baseline P/R | contr. P/R | contr. baseline P/R "
          "| archive P/R | protected archived | promote matched | tasks |")
    print("|---" * 11 + "|")
    for r in results:
        c = r["contradictions"]
        p = r["promote"]
        print(f"| {r['set']} | {r['mode']} | {pr(r['duplicates_rule'])} | {pr(r['duplicates_merge'])} | "
              f"{pr(r['duplicates_baseline'])} | {pr(c)} (dated {c['dated_recall']:.2f}, undated "
              f"{c['undated_recall']:.2f}) | {pr(r['contradictions_baseline'])} | {pr(r['archive'])} | "
              f"{r['archive']['protected_archived']} | {p['matched']}/{p['groups']} of {p['planned']} planned"
              f"{'' if p['statement_similarity'] is None else ', statement cos ' + str(p['statement_similarity'])} | "
              f"{r['due_tasks']['made_episodic']}/{r['due_tasks']['done_past_due']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
