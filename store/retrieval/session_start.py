"""What an agent's session starts with: who the person is, then what applies to the project.

:func:`session_start` fills sections in order until a token budget (counted
with the embedder's tokenizer, as the recall block is) is spent:

1. who the person is: identity memories and identity facts (an "About me"
   memory source's lines);
2. the lessons and decisions that apply to the project: procedural memories
   of its scope or of the person's (``user``), newest first, in at most
   :data:`LESSONS_SHARE` of the budget;
2b. the ongoing work of the project (``ongoing`` memories of its scope or
   ``user``), newest first, in at most :data:`ONGOING_SHARE` of the budget
   (:func:`ongoing_rows`);
2c. the open action items of session digests (nobody ticked them), due
   soonest first, in at most :data:`ACTION_ITEMS_SHARE` of the budget
   (:func:`open_action_item_rows`);
3. what is relevant to the project (the ``context`` block for "project X");
4. the project's own memories, strongest first;
5. what changed in memory lately.

An item is listed once, in the first section that has it. It runs where the
tokenizer is already loaded: in the daemon when one serves the vault (the
session-start hook asks it), else in the hook's own process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memvault.store.answers.recall import SessionStartText
from memvault.store.queries.recall import ContextQuery
from memvault.store.retrieval.recall import ITEM_MAX_TOKENS, RecallItem, block_tokens, fit_line, identity_items

if TYPE_CHECKING:
    import apsw

    from memvault.store.answers.browse.listing import ListedTrace
    from memvault.store.retrieval.retriever import Retriever

#: How far back "changed lately" looks, and how many items it and a project's list show.
RECENT_SINCE = "3 days"
RECENT_ITEMS = 5
#: The share of the budget the lessons, and ongoing work, may each take.
#: They come early, right after identity, so a project with many lessons or
#: open threads would otherwise leave no room for the sections after them
#: (ongoing work, open action items, what is relevant to the session).
LESSONS_SHARE = 0.25
ONGOING_SHARE = 0.25
#: The same for the open action items of session digests (as much room as ongoing work: both say what is open).
ACTION_ITEMS_SHARE = ONGOING_SHARE


class Sections:
    """Sections filled in order until a token budget is spent; an item
    already listed in an earlier section is not repeated."""

    def __init__(self, budget: int) -> None:
        self.room = budget
        self.parts: list[str] = []
        self.shown: set[str] = set()

    def add(self, header: str, rows: Sequence[tuple[str, str | RecallItem]], cap: int | None = None) -> None:
        """Items under ``header``, as many as fit (``cap``: in at most that
        many tokens, header included): (id, rendered line) or (id,
        RecallItem to render, cut at a word to fit)."""
        head_cost = block_tokens(header)
        lines: list[str] = []
        spent = 0
        for trace_id, row in rows:
            room = min(self.room, cap - spent if cap is not None else self.room) - (0 if lines else head_cost)
            if trace_id in self.shown or room <= 0:
                continue
            line = row if isinstance(row, str) else fit_line(row, min(room, ITEM_MAX_TOKENS), min_words=4)
            if line is None or block_tokens(line) > room:
                continue
            cost = block_tokens(line) + (0 if lines else head_cost)
            self.room -= cost
            spent += cost
            lines.append(line)
            self.shown.add(trace_id)
        if lines:
            self.parts.append("\n".join([header, *lines]))

    @property
    def text(self) -> str:
        """The sections, a blank line apart."""
        return "\n\n".join(self.parts)


def _listed(items: Sequence[ListedTrace]) -> list[tuple[str, str | RecallItem]]:
    """``list``/``recent`` items as rows for :class:`Sections`."""
    return [(i.id, RecallItem(i.id, i.kind, i.type, "", i.path or i.id, " ".join(i.preview.split())))
            for i in items]


def ongoing_rows(con: "apsw.Connection", name: str, project: str | None) -> list[tuple[str, str | RecallItem]]:
    """The ongoing work of ``project`` (``ongoing`` memories of its scope or
    ``user``; only ``user`` without a project), newest first, as rows for :class:`Sections`."""
    from memvault.store.index import browse
    from memvault.store.memories.memtypes import ONGOING

    work = browse.list_traces(con, name, what="memories", types=[ONGOING],
                              scopes=[project, "user"] if project else ["user"], sort="updated", limit=RECENT_ITEMS * 2)
    return _listed(work.items)


def open_action_item_rows(con: "apsw.Connection") -> list[tuple[str, str | RecallItem]]:
    """The open action items of session digests (:mod:`~memvault.store.facts.actions`),
    due soonest first, as rows for :class:`Sections`."""
    from memvault.store.facts.actions import open_action_items

    return [(a.id, a.line()) for a in open_action_items(con, limit=RECENT_ITEMS * 2)]


def session_start(retriever: "Retriever", project: str | None = None, budget: int | None = None) -> SessionStartText:
    """The session-start text for ``project`` (None: no project) within
    ``budget`` tokens (default ``recall.budget``)."""
    from memvault.store.index import browse

    con, name = retriever.con, retriever.ctx.name
    budget = retriever.settings.recall.budget if budget is None else int(budget)
    out = Sections(budget)
    out.add("## Who the person is", [(i.id, i) for i in identity_items(con, retriever.settings.recall.identity_max)])
    lessons = browse.list_traces(con, name, what="memories", types=["procedural"],
                                 scopes=[project, "user"] if project else ["user"], sort="updated",
                                 limit=RECENT_ITEMS * 2)
    out.add(f"## Lessons and decisions{f' for project {project}' if project else ''} (newest first)",
            _listed(lessons.items), cap=int(budget * LESSONS_SHARE))
    out.add(f"## Ongoing work{f' in project {project}' if project else ''} (newest first; `update --done` closes it)",
            ongoing_rows(con, name, project), cap=int(budget * ONGOING_SHARE))
    out.add("## Open action items (from sessions; tick them in Obsidian to close)", open_action_item_rows(con),
            cap=int(budget * ACTION_ITEMS_SHARE))
    recalled = retriever.context(ContextQuery(f"project {project}" if project else "current work", budget=budget,
                                              what="memories", identity="relevant", record=False,
                                              prefer_scope=project))
    out.add("## Recalled Memory", [(i.id, i.text) for i in recalled.items])
    if project:
        scoped = browse.list_traces(con, name, what="memories", scopes=[project], sort="strength", limit=RECENT_ITEMS)
        out.add(f"## Memories of project {project}", _listed(scoped.items))
    # A project's session hears of its own memories and the person's, not other projects'.
    recent = [i for i in browse.recent(con, name, since=RECENT_SINCE, what="memories", limit=RECENT_ITEMS * 2,
                                       scopes=[project, "user"] if project else []).items
              if i.status == "active"]
    out.add(f"## Changed in memory lately (since {RECENT_SINCE} ago)", _listed(recent)[:RECENT_ITEMS])
    text = out.text
    return SessionStartText(text, block_tokens(text), budget)
