"""``reflect``: a question answered from memory, citing it, or the evidence for an agent to answer it.

The evidence pack is the recall block for the question (what ``context``
gives) and what it touches: the open contradictions either of whose sides it
recalls (the newer claim holds), and the open action items of session digests
(:mod:`memvault.store.facts.actions`) it recalls, that come from a session it
recalls, or that share a word with the question. Every line carries the id
to cite. With an llm configured (``extractor = "llm"``) the model answers
from the pack alone, in one call, citing ids and note links; without one, or
when the call fails, the pack is the answer and the agent answers itself.
Everything is redacted on its way out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath

import apsw

from memvault.store.answers.recall import RecallBlock
from memvault.store.answers.reflect import EvidenceItem, Reflection
from memvault.store.answers.review import Contradiction
from memvault.store.settings import Settings
from memvault.vault_io.secrets import redact

#: Open action items the pack lists at most.
MAX_ACTIONS = 10
#: A question's word shorter than this is no subject to match an action item by.
MIN_WORD = 4

REFLECT_PROMPT = """You answer a person's question from their memory, using only the evidence given.
Cite each memory, fact or note you use by its id in square brackets, e.g. [m-3f9a0c1b2d4e], and name notes
as Obsidian links, e.g. [[Note name]]. Where two claims contradict, the newer holds; say so.
If the evidence does not answer the question, say that it does not. Answer in a few sentences of plain text."""

_WORD_RE = re.compile(r"[^\W_]+")
_CITED_RE = re.compile(r"\[([mfs]-[0-9a-f]{6,})\]")


def _words(text: str) -> set[str]:
    return {w for w in _WORD_RE.findall(text.casefold()) if len(w) >= MIN_WORD}


def touched(con: apsw.Connection, question: str, block: RecallBlock,
            contradictions: Sequence[Contradiction]) -> tuple[list[Contradiction], list[EvidenceItem]]:
    """The open contradictions and action items the question's recall block touches (module docstring)."""
    from memvault.store.facts.actions import open_action_items

    ids = {i.id for i in block.items}
    paths = {i.path for i in block.items if i.path}
    words = _words(question)
    clashes = [c for c in contradictions if c.newer.id in ids or c.older.id in ids]
    items = [EvidenceItem(a.id, a.text, a.due, a.path) for a in open_action_items(con, limit=500)
             if a.id in ids or a.path in paths or words & _words(a.text)]
    return clashes, items[:MAX_ACTIONS]


def evidence_text(question: str, block: RecallBlock, clashes: Sequence[Contradiction],
                  items: Sequence[EvidenceItem]) -> str:
    """The pack as one text, each line with the id to cite."""
    lines = [f"## Evidence for: {' '.join(question.split())}"]
    lines += [f"- [{i.id}] {i.text.removeprefix('- ')}" for i in block.items] or ["(nothing relevant in memory)"]
    if clashes:
        lines += ["", "## Contradictions it touches (the newer holds)"]
        lines += [f"- [{c.newer.id}] “{c.newer.content}” is newer than [{c.older.id}] “{c.older.content}”"
                  for c in clashes]
    if items:
        lines += ["", "## Open action items it touches"]
        for a in items:
            due = f" (due {a.due})" if a.due and a.due not in a.text else ""
            where = f" ([[{PurePosixPath(a.path).stem}]])" if a.path else ""
            lines.append(f"- [{a.id}] - [ ] {a.text}{due}{where}")
    return redact("\n".join(lines))[0]


def _answer_text(body: bytes) -> str:
    """The text of a chat-completions answer (:class:`LLMError` without one)."""
    from memvault.store.facts.llm_extract import LLMError
    from memvault.vault_io import json_input

    try:
        content = json_input.loads(body)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise LLMError(f"not a chat completion response ({type(exc).__name__})") from None
    if not isinstance(content, str) or not content.strip():
        raise LLMError("the completion has no text")
    return content.strip()


def reflect(settings: Settings, con: apsw.Connection, question: str, block: RecallBlock,
            contradictions: Sequence[Contradiction], *, use_llm: bool = True) -> Reflection:
    """The question answered from its evidence pack by the configured llm
    (one call), or the pack alone (no llm configured, ``use_llm`` False, or
    the call failed: ``warning`` says why)."""
    clashes, items = touched(con, question, block, contradictions)
    evidence = evidence_text(question, block, clashes, items)
    answer, warning = None, None
    if use_llm and settings.extractor == "llm":
        from memvault.store.facts.llm_extract import LLMError, LLMExtractor

        try:
            answer = redact(LLMExtractor.from_settings(settings).ask(REFLECT_PROMPT, evidence, _answer_text))[0]
        except (LLMError, OSError) as exc:
            warning = f"the llm did not answer ({exc}); the evidence is given instead"
    known = {i.id for i in block.items} | {a.id for a in items} | {c.newer.id for c in clashes} | \
            {c.older.id for c in clashes}
    cited = tuple(dict.fromkeys(i for i in _CITED_RE.findall(answer or "") if i in known))
    return Reflection(redact(" ".join(question.split()))[0], answer, cited, evidence, block, tuple(clashes),
                      tuple(items), warning)
