"""memvault's views in Obsidian: ``.base`` files in the memory folder.

``memvault views install`` writes three bases into the memory folder
(``docs/memories.md``, "Views in Obsidian"):

- ``Memories.base``: every memory note, by type, by recent change, by scope
  (``user``, a project, ``agent:...``) and by source (manual, agent, import,
  consolidation, a person's own note);
- ``Sessions.base``: session notes (ingested conversations) by date and by
  client;
- ``Conflicts.base``: conflict copies, memvault's and file-sync tools'.

The views read only front-matter that changes when the memory itself does
(type, scope, tags, source, created, updated; a session's client, title,
times and turns): never ``strength``, which recall moves.

Each file carries memvault's stamp (:func:`~memvault.vault_io.bases.stamp`).
Installing again writes nothing when the file is as memvault would write it;
a file someone changed (or wrote themselves) is left alone unless ``force``,
which first copies it to ``<name> (backup YYYY-MM-DD HHMMSS).base`` beside
it. Removing deletes only files that still carry an unbroken stamp.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memvault.vault_io.atomic import NAME_MAX, fit_name, free_path
from memvault.vault_io.bases import dump_base, ownership, stamp
from memvault.vault_io.confine import check_inside, read_inside
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.gate import Gate, Kind
from memvault.vault_io.note import content_hash

HEADER = (
    "# Written by `memvault views install` (see memvault's docs/memories.md, \"Views in Obsidian\").\n"
    "# Change it as you like: memvault then leaves this file alone, and\n"
    "# `memvault views install --force` puts its own back after saving yours as a backup.\n"
)

# Names file-sync tools give their conflict copies (vault_io/sync_conflicts.py),
# as lower-case substrings Bases can test: Syncthing, Dropbox/Nextcloud/Obsidian
# Sync ("Conflicted copy" too), ownCloud.
_SYNC_COPY_MARKS = (".sync-conflict-", "conflicted copy", "_conflict-")


@dataclass
class ViewFile:
    """What installing or removing did to one ``.base`` file."""

    path: str  # vault path, e.g. "Memory/Memories.base"
    action: str  # written | unchanged | kept-edited | replaced | removed | absent
    note: str = ""  # what a person should know about it (one line, without the path)
    backup: str | None = None  # vault path of the copy ``force`` made of a changed file

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (``backup`` only when there is one)."""
        data = asdict(self)
        if data["backup"] is None:
            del data["backup"]
        return data


def _quote(text: str) -> str:
    """A string literal in a Bases expression."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _sort(prop: str, direction: str = "DESC") -> dict[str, str]:
    return {"property": prop, "direction": direction}


def memories_base(folder: str) -> dict[str, Any]:
    """``Memories.base``: the memory notes under ``folder``."""
    depth = len(folder.split("/"))
    return {
        "filters": {"and": [
            f"file.inFolder({_quote(folder)})",
            'file.ext == "md"',
            # Session notes and conflict copies live here too but are not memories.
            '!file.hasProperty("session_id")',
            '!file.hasProperty("conflict_of")',
            {"not": [f"file.name.lower().contains({_quote(mark)})" for mark in _SYNC_COPY_MARKS]},
        ]},
        "formulas": {
            # A note a person made in <folder>/<type>/ has no `type` until memvault writes it.
            "memory_type": f'if(type, type, file.folder.split("/")[{depth}])',
            # manual, mcp (an agent), import, consolidate; a person's own note has no source.
            "origin": 'if(source, source.split(":")[0], "vault")',
        },
        "properties": {
            "file.name": {"displayName": "Memory"},
            "formula.memory_type": {"displayName": "Type"},
            "note.scope": {"displayName": "Scope"},
            "note.tags": {"displayName": "Tags"},
            "note.source": {"displayName": "Source"},
            "formula.origin": {"displayName": "Origin"},
            "note.created": {"displayName": "Created"},
            "note.updated": {"displayName": "Updated"},
            "file.mtime": {"displayName": "Changed"},
        },
        "views": [
            {"type": "table", "name": "By type", "groupBy": _sort("formula.memory_type", "ASC"),
             "order": ["file.name", "note.scope", "note.tags", "note.updated"], "sort": [_sort("note.updated")]},
            {"type": "table", "name": "Recent changes",
             "order": ["file.name", "formula.memory_type", "note.scope", "note.source", "file.mtime"],
             "sort": [_sort("file.mtime")], "limit": 50},
            {"type": "table", "name": "By scope", "groupBy": _sort("note.scope", "ASC"),
             "order": ["file.name", "formula.memory_type", "note.tags", "note.updated"],
             "sort": [_sort("note.updated")]},
            {"type": "table", "name": "By source", "groupBy": _sort("formula.origin", "ASC"),
             "order": ["file.name", "note.source", "formula.memory_type", "note.created"],
             "sort": [_sort("note.created")]},
        ],
    }


def sessions_base(folder: str) -> dict[str, Any]:
    """``Sessions.base``: the session notes (ingested conversations) under ``folder``."""
    return {
        "filters": {"and": [f"file.inFolder({_quote(folder)})", 'file.hasProperty("session_id")']},
        "properties": {
            "file.name": {"displayName": "Note"},
            "note.title": {"displayName": "Title"},
            "note.client": {"displayName": "Client"},
            "note.started": {"displayName": "Started"},
            "note.ended": {"displayName": "Ended"},
            "note.turns": {"displayName": "Turns"},
        },
        "views": [
            {"type": "table", "name": "By date",
             "order": ["file.name", "note.title", "note.client", "note.started", "note.ended", "note.turns"],
             "sort": [_sort("note.started")]},
            {"type": "table", "name": "By client", "groupBy": _sort("note.client", "ASC"),
             "order": ["file.name", "note.title", "note.started", "note.turns"], "sort": [_sort("note.started")]},
            {"type": "list", "name": "Latest", "order": ["note.title", "note.client", "note.started"],
             "sort": [_sort("note.started")], "limit": 20},
        ],
    }


def conflicts_base(folder: str) -> dict[str, Any]:
    """``Conflicts.base``: conflict copies anywhere in the vault (each holds
    text someone wrote; deleting one, once merged, clears it)."""
    del folder  # vault-wide: a sync tool's copy of any note matters
    return {
        "filters": {"or": ['file.hasProperty("conflict_of")']
                    + [f"file.name.lower().contains({_quote(mark)})" for mark in _SYNC_COPY_MARKS]},
        "formulas": {"made_by": 'if(file.hasProperty("conflict_of"), "memvault", "sync tool")'},
        "properties": {
            "file.name": {"displayName": "Copy"},
            "formula.made_by": {"displayName": "Made by"},
            "note.conflict_of": {"displayName": "Memory"},
            "file.folder": {"displayName": "Folder"},
            "file.mtime": {"displayName": "Changed"},
        },
        "views": [
            {"type": "table", "name": "Conflict copies", "groupBy": _sort("formula.made_by", "ASC"),
             "order": ["file.name", "note.conflict_of", "file.folder", "file.mtime"],
             "sort": [_sort("file.mtime")]},
        ],
    }


#: File name in the memory folder -> the base it holds.
VIEWS: dict[str, Callable[[str], dict[str, Any]]] = {
    "Memories.base": memories_base,
    "Sessions.base": sessions_base,
    "Conflicts.base": conflicts_base,
}


def render_view(name: str, folder: str) -> bytes:
    """The exact bytes memvault writes for view file ``name``."""
    return stamp(HEADER + dump_base(VIEWS[name](folder)))


def _read(root: Path, rel: str) -> bytes | None:
    """The file's bytes, None if there is none; one clear error otherwise."""
    check_inside(root, rel)
    try:
        return read_inside(root, rel)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MemvaultError(f"{rel}: cannot be read ({exc.strerror or exc})") from None


def _write(gate: Gate, rel: str, data: bytes, current: bytes | None) -> bool:
    """Write a view file: a new one atomically, an existing one (as read:
    ``current``) by exchange-and-check, so a change a person saved since it
    was read is never lost (False then: nothing written)."""
    try:
        if current is None:
            gate.write(rel, data, Kind.VIEW)
            return True
        return gate.replace(rel, content_hash(current), data, Kind.VIEW)
    except OSError as exc:
        raise MemvaultError(f"{rel}: cannot be written ({exc.strerror or exc})") from None


def install_views(gate: Gate, folder: str, *, force: bool = False) -> list[ViewFile]:
    """Write memvault's bases into ``folder`` of the vault ``gate`` writes.

    A file already as memvault would write it is not touched; one memvault
    wrote earlier and nobody changed is brought up to date; one that was
    changed is kept (``kept-edited``) or, with ``force``, copied to a backup
    beside it and replaced (``replaced``).
    """
    root = gate.root
    results = []
    for name in VIEWS:
        rel = f"{folder}/{name}"
        want = render_view(name, folder)
        current = _read(root, rel)
        if current == want:
            results.append(ViewFile(rel, "unchanged"))
        elif current is None or ownership(current) == "memvault":
            # new, or memvault's older version nobody changed
            if _write(gate, rel, want, current):
                results.append(ViewFile(rel, "written"))
            else:
                results.append(ViewFile(rel, "kept-edited", "changed while being written; left as it is"))
        elif not force:
            results.append(ViewFile(rel, "kept-edited", "changed since memvault wrote it (or never memvault's); "
                                    "left as it is (--force replaces it, keeping a backup)"))
        else:
            results.append(_replace(gate, rel, current, want))
    return results


def _replace(gate: Gate, rel: str, current: bytes, want: bytes) -> ViewFile:
    """Copy a changed file to a backup beside it, then write memvault's."""
    target = gate.root / rel
    stamp_text = datetime.now().strftime("%Y-%m-%d %H%M%S")
    backup = free_path(target.with_name(fit_name(target.stem, f" (backup {stamp_text}).base", NAME_MAX - 8)))
    backup_rel = backup.relative_to(gate.root).as_posix()
    _write(gate, backup_rel, current, None)
    if not _write(gate, rel, want, current):  # changed again while we copied it: theirs wins
        return ViewFile(rel, "kept-edited", "changed while being replaced; left as it is", backup_rel)
    return ViewFile(rel, "replaced", f"the changed file is kept as {backup_rel}", backup_rel)


def remove_views(gate: Gate, folder: str) -> list[ViewFile]:
    """Delete the bases memvault wrote into ``folder`` and nobody changed
    since (a change saved while it is deleted keeps it); a changed one is
    kept (``kept-edited``), a missing one ``absent``."""
    root = gate.root
    results = []
    for name in VIEWS:
        rel = f"{folder}/{name}"
        current = _read(root, rel)
        if current is None:
            results.append(ViewFile(rel, "absent"))
        elif ownership(current) != "memvault":
            results.append(ViewFile(rel, "kept-edited", "changed since memvault wrote it (or never memvault's); "
                                    "left in place"))
        else:
            try:
                removed = gate.remove_if_unchanged(rel, content_hash(current))
            except OSError as exc:
                raise MemvaultError(f"{rel}: cannot be removed ({exc.strerror or exc})") from None
            results.append(ViewFile(rel, "removed") if removed else
                           ViewFile(rel, "kept-edited", "changed while being removed; left in place"))
    return results
