"""A CSV of memories: a ``content`` column (required), optional ``type``,
``tags`` (comma, semicolon or space separated), ``scope``, ``created``,
``updated``, ``strength`` (0 to 1) and ``id``. Every other column is kept as a
front-matter property of the memory's note (its header, lower case, as the
name; an empty cell adds nothing), redacted like the content; a column named
like a key memvault writes itself (``key``, ``source``, ``version``...) is
kept as ``csv_<name>``.

A cell starting with ``'`` before ``= + - @`` (a tab, a carriage return)
has that ``'`` taken off: it kept a spreadsheet from running the cell as a
formula (:mod:`memvault.store.flows.csv_cells`), as memvault's own csv export does.

Keyed by ``id`` when the file has one, else by a hash of content, type and
scope. The header is read case-insensitively; a file without a ``content``
column is refused with its header named.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path

from memvault.store.flows.conversation import iso_time
from memvault.store.flows.csv_cells import unguard
from memvault.store.flows.importers import Entry, Item, MemoryItem, Progress, short
from memvault.store.flows.importers.stream import ImportFormatError, members
from memvault.store.index.classify import content_key
from memvault.store.memories.memtypes import canonical_type

_TAG_SPLIT_RE = re.compile(r"[,;\s]+")
# A memory's text may be long; the csv module's default cap is 128 KiB a field.
csv.field_size_limit(1 << 26)


def read(path: Path, progress: Progress | None = None) -> Iterator[Entry]:
    """Entries for every row of the CSV file(s)."""
    found = members(path, lambda rel: rel.lower().endswith(".csv"))
    if not found:
        raise ImportFormatError(f"{path}: no .csv file in it")
    for member in found:
        with member.opener() as fh:
            text = fh.read().decode("utf-8-sig", "replace")
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = [h.strip().lower() for h in reader.fieldnames or []]
        if "content" not in header:
            raise ImportFormatError(
                f"{member.name}: a `content` column is required; the header is {', '.join(reader.fieldnames or []) or '(empty)'}")
        reader.fieldnames = header
        for n, row in enumerate(reader, 2):
            yield Entry.of(f"{member.name} row {n}" + (f' ("{short(row.get("content"))}")' if row.get("content") else ""),
                           _convert, row)
        if progress is not None:
            progress(1, 1)


#: Columns the importer reads itself.
KNOWN = frozenset({"content", "type", "tags", "scope", "created", "updated", "strength", "id"})


def _extra(row: dict[str, str | None]) -> dict[str, object]:
    """The row's other columns as front-matter properties (module docstring)."""
    from memvault.vault_io.memory_note import MANAGED_KEYS
    from memvault.vault_io.secrets import redact

    out: dict[str, object] = {}
    for n, (name, value) in enumerate(row.items(), 1):
        if name in KNOWN or not isinstance(value, str) or not value.strip():
            continue  # (DictReader's None key: cells past the header, kept as a list, go too)
        prop = redact(" ".join(name.split()))[0] if isinstance(name, str) and name.strip() else f"column_{n}"
        prop = f"csv_{prop}" if prop in MANAGED_KEYS else prop
        out[prop] = redact(value.strip())[0]
    return out


def _convert(row: dict[str, str | None]) -> list[Item]:
    # A cell memvault's csv export (or another tool, as OWASP advises) kept
    # from being run as a formula has a leading ' to take off (:mod:`..csv_cells`).
    row = {k: unguard(v) if isinstance(v, str) else v for k, v in row.items()}
    content = (row.get("content") or "").strip()
    if not content:
        raise ImportFormatError("the content is empty")
    type_ = canonical_type(row["type"] or "") if (row.get("type") or "").strip() else "semantic"
    scope = (row.get("scope") or "").strip() or "user"
    tags = [t.lstrip("#") for t in _TAG_SPLIT_RE.split(row.get("tags") or "") if t.strip("#")]
    created = row.get("created")
    when = iso_time(created) if created and created.strip() else None
    if created and created.strip() and when is None:
        raise ImportFormatError(f"created {created!r} is not a date or time")
    updated = (row.get("updated") or "").strip()
    changed = iso_time(updated) if updated else None
    if updated and changed is None:
        raise ImportFormatError(f"updated {updated!r} is not a date or time")
    strength = _strength(row.get("strength"))
    key = (row.get("id") or "").strip() or content_key(content, type_, scope)
    return [MemoryItem(source="csv", key=key, content=content, type=type_, tags=tags, scope=scope, created=when,
                       updated=changed, strength=strength, origin="import:csv", extra=_extra(row))]


def _strength(cell: str | None) -> float | None:
    """A ``strength`` cell: a number from 0 to 1 (empty: none)."""
    if cell is None or not cell.strip():
        return None
    try:
        value = float(cell)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise ImportFormatError(f"strength {cell!r} is not a number from 0 to 1")
    return value
