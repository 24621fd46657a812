"""The history log files in the vault: one append-only JSONL file per device.

A device writes only its own files, ``<device>.jsonl`` (the tail, appended
to) and ``<device>.snapshot.jsonl`` (written whole when the tail is
compacted), so a sync tool never sees two devices change one file. Every
line is one JSON record; an append writes whole lines and fsyncs, and a
line without its newline (a crash mid-append, a file the sync tool is still
delivering) is never read: a reader stops at the last newline, and the next
append closes such a line off first so that it stays one bad line, skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from memvault.vault_io import json_input
from memvault.vault_io.gate import Gate

TAIL_SUFFIX = ".jsonl"
SNAPSHOT_SUFFIX = ".snapshot.jsonl"
#: How many bytes of a file's first line identify it (a rewritten file starts differently).
HEAD_BYTES = 4096


def tail_path(folder: Path, device: str) -> Path:
    """The file a device appends its changes to."""
    return folder / f"{device}{TAIL_SUFFIX}"


def snapshot_path(folder: Path, device: str) -> Path:
    """The file a device's compacted records live in."""
    return folder / f"{device}{SNAPSHOT_SUFFIX}"


def log_files(folder: Path) -> list[Path]:
    """Every log file in ``folder`` (any device's tail or snapshot, and any
    copy a sync tool made of one), in name order."""
    try:
        return sorted(p for p in folder.iterdir() if p.name.endswith(TAIL_SUFFIX) and not p.name.startswith("."))
    except OSError:  # no folder yet (or unreadable: nothing to read)
        return []


def encode(record: dict[str, Any]) -> bytes:
    """One record as one line (keys sorted: the same record, the same bytes)."""
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8") + b"\n"


def append(path: Path, lines: list[bytes], gate: Gate | None = None) -> int:
    """Append whole ``lines`` to the log file ``path`` through the vault's
    write ``gate`` (by default one for the log's folder alone; created if
    needed, never through a symlink) and fsync; the bytes written. A torn
    last line already there is closed off first."""
    gate = gate or folder_gate(path.parent)
    return gate.append_log(path.relative_to(gate.root).as_posix(), lines)


def replace(path: Path, lines: list[bytes], gate: Gate | None = None) -> None:
    """Write the log file ``path`` whole, atomically, through the vault's
    write ``gate`` (by default one for the log's folder alone)."""
    gate = gate or folder_gate(path.parent)
    gate.rewrite_log(path.relative_to(gate.root).as_posix(), lines)


def folder_gate(folder: Path) -> Gate:
    """A write gate for a history folder on its own (a tool's or a test's,
    outside any store): the folder's parent stands for the vault."""
    return Gate(folder.parent, "-", folder.name, ())


def head(path: Path) -> str:
    """A fingerprint of the file's first line ("" while it has none). A
    record's line names its device, number and time, so the same first line
    is the same log, whatever its inode: a file rewritten from the start
    (compacted) reads as a new file, one a sync tool delivered again longer
    is read on from where it was."""
    import hashlib  # here: every command's end imports this module, and most read no log

    with open(path, "rb") as f:
        first = f.read(HEAD_BYTES)
    end = first.find(b"\n")
    return "" if end < 0 else hashlib.sha1(first[:end]).hexdigest()


#: What a line that is not JSON decodes to.
NOT_JSON = object()
#: What a line nested deeper than the parser follows decodes to (another
#: device's file is hostile input: ``[[[[...]]]]`` must not be a RecursionError).
TOO_DEEP = object()


class Line(NamedTuple):
    """One complete line of a log: what it decodes to (:data:`NOT_JSON` when
    nothing, :data:`TOO_DEEP` when nested too deeply to read), the byte
    offset it starts at, its number from where reading began."""

    value: Any
    start: int
    number: int


def read_from(path: Path, offset: int) -> tuple[list[Line], int]:
    """The complete lines of ``path`` from byte ``offset`` (blank ones left
    out), and the offset after the last complete line."""
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read()
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset
    lines, start = [], 0
    for number, line in enumerate(data[:end].split(b"\n"), 1):
        if line.strip():
            try:
                value = json_input.loads(line)
            except json_input.TooDeep:
                value = TOO_DEEP
            except ValueError:
                value = NOT_JSON
            lines.append(Line(value, offset + start, number))
        start += len(line) + 1
    return lines, offset + end + 1
