"""The consolidation plan: what a run would do, and why, decided in one pass.

:func:`make_plan` is a pure function of the records (live memories and
facts), their vectors, the settings, the day and what earlier runs left in
the durable state (flagged pairs, promoted episodes): the same store gives
the same plan on any machine, and ``--dry-run`` prints exactly what a run
then does. The steps see each other's outcome: a memory archived in step 2
is not merged in step 3, a memory merged away is not flagged in step 5.

1. **decay**: stored strength fades by the recall half-life of its type for
   every whole day since it was last recalled or decayed (identity,
   evergreen-tagged and open prospective memories do not fade);
2. **archive**: a memory whose strength is at most ``archive_strength`` and
   that nobody recalled for more than ``archive_days`` days is forgotten
   (reason "faded"); never identity, evergreen, pinned (``pinned: true``),
   open prospective, or edited by a person in the last ``protect_days`` days;
3. **merge**: groups of duplicates (:func:`.rules.duplicate` at the merge
   threshold, every pair of a group: complete linkage) become one memory;
4. **promote**: three or more episodes of one recurring thing on three or
   more days become a semantic memory ``derived_from`` them;
5. **contradictions**: disagreeing live claims are flagged, newer over older;
6. **due tasks**: done prospective memories past their due date become episodic;
7. **retention**: session notes older than ``sessions.retention_days`` go to
   the trash, their facts kept (:mod:`.retention`, planned beside this pure
   plan by the runner, since it reads the notes' bytes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING, Any

from memvault.store.consolidation import candidates as cand
from memvault.store.consolidation import paraphrase, rules
from memvault.store.consolidation.records import Record
from memvault.store.consolidation.text import normalise

if TYPE_CHECKING:
    import numpy as np

#: The order in which a run carries out its actions.
STEPS = ("decay", "archive", "merge", "promote", "contradiction", "task_done", "retention")
#: Strength decimals kept by decay (as recall keeps them).
STRENGTH_DECIMALS = 6
#: Strength a memory without one is taken to have.
DEFAULT_STRENGTH = 0.5


@dataclass(frozen=True)
class Policy:
    """The knobs of a plan (from the ``[consolidate]`` and ``[recall]`` settings)."""

    half_lives: Mapping[str, float] = field(default_factory=lambda: {
        "identity": 180.0, "semantic": 90.0, "procedural": 90.0, "episodic": 14.0, "prospective": 0.0,
        "ongoing": 7.0})
    evergreen_tags: frozenset[str] = frozenset({"evergreen"})
    archive_strength: float = 0.2
    archive_days: int = 120
    protect_days: int = 7
    thresholds: rules.Thresholds = rules.Thresholds()


@dataclass
class Action:
    """One planned change, its reason, and what it needs to be carried out."""

    kind: str
    ids: list[str]
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (also what the run logs)."""
        return asdict(self)


@dataclass
class Plan:
    """The actions of one run, in :data:`STEPS` order, and how they were found."""

    day: str
    actions: list[Action] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    #: Claims at least as similar as a merge needs that the rules neither merge
    #: nor flag: (older, newer) ids, most similar first. Only the llm is asked about them.
    unsure: list[tuple[str, str]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Actions per kind, every step named (decay counts the memories that fade)."""
        return dict.fromkeys(STEPS, 0) | count_actions((a.kind, a.detail) for a in self.actions)

    def as_dicts(self) -> list[dict[str, Any]]:
        """Every action as a dict, in order."""
        return [a.as_dict() for a in self.actions]

    @property
    def id(self) -> str:
        """The plan's id: :func:`plan_id` of its actions."""
        return plan_id(self.as_dicts())


def plan_id(actions: Sequence[Mapping[str, Any]]) -> str:
    """A short, stable id of a plan's actions (``p-`` and 12 hex digits of the
    sha256 of their canonical JSON). The plan is a pure function of the store,
    so the same store gives the same id; applying "the plan with this id"
    then means exactly the actions that were shown, and any change to the
    store that changes them changes the id."""
    import hashlib
    import json

    canonical = json.dumps(list(actions), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "p-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]


def count_actions(actions: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, int]:
    """(kind, detail) of actions, planned, done or logged, counted per kind:
    one each, but a decay counts the memories it fades."""
    out: dict[str, int] = {}
    for kind, detail in actions:
        out[kind] = out.get(kind, 0) + (len(detail.get("changes", ())) if kind == "decay" else 1)
    return out


@dataclass
class Context:
    """What earlier runs left that the plan must respect."""

    flagged: set[frozenset[str]] = field(default_factory=set)  # contradiction pairs ever flagged
    promoted: set[str] = field(default_factory=set)  # episodes some live memory derives from


def task_done(r: Record, today: date) -> bool:
    """Whether a prospective memory is done and past its due date, or
    ongoing work its note says is done (either becomes episodic)."""
    if r.kind != "memory" or not r.done:
        return False
    return r.type == "ongoing" or (r.type == "prospective" and r.due is not None and r.due < today)


def effective_type(r: Record, today: date) -> str:
    """The type a memory has once the run is done (a done task is an episode)."""
    return "episodic" if task_done(r, today) else r.type


def fades(r: Record, policy: Policy, today: date) -> bool:
    """Whether a memory's strength decays at all."""
    type_ = effective_type(r, today)
    if r.kind != "memory" or type_ == "identity" or type_ == "prospective":
        return False  # open tasks wait for their day; done ones are episodes
    if any(t.lower() in policy.evergreen_tags for t in r.tags):
        return False
    return float(policy.half_lives.get(type_, 0.0) or 0.0) > 0


def _decay(records: Sequence[Record], policy: Policy, today: date) -> tuple[Action | None, dict[str, float]]:
    strength = {r.id: (DEFAULT_STRENGTH if r.strength is None else float(r.strength)) for r in records}
    changes: list[list[Any]] = []
    for r in records:
        if not fades(r, policy, today):
            continue
        anchors = [r.created.date(), r.last_access.date() if r.last_access else None, r.decayed_at]
        days = (today - max(d for d in anchors if d is not None)).days
        if days <= 0:
            continue
        old = strength[r.id]
        half_life = float(policy.half_lives[effective_type(r, today)])
        new = round(old * 0.5 ** (days / half_life), STRENGTH_DECIMALS)
        if new != old:
            strength[r.id] = new
            changes.append([r.id, old, new, days])
    if not changes:
        return None, strength
    reason = f"{len(changes)} memories faded by their type's half-life since last recalled or decayed"
    return Action("decay", [c[0] for c in changes], reason, {"day": today.isoformat(), "changes": changes}), strength


def _archive(records: Sequence[Record], strength: Mapping[str, float], policy: Policy, today: date) -> list[Action]:
    out = []
    for r in records:
        type_ = effective_type(r, today)
        if r.kind != "memory" or type_ == "identity" or r.pinned or type_ == "prospective":
            continue
        if any(t.lower() in policy.evergreen_tags for t in r.tags):
            continue
        if r.edited_at is not None and (today - r.edited_at.date()).days < policy.protect_days:
            continue
        unseen = (today - r.last_seen.date()).days
        if strength[r.id] <= policy.archive_strength and unseen > policy.archive_days:
            seen = f"last recalled {unseen} days ago" if r.last_access else f"never recalled, made {unseen} days ago"
            out.append(Action("archive", [r.id], (
                f"faded: strength {strength[r.id]:.3f} <= {policy.archive_strength:g}, {seen} (> {policy.archive_days})"
            )))
    return out


def candidate_floor(type_: str, t: rules.Thresholds) -> float:
    """The least cosine at which the forest offers a pair of memories of
    ``type_``: the lowest the merge rule can accept (the merge threshold less
    :data:`.paraphrase.FLOOR`, for pairs whose every differing word is
    explained), or for episodes the recurrence threshold when that is lower."""
    floor = t.merge - paraphrase.FLOOR
    return min(t.recurrence, floor) if type_ == "episodic" else floor


class Similarity:
    """Cosine similarities: the forest's candidate pairs (:mod:`.candidates`),
    one forest per block of records that rules may pair (same scope and
    type), and any other pair of records that both have vectors, on demand."""

    def __init__(self, records: Sequence[Record], vectors: "Mapping[str, np.ndarray]", policy: Policy) -> None:
        import numpy as np

        self.vectors = vectors
        self.pairs: dict[cand.Pair, float] = {}
        blocks: dict[tuple[str, str], list[Record]] = {}
        for r in records:
            if r.id in vectors:
                blocks.setdefault((r.scope, r.type), []).append(r)
        t = policy.thresholds
        for (_, type_), members in sorted(blocks.items()):
            if len(members) < 2:
                continue
            x = np.stack([vectors[r.id] for r in members])
            # Vectors bring duplicates and episodes of one habit; contradictions
            # need words in common, and come from the word blocking.
            self.pairs.update(cand.forest_pairs([r.id for r in members], x, candidate_floor(type_, t)))

    def both(self, a: str, b: str) -> bool:
        """Whether both have vectors."""
        return a in self.vectors and b in self.vectors

    def get(self, a: str, b: str) -> float | None:
        """The similarity of two records (None unless both have vectors)."""
        found = self.pairs.get(cand._pair(a, b))
        if found is not None:
            return found
        if not self.both(a, b):
            return None
        return round(float(self.vectors[a] @ self.vectors[b]), 6)


def _survivor(members: Sequence[Record]) -> Record:
    """Who keeps its id: a pinned memory, else the longest content, else the oldest."""
    return sorted(members, key=lambda r: (not r.pinned, -len(r.content), r.created, r.id))[0]


def merge_detail(survivor: Record, others: Sequence[Record], content: str | None) -> dict[str, Any]:
    """What a merge writes into the survivor (union of tags and links,
    highest strength, earliest creation, the given or the longest content)."""
    group = [survivor, *others]
    tags: list[str] = []
    related: list[str] = []
    for r in group:
        tags += [t for t in r.tags if t.lower() not in {x.lower() for x in tags}]
        related += [x for x in r.related if x not in related]
    longest = sorted(group, key=lambda r: (-len(r.content), r.created, r.id))[0].content
    strengths = [r.strength for r in group if r.strength is not None]
    return {
        "survivor": survivor.id,
        "members": [r.id for r in others],
        "content": content if content is not None else longest,
        "tags": tags,
        "related": related,
        "strength": max(strengths) if strengths else None,
        "created": min(r.created for r in group).isoformat(),
    }


def _merges(live: Sequence[Record], sims: "Similarity", policy: Policy,
            book: rules.NameBook) -> list[Action]:
    memories = [r for r in live if r.kind == "memory"]
    rec = {r.id: r for r in memories}
    scored: list[tuple[float, str, str]] = []
    judged: dict[cand.Pair, str] = {}
    pairs = set(cand.exact_groups(memories, lambda r: (r.type, r.scope, r.memo.f.norm)))
    pairs |= {p for p in sims.pairs if p[0] in rec and p[1] in rec}
    for a, b in pairs:  # any order: the groups come from the sorted scores below
        sim = sims.get(a, b)
        why = rules.duplicate(rec[a].memo, rec[b].memo, sim, policy.thresholds.merge, book)
        if why is not None:
            judged[(a, b)] = why
            exact = why.startswith("same normalised") or sim is None
            scored.append((1.0 if exact or sim is None else float(sim), a, b))
    group = {r.id: [r.id] for r in memories}
    for _, a, b in sorted(scored, key=lambda t: (-t[0], t[1], t[2])):
        ga, gb = group[a], group[b]
        if ga is gb or not all(cand._pair(x, y) in judged for x in ga for y in gb):
            continue
        ga.extend(gb)
        for y in gb:
            group[y] = ga
    out = []
    seen: set[int] = set()
    for members in sorted((g for g in group.values() if len(g) > 1), key=lambda g: sorted(g)):
        if id(members) in seen:
            continue
        seen.add(id(members))
        survivor = _survivor([rec[m] for m in members])
        others = sorted((rec[m] for m in members if m != survivor.id), key=lambda r: r.id)
        reasons = sorted({judged[cand._pair(survivor.id, o.id)] for o in others})
        out.append(Action("merge", [survivor.id, *[o.id for o in others]],
                          f"duplicates of {survivor.id}: {'; '.join(reasons)}",
                          merge_detail(survivor, others, None)))
    return out


def recurring_statement(members: Sequence[Record], sims: "Similarity") -> str:
    """The standing statement for a recurring set of episodes: the most
    typical episode (the closest to the group's mean vector; without vectors,
    the one sharing most words with the others), with how often and over
    which days it happened."""
    import numpy as np

    if all(r.id in sims.vectors for r in members):
        centre = np.mean([sims.vectors[r.id] for r in members], axis=0)
        score = {r.id: round(float(sims.vectors[r.id] @ centre), 6) for r in members}
    else:
        score = {r.id: sum(len(r.memo.f.stems & o.memo.f.stems) / max(1, len(r.memo.f.stems | o.memo.f.stems))
                           for o in members if o.id != r.id) for r in members}
    medoid = sorted(members, key=lambda r: (-score[r.id], r.created, r.id))[0]
    days = sorted(r.created.date() for r in members)
    text = medoid.content.strip().rstrip(".!")
    return f"Recurring ({len(members)} times, {days[0].isoformat()} to {days[-1].isoformat()}): {text}"


def _promotions(live: Sequence[Record], sims: "Similarity", policy: Policy, book: rules.NameBook,
                context: Context) -> list[Action]:
    episodes = [r for r in live if r.type == "episodic"]
    rec = {r.id: r for r in episodes}
    pairs = {p for p in sims.pairs if p[0] in rec and p[1] in rec}
    # Episodes without a vector are paired by shared rare words instead.
    pairs |= {p for p in cand.word_pairs(episodes) if not sims.both(*p)}
    parent = {r.id: r.id for r in episodes}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:  # any order: components do not depend on it
        if rules.recurrence(rec[a].memo, rec[b].memo, sims.get(a, b), policy.thresholds, book):
            ra, rb = root(a), root(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    groups: dict[str, list[Record]] = {}
    for r in episodes:
        groups.setdefault(root(r.id), []).append(r)
    statements = {(r.scope, normalise(r.content)) for r in live if r.type == "semantic"}
    out = []
    for members in sorted(groups.values(), key=lambda g: g[0].id):
        if len(members) < 3 or len({r.created.date() for r in members}) < 3:
            continue
        if any(r.id in context.promoted for r in members):
            continue  # promoted before (a later episode does not promote it again)
        statement = recurring_statement(members, sims)
        scope = members[0].scope
        if (scope, normalise(statement)) in statements:
            continue
        tags: list[str] = []
        for r in members:
            tags += [t for t in r.tags if t not in tags]
        ids = [r.id for r in members]
        out.append(Action("promote", ids, f"the same thing recurs in {len(ids)} episodes on {len(ids)} days", {
            "statement": statement, "scope": scope, "tags": tags, "members": ids}))
    return out


def _contradictions(live: Sequence[Record], sims: "Similarity", policy: Policy,
                    book: rules.NameBook, context: Context) -> list[Action]:
    claims = [r for r in live if r.type in rules.CLAIM_TYPES]
    rec = {r.id: r for r in claims}
    # The forest's pairs below the merge threshold are there for paraphrases
    # the merge rule explains word by word; a contradiction's candidates are
    # the word blocking's and the forest's from the merge threshold up.
    floor = policy.thresholds.merge
    pairs = cand.word_pairs(claims) | {p for p, s in sims.pairs.items() if s >= floor and p[0] in rec and p[1] in rec}
    # Claims that fill one slot of one frame, or a change or denial and what it is about, at any similarity;
    # the other candidates only from the contradiction threshold up (the frames' rules are the costly part).
    slotted = cand.slot_pairs(claims)
    out = []
    for a, b in pairs | slotted:  # any order: the flags are sorted below
        if context.flagged and frozenset((a, b)) in context.flagged:
            continue
        sim = sims.get(a, b)
        if sim is not None and sim < policy.thresholds.contradiction and (a, b) not in slotted:
            continue
        found = rules.contradiction(rec[a].memo, rec[b].memo, sim, policy.thresholds.contradiction, book)
        if found is None:
            continue
        kind, why = found
        older, newer = sorted((rec[a], rec[b]), key=lambda r: (r.created, bool(r.memo.f.changes), r.id))
        out.append(Action("contradiction", [newer.id, older.id], f"{why}; {newer.id} is newer", {
            "older": older.id, "newer": newer.id, "kind": kind}))
    return sorted(out, key=lambda a: (a.detail["older"], a.detail["newer"]))


#: At most this many unsure pairs are kept for the llm (most similar first).
UNSURE_LIMIT = 100


def _unsure(live: Sequence[Record], sims: "Similarity", policy: Policy, plan: Plan,
            context: Context) -> list[tuple[str, str]]:
    """Pairs of claims as similar as a merge needs that no rule merged or
    flagged: where the rules are unsure they say nothing (the llm may be asked)."""
    rec = {r.id: r for r in live if r.type in rules.CLAIM_TYPES}
    decided = {frozenset(a.ids) for a in plan.actions if a.kind == "contradiction"} | context.flagged
    found = []
    for (a, b), sim in sims.pairs.items():
        if a in rec and b in rec and sim >= policy.thresholds.merge and frozenset((a, b)) not in decided:
            if rec[a].memo.f.norm == rec[b].memo.f.norm or rec[a].scope != rec[b].scope:
                continue
            older, newer = sorted((rec[a], rec[b]), key=lambda r: (r.created, bool(r.memo.f.changes), r.id))
            found.append((-sim, older.id, newer.id))
    return [(o, n) for _, o, n in sorted(found)[:UNSURE_LIMIT]]


def _due_tasks(live: Sequence[Record], today: date) -> list[Action]:
    out = []
    for r in live:
        if not task_done(r, today):
            continue
        if r.type == "ongoing":  # closed by its note (done: true, status: done, a checked task)
            out.append(Action("task_done", [r.id], "ongoing work its note marks done", {"ongoing": True}))
        elif r.due is not None:
            out.append(Action("task_done", [r.id], f"done, and due {r.due.isoformat()} has passed",
                              {"due": r.due.isoformat()}))
    return out


def make_plan(records: Sequence[Record], vectors: "Mapping[str, np.ndarray]", policy: Policy, today: date,
              context: Context | None = None) -> Plan:
    """The plan for ``records`` on ``today`` (module docstring)."""
    import time

    context = context or Context()
    plan = Plan(today.isoformat())
    started = time.perf_counter()
    decay, strength = _decay(records, policy, today)
    if decay is not None:
        plan.actions.append(decay)
    archived = _archive(records, strength, policy, today)
    plan.actions += archived
    gone = {a.ids[0] for a in archived}
    # Later steps see the strength this run leaves (a merge keeps the highest).
    live = [replace(r, strength=strength[r.id]) if r.kind == "memory" else r for r in records if r.id not in gone]
    book = rules.NameBook.of(r.memo.f for r in records)
    t0 = time.perf_counter()
    sims = Similarity(live, vectors, policy)
    plan.stats["vector_pairs"] = len(sims.pairs)
    plan.stats["candidates_s"] = round(time.perf_counter() - t0, 3)
    merges = _merges(live, sims, policy, book)
    plan.actions += merges
    gone |= {m for a in merges for m in a.detail["members"]}
    live = [r for r in live if r.id not in gone]
    plan.actions += _promotions(live, sims, policy, book, context)
    plan.actions += _contradictions(live, sims, policy, book, context)
    plan.unsure = _unsure(live, sims, policy, plan, context)
    plan.actions += _due_tasks(live, today)
    plan.stats["records"] = len(records)
    plan.stats["vectors"] = sum(1 for r in records if r.id in vectors)
    plan.stats["seconds"] = round(time.perf_counter() - started, 3)
    return plan
