"""Imported memories, written through the memory mirror, once.

:func:`import_memory` decides what one :class:`MemoryItem` does:

- known by its import key (or, for memvault's own notes, by its id) and
  unchanged at the source: nothing ("skipped");
- known and changed at the source: the memory is updated through the mirror,
  its previous version kept with the reason "changed at the source (<kind>)"
  ("updated"); a memory forgotten in memvault stays forgotten ("skipped");
- new, but the same text, type and scope is already remembered: that memory
  is adopted ("skipped");
- new: written through the mirror (outbox, atomic write, conflict check)
  with its id, times and strength kept when the source has them ("imported").

Secrets in the text are redacted before anything is written.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

import apsw

from memvault.store.context import StoreContext
from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.flows import keys as ik
from memvault.store.flows.importers import MemoryItem
from memvault.store.index.classify import memory_key
from memvault.store.memories import rows as mem
from memvault.store.memories.guard import check_size
from memvault.store.memories.memtypes import canonical_type
from memvault.store.memories.mirror import DEFAULT_STRENGTH, Memories, memory_id_for
from memvault.vault_io.markdown import normalise_tag
from memvault.vault_io.secrets import redact, redact_tree
from memvault.vault_io.syntax import TAG_BODY


@dataclass
class Outcome:
    """What importing one item did."""

    action: str  # imported | updated | skipped
    id: str | None = None
    why: str = ""
    redacted: int = 0
    warnings: tuple[str, ...] = ()


#: A run of characters no tag holds (the complement of the tag body's class),
#: with the hyphens around it ("Food-&-Drink" is Food-Drink too).
_NOT_TAG_RE = re.compile("-*[" + TAG_BODY[2:] + "-*")


def _clean_tags(tags: list[str]) -> list[str]:
    """Imported tags as tags Obsidian reads: a run of characters a tag cannot
    hold becomes one '-' ("Food & Drink": Food-Drink); what is still no tag
    ("1984") is left out (the store refuses a bad tag, an import adapts)."""
    out: list[str] = []
    for tag in tags:
        t = _NOT_TAG_RE.sub("-", tag.strip().lstrip("#").strip()).strip("-")
        t = (normalise_tag(t) or "") if t else ""
        if t and t.lower() not in {x.lower() for x in out}:
            out.append(t)
    return out


def redacted_tree(data: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """``data`` (an item's front-matter) with every credential redacted (a
    key names its value: ``api_key: x``), and how many values changed."""
    out = redact_tree(data)
    changed = sum(1 for a, b in zip(_leaves(data), _leaves(out)) if a != b)
    return out, changed


def _leaves(data: Any) -> list[Any]:
    if isinstance(data, dict):
        return [x for v in data.values() for x in _leaves(v)]
    if isinstance(data, (list, tuple)):
        return [x for v in data for x in _leaves(v)]
    return [data]


def _redacted_tags(tags: list[str]) -> tuple[list[str], int]:
    """Tags without a credential: a tag holding one is left out (a tag is a
    name, not text to keep), and how many were."""
    kept = [t for t in tags if not redact(t)[1]]
    return kept, len(tags) - len(kept)


def _same(trace: rec.TraceRow, content: str, type_: str, tags: list[str]) -> bool:
    fm_tags = trace.metadata.get("fm_tags")
    have = [t.casefold() for t in (fm_tags if isinstance(fm_tags, list) else trace.tags)]
    return (" ".join(trace.content.split()), trace.type, have) == (" ".join(content.split()), type_, [t.casefold() for t in tags])


def _target(con: apsw.Connection, item: MemoryItem, row: ik.ImportKey | None) -> rec.TraceRow | None:
    for trace_id in ([row.target_id] if row else []) + ([item.id] if item.id else []):
        trace = rec.get_trace(con, trace_id)
        if trace is not None and trace.kind == "memory":
            if trace.status == "superseded":  # an old version: the live memory is the newest
                newer = mem.newer_versions(con, trace.id)
                trace = newer[-1] if newer else trace
            return trace
    return None


def import_memory(ctx: StoreContext, memories: Memories, item: MemoryItem, *, dry_run: bool = False,
                  keyed: bool = True) -> Outcome:
    """Import one memory item (module docstring) through the memory mirror
    ``memories``; with ``dry_run`` only say what would happen. ``keyed=False``: the item's id is its identity (memvault's
    own export), no import key is recorded."""
    type_ = canonical_type(item.type)
    check_size(item.content)  # one item's error line; the others are imported
    content, redacted = redact(item.content.strip())
    # What else of the item reaches the note (its front-matter, tags, scope, file name) is redacted too.
    extra, n = redacted_tree(dict(item.extra))
    tags, m = _redacted_tags(item.tags)
    scope, k = redact(item.scope.strip() or "user")
    redacted += n + m + k
    item = dataclasses.replace(
        item, extra=extra, path=item.path if item.path and not redact(item.path)[1] else None,
        related=[r for r in item.related if not redact(r)[1]],  # a link to a note named with a secret is left out
    )
    tags = _clean_tags(tags)
    digest = ik.item_hash([content, type_, tags, scope])
    con = ctx.con
    row = ik.get_key(con, item.source, item.key) if keyed else None
    key = ik.ImportKey(item.source if keyed else "", item.key, "", digest)
    trace = _target(con, item, row)
    if trace is not None:
        key.target_id = trace.id
        if trace.status == "deleted":
            return Outcome("skipped", trace.id, "forgotten in memvault", redacted)
        if (row is not None and row.hash == digest) or _same(trace, content, type_, tags):
            if not dry_run and (row is None or row.hash != digest or row.target_id != trace.id):
                _record(con, key)
            return Outcome("skipped", trace.id, "unchanged", redacted)
        if dry_run:
            return Outcome("updated", trace.id, "changed at the source", redacted)
        result = memories.update(trace.id, content=content, tags=tags, type_=type_,
                                 reason=f"changed at the source ({item.source})")
        _record(con, key)
        return Outcome("updated", trace.id, "changed at the source", redacted, tuple(result.warnings))
    existing = mem.find_by_content_key(con, memory_key(type_, scope, content))
    if existing is not None:
        key.target_id = existing.id
        if not dry_run:
            _record(con, key)
        return Outcome("skipped", existing.id, f"already remembered as {existing.id}", redacted)
    if dry_run:
        return Outcome("imported", item.id, "", redacted)
    new = _new_trace(con, item, content, type_, tags, scope)
    folder = ctx.settings.memory_folder
    result = memories.create(new, f"{folder}/{item.path}" if item.path else None)
    key.target_id = new.id
    _record(con, key)
    return Outcome("imported", new.id, "", redacted, tuple(result.warnings))


def _new_trace(con: apsw.Connection, item: MemoryItem, content: str, type_: str, tags: list[str],
               scope: str) -> rec.TraceRow:
    key = memory_key(type_, scope, content)
    # An id of its own is kept when free; else one derived from the content,
    # like every memory's (two devices importing the same file agree on it).
    trace_id = item.id if item.id and not mem.id_in_use(con, item.id) else memory_id_for(con, key)
    now = rec.now_iso()
    created = item.created or now
    return rec.TraceRow(
        id=trace_id, kind="memory", type=type_, title=content.splitlines()[0][:80], content=content, tags=tags,
        metadata={"frontmatter": dict(item.extra), "aliases": [], "related": list(item.related), "fm_tags": tags},
        source=item.origin, scope=scope, strength=DEFAULT_STRENGTH if item.strength is None else item.strength,
        created=created, updated=item.updated or created, content_key=key,
    )


def _record(con: apsw.Connection, key: ik.ImportKey) -> None:
    if not key.source:
        return
    with write_transaction(con):
        ik.put_key(con, key)
