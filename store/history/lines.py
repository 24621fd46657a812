"""What a history log line must be before it is read: logs are hostile input.

The history folder is in the vault, carried by a sync tool from every
device, and anyone who can write the vault can put a file there or a line in
one. So every line is checked before it touches the durable state:

- its **shape**: a record of a shared table (:data:`.replicate.TABLES`), its
  key as long as the table's key, a row holding its own key, scalars only
  (a damaged or foreign line is skipped; a column this schema lacks, a
  newer memvault's, is left out when the row is set);
- its **device**: a device writes only its own files (``<device>.jsonl``, its
  ``.snapshot.jsonl``, and the copies sync tools make of them: the name
  starts with the device), so a line naming another device than its file
  does is planted, and skipped;
- its **stamp**: a record stamped more than :data:`FUTURE_SKEW_MS` ahead of
  this device's clock is not read yet. Its file is read up to it, and on
  from it at a later sync, once the clock has reached it. A deletion stamped
  in the year 3000 thus removes nothing anywhere (and cannot drag every
  device's clock there: the hybrid clock only follows records read), while a
  device whose clock runs a little ahead loses nothing. Whether a record is
  read depends only on the record and the clock, which only moves forward,
  never on the order a device saw the files: two devices that have read the
  same records hold the same rows.

:func:`audit` lists every refused or waiting line for ``memvault doctor``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memvault.vault_io import json_input

#: How far ahead of this device's clock a record may be stamped and be read
#: now (ms): two devices' clocks set by NTP differ by far less; a record
#: further ahead waits until the clock reaches it.
FUTURE_SKEW_MS = 10 * 60 * 1000

_SCALARS = (str, int, float, type(None))
#: The device a log file belongs to: its name up to the first dot, blank or
#: underscore (``ab12.jsonl``, ``ab12.snapshot.jsonl``, Syncthing's
#: ``ab12.sync-conflict-….jsonl``, Dropbox's ``ab12 (conflicted copy …).jsonl``).
_DEVICE_RE = re.compile(r"[^. _]+")

#: The key columns of each shared table (given by the caller: :data:`.replicate.TABLES`).
Tables = dict[str, tuple[str, ...]]


def file_device(path: Path) -> str:
    """The device whose log ``path`` is, by its name."""
    m = _DEVICE_RE.match(path.name)
    return m.group(0) if m else ""


def now_ms() -> int:
    """This device's clock, in ms (what a stamp is compared with)."""
    return int(time.time() * 1000)


def refused(record: Any, device: str, tables: Tables) -> str | None:
    """Why a decoded log line of ``device``'s file is not a record to read
    (None: it is one). Its stamp is checked apart (:func:`waits`)."""
    if not isinstance(record, dict):
        return "not a record"
    table, key, row = record.get("tb"), record.get("k"), record.get("r")
    if not (isinstance(record.get("d"), str) and isinstance(record.get("n"), int) and isinstance(record.get("t"), int)):
        return "not a record (device, number or stamp missing)"
    if record["n"] < 1 or record["t"] < 0:
        return "a record numbered or stamped below zero"
    if record["d"] != device:
        return f"names device {record['d']!r} in the file of device {device!r} (a device writes only its own file)"
    if table not in tables:
        return f"names no shared table ({str(table)[:40]!r})"
    keys = tables[table]
    if not isinstance(key, list) or len(key) != len(keys) or not all(isinstance(v, _SCALARS) for v in key):
        return f"a key that is not {table}'s"
    if row is None:
        return None
    if not isinstance(row, dict) or not all(isinstance(v, _SCALARS) for v in row.values()):
        return "a row that is not one of plain values"
    # Columns this schema does not have are left out when the row is set (a
    # newer memvault's), so they are no reason to refuse it.
    if any(row.get(c) != v for c, v in zip(keys, key, strict=True)):
        return "a row whose key is not the record's"
    return None


def waits(record: dict[str, Any], now: int) -> bool:
    """Whether a record is stamped too far ahead of ``now`` to be read yet."""
    return int(record["t"]) > now + FUTURE_SKEW_MS


def audit(files: Sequence[Path], tables: Tables, now: int | None = None) -> list[str]:
    """One line for each log line that is refused or waits for its stamp,
    naming the file and line (what ``memvault doctor`` reports)."""
    from memvault.store.history.logfile import NOT_JSON, TOO_DEEP, read_from

    now = now_ms() if now is None else now
    out = []
    for path in files:
        device = file_device(path)
        try:
            found, _ = read_from(path, 0)
        except OSError as exc:
            out.append(f"{path.name}: cannot be read ({exc.strerror})")
            continue
        for record, _, n in found:
            if isinstance(record, dict) and "snapshot" in record:
                continue  # a snapshot's header
            why = (f"not JSON ({json_input.MESSAGE})" if record is TOO_DEEP else
                   "not JSON" if record is NOT_JSON else refused(record, device, tables))
            if why is not None:
                out.append(f"{path.name} line {n}: {why}; skipped")
            elif waits(record, now):
                when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(min(int(record["t"]) // 1000, 253402300799)))
                out.append(f"{path.name} line {n}: stamped {when} UTC, ahead of this device's clock; "
                           "not read until then")
    return out
