"""Crash-safe file writes inside the vault.

A note is never written in place: the new bytes go to a unique temporary
file in the same folder (so the rename cannot cross file systems), are
fsynced, and replace the note with :func:`os.replace`; then the folder is
fsynced so the rename itself survives a power cut. A reader (Obsidian, the
daemon) sees either the old file or the new one, never half of either.

These are the write gate's tools (:mod:`.gate`): a vault file is written
only through the gate, which checks its place and passes the real path its
folder must have (``confine``, checked again on the temporary file).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

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


class Folder:
    """The folder a write happens in. With ``confine`` (the real path the
    write gate, :mod:`.gate`, checked it has) it is opened once and checked
    by what was opened, and every step of the write (the temp file, the
    rename, the flush) is made relative to that open folder: a folder
    swapped for a symlink after the gate's look is refused
    (:class:`~.confine.OutsideVaultError`) before anything is made, and
    cannot redirect a step. Without ``confine``: plain paths, folders made
    as needed (a file outside any vault)."""

    def __init__(self, path: Path, confine: str | None) -> None:
        self.path = path
        self.fd: int | None = None
        if confine is None:
            path.mkdir(parents=True, exist_ok=True)
            return
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # no /proc: the path's real path, a moment later
            real = os.path.realpath(path)
        if real != confine:
            os.close(fd)
            from memvault.vault_io.confine import OutsideVaultError

            raise OutsideVaultError(str(path), real)
        self.fd = fd

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def at(self, name: str) -> str | Path:
        """How a step names file ``name`` of the folder (with ``dir_fd=self.fd``)."""
        return name if self.fd is not None else self.path / name

    def read(self, name: str) -> bytes | None:
        """The bytes of file ``name``, None if there is none (a symlink in a
        file's place is read where it leads: the gate checked that is in the
        vault; the write itself replaces the link, as it always did)."""
        try:
            fd = os.open(self.at(name), os.O_RDONLY | os.O_CLOEXEC, dir_fd=self.fd)
        except (FileNotFoundError, NotADirectoryError):
            return None
        with os.fdopen(fd, "rb") as fh:
            return fh.read()

    def mode(self, name: str) -> int | None:
        """The permission bits of file ``name``, None if there is none."""
        try:
            return os.stat(self.at(name), dir_fd=self.fd).st_mode & 0o7777
        except FileNotFoundError:
            return None

    def create(self, name: str, mode: int) -> tuple[str, int]:
        """A new temporary file beside ``name``: (its name, an open descriptor).
        A dot-name keeps it out of Obsidian's and our own scans; it is cut by
        bytes so that a note whose own name is near the 255-byte limit (a
        long CJK title) still gets a legal temp name."""
        tmp = f".{truncate_utf8(name, _TMP_NAME_BYTES)}.{secrets.token_hex(4)}.memvault-tmp"
        return tmp, os.open(self.at(tmp), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                            mode, dir_fd=self.fd)

    def replace(self, tmp: str, name: str) -> None:
        os.replace(self.at(tmp), self.at(name), src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def link(self, tmp: str, name: str) -> bool:
        """Give the temporary file ``tmp`` the name ``name`` too, only while no
        file has it (a hard link, which never replaces: False then); the
        caller removes ``tmp``. A file
        system without hard links gets a look, then a rename (a moment's
        window, as before)."""
        try:
            os.link(self.at(tmp), self.at(name), src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno not in _NO_LINKS:
                raise
            if os.path.lexists(self.at(name)) if self.fd is None else _exists_at(self.fd, name):
                return False
            self.replace(tmp, name)
        return True

    def discard(self, tmp: str) -> None:
        try:
            os.unlink(self.at(tmp), dir_fd=self.fd)
        except FileNotFoundError:
            pass

    def sync(self) -> None:
        """Flush the folder's entries (renames, creations) to disk."""
        if self.fd is None:
            fsync_dir(self.path)
        else:
            os.fsync(self.fd)


@contextlib.contextmanager
def _replacing(folder: Folder, name: str, mode: int | None) -> Iterator[BinaryIO]:
    """A temporary file beside ``name`` in ``folder`` that replaces it
    (fsynced, then the folder) when the block ends without an error, else is
    removed. An existing file keeps its permission bits; a new one gets
    ``mode`` or 0o644 filtered by the umask, like any editor would create."""
    keep_mode = folder.mode(name)
    tmp, fd = folder.create(name, 0o644 if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if keep_mode is not None:
                os.fchmod(fh.fileno(), keep_mode)
            os.fsync(fh.fileno())
        folder.replace(tmp, name)
    except BaseException:
        folder.discard(tmp)
        raise
    folder.sync()


def atomic_create(path: Path, data: bytes, *, mode: int | None = None, confine: str | None = None) -> bool:
    """Write a new file ``path`` whole, or not at all: False (nothing
    written) when a file is there already, also one made a moment ago (a
    person's new note, a sync tool delivering one): it is never replaced.
    The bytes are on disk before the file has its name. ``mode`` and
    ``confine`` as in :func:`atomic_write`."""
    with Folder(path.parent, confine) as folder:
        if folder.read(path.name) is not None:
            return False
        tmp, fd = folder.create(path.name, 0o644 if mode is None else mode)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            created = folder.link(tmp, path.name)
        finally:
            folder.discard(tmp)
        folder.sync()
    return created


def atomic_write(path: Path, data: bytes, *, mode: int | None = None, confine: str | None = None) -> bool:
    """Write ``data`` to ``path`` atomically; return False if it already held it.

    Identical bytes are never rewritten (no mtime churn, no sync loops). An
    existing file keeps its permission bits; a new one gets ``mode`` or
    0o644 filtered by the umask. ``confine``: the real path the file's
    folder must have (:class:`Folder`).
    """
    with Folder(path.parent, confine) as folder:
        if folder.read(path.name) == data:
            return False
        with _replacing(folder, path.name, mode) as fh:
            fh.write(data)
    return True


@contextlib.contextmanager
def atomic_stream(path: Path, *, confine: str | None = None) -> Iterator[BinaryIO]:
    """A file to write ``path`` with, whole or not at all: the bytes go to a
    temporary file beside it that replaces it (fsynced) only when the block
    ends without an error. ``confine``: see :class:`Folder`."""
    with Folder(path.parent, confine) as folder, _replacing(folder, path.name, None) as fh:
        yield fh


#: errno values of a file system that makes no hard links (FAT, some network and FUSE ones).
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.ENOSYS, errno.EXDEV}


def _exists_at(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _syncfs(fd: int) -> bool:
    """Flush every file of ``fd``'s file system at once (Linux ``syncfs``);
    False where that call does not exist."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(hasattr(libc, "syncfs") and libc.syncfs(fd) == 0)
    except OSError:
        return False


def atomic_write_many(items: Sequence[tuple[Path, bytes]], confine: Sequence[str] | None = None) -> list[bool]:
    """:func:`atomic_write` for many files, with one flush for all of them.

    Each file is still replaced atomically (temp file, rename), and nothing
    is renamed before every temp file's bytes are on disk; but the bytes are
    flushed by one ``syncfs`` of the file system rather than an ``fsync``
    each, and each folder is flushed once: writing a few thousand notes (an
    import) costs a few flushes instead of thousands. Identical bytes are
    not rewritten; returns, per item, whether it was written. ``confine``:
    per item, the real path its folder must have (:class:`Folder`).
    """
    pending: list[tuple[Folder, str, str]] = []
    written = [False] * len(items)
    fds: list[int] = []
    folders: dict[tuple[Path, str | None], Folder] = {}
    try:
        for i, (path, data) in enumerate(items):
            where = (path.parent, confine[i] if confine is not None else None)
            folder = folders.get(where) or folders.setdefault(where, Folder(*where))
            if folder.read(path.name) == data:
                continue
            keep_mode = folder.mode(path.name)
            tmp, fd = folder.create(path.name, 0o644)
            fds.append(fd)
            pending.append((folder, tmp, path.name))
            if keep_mode is not None:
                os.fchmod(fd, keep_mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            written[i] = True
        if pending and not _syncfs(fds[0]):
            for fd in fds:
                os.fsync(fd)
        for folder, tmp, name in pending:
            folder.replace(tmp, name)
        for folder in {id(f): f for f, _, _ in pending}.values():
            folder.sync()
    except BaseException:
        for folder, tmp, _ in pending:
            folder.discard(tmp)
        raise
    finally:
        for fd in fds:
            os.close(fd)
        for folder in folders.values():
            folder.__exit__()
    return written


def append_lines(path: Path, lines: Sequence[bytes], *, confine: str | None = None) -> int:
    """Append whole ``lines`` to ``path`` (created if needed, never through a
    symlink) and fsync; the bytes written. A torn last line already there (a
    crash mid-append) is closed off first. ``confine``: see :class:`Folder`."""
    with Folder(path.parent, confine) as folder:
        created = folder.mode(path.name) is None
        fd = os.open(folder.at(path.name), os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644, dir_fd=folder.fd)
        try:
            size = os.fstat(fd).st_size
            data = b"".join(lines)
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            folder.sync()
    return len(data)


def atomic_move(src: Path, dest: Path, *, confine: str | None = None) -> None:
    """Rename ``src`` to ``dest`` and make it durable. Refuses to overwrite
    an existing ``dest``: callers pick a free name. ``confine``: the real
    path ``dest``'s folder must have (:class:`Folder`)."""
    with Folder(dest.parent, confine) as folder:
        if folder.mode(dest.name) is not None:
            raise FileExistsError(f"{dest} already exists")
        # The look above leaves a moment in which a file can appear at dest
        # (a person's note, a sync tool's delivery): the rename itself refuses
        # to replace one where the kernel can (renameat2 RENAME_NOREPLACE).
        if not _rename_noreplace(src, dest.name if folder.fd is not None else dest, folder.fd):
            os.rename(src, folder.at(dest.name), dst_dir_fd=folder.fd)
        folder.sync()
    if src.parent != dest.parent:
        fsync_dir(src.parent)


_AT_FDCWD = -100
_RENAME_NOREPLACE = 1


def _rename_noreplace(src: Path, dest: str | Path, dest_dir_fd: int | None) -> bool:
    """Rename ``src`` to ``dest`` (relative to ``dest_dir_fd``) only while
    nothing is there (:class:`FileExistsError` else); False when this system
    or file system cannot (the caller renames after its look instead)."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    sys.audit("os.rename", src, dest, None, dest_dir_fd)  # as os.rename says it: the audit sees every rename
    fd = _AT_FDCWD if dest_dir_fd is None else dest_dir_fd
    if renameat2(_AT_FDCWD, os.fsencode(src), fd, os.fsencode(dest), _RENAME_NOREPLACE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(src), None, str(dest))


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
