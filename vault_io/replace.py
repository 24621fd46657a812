"""Replacing a file only if nobody changed it since it was read.

memvault rewrites a person's note only to record what it read (the managed
``version`` keys); the write must never overwrite, unseen, a save that came
in meanwhile (Obsidian, a sync tool delivering another device's version),
nor leave the path empty for a moment. :func:`replace_if_unchanged` swaps
the new bytes in atomically and checks what it swapped out.

An editor saving in place (Obsidian: Node's ``fs.writeFile`` opens the
existing path, truncating it, writes, closes; no rename) may have opened
the old file just before the swap and write into it just after: its save
then goes into the file swapped out, not the one at the path. Checking the
bytes proves nothing about a write a moment later; the kernel can prove
that nobody holds the file open. The swapped-out file is let go only under
a write lease (``F_SETLEASE``), which Linux grants only while no other
descriptor of the file is open anywhere (an editor's, a sync tool's, a
shared mapping's), and which an open of the file breaks (the opener waiting
until it is released), which is seen. Open elsewhere, it is waited for up
to :data:`HELD_WAIT` (a save takes milliseconds), then checked; changed or
still open, it goes back to the path, so the editor's save lands in the note.

What remains:

- an ``open()`` of the note's path that found the old file before the swap
  and reaches it only after this function is done with it (a single system
  call stalled across the swap, the check and the unlink): what it writes
  goes into the unlinked file. One that reaches it while the lease is held
  is seen: before the unlink, the file goes back to the path (the save
  lands in the note); in the moment between the last look at the lease
  and the unlink (two system calls), the save is waited for (up to
  :data:`HELD_WAIT`) and what it wrote by then is kept in the vault's trash,
  not in the note (the editor's next save writes its whole text again);
- where the kernel grants no lease (not Linux; NFS, some FUSE file systems;
  a note owned by another user without ``CAP_LEASE``; ``fs.leases-enable``
  = 0), only the bytes are checked: a writer that holds the old file open
  and writes after that check writes into the unlinked file;
- a save into the old file found after the swap, and another into
  memvault's new one at the path (two saves straddling one version write):
  the second stays in the note, the first is kept in the trash; a save
  into the new file in the moment between that look and a swap back is
  kept in the trash, not in the note;
- a reader holding the old file open longer than :data:`HELD_WAIT` (a sync
  tool hashing a large note) makes the version write give up (the note
  goes back unchanged); it is written on the note's next change.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

#: The vault's trash folder (where a version memvault could not put back goes).
TRASH_FOLDER = ".trash"

#: How long a file memvault swapped out may stay open elsewhere (a save under
#: way) before it is put back at its path (s).
HELD_WAIT = 0.5


def replace_if_unchanged(path: Path, expected: str, data: bytes, trash: Path, *, confine: str | None = None) -> bool:
    """Put ``data`` at ``path`` only if the file there still has hash
    ``expected``, never overwriting unseen a write by someone else (a person
    saving, a sync tool delivering the other device's version), and never
    leaving the path empty for a moment (Obsidian and sync tools read it).

    The new bytes are swapped with the file in one atomic step
    (``renameat2(RENAME_EXCHANGE)``), and what was swapped out is checked
    once no one else has it open (:class:`_SwappedOut`): the file read means
    done; anything else, or a file still open elsewhere (an editor saving in
    place), is swapped back at once, unless ours was saved over meanwhile
    (then that save stays and the other goes to the trash); a write that
    landed in ours after that is kept in the trash, never dropped. Returns whether ``data`` was
    written. Where the kernel cannot exchange, the file is set aside and
    checked instead (:func:`_replace_by_aside`). ``confine``: the real path
    the note's folder must have (:class:`.atomic.Folder`: the write gate's).
    """
    from memvault.vault_io.atomic import Folder, fsync_dir
    from memvault.vault_io.note import content_hash

    with Folder(path.parent, confine) as pinned:
        mode = pinned.mode(path.name)
        if mode is None:
            return False
        name, fd = pinned.create(path.name, mode)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fchmod(fh.fileno(), mode)
                os.fsync(fh.fileno())
            # The first swap in the folder the gate checked (a folder swapped
            # for a symlink since cannot redirect it); the steps after it are by path.
            swapped = _exchange(name, path.name, pinned.fd) if pinned.fd is not None else _exchange(
                path.parent / name, path)
        except BaseException:
            pinned.discard(name)
            raise
    folder, tmp = path.parent, path.parent / name
    try:
        if swapped is None:
            return _replace_by_aside(path, tmp, expected, trash)
        if not swapped:
            return False  # the note is gone: nothing to version
        if _let_go(tmp, lambda b: content_hash(b) == expected, path.name, trash):
            fsync_dir(folder)
            return True
        # Someone else's version was there, or is being written: it goes back
        # where it was, unless ours was saved over meanwhile (an editor's
        # next save, opened after the swap): that save is the newer, it
        # stays, and the one swapped out is kept in the trash. If yet another
        # arrived in ours between this look and the swap back, it comes back
        # out with ours: kept in the trash.
        try:
            overwritten = path.read_bytes() != data
        except OSError:
            overwritten = False
        if overwritten:
            if tmp.exists():
                _to_trash(tmp, path.name, trash)
            return False
        _exchange(tmp, path)
        if tmp.exists() and not _let_go(tmp, lambda b: b == data, path.name, trash):
            _to_trash(tmp, path.name, trash)
        return False
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def remove_if_unchanged(path: Path, expected: str, trash: Path) -> bool:
    """Delete the file at ``path`` only if it still has hash ``expected`` and
    no one else has it open (a save under way), never losing an edit saved
    meanwhile: the file is first renamed aside (atomic), checked there
    (:func:`_let_go`) and unlinked, or put back (a file saved at the path
    meanwhile wins; the one set aside then goes to the trash). Returns
    whether it was deleted; a file already gone is not."""
    import secrets

    from memvault.vault_io.atomic import fsync_dir, truncate_utf8
    from memvault.vault_io.note import content_hash

    aside = path.with_name(f".{truncate_utf8(path.name, 200)}.{secrets.token_hex(4)}.memvault-swap")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return False
    if _let_go(aside, lambda b: content_hash(b) == expected, path.name, trash):
        fsync_dir(path.parent)
        return True
    _put_back(aside, path, trash)
    return False


def _let_go(file: Path, same: Callable[[bytes], bool], name: str, trash: Path) -> bool:
    """Unlink ``file`` (a note swapped out of the path ``name``) if it holds
    bytes ``same`` accepts and no one else has it open; returns whether it
    did. A file still open elsewhere after :data:`HELD_WAIT`, changed or
    unreadable is left where it is."""
    out = _SwappedOut(file)
    try:
        if not out.alone(HELD_WAIT):
            return False
        try:
            data = out.read()
        except OSError:
            return False
        if not same(data) or out.opened():
            return False  # changed, or an open reached it meanwhile: not let go
        out.unlink(data, name, trash)
        return True
    finally:
        out.close()


class _SwappedOut:
    """A file memvault took off a note's path, open read-only under a write
    lease when the kernel grants one: proof that no one else has it open,
    and, until closed, that no one opens it unseen (an open breaks the lease
    and waits until it is released)."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.fd: int | None = None
        self.leased = False

    def alone(self, wait: float) -> bool:
        """Whether no one else has the file open (waiting up to ``wait`` s
        for them to close it); True where no lease can be had (nothing to
        prove it either way: the bytes alone are checked)."""
        try:
            self.fd = os.open(self.file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return True  # read() says what became of it
        got = _lease(self.fd, wait)
        self.leased = got is True
        return got is not False

    def read(self) -> bytes:
        if self.fd is None:
            return self.file.read_bytes()
        chunks, offset = [], 0
        while chunk := os.pread(self.fd, 1 << 20, offset):
            chunks.append(chunk)
            offset += len(chunk)
        return b"".join(chunks)

    def opened(self) -> bool:
        """Whether someone opened the file since it was leased (the lease is
        breaking: the opener waits until it is released)."""
        import fcntl

        return self.leased and self.fd is not None and fcntl.fcntl(self.fd, fcntl.F_GETLEASE) != fcntl.F_WRLCK

    def unlink(self, before: bytes, name: str, trash: Path) -> None:
        """Unlink the file (read as ``before``); if it was opened after all
        in the moment since :meth:`opened` said no (an open of the note's
        path that found this file before the swap), let that writer finish
        (up to :data:`HELD_WAIT`) and keep what it wrote in the trash."""
        import fcntl

        os.unlink(self.file)
        fd = self.fd
        if fd is None or not self.opened():
            return
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)  # the opener goes on...
        self.leased = _lease(fd, HELD_WAIT) is True  # ...and is waited for
        after = self.read()
        if after != before:
            from memvault.vault_io.atomic import atomic_write, free_path

            trash.mkdir(parents=True, exist_ok=True)
            atomic_write(free_path(trash / name), after)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the lease
            self.fd = None


def _lease(fd: int, wait: float) -> bool | None:
    """Take a write lease on ``fd`` (open read-only): True once no other
    descriptor of the file is open (polling up to ``wait`` s), False while
    one still is, None where this system grants no lease."""
    import errno
    import time

    try:
        import fcntl

        setlease, setsig, setown = fcntl.F_SETLEASE, fcntl.F_SETSIG, fcntl.F_SETOWN
    except (ImportError, AttributeError):
        return None
    import signal

    try:
        # A broken lease signals its owner, by default with SIGIO, whose
        # default is to end the process: no signal at all (owner 0), and
        # until that is set, one that is ignored by default.
        fcntl.fcntl(fd, setsig, signal.SIGURG)
    except OSError:
        return None
    end = time.monotonic() + wait
    pause = 0.0005
    while True:
        try:
            fcntl.fcntl(fd, setlease, fcntl.F_WRLCK)
        except OSError as exc:
            if exc.errno != errno.EAGAIN:
                return None  # EINVAL, ENOLCK, EACCES...: no lease on this file here
        else:
            fcntl.fcntl(fd, setown, 0)
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


def _to_trash(file: Path, name: str, trash: Path) -> None:
    from memvault.vault_io.atomic import free_path

    trash.mkdir(parents=True, exist_ok=True)
    os.rename(file, free_path(trash / name))


#: ``renameat2`` flag: swap the two paths atomically (Linux 3.15+, glibc 2.28+).
_RENAME_EXCHANGE = 2


def _exchange(a: Path | str, b: Path | str, folder: int = -100) -> bool | None:
    """Swap two paths (relative to the open ``folder``, else to the working
    folder) atomically: True when done, False when one is missing, None when
    this system cannot (no ``renameat2``, or a file system without the
    exchange)."""
    import ctypes
    import errno

    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    if fn(folder, os.fsencode(a), folder, os.fsencode(b), _RENAME_EXCHANGE) == 0:
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
    changed, or open elsewhere (not waited for: the path is empty
    meanwhile), is put back, one that arrived meanwhile wins. The path is
    empty for that moment. A crash between the steps leaves the note aside
    as a hidden ``.NAME.*.memvault-swap`` file next to it, never deleted."""
    from memvault.vault_io.atomic import fsync_dir
    from memvault.vault_io.note import content_hash

    aside = tmp.with_name(tmp.name.removesuffix(".memvault-tmp") + ".memvault-swap")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return False
    out = _SwappedOut(aside)
    try:
        try:
            before = out.read() if out.alone(0) else None
        except OSError:
            before = None
        if before is None or content_hash(before) != expected:
            out.close()
            _put_back(aside, path, trash)
            return False
        try:
            os.link(tmp, path)
        except FileExistsError:
            out.close()
            _put_back(aside, path, trash)
            return False
        out.unlink(before, path.name, trash)
    finally:
        out.close()
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


