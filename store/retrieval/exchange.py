"""Exchanges: consecutive turns of one conversation recalled together, on one line.

A recalled turn and the turn that answers it (or that it answers) often
both make the block: the turn for what it says, its neighbour for context
(:func:`~memvault.store.retrieval.neighbours.with_turn_context`). Listed
apart, each repeats the date and a source, and the reader has to pair them
up again. An :class:`Exchange` is the run of a session's consecutive turns
that the block holds, read in the order they were said, on one line::

    - 2024-03-02 Ana: Is the exam still on Friday? · Ben: They moved it to next Monday [2024-03-04]. (turns 2-3)

The line sits where its first-placed turn was placed (the block stays
ordered by relevance), says the date once (a session's turns share it) and
cites the turns once. Only whole turns join an exchange (a turn cut to fit
stays a line of its own, so a cut never hides inside a line), and a turn that
fills the gap between two exchanges joins them into one.

A line's date and source cost about 12 tokens, a third of a short turn; an
exchange pays them once. LoCoMo-dev (2026-11-26, docs/benchmarks.md): the
block's share of evidence turns 0.749 -> 0.755 (turn notes) and 0.753 ->
0.762 (ingested sessions), packed plain RRF 0.705; the project's own
conversational set's ``context`` recall 0.771 / 0.751 -> 0.783 / 0.758.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memvault.store.retrieval.recall import RecallItem

#: What separates two turns of one exchange on its line.
TURN_SEPARATOR = " · "


@dataclass
class Exchange:
    """Consecutive whole turns of one session, in the order they were said."""

    session: str
    items: list["RecallItem"] = field(default_factory=list)

    @property
    def first(self) -> int:
        """The position of its first turn in the session."""
        return self.items[0].position or 0

    @property
    def last(self) -> int:
        """The position of its last turn in the session."""
        return self.items[-1].position or 0

    def line(self) -> str:
        """The exchange's line: "- date A: text · B: text (turns 2-3)" (a
        single turn's own line while it is alone)."""
        first = self.items[0]
        if len(self.items) == 1:
            return first.text
        when = first.when[:10]
        said = TURN_SEPARATOR.join(f"{i.speaker}: {i.content}" for i in self.items)
        head = f"- {when} " if when else "- "
        return f"{head}{said} ({self.source()})"

    def source(self) -> str:
        """Its turns' sources, once: "turns 2-3" for a session note's turns
        (their numbers are consecutive), else each turn note's name."""
        numbers = [i.anchor.removeprefix("^t") for i in self.items]
        if not all(n.isdigit() for n in numbers):
            return ", ".join(i.short_source for i in self.items)
        # A turn taken back (superseded) leaves a gap in the numbers: name each.
        if [int(n) for n in numbers] == list(range(int(numbers[0]), int(numbers[0]) + len(numbers))):
            return f"turns {numbers[0]}-{numbers[-1]}"
        return "turns " + ", ".join(numbers)


def joinable(item: "RecallItem") -> bool:
    """Whether ``item`` can be part of an exchange: a turn (it has a speaker)
    whose place in its session is known."""
    return bool(item.speaker and item.session and item.position is not None)


class Exchanges:
    """The exchanges of one block being assembled (:func:`~.recall.assemble`)."""

    def __init__(self, tokens: Callable[[str], int]) -> None:
        self._tokens = tokens
        self._of: dict[str, list[Exchange]] = {}
        self.by_item: dict[int, Exchange] = {}  # id(item) -> its exchange

    def start(self, item: "RecallItem") -> None:
        """Record ``item``, placed whole on a line of its own, as an exchange
        of one turn that its neighbours may join."""
        if joinable(item):
            ex = Exchange(item.session, [item])
            self._of.setdefault(item.session, []).append(ex)
            self.by_item[id(item)] = ex

    def join(self, item: "RecallItem", room: int) -> int | None:
        """Add ``item`` (whole: the caller knows its line fits its cap uncut)
        to the exchange(s) it continues and return the tokens that adds (may
        be negative when it joins two); None (nothing changed) when it
        continues none, or the longer line would not fit in ``room``."""
        pos = item.position
        if not joinable(item) or pos is None:  # joinable: it has a position
            return None
        runs = self._of.get(item.session, [])
        before = next((ex for ex in runs if ex.last == pos - 1), None)
        after = next((ex for ex in runs if ex.first == pos + 1), None)
        if before is None and after is None:
            return None
        parts = [ex for ex in (before, after) if ex is not None]
        merged = Exchange(item.session, [*(before.items if before else []), item, *(after.items if after else [])])
        old = sum(self._tokens(ex.line()) for ex in parts)
        added = self._tokens(merged.line()) - old
        if added > room:
            return None
        keep = parts[0]
        keep.items = merged.items
        for ex in parts[1:]:
            runs.remove(ex)
        for member in keep.items:
            self.by_item[id(member)] = keep
        line = keep.line()
        for member in keep.items:
            member.text = line
        item.tokens = added
        return added

    def lines(self, chosen: Sequence["RecallItem"]) -> list[tuple[str, list["RecallItem"]]]:
        """The block's lines for ``chosen`` (in block order), each with the
        items it shows: an exchange once, where its first chosen item is."""
        out: list[tuple[str, list["RecallItem"]]] = []
        done: set[int] = set()
        for item in chosen:
            ex = self.by_item.get(id(item))
            if ex is None or len(ex.items) == 1:
                out.append((item.text, [item]))
            elif id(ex) not in done:
                done.add(id(ex))
                out.append((ex.line(), list(ex.items)))
        return out
