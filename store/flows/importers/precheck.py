"""The check an import passes before it writes anything.

Each importer reads its items leniently (one odd item is one error line,
the rest goes on), which is right inside a file of the right kind and wrong
for a file of another kind: a mem0 dump given as ``mcp-memory`` made a junk
memory, a binary file a hundred error lines. So before anything is written,
:func:`check` refuses in one line, naming the file and the format expected,

- a file that is not UTF-8 text (binary, UTF-16, Latin-1: :mod:`..text_check`);
- a file whose shape is not the format's: the first item (or the header,
  the first line) is looked at, cheaply, never the whole file.

The files checked are those the importer reads (the same selection as its
``read``; kept here beside each shape check).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from memvault.store.flows.importers import short
from memvault.store.flows.importers.stream import ImportFormatError, Member, iter_array, members, read_json
from memvault.store.flows.text_check import check_opener
from memvault.vault_io import json_input

#: What each format expects, as said when a file is refused.
EXPECTED = {
    "chatgpt": "a ChatGPT export (a JSON array of conversations, each with a 'mapping')",
    "claude": "a Claude.ai export file (conversations.json, projects.json or memories.json)",
    "mem0": "a mem0 get_all() dump ({\"results\": [...]} or a list of objects with 'memory' text)",
    "mcp-memory": "an MCP memory file (memory.jsonl: one JSON object a line, \"type\": \"entity\" or \"relation\")",
    "csv": "a CSV file with a `content` column",
    "json": "a memvault export (.json or .jsonl)",
    "jsonl": "a memvault export (.json or .jsonl)",
    "markdown": "Markdown notes (.md)",
}


def check(fmt: str, path: Path) -> None:
    """Refuse ``path`` for format ``fmt`` in one line unless it is text of the format's shape."""
    found = _files(fmt, path)
    expected = EXPECTED[fmt]
    for member in found:
        check_opener(member.opener, member.name, expected)
    alone = path.is_file() and not _is_zip(path)
    if fmt == "markdown" and alone and not path.name.lower().endswith((".md", ".markdown")):
        raise ImportFormatError(f"{path} is not {expected}")  # a note given alone is read whatever its name
    shape = _SHAPES.get(fmt)
    for member in found:
        if shape is not None and not shape(member, path):
            raise ImportFormatError(f"{member.name} is not {expected}")


def _files(fmt: str, path: Path) -> list[Member]:
    """The files the importer of ``fmt`` reads (an empty selection is refused by the importer itself).

    The same selections as each importer's ``read``: keep them in step."""
    from memvault.store.flows.importers import chatgpt, claude

    given = path.is_file() and not _is_zip(path)
    wanted: dict[str, Callable[[str], bool]] = {
        "chatgpt": chatgpt._wanted,
        "claude": lambda rel: given or claude._kind(rel) is not None,
        "mem0": lambda rel: rel.endswith(".json"),
        "mcp-memory": lambda rel: rel.rsplit("/", 1)[-1] in ("memory.jsonl", "memory.json"),
        "csv": lambda rel: rel.lower().endswith(".csv"),
        "json": lambda rel: rel.endswith((".json", ".jsonl")),
        "jsonl": lambda rel: rel.endswith((".json", ".jsonl")),
        "markdown": lambda rel: rel.lower().endswith(".md") and not rel.startswith(".trash/"),
    }
    return members(path, wanted[fmt])


def _is_zip(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(4) == b"PK\x03\x04"


def _first_item(member: Member, fmt: str) -> tuple[bool, Any]:
    """(True, the first element of the JSON array the file holds, None when empty);
    a file that is no JSON array is refused saying why (HTML, not an array...)."""
    try:
        with member.opener() as fh:
            for item in iter_array(fh, member.name):
                return True, item
    except ImportFormatError as exc:
        raise ImportFormatError(f"{exc}; expected {EXPECTED[fmt]}") from None
    return True, None


def _chatgpt(member: Member, path: Path) -> bool:
    is_array, first = _first_item(member, "chatgpt")
    if isinstance(first, dict) and "conversation_id" in first and "mapping" not in first:
        raise ImportFormatError(f"{member.name} holds shared links (shared_conversations.json), not conversations: "
                                "give conversations.json or the whole export")
    return is_array and (first is None or isinstance(first, dict) and "mapping" in first)


def _claude(member: Member, path: Path) -> bool:
    from memvault.store.flows.importers import claude

    kind = claude._kind(member.name.rsplit(":", 1)[-1]) or claude._sniff_kind(member)
    if kind == "conversations":
        is_array, first = _first_item(member, "claude")
        return is_array and (first is None or isinstance(first, dict) and "chat_messages" in first)
    return kind is not None


def _mem0(member: Member, path: Path) -> bool:
    try:
        data = read_json(member)
    except ImportFormatError:
        return False
    items = data.get("results", data.get("memories")) if isinstance(data, dict) else data
    if not isinstance(items, list):
        return False
    dicts = [i for i in items[:100] if isinstance(i, dict)]
    return not items or any(isinstance(i.get("memory", i.get("text")), str) for i in dicts)


def _mcp_memory(member: Member, path: Path) -> bool:
    """The first line that holds something is an entity or a relation."""
    with member.opener() as fh:
        for raw in fh:
            line = raw.decode("utf-8-sig").strip()
            if not line:
                continue
            try:
                obj = json_input.loads(line)
            except ValueError:
                return False
            if not isinstance(obj, dict):
                return False
            if obj.get("type") in ("entity", "relation"):
                return True
            named = any(k in obj for k in ("name", "entityName")) and any(
                k in obj for k in ("entityType", "entity_type", "observations"))
            return named or (("from" in obj or "from_id" in obj) and ("to" in obj or "to_id" in obj))
    return True  # an empty file: nothing to import, nothing wrong


def _csv(member: Member, path: Path) -> bool:
    import csv
    import io

    with member.opener() as fh:
        head = fh.read(1 << 16).decode("utf-8-sig", "replace")
    try:
        header = next(csv.reader(io.StringIO(head, newline="")), [])
    except csv.Error:
        return False
    if "content" not in (h.strip().lower() for h in header):
        # the header named (cut short: a file of another kind can have a long first line)
        raise ImportFormatError(f"{member.name}: a `content` column is required; the header is "
                                f"{short(', '.join(header), 80) or '(empty)'}")
    return True


#: Format -> shape check of one file (json/jsonl: the importer checks the header before it yields anything).
_SHAPES: dict[str, Callable[[Member, Path], bool]] = {
    "chatgpt": _chatgpt, "claude": _claude, "mem0": _mem0, "mcp-memory": _mcp_memory, "csv": _csv,
}
