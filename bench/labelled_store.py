"""Scoring consolidation the way people's memory is built: every memory of a
labelled set added to ONE store, then the plan.

:func:`load_items` reads a set: a pair set (``{"pairs": [...], "fillers":
[...]}``, the fresh sets and the blind ones) or a store-shaped set (dev,
test: ``{"memories": [...], "duplicate_groups", "contradictions", ...}``).
:func:`build_store` adds the memories through the store API
(:meth:`MemoryStore.add`, what ``memvault add`` and MCP ``remember`` call),
one by one, with the store's clock set to each memory's creation time, after
putting every text's vector into the embedding cache (what a running daemon
does within a second of each write). :func:`score_store` then runs the plan
(``consolidate --dry-run``) and scores it against the labels.

**The order of a pair set** (:func:`pair_items`): every ``a`` side and every
filler first, shuffled together (a fixed seed), over :data:`SPAN_DAYS` days;
then every ``b`` side, shuffled, over the next :data:`SPAN_DAYS` days. The
labels say ``a`` is the older claim and ``b`` the newer, and a person's
memory holds many other claims between a statement and its revision; adding
all ``a`` sides first also means each ``b`` meets every earlier claim at
write time (the most a write-time check can be confused by). The plan runs
the day after the last write: nothing is old enough to be archived.

**What is scored** (every figure from one run):

* merges: the planned merge groups (every pair inside one) plus the ``b``
  sides refused at write as the same claim as their ``a`` (the store then
  holds one memory: merged at write); precision over every predicted pair,
  pairs across two labelled pairs or fillers included (they count as wrong);
* contradictions: the pairs the store flags, likewise: at write time (kept
  in the durable state, as ``conflicts`` lists them) and by the plan;
* distinct claims refused: a ``different`` or ``contradiction`` pair whose
  ``b`` was refused at write as a duplicate (must be 0), and any other
  memory refused that is not a labelled duplicate;
* write-time conflicts: the ``contradicts`` an ``add`` answered (when the
  store answers it), scored like the plan's flags;
* plain cosine of the same run: merges at cosine >= the ``duplicate``
  threshold (0.70), contradictions at cosine >= :data:`COSINE_CONTRADICTION`
  (chosen once on the tuning sets: the F1-best threshold over all of them
  pooled), over every pair of live memories of one type and scope.

Recall is also given per kind of the labels.
"""

from __future__ import annotations

import itertools
import json
import random
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

#: Days over which each phase of a pair set is written (the ``a`` sides, then the ``b`` sides).
SPAN_DAYS = 30
#: Seed of the shuffles of a pair set's order.
SEED = 20261129
#: Plain-cosine baseline of contradictions: pairs at least this similar (F1-best on the tuning sets pooled).
COSINE_CONTRADICTION = 0.80
#: Plain-cosine baseline of merges (``Thresholds.duplicate``).
COSINE_DUPLICATE = 0.70
START = datetime(2026, 3, 2, 8, 0, tzinfo=timezone.utc)
#: Vectors of the sets' texts (the bundled model's), kept between runs.
VECTOR_FILE = Path(__file__).resolve().parent / "out" / "store-quality-vectors.db"

Pair = frozenset[str]


@dataclass
class Item:
    """One memory to add: its key in the set (``p001:a``, ``f003``, ``c001``), text and metadata."""

    key: str
    text: str
    created: datetime
    type: str = "semantic"
    scope: str = "user"
    tags: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    strength: float | None = None
    last_recalled: datetime | None = None


@dataclass
class Gold:
    """A set's labels as pairs of item keys, with the label's kind."""

    duplicate: dict[Pair, str] = field(default_factory=dict)
    contradiction: dict[Pair, str] = field(default_factory=dict)
    different: dict[Pair, str] = field(default_factory=dict)
    #: (older, newer) of a contradiction, by pair.
    newer: dict[Pair, str] = field(default_factory=dict)


@dataclass
class LabelledItems:
    """A set ready to be added: its items in the order they are written."""

    name: str
    items: list[Item]
    gold: Gold
    today: date


def load_items(path: Path) -> LabelledItems:
    """The set at ``path`` (pair set or store-shaped), in the order it is written."""
    data = json.loads(path.read_text(encoding="utf-8"))
    name = str(data.get("name") or path.stem)
    return pair_items(name, data) if "pairs" in data else memory_items(name, data)


def pair_items(name: str, data: Mapping[str, Any]) -> LabelledItems:
    """A pair set's items (module docstring: ``a`` sides and fillers, then ``b`` sides)."""
    rng = random.Random(SEED)
    first = [(f"{p['id']}:a", p["a"]) for p in data["pairs"]] + [(f["id"], f["text"]) for f in data.get("fillers", [])]
    second = [(f"{p['id']}:b", p["b"]) for p in data["pairs"]]
    rng.shuffle(first)
    rng.shuffle(second)
    items: list[Item] = []
    for phase, batch in enumerate((first, second)):
        step = timedelta(days=SPAN_DAYS) / max(1, len(batch))
        start = START + timedelta(days=SPAN_DAYS * phase)
        items += [Item(key, text, start + i * step) for i, (key, text) in enumerate(batch)]
    gold = Gold()
    for p in data["pairs"]:
        pair = frozenset((f"{p['id']}:a", f"{p['id']}:b"))
        getattr(gold, p["label"])[pair] = str(p.get("kind") or "")
        if p["label"] == "contradiction":
            gold.newer[pair] = f"{p['id']}:b"
    return LabelledItems(name, items, gold, (items[-1].created + timedelta(days=1)).date())


def memory_items(name: str, data: Mapping[str, Any]) -> LabelledItems:
    """A store-shaped set's items (dev, test), in the order they were created."""
    from memvault.store.index.event_time import parse_stamp

    now = parse_stamp(data["now"])
    assert now is not None
    items = []
    for m in data["memories"]:
        created = parse_stamp(m["created"]) or now
        extra: dict[str, Any] = {}
        if m.get("pinned"):
            extra["pinned"] = True
        if m.get("due"):
            extra["due"] = m["due"]
        if m.get("done"):
            extra["done"] = True
        items.append(Item(m["id"], m["content"], created, m["type"], m["scope"], tuple(m.get("tags") or ()), extra,
                          m.get("strength"), parse_stamp(m.get("last_recalled"))))
    items.sort(key=lambda it: (it.created, it.key))
    gold = Gold()
    for g in data["duplicate_groups"]:
        for x, y in itertools.combinations(g, 2):
            gold.duplicate[frozenset((x, y))] = "group"
    for c in data["contradictions"]:
        pair = frozenset((c["a"], c["b"]))
        gold.contradiction[pair] = c["kind"]
        gold.newer[pair] = c["newer"]
    for x, y, why in data["not_contradictions"] + data["not_duplicates"]:
        gold.different.setdefault(frozenset((x, y)), why)
    return LabelledItems(name, items, gold, now.date())


@contextmanager
def clock_at(moment: list[datetime]) -> Iterator[None]:
    """The store's clock (``db.records.now_iso``) reads ``moment[0]`` while inside."""
    from memvault.store.db import records as rec

    real = rec.now_iso
    rec.now_iso = lambda: moment[0].replace(microsecond=0).isoformat()
    try:
        yield
    finally:
        rec.now_iso = real


@dataclass
class Built:
    """A store with a set's memories in it, and what each write answered."""

    store: Any
    ids: dict[str, str]  # item key -> memory id (the existing one when refused)
    refused: dict[str, str]  # item key -> memory id it was refused as the same claim as
    answers: dict[str, dict[str, Any]]  # item key -> the write's answer (as_dict)
    add_seconds: list[float]


def build_store(s: LabelledItems, root: Path, *, vectors: bool = True) -> Built:
    """Add every item of ``s`` to a fresh store in ``root`` (module docstring)."""
    import time

    from memvault.store.memory_store import MemoryStore

    vault = root / "vault"
    vault.mkdir(parents=True)
    store = MemoryStore.open(str(vault))
    store.con  # indexes the empty vault
    if vectors:
        from memvault.store.consolidation.dedup import _embedded_text

        # What a running daemon does within a second of each write: the vector of its one chunk.
        # (Vectors of earlier runs are kept in one file, so a set is embedded once.)
        if VECTOR_FILE.is_file():
            store.cache_import(VECTOR_FILE)
        if store.cache_vectors(sorted({_embedded_text(it.text) for it in s.items})):
            fresh = VECTOR_FILE.with_suffix(".new")
            fresh.unlink(missing_ok=True)
            store.cache_export(fresh)
            fresh.replace(VECTOR_FILE)
    moment = [s.items[0].created]
    ids: dict[str, str] = {}
    refused: dict[str, str] = {}
    answers: dict[str, dict[str, Any]] = {}
    seconds: list[float] = []
    with clock_at(moment):
        for it in s.items:
            moment[0] = it.created
            t0 = time.perf_counter()
            result = store.add(it.text, it.type, tags=it.tags, scope=it.scope, extra=it.extra or None)
            seconds.append(time.perf_counter() - t0)
            ids[it.key] = result.id
            answers[it.key] = result.as_dict()
            if result.action == "duplicate_of":
                refused[it.key] = result.id
    _set_recall(store, s.items, ids, refused)
    if vectors:
        store.embed()
    return Built(store, ids, refused, answers, seconds)


def _set_recall(store: Any, items: Sequence[Item], ids: Mapping[str, str], refused: Mapping[str, str]) -> None:
    """Strength and last recall as a store-shaped set gives them (what recalls
    would have left): the plan's decay and archive then see what the labels assume."""
    from memvault.store.db.connection import write_transaction

    con = store.con
    with write_transaction(con):
        for it in items:
            if it.key in refused or (it.strength is None and it.last_recalled is None):
                continue
            con.execute("UPDATE traces SET strength = ?, last_access = ? WHERE id = ?",
                        (it.strength, it.last_recalled.isoformat() if it.last_recalled else None, ids[it.key]))


def _pr(predicted: set[Pair], gold: set[Pair]) -> dict[str, Any]:
    tp = len(predicted & gold)
    return {"precision": round(tp / len(predicted), 3) if predicted else 1.0,
            "recall": round(tp / len(gold), 3) if gold else 1.0,
            "predicted": len(predicted), "true": tp, "labelled": len(gold)}


def _by_kind(predicted: set[Pair], gold: Mapping[Pair, str]) -> dict[str, str]:
    kinds = Counter(gold.values())
    hit = Counter(k for p, k in gold.items() if p in predicted)
    return {k: f"{hit[k]}/{kinds[k]}" for k in sorted(kinds)}


def score_store(s: LabelledItems, built: Built) -> dict[str, Any]:
    """The plan's merges and contradictions (and the writes' answers) scored against the labels."""
    import numpy as np

    from memvault.store.consolidation.records import load_records, load_vectors
    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.model import resolve_model

    store = built.store
    report = store.consolidate(dry_run=True, today=s.today)
    keys: dict[str, list[str]] = {}
    for key, mid in built.ids.items():
        keys.setdefault(mid, []).append(key)

    def pairs_of(memory_ids: Sequence[str]) -> set[Pair]:
        found = set()
        for x, y in itertools.combinations(memory_ids, 2):
            found |= {frozenset((kx, ky)) for kx in keys.get(x, []) for ky in keys.get(y, []) if kx != ky}
        return found

    merged: set[Pair] = set()
    flagged: set[Pair] = set()
    newer_right = 0
    for a in report.actions:
        if a["kind"] == "merge":
            merged |= pairs_of(a["ids"])
        elif a["kind"] == "contradiction":
            found = pairs_of(a["ids"])
            flagged |= found
            newer_right += sum(1 for p in found if built.ids.get(s.gold.newer.get(p, "")) == a["detail"]["newer"])
    # Flagged at write time (``add`` answered ``contradicts``) and kept in the durable state: the store's too.
    for older, newer in store.con.execute("SELECT older_id, newer_id FROM state.contradictions"):
        found = pairs_of([older, newer])
        flagged |= found
        newer_right += sum(1 for p in found if built.ids.get(s.gold.newer.get(p, "")) == newer)
    at_write = {frozenset((k, kk)) for k, mid in built.refused.items() for kk in keys.get(mid, []) if kk != k}
    merges = merged | at_write
    distinct = set(s.gold.different) | set(s.gold.contradiction)
    refused_wrong = sorted(k for k in built.refused
                           if not any(frozenset((k, kk)) in s.gold.duplicate for kk in keys.get(built.refused[k], [])))
    conflicts: set[Pair] = set()
    for key, answer in built.answers.items():
        for c in answer.get("contradicts") or ():
            conflicts |= {frozenset((key, kk)) for kk in keys.get(str(c["id"]), []) if kk != key}
    # Plain cosine over every pair of live memories of one type and scope.
    records = load_records(store.con)
    spec = resolve_model(store.settings.embedding.model)
    cache = vec.open_cache(store.data_dir, create=False)
    try:
        vectors = load_vectors(store.con, cache, spec.key if spec else None, records)
    finally:
        if cache is not None:
            cache.close()
    cos_dup: set[Pair] = set()
    cos_con: set[Pair] = set()
    blocks: dict[tuple[str, str], list[str]] = {}
    for r in records:
        if r.id in vectors and r.kind == "memory":
            blocks.setdefault((r.type, r.scope), []).append(r.id)
    for members in blocks.values():
        m = np.stack([vectors[i] for i in members])
        sims = m @ m.T
        ii, jj = np.nonzero(np.triu(sims >= min(COSINE_DUPLICATE, COSINE_CONTRADICTION), 1))
        for i, j in zip(ii.tolist(), jj.tolist()):
            p = pairs_of([members[i], members[j]])
            if sims[i, j] >= COSINE_DUPLICATE:
                cos_dup |= p
            if sims[i, j] >= COSINE_CONTRADICTION:
                cos_con |= p
    gold_dup, gold_con = set(s.gold.duplicate), set(s.gold.contradiction)
    labelled = gold_dup | gold_con | distinct
    return {
        "set": s.name, "memories": len(s.items), "stored": len(s.items) - len(built.refused),
        "vectors": len(vectors),
        "merges": {**_pr(merges, gold_dup), "at_write": len(at_write & gold_dup),
                   "outside_labels": len(merges - labelled), "by_kind": _by_kind(merges, s.gold.duplicate)},
        "contradictions": {**_pr(flagged, gold_con), "newer_right": newer_right,
                           "outside_labels": len(flagged - labelled),
                           "by_kind": _by_kind(flagged, s.gold.contradiction)},
        "write_conflicts": {**_pr(conflicts, gold_con), "by_kind": _by_kind(conflicts, s.gold.contradiction)},
        "distinct_refused": len(at_write & distinct), "other_refused": refused_wrong,
        "cosine_merges": _pr(cos_dup, gold_dup), "cosine_contradictions": _pr(cos_con, gold_con),
        "plan_seconds": report.stats.get("seconds"),
        "add_ms_median": round(1000 * sorted(built.add_seconds)[len(built.add_seconds) // 2], 1),
        "wrong": {"merges": sorted(sorted(p) for p in merges - gold_dup),
                  "contradictions": sorted(sorted(p) for p in flagged - gold_con),
                  "missed_contradictions": sorted(sorted(p) for p in gold_con - flagged)},
    }


def score_file(path: Path, *, vectors: bool = True) -> dict[str, Any]:
    """Build a store from the set at ``path`` in a temporary folder and score it."""
    s = load_items(path)
    with tempfile.TemporaryDirectory(prefix="memvault-store-score-") as tmp:
        built = build_store(s, Path(tmp), vectors=vectors)
        try:
            return score_store(s, built)
        finally:
            built.store.close()


def judged_alone(s: LabelledItems, vectors: Mapping[str, Any]) -> dict[str, set[Pair]]:
    """The diagnostic: each labelled pair judged alone by the pair rules
    (as two semantic memories of one scope, the book of the pair alone),
    ``vectors`` by item key. What a store should find at least."""
    from memvault.store.consolidation import rules
    from memvault.store.consolidation.text import features

    t = rules.Thresholds()
    by_key = {it.key: it for it in s.items}
    out: dict[str, set[Pair]] = {"merged": set(), "flagged": set()}
    for pair in {*s.gold.duplicate, *s.gold.contradiction, *s.gold.different}:
        x, y = sorted(pair, key=lambda k: (by_key[k].created, k))
        a, b = by_key[x], by_key[y]
        ma = rules.Memo(x, a.type, a.scope, a.text, a.created, features(a.text))
        mb = rules.Memo(y, b.type, b.scope, b.text, b.created, features(b.text))
        va, vb = vectors.get(x), vectors.get(y)
        sim = round(float(va @ vb), 6) if va is not None and vb is not None else None
        book = rules.NameBook.of([ma.f, mb.f])
        if rules.duplicate(ma, mb, sim, t.merge, book):
            out["merged"].add(pair)
        if rules.contradiction(ma, mb, sim, t.contradiction, book):
            out["flagged"].add(pair)
    return out
