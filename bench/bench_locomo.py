"""Evidence recall on LoCoMo (development half): memvault beside mem0 and plain baselines.

    python bench/bench_locomo.py                          # every conversation, all three layouts, mem0 beside
    python bench/bench_locomo.py --layouts turns          # one layout
    python bench/bench_locomo.py --conversations conv-26 --limit 40   # a quick look
    python bench/bench_locomo.py --json                   # the figures as JSON on stdout
    python bench/bench_locomo.py --lean --conversations conv-26 --save out/a.json   # one part of a split run
    python bench/bench_locomo.py --merge out/a.json out/b.json                      # the parts' tables together

The data is **not** part of the project: it is read at run time from
``../shared/benchmarks/locomo-dev/locomo-dev.json`` (CC BY-NC 4.0, see the
README and LICENSE.txt there; ``--data`` names another copy). When it is
absent the benchmark says so and exits 0. Nothing of it is written into the
repository: vaults live in a temp folder under ``bench/out/`` (git-ignored)
and are removed afterwards; only vectors (keyed by model and text hash) are
cached in ``bench/out/locomo-cache/`` so later runs embed nothing.

**Layout "turns"** (the default, and the one measured today): each
conversation becomes its own vault with one episodic memory note per turn,
``Memory/episodic/<conversation>/<dia id>.md`` with the front-matter keys the
conversational set uses (``type: episodic``, ``session_date``, ``speaker``,
``session``, ``turn``; docs/search.md "Conversations") and the turn's text as
body. Images are left out (their ``blip_caption`` is not the speaker's words).
The vault is synced and embedded in-process through the store API
(``MemoryStore.sync`` and the embedding pipeline) under a private
``MEMVAULT_HOME``.

**Layout "nokeys"**: the same turn notes without the ``session`` and
``turn`` keys (``type``, ``session_date`` and ``speaker`` stay): what a
turn-per-note export written by another tool looks like. Which notes make
one conversation is then memvault's to infer (docs/search.md "Sessions").

**Layout "ingest"**: each session as a generic JSONL
transcript (role/name/content/timestamp) through ``memvault ingest``'s API
(``MemoryStore.ingest``), so the product decides what a unit is: today one
session note per session, a hit naming its best turn, so search's top 10
holds at most one turn per session (the recall block is the fair measure
across layouts). See :func:`build_ingest_vault`.

Questions of categories 1 (multi-hop), 2 (temporal), 3 (open-domain) and
4 (single-hop) are asked; category 5 (adversarial) has no evidence. Evidence
ids are cleaned as the data's README says (split on ``;``/``,``/spaces, ids
that are no turn dropped); a question left without evidence is skipped.

Systems, all in the same run over the same turn texts:

* memvault ``keyword``, ``semantic``, ``hybrid``: ``Retriever.search``
  (what ``memvault search`` runs), limit 10, "now" one week after the
  conversation's last session;
* **bm25**: plain SQLite FTS5 ``bm25()`` in a separate in-memory database
  (apsw; porter, unicode61, diacritics folded) over "Speaker: text", the
  question's words OR-ed;
* **cosine**: the bundled MiniLM (the product's embedder), question against
  "Speaker: text";
* **rrf**: reciprocal-rank fusion of those two (k = 60);
* **mem0** (when ``mem0ai`` is installed; ``--no-mem0`` skips it): mem0's
  open-source ``Memory`` with ``infer=False`` (no LLM: each turn a memory,
  "Speaker: text" as its text), the bundled MiniLM as its embedder, its
  Qdrant store in process memory and Qdrant's BM25 loaded locally, so it
  runs offline (``bench/_mem0_peer.py``). Its ``search`` (cosine and a
  sigmoid of BM25, averaged) gives its R@k; its best 100 turns packed into
  the budget give its block. It does not depend on the layout (mem0 has no
  notes), so its figures repeat in each layout's table.

Measures: evidence recall@5 and @10 (share of a question's evidence turns in
the top 5 / 10), and the **recall block**: the share of evidence turns whose
text is inside ``context --what all --budget 800`` (``Retriever.context``;
"default": the same without ``--what``, what an agent's hook gets),
(a turn counts when its text, whitespace collapsed and bracketed insertions
such as the date the block adds after "yesterday" left out, is in the block's),
against each baseline's best turns ("- Speaker: text" lines) packed greedily
into the same 800 tokens, counted with the product's tokenizer
(``recall.block_tokens``; the block's header counts too).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from memvault.store.queries.recall import ContextQuery
from memvault.store.queries.search import SearchQuery

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO / "tests"))
from _common import isolate_env, machine_info  # noqa: E402
from fixtures.conversations.support import PlainRankers  # noqa: E402

OUT = BENCH / "out"
#: ``../shared`` beside the checkout (or beside a folder above it: a worktree).
DATA = next((p / "shared" / "benchmarks" / "locomo-dev" / "locomo-dev.json" for p in REPO.parents
             if (p / "shared" / "benchmarks" / "locomo-dev").is_dir()),
            REPO.parent / "shared" / "benchmarks" / "locomo-dev" / "locomo-dev.json")
CACHE = OUT / "locomo-cache" / "embeddings.db"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
MEMVAULT_MODES = ("keyword", "semantic", "hybrid")
BASELINES = ("bm25", "cosine", "rrf")
PEERS = ("mem0",)
SYSTEMS = MEMVAULT_MODES + BASELINES + PEERS
#: The recall blocks measured: memvault's (--what all, and the default) and each other system's packed turns.
BLOCKS = ("memvault", "default", *BASELINES, *PEERS)
BUDGET = 800
TURN_FOLDER = "Memory/episodic"


@dataclass(frozen=True)
class Turn:
    id: str  # the dia id, "D3:12"
    session: int
    number: int  # position in its session, from 1
    date: datetime
    speaker: str
    text: str

    @property
    def plain(self) -> str:
        """The baselines' text of the turn."""
        return f"{self.speaker}: {self.text}"


def session_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` as a UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def conversation_turns(sample: dict[str, Any]) -> list[Turn]:
    """Every turn of a sample, in order."""
    conv = sample["conversation"]
    out = []
    numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
    for s in numbers:
        date = session_date(conv[f"session_{s}_date_time"])
        for n, t in enumerate(conv[f"session_{s}"], 1):
            out.append(Turn(t["dia_id"].strip(), s, n, date, t["speaker"], t["text"]))
    return out


def clean_evidence(raw: list[str], known: set[str]) -> list[str]:
    """Evidence ids split on ``;``/``,``/spaces, unknown ids dropped, order kept."""
    out: list[str] = []
    for item in raw:
        for part in re.split(r"[;,\s]+", item):
            part = part.strip()
            if part in known and part not in out:
                out.append(part)
    return out


def questions(sample: dict[str, Any], known: set[str]) -> list[dict[str, Any]]:
    """The questions with evidence to retrieve (categories 1-4)."""
    out = []
    for n, q in enumerate(sample["qa"]):
        if q.get("category") not in CATEGORIES:
            continue
        ev = clean_evidence(q.get("evidence") or [], known)
        if ev:
            out.append({"n": n, "question": q["question"], "category": q["category"], "evidence": ev})
    return out


# -- layouts -------------------------------------------------------------------


def note_name(turn_id: str) -> str:
    return turn_id.replace(":", "-")


def turn_path(conv_id: str, turn_id: str) -> str:
    return f"{TURN_FOLDER}/{conv_id}/{note_name(turn_id)}.md"


def note_text(conv_id: str, t: Turn, keys: bool = True) -> str:
    """A turn's memory note, with the keys docs/search.md "Conversations" reads
    (without ``session`` and ``turn`` when not ``keys``)."""
    where = f"session: {conv_id}-s{t.session}\nturn: {t.number}\n" if keys else ""
    return (
        f"---\ntype: episodic\nsession_date: {t.date.strftime('%Y-%m-%dT%H:%M:%S')}\nspeaker: {t.speaker}\n"
        f"{where}---\n{t.text}\n"
    )


def build_turn_vault(root: Path, conv_id: str, turns: list[Turn], keys: bool = True) -> dict[str, Any]:
    """Layout "turns": one note per turn, synced and embedded (vectors seeded from :data:`CACHE`)."""
    from fixtures.conversations import support as conv_support
    from fixtures.retrieval import support as retrieval

    for t in turns:
        path = root / turn_path(conv_id, t.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note_text(conv_id, t, keys), encoding="utf-8")
    report = retrieval.build(root, cache=CACHE)
    conv_support.save_cache(root, CACHE)
    return report


def build_bare_vault(root: Path, conv_id: str, turns: list[Turn]) -> dict[str, Any]:
    """Layout "nokeys": the turn notes without ``session`` and ``turn``."""
    return build_turn_vault(root, conv_id, turns, keys=False)


def build_ingest_vault(root: Path, conv_id: str, turns: list[Turn]) -> dict[str, Any]:
    """Layout "ingest": each session written as a generic JSONL transcript
    (one line per turn: ``{"role": "user"|"assistant", "name": speaker,
    "content": text, "timestamp": session date + n seconds, "session_id"}``,
    the first speaker as the user) outside the vault and passed through
    ``MemoryStore.ingest`` (what ``memvault ingest`` runs), so the product
    decides the units; then embedded. Hits are mapped to turns by
    :func:`ingest_hit_turn`."""
    from fixtures.conversations import support as conv_support
    from fixtures.retrieval import support as retrieval

    from memvault.store.memory_store import MemoryStore

    root.mkdir(parents=True, exist_ok=True)
    retrieval.seed_cache(root, CACHE)
    sessions: dict[int, list[Turn]] = defaultdict(list)
    for t in turns:
        sessions[t.session].append(t)
    first = turns[0].speaker
    store = MemoryStore.open(str(root))
    try:
        for n, ts in sorted(sessions.items()):
            src = root.parent / f"{conv_id}-s{n}.jsonl"
            lines = [json.dumps({"role": "user" if t.speaker == first else "assistant", "name": t.speaker,
                                 "content": t.text, "session_id": f"{conv_id}-s{n}",
                                 "timestamp": (t.date + timedelta(seconds=t.number)).isoformat()}) for t in ts]
            src.write_text("\n".join(lines) + "\n", encoding="utf-8")
            store.ingest(str(src), session=f"{conv_id}-s{n}", client="generic")
    finally:
        store.close()
    report = retrieval.build(root, cache=CACHE)
    conv_support.save_cache(root, CACHE)
    return report


def ingest_hit_turn(con: Any, turns: list[Turn]) -> Callable[[dict[str, Any]], str | None]:
    """Layout "ingest": a search hit as a dia id, from the session its note
    records and the hit's turn (a session-note hit names its best turn)."""
    by_session: dict[int, list[Turn]] = defaultdict(list)
    for t in turns:
        by_session[t.session].append(t)
    session_of = {}
    for path, session in con.execute("SELECT path, session FROM traces WHERE session IS NOT NULL AND path IS NOT NULL"):
        m = re.search(r"-s(\d+)$", session or "")
        if m:
            session_of[path] = int(m.group(1))

    def turn_of(hit: dict[str, Any]) -> str | None:
        s, n = session_of.get(hit.get("path") or ""), hit.get("turn")
        if s is None or not isinstance(n, int) or not 1 <= n <= len(by_session[s]):
            return None
        return by_session[s][n - 1].id

    return turn_of


LAYOUTS: dict[str, Callable[[Path, str, list[Turn]], dict[str, Any]]] = {
    "turns": build_turn_vault,
    "nokeys": build_bare_vault,
    "ingest": build_ingest_vault,
}


# -- plain baselines -------------------------------------------------------------


class Baselines(PlainRankers):
    """Plain bm25, cosine and their RRF over one conversation's turn texts."""

    def __init__(self, turns: list[Turn], embedder: Any, model_key: str) -> None:
        import numpy as np

        from memvault.store.embedding import vectors as vec
        from memvault.store.embedding.model import text_hash

        self.turns = turns
        texts = [t.plain for t in turns]
        hashes = [text_hash(x) for x in texts]
        cached: dict[str, Any] = {}
        cache = vec.open_cache(CACHE.parent, create=True)
        assert cache is not None
        for h, v in cache.execute(
            f"SELECT hash, vec FROM vectors WHERE model = ? AND hash IN ({','.join('?' * len(hashes))})",
            (model_key, *hashes),
        ):
            cached[h] = np.frombuffer(v, dtype=np.float16).astype(np.float32)
        missing = [(x, h) for x, h in zip(texts, hashes) if h not in cached]
        if missing:
            vecs = list(embedder.embed([x for x, _ in missing]))
            rows = []
            for (_, h), v in zip(missing, vecs):
                v16 = np.asarray(v, dtype=np.float16)
                cached[h] = v16.astype(np.float32)
                rows.append((model_key, h, v16.tobytes(), 0))
            cache.executemany("INSERT OR IGNORE INTO vectors (model, hash, vec, used) VALUES (?, ?, ?, ?)", rows)
        cache.close()
        m = np.stack([cached[h] for h in hashes])
        self.embedder = embedder
        self.vectors = {x: cached[h] for x, h in zip(texts, hashes)}
        super().__init__([t.id for t in turns], texts, m / np.linalg.norm(m, axis=1, keepdims=True))

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Vectors of ``texts``: the cached turn vectors, else the model's (a peer's embedder)."""
        missing = [x for x in texts if x not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.embedder.embed(missing)))
        return [[float(f) for f in self.vectors[x]] for x in texts]


def open_mem0(work: Path, conv_id: str, turns: list[Turn], base: Baselines) -> Any:
    """mem0 (``infer=False``, bundled model, in process) holding the conversation's turns, or None when not installed."""
    import _mem0_peer

    if not _mem0_peer.available():
        return None
    import logging

    for name in ("mem0", "mem0.memory.main", "mem0.vector_stores.qdrant", "mem0.utils.spacy_models"):
        logging.getLogger(name).setLevel(logging.ERROR)
    import warnings

    warnings.filterwarnings("ignore", message="Payload indexes have no effect")
    peer = _mem0_peer.open_peer(work, conv_id, base.embed)
    first = turns[0].speaker
    peer.add([(t.id, "user" if t.speaker == first else "assistant", t.plain) for t in turns])
    return peer


_BRACKETED = re.compile(r"\s*\[[^\]]*\]")


def _norm(text: str) -> str:
    """Whitespace collapsed and bracketed insertions dropped: the block dates
    a relative time in place ("yesterday [2023-01-19]")."""
    return " ".join(_BRACKETED.sub("", text).split())


def packed(ranked: list[str], by_id: dict[str, Turn], budget: int = BUDGET) -> list[str]:
    """The turns of ``ranked`` that fit in ``budget`` tokens as "- Speaker: text"
    lines under the recall block's header, greedily in rank order (a turn
    that does not fit is skipped, a later shorter one may still go in)."""
    from memvault.store.embedding.model import count_tokens
    from memvault.store.retrieval.recall import HEADER, block_tokens

    ranked = ranked[:100]
    # Without special tokens counts add up over lines joined by newlines.
    costs = count_tokens([f"- {by_id[t].plain}" for t in ranked])
    used = block_tokens(HEADER)
    out = []
    for tid, cost in zip(ranked, costs):
        if used + cost <= budget:
            out.append(tid)
            used += cost
    assert block_tokens("\n".join([HEADER, *(f"- {by_id[t].plain}" for t in out)])) <= budget
    return out


def recall_at(ranked: list[str], evidence: list[str], k: int) -> float:
    ev = set(evidence)
    return len(ev & set(ranked[:k])) / len(ev)


# -- the run -------------------------------------------------------------------


def _peer_ranks(q: dict[str, Any], base: Baselines, embedder: Any, mem0: Any) -> dict[str, list[str]]:
    """The plain baselines' and mem0's rankings for a question (they do not depend on the layout):
    ``mem0`` at ``search(limit=10)`` as mem0 answers it, ``mem0@100`` for packing a block."""
    qvec = embedder.embed_query(q["question"])
    out = {"bm25": base.bm25(q["question"]), "cosine": base.cosine(qvec)}
    out["rrf"] = Baselines.rrf(out["bm25"], out["cosine"])
    if mem0 is not None:
        out["mem0"] = mem0.search(q["question"], 10)
        out["mem0@100"] = mem0.search(q["question"], 100)
    return out


def _ask(r: Any, q: dict[str, Any], hit_turn: Callable[[dict[str, Any]], str | None], peers: dict[str, list[str]],
         by_id: dict[str, Turn], conv_id: str, context: bool, lean: str | None = None) -> dict[str, Any]:
    """One question through memvault's modes, beside the peers' rankings: R@5, R@10, top 10, blocks.
    ``lean`` (the layout, with ``--lean``): hybrid only, and the default block only for ingested sessions."""
    ranked = {k: v for k, v in peers.items() if "@" not in k}
    for mode in ("hybrid",) if lean else MEMVAULT_MODES:
        hits = r.search(SearchQuery(q["question"], mode=mode, limit=10)).to_json()["hits"]
        ranked[mode] = [t for t in (hit_turn(h) for h in hits) if t]
    ev = q["evidence"]
    systems = [s for s in SYSTEMS if s in ranked]
    row: dict[str, Any] = {
        "conversation": conv_id, "n": q["n"], "category": q["category"], "evidence": ev,
        "r5": {s: recall_at(ranked[s], ev, 5) for s in systems},
        "r10": {s: recall_at(ranked[s], ev, 10) for s in systems},
        "top": {s: ranked[s][:10] for s in systems},
    }
    if context:
        row["block"] = {}
        for name, what in (("memvault", "all"), ("default", None)):
            if name == "default" and lean and lean != "ingest":
                # Turn notes are all memories: the default block is the --what all one (checked on full runs).
                row["block"][name] = row["block"]["memvault"]
                continue
            cq = ContextQuery(q["question"], budget=BUDGET, record=False, **({"what": what} if what else {}))
            block = _norm(r.context(cq).to_json()["text"])
            row["block"][name] = sum(1 for e in ev if _norm(by_id[e].text) in block) / len(ev)
        for s in (*BASELINES, *PEERS):
            if s in ranked:
                row["block"][s] = recall_at(packed(peers.get(f"{s}@100", ranked[s]), by_id), ev, 10**6)
    return row


def run_conversation(work: Path, sample: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """One conversation in each layout, every question through every system."""
    from memvault.store.memory_store import MemoryStore
    from memvault.store.retrieval.retriever import Retriever

    conv_id = sample["sample_id"]
    turns = conversation_turns(sample)
    by_id = {t.id: t for t in turns}
    qs = questions(sample, set(by_id))
    if args.limit:
        qs = qs[: args.limit]
    fixed = max(t.date for t in turns) + timedelta(days=7)
    peers: dict[int, dict[str, list[str]]] = {}
    base: Baselines | None = None
    mem0: Any = None
    out: dict[str, Any] = {"conversation": conv_id, "turns": len(turns), "layouts": {}}
    for layout in args.layouts:
        root = work / layout / conv_id
        t0 = time.perf_counter()
        report = LAYOUTS[layout](root, conv_id, turns)
        built = time.perf_counter() - t0
        store = MemoryStore.open(str(root))
        r = Retriever(store.ctx, store.read_con())
        r.clock = lambda: fixed  # type: ignore[method-assign]
        if base is None:
            base = Baselines(turns, r.embedder(), r.model_key or "")
            t1 = time.perf_counter()
            mem0 = None if args.no_mem0 else open_mem0(work / "mem0" / conv_id, conv_id, turns, base)
            out["mem0_add_s"] = round(time.perf_counter() - t1, 1)
        if layout == "ingest":
            hit_turn = ingest_hit_turn(store.read_con(), turns)
        else:
            paths = {turn_path(conv_id, t.id): t.id for t in turns}
            hit_turn = lambda h: paths.get(h.get("path") or "")  # noqa: E731
        rows = []
        t1 = time.perf_counter()
        for q in qs:
            if q["n"] not in peers:
                peers[q["n"]] = _peer_ranks(q, base, r.embedder(), mem0)
            rows.append(_ask(r, q, hit_turn, peers[q["n"]], by_id, conv_id, not args.no_context,
                             layout if args.lean else None))
        out["layouts"][layout] = {"questions": rows, "build_s": round(built, 1),
                                  "ask_s": round(time.perf_counter() - t1, 1), "embedded": report.get("embedded")}
        r.close()
        store.close()
    return out


def aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean recall per category (and "all"), per system."""
    out: dict[str, Any] = {}
    systems = [s for s in SYSTEMS if rows and all(s in q["r10"] for q in rows)]
    for cat, name in [*CATEGORIES.items(), (0, "all")]:
        sel = [q for q in rows if cat in (0, q["category"])]
        if not sel:
            continue
        m: dict[str, Any] = {"n": len(sel)}
        for key in ("r5", "r10"):
            m[key] = {s: round(sum(q[key][s] for q in sel) / len(sel), 3) for s in systems}
        blocks = [q["block"] for q in sel if "block" in q]
        if blocks:
            m["block"] = {s: round(sum(b[s] for b in blocks) / len(blocks), 3) for s in BLOCKS if s in blocks[0]}
        out[name] = m
    return out


def print_table(layout: str, agg: dict[str, Any]) -> None:
    """One layout's figures: R@10 per system and category, then the blocks."""
    systems = list(agg["all"]["r10"])
    peer = "mem0" if "mem0" in systems else "rrf"
    print(f"\n== layout {layout}: evidence R@10 ==")
    print(f"{'category':12} {'n':>4} " + " ".join(f"{s:>8}" for s in systems) + f"  hyb-{peer}  hyb-rrf")
    for name, m in agg.items():
        v = m["r10"]
        print(f"{name:12} {m['n']:4d} " + " ".join(f"{v[s]:8.3f}" for s in systems)
              + f"  {v['hybrid'] - v[peer]:+8.3f}  {v['hybrid'] - v['rrf']:+7.3f}")
    if "block" not in agg["all"]:
        return
    blocks = list(agg["all"]["block"])
    print(f"-- layout {layout}: recall block at {BUDGET} tokens (memvault: --what all; default: no flags) --")
    print(f"{'category':12} {'n':>4} " + " ".join(f"{s:>8}" for s in blocks) + f"  mv-{peer}  dflt-all")
    for name, m in agg.items():
        b = m["block"]
        print(f"{name:12} {m['n']:4d} " + " ".join(f"{b[s]:8.3f}" for s in blocks)
              + f"  {b['memvault'] - b[peer]:+7.3f}  {b['default'] - b['memvault']:+8.3f}")


def merge(paths: list[Path]) -> dict[str, Any]:
    """The tables of several saved runs (``--save``: one per layout or per
    conversation, run side by side) taken together, question by question."""
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    for run in runs:
        for d in run["conversations"]:
            for layout, v in d["layouts"].items():
                rows[layout].extend(v["questions"])
    agg = {layout: aggregate(qs) for layout, qs in rows.items()}
    print(f"{len(paths)} runs ({', '.join(sorted({r['when'] for r in runs}))}), mem0 {runs[0].get('mem0')}")
    for layout in agg:
        print_table(layout, agg[layout])
    return {"aggregate": agg}


def main(argv: list[str] | None = None, hook: Callable[[], None] | None = None) -> dict[str, Any] | None:
    """Run the benchmark; ``hook`` runs after the environment is isolated (what-ifs patch there)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--conversations", nargs="*", help="Only these sample ids (e.g. conv-26).")
    ap.add_argument("--limit", type=int, default=0, help="At most this many questions per conversation.")
    ap.add_argument("--layouts", nargs="+", choices=sorted(LAYOUTS), default=list(LAYOUTS))
    ap.add_argument("--layout", choices=sorted(LAYOUTS), help="One layout (same as --layouts X).")
    ap.add_argument("--no-context", action="store_true", help="Skip the recall-block measure (faster).")
    ap.add_argument("--no-mem0", action="store_true", help="Leave mem0 out even when it is installed.")
    ap.add_argument("--lean", action="store_true",
                    help="memvault hybrid only (no keyword/semantic columns), the default block only for ingest.")
    ap.add_argument("--save", type=Path, help="Also write the full result (every question) to this file.")
    ap.add_argument("--merge", type=Path, nargs="+", help="Print the tables of saved results taken together.")
    ap.add_argument("--json", action="store_true", help="Print the result as JSON instead of the table.")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if args.layout:
        args.layouts = [args.layout]
    if args.merge:
        return merge(args.merge)
    if not args.data.exists():
        print(f"LoCoMo data not found at {args.data}: skipped (see bench/README.md)")
        return None
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    if args.conversations:
        samples = [s for s in samples if s["sample_id"] in args.conversations]
    OUT.mkdir(exist_ok=True)
    CACHE.parent.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-locomo-", dir=OUT))
    isolate_env(work / "home")
    if hook is not None:
        hook()
    started = time.perf_counter()
    results = []
    try:
        for s in samples:
            results.append(run_conversation(work, s, args))
            d = results[-1]
            if not args.quiet and not args.json:
                done = ", ".join(f"{k} built {v['build_s']} s ({v['embedded']} embedded), asked {v['ask_s']} s"
                                 for k, v in d["layouts"].items())
                print(f"{d['conversation']}: {d['turns']} turns; mem0 add {d.get('mem0_add_s')} s; {done}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    agg = {layout: aggregate([q for d in results for q in d["layouts"][layout]["questions"]]) for layout in args.layouts}
    mem0_version = None
    if not args.no_mem0:
        import _mem0_peer

        mem0_version = _mem0_peer.version() if _mem0_peer.available() else None
    out = {"when": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": machine_info(), "layouts": args.layouts,
           "budget": BUDGET, "mem0": mem0_version, "seconds": round(time.perf_counter() - started, 1),
           "aggregate": agg, "conversations": results}
    text = json.dumps(out, indent=1)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (OUT / f"bench_locomo-{stamp}.json").write_text(text)
    (OUT / "bench_locomo-latest.json").write_text(text)
    if args.save:
        args.save.write_text(text)
    if args.json:
        print(json.dumps({k: out[k] for k in ("when", "layouts", "budget", "mem0", "seconds", "aggregate")}, indent=1))
    elif not args.quiet:
        if mem0_version is None and not args.no_mem0:
            print("mem0 is not installed (pip install 'mem0ai>=2.2,<2.3'): its column is left out")
        for layout in args.layouts:
            print_table(layout, agg[layout])
    return out


if __name__ == "__main__":
    main()
