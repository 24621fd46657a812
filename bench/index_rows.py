"""Every row an index holds, to check that two syncs built the same index.

    python bench/index_rows.py DATA_DIR_A DATA_DIR_B   # prints the differences, exit 1 if any

A snapshot (:func:`snapshot`) reads every table of ``index.db`` and
``state.db`` (a vault's data dir) in a fixed order; the full-text index is
read through an ``fts5vocab`` table (every term's every place: document,
column, offset), not through its shadow tables, whose segment layout differs
between a bulk rebuild and row-by-row inserts that index the same text.
Values that only say when the sync ran or which copy of the vault it read
are masked: ``files.indexed_at``, ``ctime_ns`` and ``inode``, a history
log's inode, the device id,
and any ISO timestamp at or after ``since`` (a note without a ``created``
gets the time it was first indexed).

Used by ``bench_index.py`` (the base commit's cold index against this one's)
and ``tests/test_index_rows.py`` (a bulk load in worker processes against
the plain row-by-row path).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import apsw

#: Shadow tables of the FTS index (read through fts5vocab instead).
_FTS_SHADOW = re.compile(r"^traces_fts_(data|idx|docsize|config|content)$")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[+-]\d{2}:\d{2}|Z)?$")
#: Columns that say when, or of which copy of the vault: not what was indexed.
_MASKED = {("files", "indexed_at"), ("files", "ctime_ns"), ("files", "inode"), ("history_files", "ino")}
#: Rows of a key/value table that name this device (a random id per data dir).
_DEVICE_ROWS = {("meta", "device_id")}


def _masked(value: Any, since: str | None) -> Any:
    if since is not None and isinstance(value, str) and _ISO.match(value) and value[:19] >= since[:19]:
        return "<time of the sync>"
    return value


def snapshot(data_dir: Path | str, since: str | None = None) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the index and the durable state in ``data_dir``, by table,
    sorted; ``since`` (ISO, UTC): mask timestamps from then on."""
    data_dir = Path(data_dir)
    con = apsw.Connection(str(data_dir / "index.db"), flags=apsw.SQLITE_OPEN_READONLY)
    con.execute("ATTACH DATABASE ? AS state", (str(data_dir / "state.db"),))
    out: dict[str, list[tuple[Any, ...]]] = {}
    try:
        for schema in ("main", "state"):
            names = [n for (n,) in con.execute(
                f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' "
                "ORDER BY name")]
            for name in names:
                if schema == "main" and _FTS_SHADOW.match(name):
                    continue
                cols = [r[1] for r in con.execute(f"PRAGMA {schema}.table_xinfo(\"{name}\")")]
                rows = []
                for row in con.execute(f"SELECT * FROM {schema}.\"{name}\""):
                    if (name, row[0]) in _DEVICE_ROWS:
                        row = (row[0], "<this device>", *row[2:])
                    rows.append(tuple("<masked>" if (name, c) in _MASKED else _masked(v, since)
                                      for c, v in zip(cols, row)))
                out[f"{schema}.{name}"] = sorted(rows, key=repr)
        con.execute("CREATE VIRTUAL TABLE temp.fts_places USING fts5vocab(main, traces_fts, instance)")
        out["fts places"] = sorted(con.execute("SELECT term, doc, col, offset FROM temp.fts_places"), key=repr)
    finally:
        con.close()
    return out


def differences(a: dict[str, list[tuple[Any, ...]]], b: dict[str, list[tuple[Any, ...]]], limit: int = 5) -> list[str]:
    """What differs between two snapshots, a few lines per table (empty: the same rows)."""
    out: list[str] = []
    for table in sorted(set(a) | set(b)):
        ra, rb = a.get(table), b.get(table)
        if ra is None or rb is None:
            out.append(f"{table}: only in {'the second' if ra is None else 'the first'}")
            continue
        if ra == rb:
            continue
        sa, sb = set(map(repr, ra)), set(map(repr, rb))
        out.append(f"{table}: {len(ra)} rows vs {len(rb)}; {len(sa - sb)} only in the first, {len(sb - sa)} only in "
                   "the second")
        out += [f"  - {r[:300]}" for r in sorted(sa - sb)[:limit]]
        out += [f"  + {r[:300]}" for r in sorted(sb - sa)[:limit]]
    return out


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: index_rows.py DATA_DIR_A DATA_DIR_B [SINCE_ISO]", file=sys.stderr)
        return 2
    since = argv[2] if len(argv) == 3 else None
    diff = differences(snapshot(argv[0], since), snapshot(argv[1], since))
    print("\n".join(diff) if diff else "same rows")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
