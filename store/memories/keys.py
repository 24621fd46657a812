"""Keyed facts: a memory that fills a named slot (``editor.theme``,
``deploy.staging.host``), so that a new value supersedes the old one.

A memory holds a key through its note's front-matter (``key: editor.theme``),
which people edit in Obsidian like any property; the index keeps it as
written in the trace's metadata. A key is a slot *per scope*: ``editor.theme``
of ``user`` and of a project are two slots.

- :func:`~memvault.vault_io.fact_keys.check_key` is what a key may be: lower-case letters, digits, ``_``
  and ``-``, in parts joined by single dots, at most :data:`MAX_KEY` characters
  (``Editor.Theme`` is read as ``editor.theme``); anything else is a usage
  error in one line. A key that reads as a credential is refused too.
- :func:`keyed_add` is ``add`` with a key. No live memory of the scope holds
  the key: an ordinary add whose note carries it (a live memory of the same
  text without a key takes the key instead of a second copy). One does, with
  the same text: that memory is answered (``duplicate_of``), nothing written.
  One does, with other text: the write must say why (``reason``) and then
  supersedes it as its next version (history kept); without a reason it is
  refused with :class:`KeyHeld`, which carries the memory as it is now. A
  refusal is not a guess dropping a write: the caller is told exactly what
  holds the key and how to replace it.
- :func:`holders` reads who holds a key. Two live notes holding one key
  (each device added the key offline, or a person copied a note) are a
  *key clash*: :func:`clashes` lists them. Which one is the holder does not
  depend on the order a device saw the files: the one its note says was
  updated last (its ``updated``, else its ``created``; memvault writes both
  into the note), then the smaller id. Later keyed writes supersede the
  holder; the clash stays listed (``memvault conflicts``, ``status``) until a
  person forgets, merges or re-keys one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memvault.store.answers.keys import KeyClash, KeyHeld
from memvault.store.answers.write import WriteResult
from memvault.store.db import records as rec
from memvault.store.memories import rows as mem
from memvault.vault_io.fact_keys import BadKey, check_key, read_key
from memvault.vault_io.secrets import redact

__all__ = ["BadKey", "KeyClash", "KeyHeld", "KeyHolder", "check_key", "clashes", "holder", "holders", "keyed_add",
           "read_key"]

if TYPE_CHECKING:
    import apsw

    from memvault.store.memories.mirror import Memories

#: The SQL of a trace's key as written (memories only).
KEY_SQL = "CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.key') END"


@dataclass(frozen=True)
class KeyHolder:
    """A live memory that holds a key."""

    id: str
    scope: str
    key: str
    #: The note's own ``updated`` (else ``created``): what decides a clash.
    since: str


def holders(con: "apsw.Connection", key: str | None = None, scope: str | None = None) -> list[KeyHolder]:
    """Live memories holding a key (``key``: that key only, ``scope``: of
    that scope only), each key's holder first (module docstring)."""
    sql = (f"SELECT id, coalesce(scope, 'user'), {KEY_SQL}, "
           "coalesce(json_extract(metadata, '$.fm_updated'), created) FROM traces "
           "WHERE kind = 'memory' AND status = 'active' AND metadata LIKE '%\"key\"%' "
           f"AND {KEY_SQL} IS NOT NULL")
    params: list[str] = []
    if scope is not None:
        sql += " AND coalesce(scope, 'user') = ?"
        params.append(scope)
    found = []
    for trace_id, in_scope, written, since in con.execute(sql, params):
        k = read_key(written)
        if k is not None and (key is None or k == key):
            found.append(KeyHolder(trace_id, in_scope, k, str(since or "")))
    # The holder of each key: the latest note, then the smaller id (byte order).
    found.sort(key=lambda h: h.id)
    found.sort(key=lambda h: h.since, reverse=True)
    found.sort(key=lambda h: (h.scope, h.key))
    return found


def holder(con: "apsw.Connection", key: str, scope: str) -> rec.TraceRow | None:
    """The live memory that holds ``key`` in ``scope``, if any."""
    found = holders(con, key, scope)
    return rec.get_trace(con, found[0].id) if found else None


def clashes(con: "apsw.Connection") -> list[KeyClash]:
    """Every key of a scope that more than one live memory holds."""
    groups: dict[tuple[str, str], list[KeyHolder]] = {}
    for h in holders(con):
        groups.setdefault((h.scope, h.key), []).append(h)
    return [KeyClash(scope=scope, key=key, holder=hs[0].id, others=tuple(h.id for h in hs[1:]))
            for (scope, key), hs in groups.items() if len(hs) > 1]


def keyed_add(
    memories: "Memories", content: str, type_: str | None, *, key: str, reason: str | None,
    tags: Sequence[str], scope: str, links: Sequence[str], source: str, allow_duplicate: bool,
    extra: dict[str, object] | None,
) -> WriteResult:
    """``add`` with a key (module docstring): a new keyed memory, the
    holder answered when it says the same, or the holder superseded (with a
    ``reason``); :class:`KeyHeld` without one."""
    from memvault.store.consolidation.dedup import claim_key
    from memvault.store.memories.memtypes import canonical_type

    key = check_key(key)
    type_ = canonical_type(type_) if type_ else None
    scope = scope.strip() or "user"
    con = memories.con
    held = holder(con, key, scope)
    if held is None:
        result = memories.add(content, type_ or "semantic", tags=tuple(tags), scope=scope, links=tuple(links),
                              source=source, allow_duplicate=allow_duplicate, extra=extra, key=key)
        if result.action == "duplicate_of":
            twin = rec.get_trace(con, result.id)
            if twin is not None and read_key(twin.metadata.get("key")) is None:
                # The same text, unkeyed: it takes the key rather than a second copy being made.
                done = memories.update(twin.id, key=key, reason=reason or f"holds key {key}")
                result.version, result.reason = done.version, f"{result.reason}; it now holds key {key}"
            else:  # the same text under another key: a memory of its own
                result = memories.add(content, type_ or "semantic", tags=tuple(tags), scope=scope,
                                      links=tuple(links), source=source, allow_duplicate=True, extra=extra, key=key)
        result.key = key
        return result
    version = mem.current_version(con, held.id)
    said = claim_key(redact(content.strip())[0]) == claim_key(held.content)
    if said and (type_ is None or type_ == held.type):
        return WriteResult(held.id, "duplicate_of", mem.trace_path(con, held.id), version=version,
                           reason=f"key {key} already says this", key=key)
    if not reason or not reason.strip():
        raise KeyHeld.of(key, scope, held.id, version, held.content, held.type, list(held.tags), held.updated)
    result = memories.update(held.id, content=content, tags=list(tags) if tags else None, type_=type_,
                             reason=reason.strip(), related=list(links) if links else None)
    result.key = key
    return result
