"""The reference MCP memory server's ``memory.jsonl`` (also the old ``memory.json``).

One JSON object per line: ``{"type": "entity", "name", "entityType",
"observations": [...]}`` and ``{"type": "relation", "from", "to",
"relationType"}`` (also the variants ``entityName``/``id``, ``from_id``/
``to_id``, ``relation_type``, observations as ``{"content"|"text": ...}``).
Each entity becomes one memory note named after it (``<name>.md`` in the
type's folder) holding its observations and, as ``[[links]]``, its
relations, so Obsidian and the index see the graph. Keyed by entity name;
a changed entity (new observations or relations) updates its memory as a
new version. A bad line is one error; the rest is read.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memvault.store.flows.importers import Entry, Item, MemoryItem, Progress
from memvault.store.flows.importers.stream import ImportFormatError, members
from memvault.vault_io import json_input
from memvault.vault_io.session_note import readable_stem


def read(path: Path, progress: Progress | None = None) -> Iterator[Entry]:
    """Entries for every entity (relations go with their source entity)."""
    found = members(path, lambda rel: rel.rsplit("/", 1)[-1] in ("memory.jsonl", "memory.json"))
    if not found:
        raise ImportFormatError(f"{path}: no memory.jsonl in it")
    for member in found:
        with member.opener() as fh:
            lines = fh.read().decode("utf-8-sig", "replace").splitlines()
        entities: dict[str, dict[str, Any]] = {}
        relations: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            ref = f"{member.name} line {n}"
            try:
                obj = json_input.loads(line)
            except json.JSONDecodeError as exc:
                yield Entry.of(ref, _fail, f"not JSON ({exc.msg})")
                continue
            if not isinstance(obj, dict):
                yield Entry(ref, lambda: _fail("not a JSON object"))
                continue
            kind = obj.get("type")
            if kind == "relation" or (kind is None and ("from" in obj or "from_id" in obj)):
                source, target = obj.get("from", obj.get("from_id")), obj.get("to", obj.get("to_id"))
                rel = obj.get("relationType", obj.get("relation_type")) or "relates to"
                if isinstance(source, str) and isinstance(target, str):
                    relations[source].append((str(rel), target))
                else:
                    yield Entry(ref, lambda: _fail("a relation without 'from' and 'to' names"))
                continue
            name = obj.get("name", obj.get("entityName", obj.get("id")))
            if not isinstance(name, (str, int)) or not str(name).strip():
                yield Entry(ref, lambda: _fail("an entity without a name"))
                continue
            entities[str(name)] = obj
        for name, obj in entities.items():
            yield Entry.one(f"{member.name} entity {name!r}", _entity, name, obj, relations.get(name, []), entities)
        if progress is not None:
            progress(1, 1)


def _fail(message: str) -> list[Item]:
    raise ImportFormatError(message)


def note_stem(name: str) -> str:
    """The file name (without ``.md``) of an entity's memory note."""
    return readable_stem(name, 120, "entity")


def _observation(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("content", value.get("text"))
    return " ".join(str(value).split()) if isinstance(value, (str, int, float)) and str(value).strip() else None


def _entity(name: str, obj: dict[str, Any], relations: list[tuple[str, str]], entities: dict[str, Any]) -> Item:
    kind = obj.get("entityType", obj.get("entity_type"))
    lines = [f"{name} ({kind})" if kind else name]
    lines += [f"- {o}" for o in (_observation(v) for v in obj.get("observations") or []) if o]
    for rel, target in sorted(set(relations)):
        link = f"[[{note_stem(target)}|{target}]]" if note_stem(target) != target else f"[[{target}]]"
        lines.append(f"- {rel} {link}" if target in entities else f"- {rel} {target}")
    tags = ["mcp-memory"] + ([str(kind).strip().replace(" ", "-")] if isinstance(kind, str) and kind.strip() else [])
    return MemoryItem(
        source="mcp-memory", key=name, content="\n".join(lines), tags=tags, origin="import:mcp-memory",
        path=f"semantic/{note_stem(name)}.md",
    )
