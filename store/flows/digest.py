"""What a conversation came to, for its session note's digest block.

:func:`rules_digest` reads it without a model, by the chat-fact rules
(:func:`memvault.store.facts.conversation.classify`, the rules that make the
session's facts): of each sentence the person wrote, the mood and the kind of
statement it is decide what it is. A stated decision ("let's go with
Postgres") is a decision; a stated plan ("I'll rotate the keys next Friday",
"remember to renew the certificate") an action item, due on the date it
names (``📅``/``due::``, a whole date, or a relative one such as "next
Friday", "in 3 days", counted from when it was said:
:func:`memvault.store.retrieval.when.relative_dates`); a request or question
is neither. The names are the words the person wrote capitalised inside a
sentence (English marks proper names so: "we host it in Lisbon"; a lone
function word or adverb, capitalised where a sentence began unseen, is
none), and the notes they linked. The summary says what was worked on and what came of it.

:func:`llm_digest` asks the configured model instead, in one call per
session (``extractor = "llm"``), and falls back to the rules when it fails.
Every text is redacted before it is kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import date, datetime
from typing import Any

from memvault.store.facts.conversation import classify, remembered_text
from memvault.store.flows.conversation import Conversation, one_line, without_code
from memvault.store.index.event_time import date_in_text
from memvault.store.retrieval.when import relative_dates
from memvault.store.settings import Settings
from memvault.vault_io.facts import PROSPECTIVE, due_date
from memvault.vault_io.secrets import redact
from memvault.vault_io.segment import collapse, split_sentences
from memvault.vault_io.session_digest import ActionItem, SessionDigest

#: At most this many decisions, action items and names are listed.
MAX_ITEMS = 12
MAX_NAMED = 8
#: Characters of an item or a quoted request.
ITEM_CHARS = 240
#: Characters of each assistant line the model is shown (the person's lines are whole).
ASSISTANT_CHARS = 300

_PARAGRAPH_RE = re.compile(r"\n[ \t]*\n")
_LINK_RE = re.compile(r"\[\[([^\]|#^\n]+)(?:[#^|][^\]\n]*)?\]\]")
# A word as a name may be written: a capital, then letters, digits, and inner . - ' (Node.js, GPT-4, O'Brien).
_NAME_WORD_RE = re.compile(r"[A-Z][\w]*(?:[.'’-][\w]+)*")
_TOKEN_RE = re.compile(r"\S+")
_DAY_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _sentences(text: str) -> Iterator[str]:
    """The sentences of a person's turn, code left out."""
    for paragraph in _PARAGRAPH_RE.split(without_code(text)):
        for start, end in split_sentences(paragraph):
            said = collapse(paragraph[start:end])
            if said:
                yield said


def _said_on(at: str | None) -> date | None:
    try:
        return datetime.fromisoformat(at[:10]).date() if at else None
    except ValueError:
        return None


def due_of(text: str, said_on: date | None) -> str | None:
    """The day an action item is due, when its text states one: a task date
    (``📅``, ``due::``), a whole date, or a relative day counted from when
    it was said ("tomorrow", "next Friday", "in 3 days"; a week or a month
    is no day)."""
    found = due_date(text) or date_in_text(text)
    if found:
        return found[:10]
    if said_on is None:
        return None
    return next((r.means for r in relative_dates(text, said_on) if _DAY_RE.fullmatch(r.means)), None)


def _names(sentence: str) -> Iterator[str]:
    """The names a sentence writes: runs of capitalised words after its first
    word (which any sentence capitalises), "I" and its contractions aside."""
    run: list[str] = []
    for i, m in enumerate(_TOKEN_RE.finditer(sentence)):
        raw = m.group(0)
        word = raw.strip("\"'“”‘’()[]{}<>*_`,;:!?.")
        name = i > 0 and _NAME_WORD_RE.fullmatch(word) is not None and re.split("['’]", word)[0] != "I"
        if name:
            run.append(word)
        if run and (not name or raw[-1:] in ",;:!?.)\"”"):
            yield " ".join(run)
            run = []
    if run:
        yield " ".join(run)


def _function_word(name: str) -> bool:
    """Whether a one-word name is a word of English's closed classes or an
    adverb ("That", "Always", "OK"): capitalised where a sentence began that
    the splitter did not see (after an emoji, a quote), not a name."""
    from memvault.store.facts.mood import (
        AUXILIARIES,
        CLAUSE_ENDS,
        DETERMINERS,
        SUBJECT_PRONOUNS,
        WH_WORDS,
        adverb,
    )

    word = name.casefold()
    return " " not in word and (word in AUXILIARIES | CLAUSE_ENDS | DETERMINERS | SUBJECT_PRONOUNS | WH_WORDS
                                or adverb(word))


def rules_digest(conv: Conversation) -> SessionDigest:
    """The digest of ``conv`` by the chat-fact rules (module docstring)."""
    decisions: dict[str, str] = {}
    actions: dict[str, ActionItem] = {}
    named: dict[str, str] = {}
    for turn in conv.user_turns:
        said_on = _said_on(turn.at or conv.started)
        for link in _LINK_RE.findall(turn.text):
            named.setdefault(link.strip().casefold(), link.strip())
        for sentence in _sentences(turn.text):
            for name in _names(sentence):
                if not _function_word(name):
                    named.setdefault(name.casefold(), name)
            found = classify(sentence)
            if found is None:
                continue
            text = one_line(redact(remembered_text(sentence))[0], ITEM_CHARS)
            kind, topic = found
            if topic == "decision":
                decisions.setdefault(text.casefold(), text)
            elif kind == PROSPECTIVE:
                item = ActionItem(text, due_of(text, said_on))
                actions.setdefault(item.key, item)
    return SessionDigest(
        summary=_summary(conv, len(decisions), len(actions)),
        decisions=tuple(list(decisions.values())[:MAX_ITEMS]),
        actions=tuple(list(actions.values())[:MAX_ITEMS]),
        named=tuple(redact(n)[0] for n in list(named.values())[:MAX_NAMED]),
    )


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _summary(conv: Conversation, decisions: int, actions: int) -> tuple[str, ...]:
    """What was worked on (the title) and what came of it."""
    worked = f"The user worked with {conv.client} on “{one_line(redact(conv.title)[0], ITEM_CHARS)}”."
    came = [part for n, part in ((decisions, _count(decisions, "decision was stated", "decisions were stated")),
                                 (actions, _count(actions, "action item was set", "action items were set"))) if n]
    return (worked, " and ".join(came) + "." if came else "No decision or action item was stated.")


# -- with the model -------------------------------------------------------------

DIGEST_PROMPT = """You read one conversation between a person (User) and an AI assistant and write its digest.
Answer with JSON only, no prose, in exactly this shape:
{"summary": ["1 to 3 short sentences: what was worked on and what came of it"],
 "decisions": ["each decision the person made or accepted, one short sentence"],
 "action_items": [{"text": "what is still to be done, one short sentence", "due": "2026-01-31"}],
 "entities": ["each person, place, project, product or tool named"]}
due only when the conversation states a date for it (resolve "next Friday" from the turn's date)."""


def conversation_prompt(conv: Conversation) -> str:
    """The user message for the model: the conversation's turns (tool output left out,
    the assistant's lines shortened), each with its date, redacted."""
    lines = [f"Conversation: {conv.title}", ""]
    for turn in conv.turns:
        if turn.role not in ("user", "assistant"):
            continue
        stamp = f" ({turn.at[:10]})" if turn.at else ""
        text = turn.text if turn.role == "user" else "\n".join(
            line if len(line) <= ASSISTANT_CHARS else line[:ASSISTANT_CHARS] + " …" for line in turn.text.split("\n"))
        lines.append(f"{'User' if turn.role == 'user' else 'Assistant'}{stamp}: {text}")
    return redact("\n".join(lines))[0]


def _strings(data: dict[str, Any], key: str, limit: int) -> list[str]:
    from memvault.store.facts.llm_extract import SchemaError

    value = data.get(key, [])
    if not isinstance(value, list):
        raise SchemaError(f"{key} is not a list")
    out = [one_line(redact(v)[0], ITEM_CHARS) for v in value if isinstance(v, str) and v.strip()]
    return out[:limit]


def parse_digest(body: bytes, said_on: date | None = None) -> SessionDigest:
    """The model's digest from a chat-completions body, checked and redacted
    (:class:`~memvault.store.facts.llm_extract.SchemaError` for a bad one)."""
    from memvault.store.facts.llm_extract import SchemaError, answer_json

    data = answer_json(body)
    if not isinstance(data, dict) or not isinstance(data.get("summary"), list):
        raise SchemaError('the answer is not {"summary": [...], ...}')
    items = data.get("action_items", [])
    if not isinstance(items, list):
        raise SchemaError("action_items is not a list")
    actions: dict[str, ActionItem] = {}
    for item in items[:MAX_ITEMS]:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            continue
        text = one_line(redact(item["text"])[0], ITEM_CHARS)
        due = item.get("due")
        due = due if isinstance(due, str) and _valid_day(due) else due_of(text, said_on)
        actions.setdefault(ActionItem(text).key, ActionItem(text, due))
    return SessionDigest(
        summary=tuple(_strings(data, "summary", 3)), decisions=tuple(_strings(data, "decisions", MAX_ITEMS)),
        actions=tuple(actions.values()), named=tuple(_strings(data, "entities", MAX_NAMED)), maker="llm",
    )


def _valid_day(text: str) -> bool:
    try:
        return bool(_DAY_RE.fullmatch(text)) and date.fromisoformat(text) is not None
    except ValueError:
        return False


def llm_digest(conv: Conversation, settings: Settings) -> tuple[SessionDigest, str | None]:
    """The digest of ``conv`` from the configured model in one call, or the
    rules' digest and why when the model could not give one (too long, down,
    a bad answer after the extractor's retries)."""
    from memvault.store.facts.llm_extract import LLMError, LLMExtractor

    prompt = conversation_prompt(conv)
    if len(prompt) > settings.llm.max_chars:
        return rules_digest(conv), f"longer than llm.max_chars ({settings.llm.max_chars}): digest by the rules"
    said_on = _said_on(conv.ended or conv.started)
    try:
        return LLMExtractor.from_settings(settings).ask(
            DIGEST_PROMPT, prompt, lambda body: parse_digest(body, said_on)), None
    except LLMError as exc:
        return rules_digest(conv), f"llm digest failed ({exc}): digest by the rules"
    except (OSError, json.JSONDecodeError) as exc:  # never stops the ingest
        return rules_digest(conv), f"llm digest failed ({type(exc).__name__}): digest by the rules"
