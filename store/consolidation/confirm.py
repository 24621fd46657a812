"""The configured llm confirms contradiction candidates (``extractor = "llm"``).

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
The model only ever removes flags: it never adds a pair the rule did not
find, so the rule's precision is the floor.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from memvault.store.consolidation.plan import Plan
from memvault.store.consolidation.records import Record
from memvault.store.db.connection import StoreWriteError, write_transaction
from memvault.store.facts.llm_extract import LLMCancelled, LLMError, LLMExtractor, SchemaError, answer_json
from memvault.vault_io.secrets import redact

if TYPE_CHECKING:
    from memvault.store.memory_store import MemoryStore

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


def parse_verdict(body: bytes) -> tuple[bool, str]:
    """(contradicts, why) from a chat-completions response body."""
    data = answer_json(body)
    if not isinstance(data, dict) or not isinstance(data.get("contradicts"), bool):
        raise SchemaError('the answer has no boolean "contradicts"')
    why = data.get("why")
    return data["contradicts"], (why if isinstance(why, str) else "")[:300]


def _known(store: "MemoryStore", keys: list[str]) -> dict[str, tuple[bool, str]]:
    out = {}
    for i in range(0, len(keys), 500):
        part = keys[i : i + 500]
        marks = ",".join("?" * len(part))
        for key, verdict, why in store.con.execute(
            f"SELECT pair, verdict, why FROM state.contradiction_verdicts WHERE pair IN ({marks})", part
        ):
            out[key] = (bool(verdict), why)
    return out


def _remember(store: "MemoryStore", key: str, verdict: bool, why: str, model: str) -> None:
    try:
        with write_transaction(store.con) as con:
            con.execute(
                "INSERT OR REPLACE INTO state.contradiction_verdicts (pair, verdict, why, model, at) "
                "VALUES (?,?,?,?,?)",
                (key, int(verdict), why, model, datetime.now(timezone.utc).isoformat(timespec="seconds")),
            )
    except StoreWriteError as exc:  # the plan still has the answer; the next run asks again
        log.warning("could not keep %s's answer: %s", model, exc)


def confirm_contradictions(store: "MemoryStore", plan: Plan, records: Mapping[str, Record],
                           cancel: threading.Event | None = None) -> None:
    """Put the plan's contradictions to the model, in place (module
    docstring). :class:`LLMCancelled` when ``cancel`` is set mid-question."""
    flagged = [a for a in plan.actions if a.kind == "contradiction"]
    if not flagged:
        return
    asker = LLMExtractor.from_settings(store.settings)
    asker.cancel = cancel
    model = asker.settings.model
    texts = {id(a): (records[a.detail["older"]].content, records[a.detail["newer"]].content) for a in flagged}
    keys = {id(a): pair_key(*texts[id(a)]) for a in flagged}
    known = _known(store, sorted(set(keys.values())))
    stats: dict[str, Any] = {"model": model, "asked": 0, "remembered": 0, "confirmed": 0, "rejected": [],
                             "unconfirmed": max(0, len(flagged) - MAX_QUESTIONS)}
    drop = set()
    for action in flagged[:MAX_QUESTIONS]:
        key = keys[id(action)]
        if key in known:
            stats["remembered"] += 1
        elif "error" in stats:
            continue  # the rule's decision stands
        else:
            older, newer = texts[id(action)]
            prompt = f"Older: {redact(older)[0]}\nNewer: {redact(newer)[0]}"
            try:
                known[key] = asker.ask(SYSTEM_PROMPT, prompt, parse_verdict)
            except LLMCancelled:
                raise  # the daemon is stopping: no run, rather than one the model half checked
            except LLMError as exc:
                stats["error"] = f"{model} did not answer ({exc}); the rule decided alone"
                continue
            stats["asked"] += 1
            _remember(store, key, *known[key], model)
        contradicts, why = known[key]
        if contradicts:
            stats["confirmed"] += 1
            action.reason += f"; confirmed by {model}"
            action.detail["confirmed_by"] = model
        else:
            drop.add(id(action))
            stats["rejected"].append({"ids": action.ids, "why": why})
    plan.actions = [a for a in plan.actions if id(a) not in drop]
    plan.stats["llm"] = stats
