"""Replacing a file only if nobody changed it since it was read.

memvault rewrites a person's note only to record what it read (the managed
``version`` keys); the write must never overwrite, unseen, a save that came
in meanwhile (Obsidian, a sync tool delivering another device's version),
nor leave the path empty for a moment. :func:`replace_if_unchanged` swaps
the new bytes in atomically and checks what it swapped out.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The vault's trash folder (where a version memvault could not put back goes).
TRASH_FOLDER = ".trash"


def replace_if_unchanged(path: Path, expected: str, data: bytes, trash: Path) -> bool:
    """Put ``data`` at ``path`` only if the file there still has hash
    ``expected``, never overwriting unseen a write by someone else (a person
    saving, a sync tool delivering the other device's version), and never
    leaving the path empty for a moment (Obsidian and sync tools read it).

    The new bytes are swapped with the file in one atomic step
    (``renameat2(RENAME_EXCHANGE)``), and what was swapped out is checked:
    the file read means done; anything else is swapped back at once (a write
    that landed after that is kept in the trash, never dropped). Returns
    whether ``data`` was written. Where the kernel cannot exchange, the
    file is set aside and checked instead (:func:`_replace_by_aside`).
    """
    import secrets

    from memvault.vault_io.atomic import fsync_dir, truncate_utf8
    from memvault.vault_io.note import content_hash

    folder = path.parent
    tmp = folder / f".{truncate_utf8(path.name, 200)}.{secrets.token_hex(4)}.memvault-tmp"
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return False
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, mode)
    try:
        swapped = _exchange(tmp, path)
        if swapped is None:
            return _replace_by_aside(path, tmp, expected, trash)
        if not swapped:
            return False  # the note is gone: nothing to version
        try:
            unchanged = content_hash(tmp.read_bytes()) == expected
        except OSError:
            unchanged = False
        if not unchanged:
            # Someone else's version was there: it goes back where it was. If
            # yet another arrived in between, that one is what comes back out
            # with ours: kept in the trash.
            _exchange(tmp, path)
            if tmp.exists() and tmp.read_bytes() != data:
                trash.mkdir(parents=True, exist_ok=True)
                from memvault.vault_io.atomic import free_path

                os.rename(tmp, free_path(trash / path.name))
            return False
        fsync_dir(folder)
        return True
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


#: ``renameat2`` flag: swap the two paths atomically (Linux 3.15+, glibc 2.28+).
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool | None:
    """Swap two paths atomically: True when done, False when one is missing,
    None when this system cannot (no ``renameat2``, or a file system without
    the exchange)."""
    import ctypes
    import errno

    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    at_fdcwd = -100
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.ENOENT:
        return False
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return None
    raise OSError(err, os.strerror(err), str(b))


def _replace_by_aside(path: Path, tmp: Path, expected: str, trash: Path) -> bool:
    """:func:`replace_if_unchanged` without an atomic exchange: the file is
    renamed aside (atomic), checked there, and ``tmp`` linked in only where no
    file has appeared meanwhile (``link`` never replaces); a file found
    changed is put back, one that arrived meanwhile wins. The path is empty
    for that moment. A crash between the steps leaves the note aside as a
    hidden ``.NAME.*.memvault-swap`` file next to it, never deleted."""
    from memvault.vault_io.atomic import fsync_dir
    from memvault.vault_io.note import content_hash

    aside = tmp.with_name(tmp.name.removesuffix(".memvault-tmp") + ".memvault-swap")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return False
    try:
        unchanged = content_hash(aside.read_bytes()) == expected
    except OSError:
        unchanged = False
    if not unchanged:
        _put_back(aside, path, trash)
        return False
    try:
        os.link(tmp, path)
    except FileExistsError:
        _put_back(aside, path, trash)
        return False
    os.unlink(aside)
    fsync_dir(path.parent)
    return True


def _put_back(aside: Path, path: Path, trash: Path) -> None:
    from memvault.vault_io.atomic import free_path

    try:
        os.link(aside, path)
        os.unlink(aside)
    except FileExistsError:
        trash.mkdir(parents=True, exist_ok=True)
        os.rename(aside, free_path(trash / path.name))


