"""Crash-safe file writes inside the vault.

A note is never written in place: the new bytes go to a unique temporary
file in the same folder (so the rename cannot cross file systems), are
fsynced, and replace the note with :func:`os.replace`; then the folder is
fsynced so the rename itself survives a power cut. A reader (Obsidian, the
daemon) sees either the old file or the new one, never half of either.
"""

from __future__ import annotations

import ctypes
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

#: Longest file name (in bytes) the usual Linux file systems accept (ext4,
#: btrfs, xfs, tmpfs: NAME_MAX). Names are cut by bytes, not characters: 80
#: CJK characters are 240 bytes.
NAME_MAX = 255

# Room left in a temp name for ".<hex>.memvault-tmp" and the leading dot.
_TMP_NAME_BYTES = 200


def truncate_utf8(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes, on a character boundary."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", "ignore")


def fit_name(stem: str, tail: str, max_bytes: int = NAME_MAX) -> str:
    """``stem + tail`` as a file name of at most ``max_bytes`` bytes.

    Only the stem is shortened (by bytes, on a character boundary, trailing
    blanks and dots dropped) so that ``tail`` (an extension, a ``" 2.md"``
    counter, a ``" (conflict ...).md"`` mark) stays whole. A stem cut to
    nothing becomes ``"note"``.
    """
    room = max_bytes - len(tail.encode("utf-8", "surrogatepass"))
    if room < 1:
        raise ValueError(f"file name ending {tail!r} is too long by itself")
    if len(stem.encode("utf-8", "surrogatepass")) <= room:
        return stem + tail
    short = truncate_utf8(stem, room).rstrip(" .") or truncate_utf8("note", room)
    return short + tail


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
    # A dot-name keeps the temp file out of Obsidian's and our own scans; the
    # name is cut by bytes so that a note whose own name is near the 255-byte
    # limit (a long CJK title) still gets a legal temp name.
    tmp = path.parent / f".{truncate_utf8(path.name, _TMP_NAME_BYTES)}.{secrets.token_hex(4)}.memvault-tmp"
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


def _syncfs(fd: int) -> bool:
    """Flush every file of ``fd``'s file system at once (Linux ``syncfs``);
    False where that call does not exist."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(hasattr(libc, "syncfs") and libc.syncfs(fd) == 0)
    except OSError:
        return False


def atomic_write_many(items: Sequence[tuple[Path, bytes]]) -> list[bool]:
    """:func:`atomic_write` for many files, with one flush for all of them.

    Each file is still replaced atomically (temp file, rename), and nothing
    is renamed before every temp file's bytes are on disk; but the bytes are
    flushed by one ``syncfs`` of the file system rather than an ``fsync``
    each, and each folder is flushed once: writing a few thousand notes (an
    import) costs a few flushes instead of thousands. Identical bytes are
    not rewritten; returns, per item, whether it was written.
    """
    pending: list[tuple[Path, Path, int | None]] = []
    written = [False] * len(items)
    fds: list[int] = []
    try:
        for i, (path, data) in enumerate(items):
            try:
                if path.read_bytes() == data:
                    continue
            except FileNotFoundError:
                pass
            try:
                keep_mode: int | None = os.stat(path).st_mode & 0o7777
            except FileNotFoundError:
                keep_mode = None
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.parent / f".{truncate_utf8(path.name, _TMP_NAME_BYTES)}.{secrets.token_hex(4)}.memvault-tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            fds.append(fd)
            pending.append((tmp, path, keep_mode))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            written[i] = True
        if pending and not _syncfs(fds[0]):
            for fd in fds:
                os.fsync(fd)
        for tmp, path, keep_mode in pending:
            if keep_mode is not None:
                os.chmod(tmp, keep_mode)
            os.replace(tmp, path)
    except BaseException:
        for tmp, _, _ in pending:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        raise
    finally:
        for fd in fds:
            os.close(fd)
    for folder in {path.parent for _, path, _ in pending}:
        fsync_dir(folder)
    return written


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
    """``path``, or ``name 2.md``, ``name 3.md``... whichever does not exist yet.

    Every candidate name fits in :data:`NAME_MAX` bytes: the stem is
    shortened (by bytes) to make room for the counter and the extension.
    """
    stem, suffix = path.stem, path.suffix
    first = path.with_name(fit_name(stem, suffix))
    if not first.exists():
        return first
    n = 2
    while True:
        candidate = path.with_name(fit_name(stem, f" {n}{suffix}"))
        if not candidate.exists():
            return candidate
        n += 1
