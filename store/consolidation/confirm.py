"""The configured llm confirms merges and contradictions (``extractor = "llm"``).

Merges first (:func:`confirm_plan`): every merge group the plan proposes is
put to the model as a list of statements; ``{"same": false}`` drops the
merge (``llm_merges`` in the plan's stats), ``{"same": true}`` keeps it with
"confirmed by <model>". The rest of this docstring says how contradictions
are asked; merges are asked, remembered and capped the same way.

The deterministic rule (:func:`.rules.contradiction`) decides alone by
default. With ``extractor = "llm"`` every contradiction the plan would flag
is put to the model of the ``[llm]`` settings first (the same endpoint,
timeouts, retries and redaction as the llm fact extractor):

* it answers ``{"contradicts": false}``: the pair is not flagged, and the
  plan's stats list it under ``llm.rejected`` with the model's reason;
* ``{"contradicts": true}``: flagged as planned, the reason says
  "confirmed by <model>";
* no usable answer (a dead endpoint, a timeout, a bad answer): the rule's
  decision stands, and the stats carry the error. After the first failure
  the rest of the run's candidates are not asked, so a dead endpoint costs
  one bounded call (``llm.timeout`` x (``llm.retries`` + 1)), never a hang.

Answers are kept in the durable state (``state.contradiction_verdicts``)
under a hash of the two texts: a dry run and the run after it plan the same
(unless the endpoint failed in one of them), and a pair is asked again only
once one of its texts changes. This is the one thing a dry run writes; a
state that cannot be written (a full disk) costs the memory of the answer,
not the plan. Only the first :data:`MAX_QUESTIONS` contradictions of a plan
(in its order) are put to the model; the rest keep the rule's decision
(``llm.unconfirmed`` in the stats), the same in a dry run and in the run.
The model removes flags the rule found and merges the rule proposed. Where
the rules are unsure (two claims as similar as a merge needs, neither merged
nor flagged: ``plan.unsure``, most similar first), the model is asked too,
with what is left of the question budget, and a pair it says contradicts is
flagged "found by <model>" (``llm_unsure`` in the stats).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from memvault.store.consolidation.plan import Action, Plan
from memvault.store.consolidation.records import Record
from memvault.store.db.connection import StoreWriteError, write_transaction
from memvault.store.facts.llm_extract import LLMCancelled, LLMError, LLMExtractor, SchemaError, answer_json
from memvault.vault_io.secrets import redact

if TYPE_CHECKING:
    import apsw

    from memvault.store.context import StoreContext

log = logging.getLogger("memvault.consolidate")

#: Contradictions of one plan put to the model (the others keep the rule's decision).
MAX_QUESTIONS = 50

SYSTEM_PROMPT = """You check a personal memory store for contradictions.
You get two statements from it about the same person, the older first.
They contradict when both cannot be true at the same time (a different
number, date, place or value for the same thing, or one denies the other).
Two statements that can both be true (about different things, one more
specific, or the same said in other words) do not contradict.
Answer with JSON only: {"contradicts": true or false, "why": "one short sentence"}"""


def pair_key(older: str, newer: str) -> str:
    """The verdict's key: a hash of both texts, in order (an edit asks again)."""
    return hashlib.sha256(f"{older}\x00{newer}".encode()).hexdigest()


def _verdict(body: bytes, field: str) -> tuple[bool, str]:
    """(the boolean ``field``, why) from a chat-completions response body."""
    data = answer_json(body)
    if not isinstance(data, dict) or not isinstance(data.get(field), bool):
        raise SchemaError(f'the answer has no boolean "{field}"')
    why = data.get("why")
    return data[field], (why if isinstance(why, str) else "")[:300]


def parse_verdict(body: bytes) -> tuple[bool, str]:
    """(contradicts, why) from a chat-completions response body."""
    return _verdict(body, "contradicts")


def _known(con: "apsw.Connection", keys: list[str]) -> dict[str, tuple[bool, str]]:
    out = {}
    for i in range(0, len(keys), 500):
        part = keys[i : i + 500]
        marks = ",".join("?" * len(part))
        for key, verdict, why in con.execute(
            f"SELECT pair, verdict, why FROM state.contradiction_verdicts WHERE pair IN ({marks})", part
        ):
            out[key] = (bool(verdict), why)
    return out


def _remember(con: "apsw.Connection", key: str, verdict: bool, why: str, model: str) -> None:
    try:
        with write_transaction(con):
            con.execute(
                "INSERT OR REPLACE INTO state.contradiction_verdicts (pair, verdict, why, model, at) "
                "VALUES (?,?,?,?,?)",
                (key, int(verdict), why, model, datetime.now(timezone.utc).isoformat(timespec="seconds")),
            )
    except StoreWriteError as exc:  # the plan still has the answer; the next run asks again
        log.warning("could not keep %s's answer: %s", model, exc)


MERGE_PROMPT = """You check a personal memory store for duplicates.
You get statements from it that a rule proposes to merge into one.
They are duplicates only when every one says the same thing about the same
person or thing, in other words. A different value, number, date, time,
person, relation or polarity, or one statement saying more than another,
makes them different.
Answer with JSON only: {"same": true or false, "why": "one short sentence"}"""


def merge_key(texts: list[str]) -> str:
    """A merge verdict's key: a hash of the texts in the group's order (kept apart from pair keys)."""
    return hashlib.sha256(("merge\x00" + "\x00".join(texts)).encode()).hexdigest()


def parse_merge_verdict(body: bytes) -> tuple[bool, str]:
    """(same, why) from a chat-completions response body."""
    return _verdict(body, "same")


@dataclass(frozen=True)
class _Kind:
    """What one kind of action asks the model, and how its answer is read."""

    action: str  # the plan's action kind
    system: str
    parse: Callable[[bytes], tuple[bool, str]]
    texts: Callable[[Any, Mapping[str, Record]], list[str]]
    key: Callable[[list[str]], str]
    prompt: Callable[[list[str]], str]


_CONTRADICTION = _Kind(
    "contradiction", SYSTEM_PROMPT, parse_verdict,
    lambda a, r: [r[a.detail["older"]].content, r[a.detail["newer"]].content],
    lambda t: pair_key(t[0], t[1]),
    lambda t: f"Older: {redact(t[0])[0]}\nNewer: {redact(t[1])[0]}",
)
_MERGE = _Kind(
    "merge", MERGE_PROMPT, parse_merge_verdict,
    lambda a, r: [r[i].content for i in a.ids],
    merge_key,
    lambda t: "\n".join(f"{n}. {redact(x)[0]}" for n, x in enumerate(t, 1)),
)


def confirm_plan(ctx: "StoreContext", plan: Plan, records: Mapping[str, Record],
                 cancel: threading.Event | None = None) -> None:
    """Put the plan's merges and contradictions to the model, in place: a merge
    it does not call the same claim, or a contradiction it does not confirm, is
    dropped (``llm_merges`` / ``llm`` in the plan's stats). The model only
    removes actions; the cap of :data:`MAX_QUESTIONS` covers both kinds, merges
    first. :class:`LLMCancelled` when ``cancel`` is set mid-question."""
    kinds = [k for k in (_MERGE, _CONTRADICTION) if any(a.kind == k.action for a in plan.actions)]
    if not kinds and not plan.unsure:
        return
    asker = LLMExtractor.from_settings(ctx.settings)
    asker.cancel = cancel
    budget = MAX_QUESTIONS
    failed: list[str] = []
    for kind in kinds:
        budget = _confirm_kind(ctx.con, plan, records, kind, asker, budget, failed)
    if plan.unsure and budget and not failed:
        _ask_unsure(ctx.con, plan, records, asker, budget)


def _ask_unsure(con: "apsw.Connection", plan: Plan, records: Mapping[str, Record], asker: LLMExtractor,
                budget: int) -> None:
    """Where the rules said nothing about two very similar claims, the model
    decides: a pair it says contradicts is flagged ("found by <model>").
    Answers are remembered like the others, so a dry run equals its run."""
    model = asker.settings.model
    pairs = [(o, n) for o, n in plan.unsure if o in records and n in records][:budget]
    keys = {p: pair_key(records[p[0]].content, records[p[1]].content) for p in pairs}
    known = _known(con, sorted(set(keys.values())))
    stats: dict[str, Any] = {"model": model, "asked": 0, "remembered": 0, "found": 0}
    for older, newer in pairs:
        texts = [records[older].content, records[newer].content]
        answer = _answer(con, asker, _CONTRADICTION, texts, keys[(older, newer)], known, stats, "nothing was added")
        if answer is None:
            break
        contradicts, why = answer
        if contradicts:
            stats["found"] += 1
            plan.actions.append(Action("contradiction", [newer, older],
                                       f"found by {model}: {why}; {newer} is newer" if why else
                                       f"found by {model}; {newer} is newer",
                                       {"older": older, "newer": newer, "kind": "llm", "found_by": model}))
    plan.stats["llm_unsure"] = stats


def _answer(con: "apsw.Connection", asker: LLMExtractor, kind: _Kind, texts: list[str], key: str,
            known: dict[str, tuple[bool, str]], stats: dict[str, Any], otherwise: str) -> tuple[bool, str] | None:
    """The model's answer about ``texts``: the one remembered under ``key``,
    else asked now and kept. None when it did not answer (``stats["error"]``
    says so, ending in ``otherwise``). :class:`LLMCancelled` passes: the
    daemon is stopping, and no run beats one the model half checked."""
    if key in known:
        stats["remembered"] += 1
        return known[key]
    model = asker.settings.model
    try:
        known[key] = asker.ask(kind.system, kind.prompt(texts), kind.parse)
    except LLMCancelled:
        raise
    except LLMError as exc:
        stats["error"] = f"{model} did not answer ({exc}); {otherwise}"
        return None
    stats["asked"] += 1
    _remember(con, key, *known[key], model)
    return known[key]


def _confirm_kind(con: "apsw.Connection", plan: Plan, records: Mapping[str, Record], kind: _Kind,
                  asker: LLMExtractor, budget: int, failed: list[str]) -> int:
    """Ask about one kind of action (module docstring); the questions left in the budget."""
    flagged = [a for a in plan.actions if a.kind == kind.action]
    if not flagged:
        return budget
    model = asker.settings.model
    texts = {id(a): kind.texts(a, records) for a in flagged}
    keys = {id(a): kind.key(texts[id(a)]) for a in flagged}
    known = _known(con, sorted(set(keys.values())))
    stats: dict[str, Any] = {"model": model, "asked": 0, "remembered": 0, "confirmed": 0, "rejected": [],
                             "unconfirmed": max(0, len(flagged) - budget)}
    if failed:
        stats["error"] = failed[0]
    drop = set()
    for action in flagged[:budget]:
        key = keys[id(action)]
        if key not in known and "error" in stats:
            continue  # the rule's decision stands
        answer = _answer(con, asker, kind, texts[id(action)], key, known, stats, "the rule decided alone")
        if answer is None:
            failed.append(stats["error"])
            continue
        agrees, why = answer
        if agrees:
            stats["confirmed"] += 1
            action.reason += f"; confirmed by {model}"
            action.detail["confirmed_by"] = model
        else:
            drop.add(id(action))
            stats["rejected"].append({"ids": action.ids, "why": why})
    plan.actions = [a for a in plan.actions if id(a) not in drop]
    plan.stats["llm" if kind is _CONTRADICTION else "llm_merges"] = stats
    return max(0, budget - len(flagged))
