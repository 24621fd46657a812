"""Memory types: the six canonical kinds of memory and the words people use for them.

``ongoing`` is work in progress ("auth migration in progress, next: rotate
the staging keys"), kept per project scope: session start shows it after
who the person is and the lessons, it fades faster than facts
(``recall.half_life.ongoing``), and it is closed (becomes ``episodic``,
what happened) by ``update --done`` or by ``consolidate`` once its note
says it is done (:func:`memvault.store.consolidation.records.note_says_done`).
Not named ``context``: the code uses that word for three other things.
"""

from __future__ import annotations

from memvault.vault_io.errors import UsageError

#: The canonical memory types, in the order they are shown.
MEMORY_TYPES: tuple[str, ...] = ("identity", "semantic", "episodic", "procedural", "prospective", "ongoing")
#: Work in progress (module docstring) and the type it becomes when done.
ONGOING = "ongoing"
CLOSED_AS = "episodic"

#: The type of an ordinary note (not a memory).
NOTE_TYPE = "note"

_ALIASES: dict[str, str] = {
    "fact": "semantic",
    "knowledge": "semantic",
    # An insight is something understood: knowledge, not a rule of practice.
    "insight": "semantic",
    "preference": "semantic",
    "event": "episodic",
    "log": "episodic",
    "history": "episodic",
    "lesson": "procedural",
    # A decision or choice made is how things are done from now on, a
    # warning a lesson stated as what to avoid: both guide later work.
    "decision": "procedural",
    "choice": "procedural",
    "warning": "procedural",
    "howto": "procedural",
    "how-to": "procedural",
    "skill": "procedural",
    "goal": "prospective",
    # A commitment is something promised for later.
    "commitment": "prospective",
    "todo": "prospective",
    "reminder": "prospective",
    "intention": "prospective",
    # Work in progress, not yet done.
    "wip": "ongoing",
    "in-progress": "ongoing",
    "work-in-progress": "ongoing",
    "core": "identity",
    "self": "identity",
    "profile": "identity",
}


class UnknownTypeError(UsageError, ValueError):
    """A memory type that is neither canonical nor a known alias."""


def canonical_type(value: str) -> str:
    """The canonical memory type for ``value`` (case-insensitive, aliases accepted).

    Raises :class:`UnknownTypeError` naming the accepted words.
    """
    word = value.strip().lower()
    if word in MEMORY_TYPES:
        return word
    if word in _ALIASES:
        return _ALIASES[word]
    # One word per type as an example: the full list of aliases would make
    # the error longer than one line an agent reads (docs/memories.md lists them).
    examples = [next(a for a, t in _ALIASES.items() if t == canon) for canon in MEMORY_TYPES]
    raise UnknownTypeError(
        f"unknown memory type {value!r}: use one of {', '.join(MEMORY_TYPES)} "
        f"(or a usual word for one, such as {', '.join(examples)})"
    )


def maybe_type(value: object) -> str | None:
    """:func:`canonical_type` for untrusted values; None when not a memory type."""
    if not isinstance(value, str):
        return None
    try:
        return canonical_type(value)
    except UnknownTypeError:
        return None
