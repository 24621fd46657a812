"""Keeping reads inside the vault: a symlink must not serve a file from elsewhere.

A vault may hold symlinks (Obsidian follows them), but one whose real path
leaves the vault (``env.md -> /proc/self/environ``, ``notes -> ~/.ssh``)
would let memvault index, search and hand to an agent what was never a
note. So every path memvault reads a vault file by is checked by its real
path (:func:`os.path.realpath`): inside the vault's real root, and never
under ``/proc``, ``/sys`` or ``/dev`` (even for a vault at ``/``). Symlinks
that stay inside the vault keep working.

:func:`read_inside` checks the file it has actually opened (its
``/proc/self/fd`` link), so a symlink swapped between the scan and the read
cannot slip through either.
"""

from __future__ import annotations

import errno
import os
import stat
from functools import lru_cache
from pathlib import Path

from memvault.vault_io.errors import MemvaultError

#: Kernel file systems: never a note, whatever a symlink or the vault says.
FORBIDDEN = ("/proc", "/sys", "/dev")


class OutsideVaultError(MemvaultError):
    """A path that leads (through a symlink) out of the vault; nothing was read."""

    def __init__(self, shown: str, target: str) -> None:
        super().__init__(f"{shown}: leads outside the vault (to {target}); refused")
        self.target = target


@lru_cache(maxsize=64)
def real_root(root: str) -> str:
    """The vault's real path (it may itself be reached through a symlink)."""
    return os.path.realpath(root)


def is_inside(root_real: str, real: str) -> bool:
    """Whether the real path ``real`` lies in the vault whose real root is ``root_real``."""
    if any(real == f or real.startswith(f + "/") for f in FORBIDDEN):
        return False
    base = root_real.rstrip("/")
    return real == root_real or real.startswith(base + "/")


def outside_target(root: Path, rel: str) -> str | None:
    """Where vault path ``rel`` really leads when that is outside the vault, else None."""
    try:
        real = os.path.realpath(os.path.join(root, rel))
    except (ValueError, OSError):  # a NUL in the name: no such file, nothing to read
        return None
    return None if is_inside(real_root(os.fspath(root)), real) else real


def check_inside(root: Path, rel: str, shown: str | None = None) -> None:
    """Raise :class:`OutsideVaultError` (naming ``shown`` or ``rel``) when
    ``rel`` leads outside the vault; a path that does not exist passes."""
    target = outside_target(root, rel)
    if target is not None:
        raise OutsideVaultError(shown or rel, target)


def read_inside(root: Path, rel: str) -> bytes:
    """The bytes of vault file ``rel``, read only if the file opened is a
    regular file inside the vault; :class:`OutsideVaultError` otherwise,
    :class:`OSError` when it cannot be read."""
    # O_NONBLOCK: a FIFO swapped in for a note must not hang the reader.
    fd = os.open(os.path.join(root, rel), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # no /proc mounted: fall back to resolving the name
            real = os.path.realpath(os.path.join(root, rel))
        if not is_inside(real_root(os.fspath(root)), real):
            raise OutsideVaultError(rel, real)
        os.set_blocking(fd, True)
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
