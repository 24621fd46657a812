"""Import keys: what each imported or ingested item became (durable state).

One row per item and source kind (``state.import_keys``): the item's id at
its source (else a hash of its content), the memory or note it became, and
a hash of its content as last imported, so importing it again changes
nothing and an item changed at the source is recognised as such. The rows
live in ``state.db``: a rebuilt index keeps them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import apsw

from memvault.store.db import records as rec


@dataclass
class ImportKey:
    """One imported item: where it came from and what it became."""

    source: str
    key: str
    target_id: str
    hash: str
    path: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    created: str = ""
    updated: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the export's ``imports`` records)."""
        return {"source": self.source, "key": self.key, "target_id": self.target_id, "hash": self.hash,
                "path": self.path, "detail": self.detail, "created": self.created, "updated": self.updated}


def item_hash(value: object) -> str:
    """A stable hash of an item's content (any JSON-able value)."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


_COLS = "source, key, target_id, hash, path, detail, created, updated"


def _row(r: tuple[Any, ...]) -> ImportKey:
    values = list(r)
    values[5] = json.loads(values[5]) if values[5] else {}
    return ImportKey(*values)


def get_key(con: apsw.Connection, source: str, key: str) -> ImportKey | None:
    """The row of one item, if it was imported before."""
    row = con.execute(f"SELECT {_COLS} FROM state.import_keys WHERE source = ? AND key = ?", (source, key)).fetchone()
    return _row(row) if row else None


def put_key(con: apsw.Connection, k: ImportKey) -> None:
    """Record (or update) one item's row; the caller holds a write transaction."""
    now = rec.now_iso()
    con.execute(
        f"INSERT INTO state.import_keys ({_COLS}) VALUES (?,?,?,?,?,?,?,?) "
        "ON CONFLICT(source, key) DO UPDATE SET target_id = excluded.target_id, hash = excluded.hash, "
        "path = excluded.path, detail = excluded.detail, updated = excluded.updated",
        (k.source, k.key, k.target_id, k.hash, k.path, json.dumps(k.detail, ensure_ascii=False, sort_keys=True),
         k.created or now, k.updated or now),
    )


def insert_key(con: apsw.Connection, k: ImportKey) -> bool:
    """Add a row as it was exported (times kept), unless the item is known; whether it was added."""
    con.execute(
        f"INSERT OR IGNORE INTO state.import_keys ({_COLS}) VALUES (?,?,?,?,?,?,?,?)",
        (k.source, k.key, k.target_id, k.hash, k.path, json.dumps(k.detail, ensure_ascii=False, sort_keys=True),
         k.created, k.updated),
    )
    return con.changes() > 0


def all_keys(con: apsw.Connection) -> Iterator[ImportKey]:
    """Every row, by source and key."""
    for r in con.execute(f"SELECT {_COLS} FROM state.import_keys ORDER BY source, key"):
        yield _row(r)
