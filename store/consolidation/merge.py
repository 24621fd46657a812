"""Merging memories into one, and taking one back out.

``memvault merge A B C`` and a consolidation run's merge step both call
:func:`merge`. The first memory keeps its id and gets the merged content
(given, or the longest of the group), the union of tags and links, the
highest strength and the earliest ``created``; its history gets a version
"merged B, C into A". The others are forgotten through the memory mirror
(their notes go to ``.trash/``, by the same atomic, conflict-checked writer
as every store change) and then marked superseded with ``merged_into``; a
row in ``state.merges`` keeps that (and their note's link key, so links to
them resolve to the survivor in the index) through any rebuild.

:func:`unmerge` is what ``memvault restore B`` does for a merged memory: B
and its note come back, and A is merged again from its pre-merge version and
whatever is still merged into it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from memvault.store.consolidation import links
from memvault.store.consolidation import rows as log
from memvault.store.consolidation.plan import merge_detail
from memvault.store.consolidation.records import Record
from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.index.event_time import parse_stamp
from memvault.store.memories import rows as mem
from memvault.store.memories.mirror import MemoryOpError
from memvault.vault_io.note import content_hash
from memvault.vault_io.resolve import path_key

if TYPE_CHECKING:
    import apsw

    from memvault.store.context import StoreContext
    from memvault.store.memories.mirror import Memories, WriteResult


@dataclass
class MergeOutcome:
    """What one merge did (``undo``: what reversing it needs)."""

    survivor: str
    merged: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # members a person was editing: left live
    path: str | None = None
    warnings: list[str] = field(default_factory=list)
    undo: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"id": self.survivor, "action": "merged", "merged": self.merged, "skipped": self.skipped,
                "path": self.path, "warnings": self.warnings}


def record_of(t: rec.TraceRow) -> Record:
    """A trace as the planner's record (what a merge reads of each member)."""
    created = parse_stamp(t.metadata.get("fm_created") or t.created) or parse_stamp(rec.now_iso())
    assert created is not None  # now_iso() is a stamp memvault writes: it always parses
    return Record(
        id=t.id, kind=t.kind, type=t.type, scope=t.scope or "user", content=t.content,
        created=created,
        tags=tuple(t.metadata.get("fm_tags") or t.tags), strength=t.strength,
        related=tuple(t.metadata.get("related") or ()),
    )


def _note(ctx: "StoreContext", trace_id: str) -> tuple[str | None, str | None]:
    """(path, text) of a memory's note as it is now."""
    path = mem.trace_path(ctx.con, trace_id)
    if path is None or not (ctx.root / path).is_file():
        return path, None
    return path, (ctx.root / path).read_bytes().decode("utf-8", "surrogateescape")


def merge(ctx: "StoreContext", memories: "Memories", ids: Sequence[str], content: str | None, *, run_id: str,
          detail: dict[str, Any] | None = None, seq: int | None = None,
          undo_extra: dict[str, Any] | None = None, why: str | None = None) -> MergeOutcome:
    """Merge ``ids[1:]`` into ``ids[0]`` (module docstring); ``detail`` is a
    planned merge's (the same values), else they are worked out here.

    ``seq``: the run's log row for this merge, written before the call. It
    is kept up to date (``pending``) before each change, so a writer killed
    halfway leaves a row naming the memories it was changing, how to put them
    back and which members it merged (:func:`.run.recover` finishes it);
    ``undo_extra`` goes into that row's undo with the rest; ``why`` is added
    to the history's "merged B into A" (who merged, and why). ``memories``:
    the mirror that writes the survivor's note and forgets the others."""
    con = ctx.con
    traces = []
    for ref in ids:
        t = memories._live_memory(ref)
        t, deleted_at = memories._import_pending(t)
        if deleted_at is not None:
            raise MemoryOpError(f"memory {t.id} was deleted in the vault ({deleted_at}); nothing to merge")
        traces.append(t)
    if len({t.id for t in traces}) != len(traces) or len(traces) < 2:
        raise MemoryOpError("merge needs two or more different memories")
    survivor, others = traces[0], traces[1:]
    if detail is None:
        detail = merge_detail(record_of(survivor), [record_of(t) for t in others], content)
    path, text = _note(ctx, survivor.id)
    undo: dict[str, Any] = {**(undo_extra or {}), "trace": rec.trace_json(survivor), "path": path, "text": text,
                            "members": {}}
    reason = f"merged {', '.join(t.id for t in others)} into {survivor.id}" + (f" ({why})" if why else "")

    def logged() -> None:
        """Record the merge so far (in the caller's transaction)."""
        if seq is not None:
            log.update_action(con, run_id, seq, {**undo, "pending": True})

    if seq is not None:
        # What a recovery needs to tell how far a killed merge got.
        undo.update(survivor=survivor.id, reason=reason, others={
            t.id: {"trace": rec.trace_json(t), "path": mem.trace_path(con, t.id)} for t in others})
        with write_transaction(con):
            logged()
    created = detail["created"]
    if parse_stamp(created) == parse_stamp(survivor.metadata.get("fm_created") or survivor.created):
        created = None  # the same moment: keep it as the note spells it
    strength = detail["strength"] if detail["strength"] != survivor.strength else None
    result = memories.update(
        survivor.id, content=detail["content"], tags=list(detail["tags"]), related=list(detail["related"]),
        created=created, strength=strength, reason=reason,
    )
    if result.action == "conflict":
        raise MemoryOpError(f"memory {survivor.id} was edited in the vault while it was merged; nothing else changed "
                            f"(the merged version is in {result.conflict_path})")
    after = rec.get_trace(con, survivor.id)
    undo["version"] = after.metadata.get("supersedes") if after and result.action == "updated" else None
    undo["path_after"], text_after = _note(ctx, survivor.id)
    undo["hash_after"] = content_hash(text_after.encode("utf-8", "surrogateescape")) if text_after else None
    with write_transaction(con):
        logged()
    outcome = MergeOutcome(survivor.id, path=result.path, warnings=list(result.warnings), undo=undo)
    for t in others:
        old_path = mem.trace_path(con, t.id)
        done = memories.forget(t.id, reason)
        if done.action != "forgotten":
            outcome.skipped.append(t.id)  # edited in the vault meanwhile: it stays, live
            outcome.warnings.append(f"{t.id} was edited in the vault meanwhile and was not merged")
            continue
        undo["members"][t.id] = {"trace": rec.trace_json(t), "path": old_path}
        with write_transaction(con):  # merged and logged as merged in one go
            mark_member(con, t.id, survivor.id, run_id, old_path)
            logged()
        outcome.merged.append(t.id)
    return outcome


def mark_member(con: "apsw.Connection", memory_id: str, survivor_id: str, run_id: str,
                old_path: str | None) -> None:
    """A member that was forgotten for a merge is merged (in a transaction):
    superseded, recorded in ``state.merges``, links to it resolved to the survivor."""
    links.mark_merged(con, memory_id, survivor_id)
    log.put_merge(con, memory_id, survivor_id, run_id, old_path, path_key(old_path) if old_path else None)
    links.redirect(con)


def unmerge(ctx: "StoreContext", memories: "Memories", memory_id: str) -> "WriteResult":
    """Take a merged memory back out of its survivor (``memvault restore``),
    through ``memories``, the mirror that restores it and rewrites the survivor."""
    con = ctx.con
    found = log.merged_into(con, memory_id)
    if found is None:
        raise MemoryOpError(f"memory {memory_id} is not merged into another")
    survivor_id, run_id = found
    before = _survivor_before(con, run_id, survivor_id)
    with write_transaction(con):
        log.drop_merge(con, memory_id)
        con.execute("UPDATE traces SET status = 'deleted', reason = 'forgotten' WHERE id = ?", (memory_id,))
    result = memories.restore(memory_id)
    survivor = rec.get_trace(con, survivor_id)
    if survivor is None or survivor.status != "active" or before is None:
        result.warnings.append(f"{survivor_id} is not live: nothing to take out of it")
        return result
    remaining = [t for m in log.merged_members(con, survivor_id) if (t := rec.get_trace(con, m)) is not None]
    original = record_of(before)
    detail = merge_detail(original, [record_of(t) for t in remaining], None)
    if not remaining:
        detail.update(content=before.content, strength=before.strength)
    memories.update(
        survivor_id, content=detail["content"], tags=list(detail["tags"]), related=list(detail["related"]),
        created=detail["created"], strength=detail["strength"], reason=f"unmerged {memory_id}",
    )
    result.warnings.append(f"taken back out of {survivor_id}")
    return result


def _survivor_before(con: "apsw.Connection", run_id: str, survivor_id: str) -> rec.TraceRow | None:
    """The survivor as it was before the run that merged into it."""
    for action in log.actions(con, run_id):
        if action.kind == "merge" and action.ids and action.ids[0] == survivor_id and action.undo:
            return replace(rec.trace_from_json(action.undo["trace"]))
    return None
