"""The answer of ``reflect``: a question answered from memory, or the evidence to answer it.

A module of its own (a process loads only what it asks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memvault.store.answers.recall import RecallBlock
from memvault.store.answers.review import Contradiction


@dataclass(frozen=True)
class EvidenceItem:
    """An open action item the evidence touches (a session digest's task)."""

    id: str
    text: str
    due: str | None
    path: str | None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"id": self.id, "text": self.text, "due": self.due, "path": self.path}


@dataclass(frozen=True)
class Reflection:
    """What ``reflect`` gives: the model's answer citing memory ids and note
    links (with an llm), always the evidence pack it was given (the recall
    block, the contradictions and open action items it touches), as parts and
    as one text an agent reads (``evidence``)."""

    question: str
    #: The model's answer (None without an llm, or when it failed: ``warning`` says why).
    answer: str | None
    #: The ids of the evidence the answer cites.
    cited: tuple[str, ...]
    evidence: str
    block: RecallBlock
    contradictions: tuple[Contradiction, ...]
    action_items: tuple[EvidenceItem, ...]
    warning: str | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (``reflect --json``, the MCP tool's structured content)."""
        return {
            "question": self.question, "answer": self.answer, "cited": list(self.cited), "evidence": self.evidence,
            "recalled": [i.to_json() for i in self.block.items],
            "contradictions": [c.to_json() for c in self.contradictions],
            "action_items": [a.to_json() for a in self.action_items], "warning": self.warning,
        }

    @property
    def text(self) -> str:
        """What a person or agent reads: the answer and what it stands on, or the evidence alone."""
        if self.answer is None:
            return self.evidence
        return f"{self.answer}\n\n{self.evidence}"
