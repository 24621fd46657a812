"""mem0's ``Memory.get_all()`` output: ``{"results": [...]}`` or a bare list.

Each item (``id``, ``memory``, ``hash``, ``metadata``, ``created_at``,
``updated_at``, ``user_id``/``agent_id``/``run_id``...) becomes a memory:
``agent_id`` makes the scope ``agent:<id>``, else ``user_id`` ``user:<id>``
(``user`` when neither is set); ``metadata.category``/``categories`` become
tags; the remaining metadata is kept in the note's front-matter (``mem0``).
Keyed by mem0's ``id`` (else its ``hash``, else the text).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memvault.store.flows.conversation import iso_time
from memvault.store.flows.importers import Entry, Item, MemoryItem, Progress, json_object, short
from memvault.store.flows.importers.stream import ImportFormatError, members, read_json
from memvault.store.index.classify import content_key


def read(path: Path, progress: Progress | None = None) -> Iterator[Entry]:
    """Entries for every memory of a ``get_all()`` dump."""
    member = members(path, lambda rel: rel.endswith(".json"))
    if not member:
        raise ImportFormatError(f"{path}: no .json file in it")
    for m in member:
        data = read_json(m)
        items = data.get("results", data.get("memories")) if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise ImportFormatError(f"{m.name}: expected {{\"results\": [...]}} or a list of memories")
        for index, raw in enumerate(items):
            text = raw.get("memory") if isinstance(raw, dict) else None
            yield Entry.of(f"{m.name} item {index}" + (f' ("{short(text)}")' if text else ""), _convert, raw)
        if progress is not None:
            progress(1, 1)


def _scope(raw: dict[str, Any]) -> str:
    for field, prefix in (("agent_id", "agent"), ("user_id", "user")):
        value = raw.get(field)
        if isinstance(value, (str, int)) and str(value).strip():
            return f"{prefix}:{value}"
    return "user"


def _convert(raw: Any) -> list[Item]:
    if not isinstance(raw, dict):
        raise ImportFormatError(f"not a memory object (a {type(raw).__name__})")
    text = raw.get("memory") if isinstance(raw.get("memory"), str) else raw.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ImportFormatError("has no 'memory' text")
    metadata = json_object(raw.get("metadata"))
    tags = ["mem0"]
    for name in ("category", "categories"):
        value = metadata.get(name, raw.get(name))
        for tag in value if isinstance(value, list) else [value]:
            if isinstance(tag, str) and tag.strip():
                tags.append(tag.strip().replace(" ", "-"))
    keep = {k: raw[k] for k in ("id", "user_id", "agent_id", "run_id", "actor_id", "role") if raw.get(k) is not None}
    if metadata:
        keep["metadata"] = metadata
    key = str(raw.get("id") or raw.get("hash") or content_key(text))
    return [MemoryItem(
        source="mem0", key=key, content=text.strip(), tags=tags, scope=_scope(raw),
        created=iso_time(raw.get("created_at")), updated=iso_time(raw.get("updated_at")),
        origin="import:mem0", extra={"mem0": keep},
    )]
