"""Facts of chat turns: how many the rules keep, and whether the answering ones stay.

    python bench/bench_chat_facts.py                       # the conversational set and LoCoMo-dev
    python bench/bench_chat_facts.py --baseline a3ef418    # beside the rules of another commit, same run
    python bench/bench_chat_facts.py --show 30             # also print up to 30 facts the change dropped
    python bench/bench_chat_facts.py --settings            # also what each ingest setting keeps

Each conversation is ingested as memvault ingests a chat (``MemoryStore.ingest``
of a generic JSONL transcript per session, vectors off), twice: once with
each of its two first speakers as the user (only the user's turns give
facts), so every turn is read as a user's once. Each session note is then
parsed and its facts extracted by the rules of this checkout
(:func:`memvault.store.facts.conversation.extract_conversation_facts`) and,
with ``--baseline REF``, by that module as it was at REF (loaded from git
into this process, so both read the same notes).

Sets: the conversational set (``tests/fixtures/conversations``, six
dialogues, evidence per question) and LoCoMo-dev (read from
``../shared/benchmarks/locomo-dev/``, CC BY-NC: nothing of it is written
anywhere but a temp folder, and ``--show`` prints to the terminal only).

Figures per set and rules: facts kept, facts anchored to a turn that is
evidence of some question ("answering facts"), and evidence turns with at
least one fact; beside the baseline: facts the change dropped and added,
and answering facts dropped. With ``--settings``, the facts and answering
facts that each ``ingest.min_importance`` and ``ingest.max_per_turn`` keep
(:func:`memvault.store.facts.importance.select`, the observer's own step)
beside the default, which keeps them all. And the mood (:mod:`memvault.store.facts.mood`)
of every sentence of every turn, with ``--show`` a sample of those read as
requests, or as questions without a question mark.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO / "tests"))
from _common import isolate_env  # noqa: E402

#: LoCoMo-dev beside the repository (or beside the folder of git worktrees it is in).
LOCOMO = next((p for p in (REPO.parent / "shared", REPO.parent.parent / "shared") if p.is_dir()),
              REPO.parent / "shared") / "benchmarks" / "locomo-dev" / "locomo-dev.json"
MODULE = "store/facts/conversation.py"

#: One conversation: id, sessions of (speaker, text, turn id), a date per session, the evidence turn ids.
Conversation = tuple[str, list[list[tuple[str, str, str]]], list[datetime], set[str]]


def fixture_conversations() -> Iterator[Conversation]:
    """The conversational set's dialogues with the evidence of their questions."""
    from fixtures.conversations import support

    for did in support.dialogue_ids():
        d = support.dialogue(did)
        sessions = [[(t["speaker"], t["text"], t["id"]) for t in s["turns"]] for s in d["sessions"]]
        dates = [datetime.fromisoformat(s["date"]) for s in d["sessions"]]
        evidence = {e for q in support.questions(did) for e in q.get("evidence", [])}
        yield did, sessions, dates, evidence


def locomo_conversations(path: Path) -> Iterator[Conversation]:
    """LoCoMo-dev's conversations with the evidence of their questions (malformed ids cleaned)."""
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        sessions, dates = [], []
        n = 1
        while f"session_{n}" in conv:
            sessions.append([(t["speaker"], t["text"], t["dia_id"]) for t in conv[f"session_{n}"]])
            dates.append(datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y"))
            n += 1
        known = {t[2] for s in sessions for t in s}
        evidence = {e for q in sample["qa"] for raw in q.get("evidence", [])
                    for e in re.split(r"[;,\s]+", raw) if e in known}
        yield sample["sample_id"], sessions, dates, evidence


def baseline_module(ref: str) -> Any:
    """The conversation rules as they were at git ``ref``, as a module of this process."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{ref}:{MODULE}"], check=True, capture_output=True,
                            text=True).stdout
    spec = importlib.util.spec_from_loader(f"conversation_at_{ref}", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, f"{ref}:{MODULE}", "exec"), module.__dict__)
    return module


def session_notes(work: Path, conv: Conversation, user: str) -> Iterator[tuple[Any, list[str]]]:
    """Each session ingested with ``user`` as the user: (parsed note, the turn ids in order)."""
    from memvault.store.memory_store import MemoryStore
    from memvault.vault_io.parser import parse_note

    cid, sessions, dates, _ = conv
    root = work / f"{cid}-{re.sub(r'[^A-Za-z0-9]', '', user)}"
    root.mkdir(parents=True)
    store = MemoryStore.open(str(root), {"embedding.model": "none"})
    try:
        for n, (turns, when) in enumerate(zip(sessions, dates), 1):
            src = work / f"{cid}-s{n}.jsonl"
            src.write_text("".join(json.dumps({
                "role": "user" if speaker == user else "assistant", "name": speaker, "content": text,
                "timestamp": (when + timedelta(seconds=i)).isoformat()}) + "\n"
                for i, (speaker, text, _) in enumerate(turns)), encoding="utf-8")
            report = store.ingest(str(src), session=f"{cid}-s{n}", client="generic")
            assert report.path is not None
            note = parse_note(report.path, (root / report.path).read_bytes())
            yield note, [t[2] for t in turns]
    finally:
        store.close()


#: The ingest settings ``--settings`` measures: (min_importance, max_per_turn); the first is the default.
SETTINGS = ((0.0, 0), (0.25, 0), (0.5, 0), (0.75, 0), (1.0, 0), (0.0, 1))


def facts_of(extract: Callable[[Any, str], Any], note: Any, turn_ids: list[str]) -> set[tuple[str, str]]:
    """(turn id, text) of the facts ``extract`` finds in a session note (the digest left out)."""
    return turn_facts(extract(note, "n-bench").facts, turn_ids)


def turn_facts(drafts: list[Any], turn_ids: list[str]) -> set[tuple[str, str]]:
    """(turn id, text) of fact drafts of a session note (the digest left out)."""
    out = set()
    for draft in drafts:
        m = re.fullmatch(r"t(\d+)", draft.block_id or "")
        if draft.segment != "digest" and m and 1 <= int(m.group(1)) <= len(turn_ids):
            out.add((turn_ids[int(m.group(1)) - 1], draft.text))
    return out


def measure(name: str, convs: list[Conversation], work: Path, baseline: Any, show: int,
            settings: bool = False) -> dict[str, Any]:
    """Facts of every conversation of a set by the current rules (and the baseline's,
    and with ``settings`` those each of :data:`SETTINGS` keeps)."""
    from memvault.store.facts import conversation
    from memvault.store.facts.importance import select

    kept: dict[tuple[float, int], set[tuple[str, str, str]]] = {s: set() for s in SETTINGS} if settings else {}
    now: set[tuple[str, str, str]] = set()
    before: set[tuple[str, str, str]] = set()
    evidence: set[str] = set()
    for conv in convs:
        evidence |= conv[3]
        speakers = list(dict.fromkeys(s for session in conv[1] for s, _, _ in session))[:2]
        for user in speakers:
            for note, turn_ids in session_notes(work, conv, user):
                drafts = conversation.extract_conversation_facts(note, "n-bench").facts
                now |= {(user, t, x) for t, x in turn_facts(drafts, turn_ids)}
                for (score, cap), facts in kept.items():
                    facts |= {(user, t, x) for t, x in turn_facts(select(drafts, score, cap), turn_ids)}
                if baseline is not None:
                    before |= {(user, t, x) for t, x in facts_of(baseline.extract_conversation_facts, note, turn_ids)}

    def figures(facts: set[tuple[str, str, str]]) -> dict[str, int]:
        return {"facts": len(facts), "answering_facts": sum(1 for _, t, _ in facts if t in evidence),
                "evidence_turns_with_a_fact": len({t for _, t, _ in facts if t in evidence})}

    out: dict[str, Any] = {"set": name, "conversations": len(convs), "evidence_turns": len(evidence),
                           "now": figures(now)}
    if kept:
        out["settings"] = [{"min_importance": score, "max_per_turn": cap, **figures(facts)}
                           for (score, cap), facts in kept.items()]
    if baseline is not None:
        dropped, added = before - now, now - before
        out["baseline"] = figures(before)
        out["dropped"] = len(dropped)
        out["added"] = len(added)
        out["answering_dropped"] = sum(1 for _, t, _ in dropped if t in evidence)
        for label, items in (("dropped", dropped), ("added", added)):
            for _, t, x in sorted(items)[:show]:
                print(f"  {name} {label} {t}{' (evidence)' if t in evidence else ''}: {x}")
    return out


def mood_census(name: str, convs: list[Conversation], show: int) -> dict[str, int]:
    """The mood of every sentence of every turn (both speakers), and up to
    ``show`` of those read as requests or questions without a question mark
    (the ones a word-free rule could get wrong), printed for a look."""
    from memvault.store.facts.mood import mood
    from memvault.vault_io.segment import collapse, split_sentences

    counts: dict[str, int] = {}
    shown = 0
    for _, sessions, _, _ in convs:
        for turns in sessions:
            for _, text, tid in turns:
                for start, end in split_sentences(text):
                    sentence = collapse(text[start:end])
                    found = mood(sentence)
                    key = found if found != "interrogative" or sentence.endswith("?") else "interrogative, no ?"
                    counts[key] = counts.get(key, 0) + 1
                    if key in ("imperative", "interrogative, no ?") and shown < show:
                        print(f"  {name} {key} {tid}: {sentence}")
                        shown += 1
    return counts


def print_settings(results: list[dict[str, Any]]) -> None:
    """A table of what each ingest setting keeps, beside the default (the first row)."""
    print("| set | ingest setting | facts kept | answering facts kept | evidence turns with a fact |")
    print("|---|---|---|---|---|")
    for r in results:
        base = r["settings"][0]
        for row in r["settings"]:
            label = ("default (min_importance 0, max_per_turn 0)" if row is base
                     else f"max_per_turn = {row['max_per_turn']}" if row["max_per_turn"]
                     else f"min_importance = {row['min_importance']:g}")
            print(f"| {r['set']} | {label} | {row['facts']} of {base['facts']} | "
                  f"{row['answering_facts']} of {base['answering_facts']} | "
                  f"{row['evidence_turns_with_a_fact']} of {base['evidence_turns_with_a_fact']} |")


def main() -> int:
    """Measure, print a table, and the figures as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", metavar="REF", help="Also extract with the conversation rules of this commit.")
    ap.add_argument("--show", type=int, default=0, metavar="N", help="Print up to N dropped and added facts per set.")
    ap.add_argument("--settings", action="store_true", help="Also measure what each ingest setting keeps.")
    ap.add_argument("--locomo", type=Path, default=LOCOMO, help="LoCoMo-dev's JSON file.")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memvault-chat-facts-"))
    isolate_env(work / "home")
    baseline = baseline_module(args.baseline) if args.baseline else None
    try:
        sets = [("conversational set", list(fixture_conversations()))]
        if args.locomo.exists():
            sets.append(("LoCoMo-dev", list(locomo_conversations(args.locomo))))
        else:
            print(f"LoCoMo-dev not found at {args.locomo}: the conversational set only")
        results = [measure(name, convs, work / str(i), baseline, args.show, args.settings)
                   for i, (name, convs) in enumerate(sets)]
        for r, (name, convs) in zip(results, sets):
            r["moods"] = mood_census(name, convs, args.show)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("| set | rules | facts | answering facts | evidence turns with a fact | dropped / added (answering dropped) |")
    print("|---|---|---|---|---|---|")
    for r in results:
        for rules in ("baseline", "now"):
            if rules not in r:
                continue
            f = r[rules]
            change = f"{r['dropped']} / {r['added']} ({r['answering_dropped']})" if rules == "now" and baseline else ""
            label = f"{args.baseline}" if rules == "baseline" else "this checkout"
            print(f"| {r['set']} | {label} | {f['facts']} | {f['answering_facts']} | "
                  f"{f['evidence_turns_with_a_fact']} of {r['evidence_turns']} | {change} |")
    if args.settings:
        print_settings(results)
    for r in results:
        print(f"{r['set']}: sentences by mood {r['moods']}")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
