"""Crash-safe file writes inside the vault.

A note is never written in place: the new bytes go to a unique temporary
file in the same folder (so the rename cannot cross file systems), are
fsynced, and replace the note with :func:`os.replace`; then the folder is
fsynced so the rename itself survives a power cut. A reader (Obsidian, the
daemon) sees either the old file or the new one, never half of either.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def fsync_dir(folder: Path) -> None:
    """Flush a folder's entries (renames, creations) to disk."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, mode: int | None = None) -> bool:
    """Write ``data`` to ``path`` atomically; return False if it already held it.

    Identical bytes are never rewritten (no mtime churn, no sync loops). An
    existing file keeps its permission bits; a new one gets ``mode`` or
    0o644 filtered by the umask, like any editor would create.
    """
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    try:
        keep_mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        keep_mode = None
    path.parent.mkdir(parents=True, exist_ok=True)
    # A dot-name keeps the temp file out of Obsidian's and our own scans.
    tmp = path.parent / f".{path.name[:200]}.{secrets.token_hex(4)}.memvault-tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if keep_mode is not None:
            os.chmod(tmp, keep_mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_dir(path.parent)
    return True


def atomic_move(src: Path, dest: Path) -> None:
    """Rename ``src`` to ``dest`` (creating folders) and make it durable.

    Refuses to overwrite an existing ``dest``: callers pick a free name.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        raise FileExistsError(f"{dest} already exists")
    os.rename(src, dest)
    fsync_dir(dest.parent)
    if src.parent != dest.parent:
        fsync_dir(src.parent)


def free_path(path: Path) -> Path:
    """``path``, or ``name 2.md``, ``name 3.md``... whichever does not exist yet."""
    if not path.exists():
        return path
    n = 2
    while True:
        candidate = path.with_name(f"{path.stem} {n}{path.suffix}")
        if not candidate.exists():
            return candidate
        n += 1
