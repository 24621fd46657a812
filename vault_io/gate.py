"""The one gate every write into the vault passes.

memvault writes into a folder people sync, commit and open in Obsidian, and
much of what it writes comes from input it must not trust: an export being
imported, a history log another device (or someone else) put in the vault,
an agent's request. So no module writes a vault file by itself: it names the
file and what it is (a :class:`Kind`) to :class:`Gate`, which

1. refuses what is not a plain vault path (absolute, ``..``, an empty part);
2. refuses a hidden part (``.obsidian``, ``.git``, any dot-folder or
   dot-file) except memvault's own places: the trash (``.trash/NAME``) and
   the history folder (``Memory/.memvault/history/NAME.jsonl``), which holds
   history logs and nothing else;
3. limits each kind to its place (below);
4. checks where the parent folder really is, through every symlink: inside
   the vault, and there too neither hidden nor the history folder (unless
   the kind's place is); missing folders are made one at a time, each
   checked before the next is made in it, so none is made outside;
5. hands the write to the primitive (:mod:`.atomic`, :mod:`.replace`) with
   the parent's real path, which the primitive checks again on the temporary
   file it opened: a folder swapped for a symlink after the check is caught
   there, before anything is renamed into place.

=============  ==============================================================
kind           its place
=============  ==============================================================
memory         a new memory note: ``<memory folder>/<type>/NAME.md``
note           a visible Markdown note where it is (or where it was: a
               restore), e.g. a memory note or a memory source rewritten
conflict copy  ``NAME.md`` in the folder of the note it clashed with
session        a new session note: ``<memory folder>/episodic/sessions/NAME.md``
imported       a document under the import folder: ``<folder>/.../NAME.md``
view           ``<memory folder>/NAME.base``
trash          ``.trash/NAME``
history        ``<history folder>/NAME.jsonl``
export         any visible path (a file or folder the person named, when it
               is inside the vault)
=============  ==============================================================

A refused write is one :class:`WriteRefused` line (exit code 1) naming the
path and why; nothing has been written by then. ``tests/test_gate.py``
checks that no other module writes into the vault (it imports no write
primitive and makes no raw write call), and that every write a command makes
passed here.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import BinaryIO

from memvault.vault_io import atomic
from memvault.vault_io.confine import is_inside, real_root
from memvault.vault_io.errors import MemvaultError

#: The vault's trash folder (Obsidian's "move to .trash"; where memvault moves notes).
TRASH_FOLDER = ".trash"
#: Session notes' folder inside the memory folder.
SESSIONS = "episodic/sessions"


class Kind(Enum):
    """What a write puts in the vault; each kind has its place (module docstring)."""

    MEMORY = "memory note"
    NOTE = "note"
    CONFLICT = "conflict copy"
    SESSION = "session note"
    IMPORTED = "imported document"
    VIEW = "view"
    TRASH = "trash"
    HISTORY = "history log"
    EXPORT = "export"


#: The file name ending each kind must have ("": any).
_SUFFIX = {Kind.MEMORY: ".md", Kind.NOTE: ".md", Kind.CONFLICT: ".md", Kind.SESSION: ".md",
           Kind.IMPORTED: ".md", Kind.VIEW: ".base", Kind.TRASH: "", Kind.HISTORY: ".jsonl", Kind.EXPORT: ""}


class WriteRefused(MemvaultError):
    """A write the gate refused: the path is not where that kind of file goes
    (or leads there through a symlink). Nothing was written."""

    def __init__(self, rel: str, why: str) -> None:
        super().__init__(f"{rel}: {why}; not written")
        self.rel = rel


@dataclass(frozen=True)
class Place:
    """A vault path the gate let through: where to write it (``path``), and
    the real path its folder has (the primitive checks its temp file there)."""

    rel: str
    kind: Kind
    path: Path
    folder_real: str


def _parts(rel: str) -> list[str]:
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\x00" in rel:
        raise WriteRefused(repr(rel) if not isinstance(rel, str) or not rel else rel, "not a path inside the vault")
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise WriteRefused(rel, "not a plain path inside the vault (empty, '.' or '..' parts)")
    return parts


def _under(parts: Sequence[str], folder: Sequence[str]) -> bool:
    return len(parts) > len(folder) and list(parts[: len(folder)]) == list(folder)


class Gate:
    """The places of one vault (its root, memory folder, history folder and
    memory types) and the writes into them (module docstring)."""

    def __init__(self, root: Path, memory_folder: str, history_folder: str, memory_types: Sequence[str]) -> None:
        """``history_folder`` is vault-relative, ``memory_types`` the type folders memory notes go in."""
        self.root = root
        self.memory = memory_folder.strip("/").split("/")
        self.history = history_folder.strip("/").split("/")
        self.types = frozenset(memory_types)

    # -- the check -------------------------------------------------------------------

    def check(self, rel: str, kind: Kind, *, near: str | None = None, folder: str | None = None) -> None:
        """Raise :class:`WriteRefused` unless ``rel`` is a place for ``kind``
        (``near``: the note a conflict copy goes beside; ``folder``: the
        import folder of an imported document). Writes nothing."""
        parts = _parts(rel)
        self._rules(rel, parts, kind, near, folder)
        self._real(rel, parts, kind)

    def allows(self, rel: str, kind: Kind, *, near: str | None = None, folder: str | None = None) -> bool:
        """Whether :meth:`check` lets ``rel`` through."""
        try:
            self.check(rel, kind, near=near, folder=folder)
        except WriteRefused:
            return False
        return True

    def _rules(self, rel: str, parts: list[str], kind: Kind, near: str | None, folder: str | None) -> None:
        """The rules on the path as named (steps 1 to 3)."""
        name = parts[-1]
        if not name.endswith(_SUFFIX[kind]) or name == _SUFFIX[kind]:
            raise WriteRefused(rel, f"a {kind.value} is a {_SUFFIX[kind]} file")
        self._hidden(rel, parts, kind)
        memory = self.memory
        if kind is Kind.MEMORY and not (
                len(parts) == len(memory) + 2 and _under(parts, memory) and parts[len(memory)] in self.types):
            raise WriteRefused(rel, f"a new memory note goes in {'/'.join(memory)}/<type>/")
        if kind is Kind.SESSION and not (
                len(parts) == len(memory) + 3 and _under(parts, [*memory, *SESSIONS.split("/")])):
            raise WriteRefused(rel, f"a new session note goes in {'/'.join(memory)}/{SESSIONS}/")
        if kind is Kind.VIEW and not (len(parts) == len(memory) + 1 and _under(parts, memory)):
            raise WriteRefused(rel, f"a view goes in {'/'.join(memory)}/")
        if kind is Kind.CONFLICT:
            if near is None or posixpath.dirname(near) != posixpath.dirname(rel) or near == rel:
                raise WriteRefused(rel, f"a conflict copy goes beside its note ({near or 'none named'})")
        if kind is Kind.IMPORTED and not (folder and _under(parts, folder.strip("/").split("/"))):
            raise WriteRefused(rel, f"an imported document goes in the import folder ({folder})")

    def _hidden(self, rel: str, parts: Sequence[str], kind: Kind) -> None:
        """No hidden part but memvault's own places; the history folder holds logs only."""
        if kind is Kind.HISTORY:
            if not (len(parts) == len(self.history) + 1 and _under(parts, self.history)) or parts[-1].startswith("."):
                raise WriteRefused(rel, f"a history log goes in {'/'.join(self.history)}/")
            return
        if _under(parts, self.history):
            raise WriteRefused(rel, f"the history folder ({'/'.join(self.history)}) holds history logs only")
        if kind is Kind.TRASH:
            if len(parts) != 2 or parts[0] != TRASH_FOLDER or parts[1].startswith("."):
                raise WriteRefused(rel, f"memvault's trash is {TRASH_FOLDER}/NAME")
            return
        hidden = next((p for p in parts if p.startswith(".")), None)
        if hidden is not None:
            raise WriteRefused(rel, f"{hidden!r} is hidden (a dot-folder or dot-file memvault does not write)")

    def _real(self, rel: str, parts: list[str], kind: Kind) -> None:
        """The rules on where the path really leads (step 4), as far as it exists."""
        top = real_root(os.fspath(self.root))
        real = self._real_path(rel, parts, top)
        history = os.path.realpath(self.root.joinpath(*self.history))
        if kind is Kind.HISTORY:
            if os.path.dirname(real) != history or not is_inside(top, history):
                raise WriteRefused(rel, f"leads out of the history folder (to {real})")
            return
        if real == history or real.startswith(history + "/"):
            raise WriteRefused(rel, "leads into the history folder, which holds history logs only")
        found = os.path.relpath(real, top).replace(os.sep, "/")
        if found != rel:
            self._hidden(rel, found.split("/"), kind)

    def _real_path(self, rel: str, parts: list[str], top: str) -> str:
        """Where ``rel`` really leads: its deepest existing folder resolved,
        and the file itself when it is a symlink; :class:`WriteRefused` when
        that is outside the vault."""
        here = len(parts) - 1
        while here > 0 and not os.path.isdir(os.path.join(self.root, *parts[:here])):
            here -= 1
        folder = os.path.realpath(os.path.join(self.root, *parts[:here])) if here else top
        real = os.path.join(folder, *parts[here:])
        if os.path.islink(real):
            real = os.path.realpath(real)
        if not is_inside(top, real) or real == top:
            raise WriteRefused(rel, f"leads outside the vault (to {real})")
        return real

    # -- making the place ------------------------------------------------------------

    def place(self, rel: str, kind: Kind, *, near: str | None = None, folder: str | None = None) -> Place:
        """:meth:`check`, then make the missing folders of ``rel`` (each
        checked inside the vault before anything is made in it)."""
        self.check(rel, kind, near=near, folder=folder)
        parts = rel.split("/")
        path = self.root.joinpath(*parts)
        if not path.parent.is_dir():
            self._make_folders(rel, parts)
            # A folder swapped for a symlink while they were made: checked again as a whole.
            self._real(rel, parts, kind)
        return Place(rel, kind, path, os.path.realpath(path.parent))

    def _make_folders(self, rel: str, parts: list[str]) -> None:
        """Make the missing folders of ``rel`` one at a time, each checked
        inside the vault before the next is made in it."""
        self.root.mkdir(parents=True, exist_ok=True)  # the vault's own folder, wherever the person put it
        top = real_root(os.fspath(self.root))
        current = os.fspath(self.root)
        for part in parts[:-1]:
            current = os.path.join(current, part)
            try:
                os.mkdir(current)
            except FileExistsError:
                pass
            real = os.path.realpath(current)
            if not is_inside(top, real) or not os.path.isdir(real):
                raise WriteRefused(rel, f"leads outside the vault (to {real})")

    # -- the writes --------------------------------------------------------------------

    def write(self, rel: str, data: bytes, kind: Kind, *, mode: int | None = None, near: str | None = None,
              folder: str | None = None) -> bool:
        """Write ``data`` at ``rel`` atomically (:func:`.atomic.atomic_write`);
        False when the file already held it."""
        where = self.place(rel, kind, near=near, folder=folder)
        return atomic.atomic_write(where.path, data, mode=mode, confine=where.folder_real)

    def create(self, rel: str, data: bytes, kind: Kind, *, mode: int | None = None, near: str | None = None,
               folder: str | None = None) -> bool:
        """Write a new file at ``rel`` (:func:`.atomic.atomic_create`): False,
        nothing written, when a file is there, also one a person or a sync
        tool made a moment ago; it is never replaced."""
        where = self.place(rel, kind, near=near, folder=folder)
        return atomic.atomic_create(where.path, data, mode=mode, confine=where.folder_real)

    @contextlib.contextmanager
    def stream(self, rel: str, kind: Kind) -> Iterator[BinaryIO]:
        """A file to write ``rel`` with, whole or not at all (:func:`.atomic.atomic_stream`)."""
        where = self.place(rel, kind)
        with atomic.atomic_stream(where.path, confine=where.folder_real) as fh:
            yield fh

    def vault_rel(self, path: Path) -> str | None:
        """The vault path of ``path`` (absolute, or relative to the working
        folder) when its folder, followed through its symlinks, is in the
        vault; None when it is outside (a place the person chose)."""
        top = real_root(os.fspath(self.root))
        folder = os.path.realpath(Path(path).parent)
        if not is_inside(top, folder):
            return None
        return os.path.relpath(os.path.join(folder, Path(path).name), top).replace(os.sep, "/")

    def write_many(self, items: Sequence[tuple[str, bytes]], kind: Kind) -> list[bool]:
        """:meth:`write` for many files of one kind with one flush
        (:func:`.atomic.atomic_write_many`); every place is checked first."""
        places = [self.place(rel, kind) for rel, _ in items]
        return atomic.atomic_write_many([(p.path, data) for p, (_, data) in zip(places, items, strict=True)],
                                        confine=[p.folder_real for p in places])

    def replace(self, rel: str, expected: str, data: bytes, kind: Kind = Kind.NOTE) -> bool:
        """Put ``data`` at ``rel`` only if the file there still has hash
        ``expected``, never losing an edit saved meanwhile
        (:func:`.replace.replace_if_unchanged`: exchange, then check); whether
        it was written."""
        from memvault.vault_io.replace import replace_if_unchanged

        where = self.place(rel, kind)
        return replace_if_unchanged(where.path, expected, data, self._trash(), confine=where.folder_real)

    def move(self, src: str, dest: str, kind: Kind, *, near: str | None = None) -> None:
        """Rename vault file ``src`` to ``dest`` (a place for ``kind``; never over a file)."""
        self._source(src)
        where = self.place(dest, kind, near=near)
        atomic.atomic_move(self.root / src, where.path, confine=where.folder_real)

    def to_trash(self, src: str) -> str:
        """Move vault file ``src`` into the trash under a free name; its trash path."""
        self._source(src)
        free = atomic.free_path(self.root / TRASH_FOLDER / posixpath.basename(src))
        dest = f"{TRASH_FOLDER}/{free.name}"
        self.move(src, dest, Kind.TRASH)
        return dest

    def remove(self, rel: str) -> None:
        """Delete vault file ``rel`` (memvault's own: a note it wrote, a view,
        a temp file), never through a folder that leads out of the vault."""
        self._source(rel)
        path = self.root / rel
        os.unlink(path)
        atomic.fsync_dir(path.parent)

    def remove_if_unchanged(self, rel: str, expected: str) -> bool:
        """Delete the note ``rel`` only if it still has hash ``expected``,
        never losing an edit saved meanwhile (:func:`.replace.remove_if_unchanged`)."""
        from memvault.vault_io.replace import remove_if_unchanged

        self._source(rel)
        return remove_if_unchanged(self.root / rel, expected, self._trash())

    def _trash(self) -> Path:
        """The trash folder, checked (made only when something goes in it)."""
        self.check(f"{TRASH_FOLDER}/x", Kind.TRASH)
        return self.root / TRASH_FOLDER

    def _source(self, rel: str) -> None:
        """A file memvault moves or deletes: a plain vault path that does not
        lead out of the vault through a folder."""
        parts = _parts(rel)
        real = os.path.realpath(self.root.joinpath(*parts).parent)
        if not is_inside(real_root(os.fspath(self.root)), real):
            raise WriteRefused(rel, f"leads outside the vault (to {real})")

    def append_log(self, rel: str, lines: Sequence[bytes]) -> int:
        """Append whole ``lines`` to history log ``rel`` (never through a
        symlink); the bytes written (:func:`.atomic.append_lines`)."""
        where = self.place(rel, Kind.HISTORY)
        return atomic.append_lines(where.path, lines, confine=where.folder_real)

    def rewrite_log(self, rel: str, lines: Sequence[bytes]) -> None:
        """Write history log ``rel`` whole, atomically (a compaction)."""
        where = self.place(rel, Kind.HISTORY)
        atomic.atomic_write(where.path, b"".join(lines), confine=where.folder_real)

    def free(self, rel: str) -> str:
        """``rel``, or ``NAME 2.md``... whichever is free (:func:`.atomic.free_path`)."""
        return atomic.free_path(self.root / rel).relative_to(self.root).as_posix()


def data_file(data_dir: Path, name: str) -> Path:
    """A file directly in memvault's data dir, for a write that replaces one
    (a restored ``state.db``): refused when ``name`` is not one plain name or
    the folder is reached through a symlink elsewhere."""
    if not name or "/" in name or name in (".", ".."):
        raise WriteRefused(name, "not a file name of the data dir")
    real = os.path.realpath(data_dir)
    if os.path.realpath(data_dir / name) != os.path.join(real, name):
        raise WriteRefused(str(data_dir / name), "is a symlink; the data dir holds memvault's own files")
    return Path(real) / name


def export_target(root: Path, path: Path) -> None:
    """Refuse an export (a file, or a folder of notes) whose path, once its
    symlinks are followed, lies in a hidden part of the vault at ``root``
    (or in its history folder, which :class:`Gate` keeps for logs); an
    export outside the vault is the person's to place."""
    top = real_root(os.fspath(root))
    real = os.path.realpath(path)
    if not is_inside(top, real) or real == top:
        return
    rel = os.path.relpath(real, top).replace(os.sep, "/")
    hidden = next((p for p in rel.split("/") if p.startswith(".")), None)
    if hidden is not None:
        raise WriteRefused(str(path), f"leads into {hidden!r}, a hidden part of the vault")
