"""Consolidation at scale: plan and run times on 10,000 and 50,000 memories.

    python bench/bench_consolidate.py                    # 10k and 50k (first time: generate, index, embed)
    python bench/bench_consolidate.py --sizes 10000      # one size
    python bench/bench_consolidate.py --run              # also carry a run out and undo it (10k only)

The memories are generated (deterministic by seed): 45% are prose sentences
of the vaultofknowledge corpus (as long as they last: 21k), the rest come from
templates about a made-up person (facts, habits, procedures, events, tasks,
their objects drawn from the corpus's words) with ~8% of facts written twice
in other words, ~4% contradicted later (a number, a place, a negation),
weekly episodes of twenty habits, and a tail of old, weak memories. They
are written as memory notes into ``bench/vaults/memories-<n>-s<seed>/``,
indexed and embedded with the bundled model once (the embedding cache is kept
in ``bench/out/home-consolidate/``, so later runs embed nothing).

Measured: a dry run of ``MemoryStore.consolidate`` (read the records and
vectors, find candidate pairs, judge them, plan), median of 3, split into its
parts; how many candidate pairs the forest and the word blocking produce; and,
at 10k, the candidate recall against comparing all pairs (every same-scope pair
above each rule's floor, found by a blocked matrix product).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

from _common import OUT, VAULTS, isolate_env, machine_info, write_json

PEOPLE = """Ana Rita Marta Tiago Duarte Sofia Henrique Ines Joao Carla Bruno Lena Omar Priya Jonas Mateus Aiyana Theo
Niamh Ciaran Ingrid Rafael Hana Olu Bea Sofie Marek Callum Isla Euan Morag Fergus Yusuf Mei Kenji Aroha Tomasz Zofia
Lucia Pedro Nadia Emeka Signe Arvid Leila Ravi Camille Hugo Elif Can""".split()
CITIES = """Lisbon Porto Braga Coimbra Faro Aveiro Viseu Evora Sintra Cascais Madrid Seville Lyon Ghent Leeds Bristol
Glasgow Dundee Cork Galway Utrecht Bergen Aarhus Turku Krakow Brno Graz Trieste Bologna Nantes""".split()
THINGS = ["coffee", "tea", "sparkling water", "dark chocolate", "sourdough", "green tea", "oat milk", "espresso",
          "jazz", "fado", "podcasts", "audiobooks", "crosswords", "chess", "climbing", "running", "cycling"]
TOOLS = ["Obsidian", "Vim", "VS Code", "Firefox", "Emacs", "Neovim", "Zotero", "Anki", "Todoist", "Notion"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
PROJECTS = ["tidewater", "harbour", "lighthouse", "kelp", "estuary"]
HABITS = ["climbing with {p}", "a long run by the river", "sushi with the team", "a video call with her parents",
          "baking sourdough", "chess with {p}", "a swim at the pool", "the book club", "yoga before work",
          "a walk in the park with {p}", "band practice", "the pottery class", "lunch with {p}",
          "a call with {p} about {t}", "repotting the {t}", "a lesson on {t}", "cooking {t} with {p}",
          "a trip to the {t} market", "reading about {t}", "fixing the {t}"]

FACTS = [
    ("{p} lives in {c}", "{p} has lived in {c} for years", "{p} lives in {c2}"),
    ("Has {n} cats", "Owns {n} cats", "Has {n2} cats"),
    ("Prefers {t} in the morning", "Likes {t} first thing in the morning", None),
    ("Uses {tool} for {t} notes", "Keeps her {t} notes in {tool}", None),
    ("{p}'s birthday is {d} {m}", "The birthday of {p} is on {d} {m}", "{p}'s birthday is {d2} {m}"),
    ("The {proj} server runs {n} workers", "{proj} runs with {n} worker processes", "The {proj} server runs {n2} workers"),
    ("{p} works as a nurse in {c}", "{p} is a nurse at the hospital in {c}", "{p} works as a teacher in {c}"),
    ("Does not drink {t}", "Never drinks {t}", "Drinks {t} every day"),
    ("Her favourite board game is {g}", "Favourite board game: {g}", "Her favourite board game is {g2}"),
    ("Goes to bed around {n}pm on weekdays", "Usually in bed by {n} pm on weekdays", None),
]
GAMES = ["Carcassonne", "Wingspan", "Catan", "Azul", "Dominion", "Splendor", "Patchwork"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October"]


def _fill(template: str, rnd: random.Random, slots: dict[str, str]) -> str:
    return template.format(**slots)


def _slots(rnd: random.Random, vocab: list[str]) -> dict[str, str]:
    p, c = rnd.choice(PEOPLE), rnd.choice(CITIES)
    n = rnd.randint(2, 12)
    return {
        "p": p, "c": c, "c2": rnd.choice([x for x in CITIES if x != c]), "n": str(n), "n2": str(n + rnd.randint(1, 5)),
        "t": rnd.choice(THINGS) if rnd.random() < 0.3 else rnd.choice(vocab), "tool": rnd.choice(TOOLS), "d": str(rnd.randint(1, 28)),
        "d2": str(rnd.randint(1, 28)), "m": rnd.choice(MONTHS), "proj": rnd.choice(PROJECTS),
        "g": rnd.choice(GAMES), "g2": rnd.choice(GAMES),
    }


def _vocabulary() -> list[str]:
    """Everyday words (ranks 300-8000 of the vaultofknowledge corpus, else gen_vault's list)."""
    import gen_vault

    words, _, _ = gen_vault.load_vocabulary(gen_vault.DEFAULT_WORDS_FROM)
    return [w for w in words[300:8000] if w.isalpha()] or words


def real_sentences(seed: int) -> list[str]:
    """Prose sentences of the vaultofknowledge corpus (6-30 words), shuffled:
    what a varied store's texts look like (they duplicate and contradict
    nothing on purpose)."""
    import re

    from _common import CORPUS

    out: list[str] = []
    seen: set[str] = set()
    for p in sorted(CORPUS.rglob("*.md")) if CORPUS.is_dir() else []:
        if any(part.startswith(".") for part in p.relative_to(CORPUS).parts):
            continue
        text = re.sub(r"^---\n.*?\n---\n", "", p.read_text(errors="replace"), flags=re.S)
        for line in re.sub(r"```.*?```", "", text, flags=re.S).splitlines():
            line = line.strip()
            if not line or line[0] in "#|>!<`" or line.startswith("http"):
                continue
            line = re.sub(r"\[\[([^\]|]*\|)?([^\]]*)\]\]", r"\2", re.sub(r"^[-*+]\s+(\[.\]\s+)?", "", line))
            for sent in re.split(r"(?<=[.!?])\s+", re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", line)):
                if 6 <= len(sent.split()) <= 30 and sent not in seen and not re.search(r"https?:|[{}$\\]", sent):
                    seen.add(sent)
                    out.append(sent)
    random.Random(seed).shuffle(out)
    return out


def generate(n: int, seed: int) -> list[dict]:
    """``n`` memories (dicts with id, type, scope, content, created, strength).
    Each claim carries two words of its own (``"... (garden, ledger)"``) that
    its rewordings and contradictions share, so texts are as varied as a real
    store's rather than a few templates repeated."""
    rnd = random.Random(seed)
    vocab = _vocabulary()

    def detail() -> str:
        return f"({rnd.choice(vocab)}, {rnd.choice(vocab)})"

    start = date(2024, 11, 1)
    out: list[dict] = []

    def add(content: str, type_: str, created: date, scope: str = "user") -> None:
        strength = rnd.choice([0.5, 0.5, 0.6, 0.7, 0.8]) if rnd.random() > 0.15 else rnd.choice([0.05, 0.1, 0.15])
        out.append({"id": f"m-{len(out):07d}", "type": type_, "scope": scope, "content": content,
                    "created": created.isoformat(), "strength": strength})

    real = real_sentences(seed)
    while len(out) < n:
        r = rnd.random()
        if real and rnd.random() < 0.45:  # a real sentence, as a semantic memory
            add(real.pop(), "semantic", start + timedelta(days=rnd.randint(0, 720)))
            continue
        day = start + timedelta(days=rnd.randint(0, 720))
        scope = "user" if rnd.random() > 0.2 else f"project:{rnd.choice(PROJECTS)}"
        s = _slots(rnd, vocab)
        if r < 0.55:
            base, para, contra = rnd.choice(FACTS)
            extra = f" ({rnd.choice(['since', 'as of', 'noted in'])} {rnd.choice(MONTHS)} {rnd.randint(2024, 2026)})"
            own = detail()
            add(f"{_fill(base, rnd, s)} {own}" + (extra if rnd.random() < 0.3 else ""), "semantic", day, scope)
            if rnd.random() < 0.08:
                add(f"{_fill(para, rnd, s)} {own}", "semantic", day + timedelta(days=3), scope)
            if contra and rnd.random() < 0.04:
                add(f"{_fill(contra, rnd, s)} {own}", "semantic", day + timedelta(days=40), scope)
        elif r < 0.8:
            habit = rnd.choice(HABITS).format(p=rnd.choice(PEOPLE), t=rnd.choice(vocab))
            weekday = rnd.choice(DAYS)
            for k in range(rnd.randint(1, 4)):
                add(f"{weekday}: {habit}, {rnd.choice(['again', 'as usual', 'good one', 'short one', 'late'])}"
                    f" {detail()}", "episodic", day + timedelta(days=7 * k))
        elif r < 0.92:
            add(f"Before a {rnd.choice(PROJECTS)} release, run {rnd.choice(['the tests', 'make itest', 'the linter'])}"
                f" and tag it {detail()}", "procedural", day, scope)
        elif r < 0.97:
            done = "[x]" if rnd.random() < 0.5 else "[ ]"
            add(f"{done} Call {s['p']} about {s['t']} {detail()}", "prospective", day)
        else:
            add(f"Speaks {rnd.choice(['Portuguese', 'English', 'German'])} at home {detail()}", "identity", day)
    return out[:n]


def write_vault(n: int, seed: int) -> Path:
    """The generated memories as memory notes (once per size and seed)."""
    root = VAULTS / f"memories-{n}-s{seed}"
    marker = root / ".bench-done"
    if marker.exists():
        return root
    memories = generate(n, seed)
    for m in memories:
        due = "due: 2025-06-01\n" if m["type"] == "prospective" else ""
        path = root / "Memory" / m["type"] / f"{m['id']}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"---\nid: {m['id']}\ntype: {m['type']}\nscope: {m['scope']}\nstrength: {m['strength']}\n"
            f"created: '{m['created']}T08:00:00+00:00'\nupdated: '{m['created']}T08:00:00+00:00'\n"
            f"source: bench\n{due}---\n{m['content']}\n", encoding="utf-8")
    marker.write_text("ok")
    return root


def candidate_recall(store) -> dict:
    """Share of the pairs at least as similar as their block's floor (found by
    comparing all pairs of each block: same scope and type) that the forest found."""
    import numpy as np

    from memvault.store.consolidation.plan import Similarity, candidate_floor
    from memvault.store.consolidation.records import load_records, load_vectors
    from memvault.store.consolidation.run import policy_for
    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.model import resolve_model

    records = load_records(store.con)
    cache = vec.open_cache(store.data_dir, create=False)
    vectors = load_vectors(store.con, cache, resolve_model("default").key, records)
    cache.close()
    policy = policy_for(store.settings)
    t = time.perf_counter()
    found = Similarity(records, vectors, policy).pairs
    forest_s = time.perf_counter() - t
    blocks: dict[tuple[str, str], list] = {}
    for r in records:
        if r.id in vectors:
            blocks.setdefault((r.scope, r.type), []).append(r)
    exact: dict[tuple[str, str], float] = {}
    t = time.perf_counter()
    for (_, type_), members in blocks.items():
        floor = candidate_floor(type_, policy.thresholds)
        x = np.stack([vectors[r.id] for r in members])
        for i in range(0, len(members), 2048):
            sims = x[i : i + 2048] @ x.T
            for a, b in zip(*np.nonzero(sims >= floor)):
                a, b = i + int(a), int(b)
                if a < b:
                    p = tuple(sorted((members[a].id, members[b].id)))
                    exact[p] = float(sims[a - i, b])
    all_pairs_s = time.perf_counter() - t
    hit = [p for p in exact if p in found]
    high = [p for p, s in exact.items() if s >= 0.85]
    # What matters: the pairs the duplicate rule would accept had all pairs been compared.
    from memvault.store.consolidation import rules

    book = rules.NameBook.of(r.memo.f for r in records)
    rec = {r.id: r for r in records}
    positive = [p for p, s in exact.items() if rec[p[0]].type != "episodic"
                and rules.duplicate(rec[p[0]].memo, rec[p[1]].memo, round(s, 6), policy.thresholds.merge, book)]
    return {"exact_pairs": len(exact), "found": len(hit), "recall": round(len(hit) / len(exact), 4) if exact else 1.0,
            "recall_at_0.85": round(sum(1 for p in high if p in found) / len(high), 4) if high else 1.0,
            "duplicates_all_pairs": len(positive),
            "duplicates_recall": round(sum(1 for p in positive if p in found) / len(positive), 4) if positive else 1.0,
            "forest_s": round(forest_s, 2), "all_pairs_s": round(all_pairs_s, 2)}


def recalled(store, seed: int) -> None:
    """Recall statistics as a store in use has them: 60% of the memories were
    recalled in the two months before the bench's day (deterministic)."""
    from memvault.store.db.connection import write_transaction

    rnd = random.Random(seed + 7)
    ids = [r[0] for r in store.con.execute("SELECT id FROM traces WHERE kind = 'memory' ORDER BY id")]
    rows = [(f"{date(2026, 11, 1) - timedelta(days=rnd.randint(0, 60))}T12:00:00+00:00", i)
            for i in ids if rnd.random() < 0.6]
    with write_transaction(store.con):
        store.con.executemany("UPDATE traces SET last_access = ?, retrieval_count = 1 WHERE id = ?", rows)
        store.con.execute(
            "INSERT OR REPLACE INTO state.recall (trace_id, retrieval_count, last_access, strength) "
            "SELECT id, retrieval_count, last_access, strength FROM traces WHERE last_access IS NOT NULL")


def time_adds(root: Path) -> dict:
    """``memvault add`` as a whole process (no daemon): a new memory, then a
    paraphrase of it (with vectors, both load the model), each with
    ``--allow-duplicate`` taken back by ``forget`` so the store is unchanged."""
    import os
    import subprocess

    from _common import MEMVAULT_EXE

    out = {}
    for label, text in (("new", "Keeps a spare bicycle pump in the hallway cupboard"),
                        ("paraphrase", "Has a spare bike pump in the cupboard in the hall")):
        t = time.perf_counter()
        done = subprocess.run([str(MEMVAULT_EXE), "--vault", str(root), "add", text, "--json"],
                              capture_output=True, text=True, env=dict(os.environ))
        out[label] = round(time.perf_counter() - t, 3)
        answer = json.loads(done.stdout) if done.stdout.strip() else {}
        out[label + "_action"] = answer.get("action", done.stderr.strip()[:200])
        if answer.get("action") == "added":
            subprocess.run([str(MEMVAULT_EXE), "--vault", str(root), "forget", answer["id"]],
                           capture_output=True, env=dict(os.environ))
    return out


def bench_size(n: int, seed: int, do_run: bool) -> dict:
    from memvault.store.consolidation.plan import make_plan
    from memvault.store.consolidation.records import load_records, load_vectors
    from memvault.store.consolidation.run import plan_for, policy_for
    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.model import resolve_model
    from memvault.store.memory_store import MemoryStore

    root = write_vault(n, seed)
    store = MemoryStore.open(str(root))
    t = time.perf_counter()
    store.sync()
    sync_s = time.perf_counter() - t
    recalled(store, seed)
    t = time.perf_counter()
    embedded = store.embed()
    embed_s = time.perf_counter() - t
    today = date(2026, 11, 1)
    times: dict[str, list[float]] = {"load_records": [], "load_vectors": [], "plan": [], "dry_run_total": []}
    plan = None
    for _ in range(3):
        t = time.perf_counter()
        records = load_records(store.con)
        times["load_records"].append(time.perf_counter() - t)
        t = time.perf_counter()
        cache = vec.open_cache(store.data_dir, create=False)
        vectors = load_vectors(store.con, cache, resolve_model("default").key, records)
        cache.close()
        times["load_vectors"].append(time.perf_counter() - t)
        t = time.perf_counter()
        plan = make_plan(records, vectors, policy_for(store.settings), today)
        times["plan"].append(time.perf_counter() - t)
        t = time.perf_counter()
        plan_for(store.ctx, today)
        times["dry_run_total"].append(time.perf_counter() - t)
    assert plan is not None
    result = {
        "memories": n, "records": len(records), "vectors": len(vectors), "sync_s": round(sync_s, 2),
        "embed_s": round(embed_s, 1), "embedded": embedded.as_dict() if embedded else None,
        "median_s": {k: round(statistics.median(v), 3) for k, v in times.items()},
        "plan_stats": plan.stats, "counts": plan.counts(),
    }
    if n <= 20000:
        result["candidate_recall"] = candidate_recall(store)
    result["add_process_s"] = time_adds(root)
    if do_run and n <= 20000:
        t = time.perf_counter()
        report = store.consolidate(today=today)
        result["run_s"] = round(time.perf_counter() - t, 2)
        t = time.perf_counter()
        undone = store.undo_consolidation(report.run_id)
        result["undo_s"] = round(time.perf_counter() - t, 2)
        result["undo_refused"] = len(undone.refused)
    store.close()
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 50000])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--run", action="store_true", help="also run and undo at 10k")
    args = ap.parse_args()
    isolate_env(OUT / "home-consolidate")
    info = machine_info()
    results = []
    for n in args.sizes:
        print(f"{n} memories ...", flush=True)
        r = bench_size(n, args.seed, args.run)
        print("  ", r, flush=True)
        results.append(r)
    if len(results) >= 2:
        a, b = results[0], results[-1]
        import math

        ratio = b["median_s"]["dry_run_total"] / a["median_s"]["dry_run_total"]
        nlogn = (b["memories"] * math.log(b["memories"])) / (a["memories"] * math.log(a["memories"]))
        print(f"dry-run time ratio {b['memories']}/{a['memories']}: {ratio:.2f} (n log n: {nlogn:.2f})")
    path = write_json("consolidate", {"machine": info, "results": results,
                                      "finished": datetime.now(timezone.utc).isoformat()})
    print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
