"""Scoring consolidation against a labelled set (``tests/fixtures/consolidation``).

A set's memories become :class:`~.records.Record` s exactly as a store's
would (strength, last recall, pinned, edited by a person, due and done), the
one planner runs on them, and every rule is scored against the labels next
to a plain baseline computed in the same run:

* duplicates, pairwise: what ``add`` refuses (the same claim key), the
  merge rule on every pair (:func:`.rules.duplicate` at the ``merge``
  threshold) and the merge groups of a run (every pair inside a group),
  against "normalised text equal" and plain cosine at the ``duplicate``
  threshold (0.70);
* contradictions: the flagged pairs, against "same scope, two or more content
  words in common, and a differing number or a negation on one side";
* archive: what was archived, against the ``faded`` label, and how many
  ``protected`` memories were archived (must be none);
* promote: planned groups against ``promote_groups`` (a match shares at least
  half its members), and how close each statement is to the reference;
* due tasks: done past-due tasks made episodic; open ones left alone.

``bench/bench_consolidate_quality.py`` prints the table the README reports;
``tests/test_dedup.py`` holds the rules to their bars. A benchmark tool, not
product: it lives in bench/ (scripts and tests put bench/ on ``sys.path``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.store.consolidation import rules
from memvault.store.consolidation.plan import Plan, Policy, make_plan
from memvault.store.consolidation.records import Record, parse_day
from memvault.store.index.event_time import parse_stamp

if TYPE_CHECKING:
    import numpy as np


@dataclass
class LabelledSet:
    """One labelled set: its records, its labels and the moment it is judged at."""

    name: str
    now: datetime
    records: list[Record]
    labels: dict[str, Any]


def load_set(path: Path) -> LabelledSet:
    """Read a set; its memories as records (strength taken as current: no decay)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    now = parse_stamp(data["now"])
    assert now is not None
    records = []
    for m in data["memories"]:
        edited = m.get("edited_days_ago")
        records.append(Record(
            id=m["id"], kind="memory", type=m["type"], scope=m["scope"], content=m["content"],
            created=parse_stamp(m["created"]) or now, tags=tuple(m.get("tags") or ()), strength=m.get("strength"),
            last_access=parse_stamp(m.get("last_recalled")), decayed_at=now.date(), pinned=bool(m.get("pinned")),
            edited_at=now - timedelta(days=edited) if edited is not None else None,
            due=parse_day(m.get("due")), done=bool(m.get("done")) or m["content"].lstrip().startswith("[x]"),
        ))
    return LabelledSet(data["name"], now, records, data)


def _pairs(groups: Sequence[Sequence[str]]) -> set[frozenset[str]]:
    return {frozenset(p) for g in groups for p in itertools.combinations(g, 2)}


def _pr(predicted: set[frozenset[str]], gold: set[frozenset[str]]) -> dict[str, float]:
    tp = len(predicted & gold)
    return {
        "precision": round(tp / len(predicted), 3) if predicted else 1.0,
        "recall": round(tp / len(gold), 3) if gold else 1.0,
        "predicted": len(predicted), "true": tp, "labelled": len(gold),
    }


def duplicate_pairs(records: Sequence[Record], vectors: "Mapping[str, np.ndarray]", threshold: float,
                    book: rules.NameBook) -> set[frozenset[str]]:
    """Every same-type, same-scope pair the rule calls duplicates (all pairs: the sets are small)."""
    out = set()
    for a, b in itertools.combinations(records, 2):
        sim = round(float(vectors[a.id] @ vectors[b.id]), 6) if a.id in vectors and b.id in vectors else None
        if rules.duplicate(a.memo, b.memo, sim, threshold, book):
            out.add(frozenset((a.id, b.id)))
    return out


def refused_pairs(records: Sequence[Record]) -> set[frozenset[str]]:
    """Every pair ``add`` refuses as the same claim (:func:`.dedup.claim_key`, same type and scope)."""
    from memvault.store.consolidation.dedup import claim_key

    return {frozenset((a.id, b.id)) for a, b in itertools.combinations(records, 2)
            if (a.type, a.scope) == (b.type, b.scope) and claim_key(a.content) == claim_key(b.content)}


def cosine_pairs(records: Sequence[Record], vectors: "Mapping[str, np.ndarray]",
                 threshold: float) -> set[frozenset[str]]:
    """The plain baseline: same type and scope and a cosine at least ``threshold``."""
    return {frozenset((a.id, b.id)) for a, b in itertools.combinations(records, 2)
            if (a.type, a.scope) == (b.type, b.scope) and a.id in vectors and b.id in vectors
            and float(vectors[a.id] @ vectors[b.id]) >= threshold}


def baseline_contradictions(records: Sequence[Record]) -> set[frozenset[str]]:
    """Same scope, two or more content words shared, and differing numbers or one negated."""
    out = set()
    for a, b in itertools.combinations(records, 2):
        fa, fb = a.memo.f, b.memo.f
        if a.scope == b.scope and len(fa.stems & fb.stems) >= 2 and (fa.values != fb.values or fa.negative != fb.negative):
            out.add(frozenset((a.id, b.id)))
    return out


def score(s: LabelledSet, vectors: "Mapping[str, np.ndarray]", policy: Policy | None = None,
          similarity: Callable[[str, str], float] | None = None) -> dict[str, Any]:
    """Every rule's figures on one set (module docstring). ``similarity``
    compares a promoted statement with its reference (by meaning)."""
    policy = policy or Policy()
    labels = s.labels
    plan: Plan = make_plan(s.records, vectors, policy, s.now.date())
    book = rules.NameBook.of(r.memo.f for r in s.records)
    gold_dup = _pairs(labels["duplicate_groups"])
    merged = _pairs([a.ids for a in plan.actions if a.kind == "merge"])
    flagged = {frozenset(a.ids) for a in plan.actions if a.kind == "contradiction"}
    gold_con = {frozenset((c["a"], c["b"])) for c in labels["contradictions"]}
    newer_ok = sum(
        1 for a in plan.actions if a.kind == "contradiction"
        for c in labels["contradictions"] if frozenset((c["a"], c["b"])) == frozenset(a.ids) and c["newer"] == a.detail["newer"]
    )
    dated = {frozenset((c["a"], c["b"])) for c in labels["contradictions"] if c["dated"]}
    archived = {a.ids[0] for a in plan.actions if a.kind == "archive"}
    promoted = [a for a in plan.actions if a.kind == "promote"]
    matches = []
    for g in labels["promote_groups"]:
        members = set(g["members"])
        best = max(promoted, key=lambda a: len(members & set(a.ids)) / len(members | set(a.ids)), default=None)
        if best is not None and len(members & set(best.ids)) * 2 >= len(members):
            sim = similarity(best.detail["statement"], g["statement"]) if similarity else None
            matches.append({"members": sorted(members), "planned": sorted(best.ids), "statement": best.detail["statement"],
                            "reference": g["statement"], "similarity": sim})
    tasks = {a.ids[0] for a in plan.actions if a.kind == "task_done"}
    touched = archived | tasks
    return {
        "set": s.name,
        "memories": len(s.records),
        "vectors": sum(1 for r in s.records if r.id in vectors),
        "duplicates_refused": _pr(refused_pairs(s.records), gold_dup),
        "duplicates_rule": _pr(duplicate_pairs(s.records, vectors, policy.thresholds.merge, book), gold_dup),
        "duplicates_merge": _pr(merged, gold_dup),
        "duplicates_cosine": _pr(cosine_pairs(s.records, vectors, policy.thresholds.duplicate), gold_dup),
        "duplicates_baseline": _pr(duplicate_pairs(s.records, {}, 2.0, book), gold_dup),
        "contradictions": {**_pr(flagged, gold_con), "newer_right": newer_ok,
                           "dated_recall": _pr(flagged & dated, dated)["recall"],
                           "undated_recall": _pr(flagged & (gold_con - dated), gold_con - dated)["recall"]},
        "contradictions_baseline": _pr(baseline_contradictions(s.records), gold_con),
        "archive": {**_pr({frozenset([i]) for i in archived}, {frozenset([i]) for i in labels["faded"]}),
                    "protected_archived": len(archived & set(labels["protected"]))},
        "archive_baseline": _pr(
            {frozenset([r.id]) for r in s.records if (r.strength or 0.5) <= policy.archive_strength
             and (s.now.date() - r.last_seen.date()).days > policy.archive_days},
            {frozenset([i]) for i in labels["faded"]}),
        "promote": {"groups": len(labels["promote_groups"]), "planned": len(promoted), "matched": len(matches),
                    "statement_similarity": (round(sum(m["similarity"] for m in matches) / len(matches), 3)
                                             if matches and similarity else None),
                    "matches": matches},
        "due_tasks": {"done_past_due": len(labels["done_past_due"]),
                      "made_episodic": len(tasks & set(labels["done_past_due"])),
                      "wrongly_touched_open": len(touched & set(labels["open_past_due"])),
                      "other": len(tasks - set(labels["done_past_due"]))},
        "plan_seconds": plan.stats.get("seconds"),
    }


def score_pairs(path: Path, vectors: "Mapping[str, np.ndarray]", policy: Policy | None = None) -> dict[str, Any]:
    """A set of independent labelled pairs (``{"pairs": [{"id", "a", "b", "label"}]}``,
    label duplicate / different / contradiction): each pair judged alone, as two
    semantic memories of one scope, ``b`` the newer. ``vectors`` maps ``"<id>:a"``
    and ``"<id>:b"`` to unit vectors. What ``add`` refuses, what consolidation
    would merge (judging the pair alone, and as a store's plan would: only
    when the pair is at least the forest's candidate floor similar or has the
    same text), what it flags, and plain cosine at the duplicate threshold."""
    from datetime import timezone

    from memvault.store.consolidation.dedup import claim_key
    from memvault.store.consolidation.text import features

    policy = policy or Policy()
    t = policy.thresholds
    pairs = json.loads(path.read_text(encoding="utf-8"))["pairs"]
    from memvault.store.consolidation.plan import candidate_floor

    floor = candidate_floor("semantic", t)
    got: dict[str, set[frozenset[str]]] = {"refused": set(), "merged": set(), "in_store": set(), "cosine": set(),
                                           "flagged": set()}
    gold: dict[str, set[frozenset[str]]] = {"duplicate": set(), "contradiction": set(), "different": set()}
    when = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for p in pairs:
        key = frozenset((p["id"] + ":a", p["id"] + ":b"))
        gold[p["label"]].add(key)
        a = rules.Memo(p["id"] + ":a", "semantic", "user", p["a"], when, features(p["a"]))
        b = rules.Memo(p["id"] + ":b", "semantic", "user", p["b"], when + timedelta(days=1), features(p["b"]))
        va, vb = vectors.get(a.id), vectors.get(b.id)
        sim = round(float(va @ vb), 6) if va is not None and vb is not None else None
        book = rules.NameBook.of([a.f, b.f])
        if claim_key(a.text) == claim_key(b.text):
            got["refused"].add(key)
        if rules.duplicate(a, b, sim, t.merge, book):
            got["merged"].add(key)
            if a.f.norm == b.f.norm or (sim is not None and sim >= floor):
                got["in_store"].add(key)  # a store's plan judges only the forest's pairs (and equal texts)
        if sim is not None and sim >= t.duplicate:
            got["cosine"].add(key)
        if rules.contradiction(a, b, sim, t.contradiction, book):
            got["flagged"].add(key)
    return {
        "set": path.stem, "pairs": len(pairs),
        "refused": _pr(got["refused"], gold["duplicate"]),
        "wrong_refusals": len(got["refused"] - gold["duplicate"]),
        "merged": _pr(got["merged"], gold["duplicate"]),
        "merged_in_store": _pr(got["in_store"], gold["duplicate"]),
        "candidate_floor": floor,
        "cosine": _pr(got["cosine"], gold["duplicate"]),
        "flagged": _pr(got["flagged"], gold["contradiction"]),
    }
