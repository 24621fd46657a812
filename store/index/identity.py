"""Which trace id each note takes, the same on every device.

A note's identity comes from the vault alone: its front-matter ``id`` (or an
id derived from its path), and, when two memory notes claim one id, the
identity rule (:func:`identity_key`) says which keeps it. :class:`NoteIdentity`
settles the ids of a reconcile batch and writes the front-matter lines
memvault manages (``id``, ``created``, ``version``, ``version_hash``) into
memory notes, so every device, a rename or a rebuild reads the same ones.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from memvault.store.db import records as rec
from memvault.store.index.classify import is_memory_note
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.gate import Gate
from memvault.vault_io.note import ParsedNote
from memvault.vault_io.scan import FileStat, stat_file

if TYPE_CHECKING:
    from memvault.store.index.reconcile import NoteChange

log = logging.getLogger(__name__)


def derived_id(path: str, salt: int = 0, prefix: str = "n") -> str:
    """A stable trace id for a note that has no front-matter ``id``
    (prefix ``n`` for notes, ``m`` for memories)."""
    seed = path if salt == 0 else f"{path}\x00{salt}"
    return f"{prefix}-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:12]


def frontmatter_id(note: ParsedNote) -> str | None:
    """The note's own ``id`` property, when it is a usable scalar."""
    value = note.frontmatter.get("id")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    text = str(value).strip()
    return text if 0 < len(text) <= 200 and "\n" not in text else None


def untrusted(st: FileStat) -> FileStat:
    """``st`` for a stat taken *after* its file's content was read: the file
    may have been replaced in between (a sync tool delivering the other
    device's version), so the stat may describe other bytes than the ones
    read. Recorded with ctime 0, the file is read again on its next look."""
    return dataclasses.replace(st, ctime_ns=0)


def identity_key(note: ParsedNote) -> tuple[int, str, bytes]:
    """Which of two notes claiming one id keeps it: the one whose ``created``
    front-matter is oldest (as a UTC instant; a note without a readable one
    comes after any with one), then the path in byte order. It reads the
    vault alone, so every device picks the same note whatever order the
    files reached it in."""
    created = note.frontmatter.get("created")
    when = _utc(created) if isinstance(created, (str, datetime.date)) else None
    return (0 if when else 1, when or "", note.path.encode("utf-8"))


def _utc(value: object) -> str | None:
    """A front-matter time as a sortable UTC ISO string, else None."""
    try:
        if isinstance(value, datetime.datetime):
            when = value
        elif isinstance(value, datetime.date):
            when = datetime.datetime(value.year, value.month, value.day)
        else:
            when = datetime.datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return when.astimezone(datetime.timezone.utc).isoformat()


def is_copy(note: ParsedNote) -> bool:
    """A conflict copy, memvault's or a sync tool's: it carries the id of the
    memory it clashed with, but it is not that memory."""
    from memvault.store.index.classify import is_conflict_copy
    from memvault.vault_io.sync_conflicts import sync_conflict

    return is_conflict_copy(note) or sync_conflict(note.path) is not None


def with_error(note: ParsedNote, message: str) -> ParsedNote:
    from dataclasses import replace

    return replace(note, error=f"{note.error}; {message}" if note.error else message)


class NoteIdentity:
    """Settles the trace ids of a reconcile's changed notes, and writes the
    identity lines memvault manages into memory notes."""

    def __init__(self, root: Path, con: apsw.Connection, memory_folder: str, gate: Gate) -> None:
        self.root = root
        self.gate = gate
        self.con = con
        self.memory_folder = memory_folder

    def assign_ids(self, changes: list[NoteChange], known: dict[str, rec.FileRow], taken: dict[str, str]) -> None:
        """Settle each changed note's trace id before anything is written.

        Existing and moved notes keep their id unless their front-matter names
        another; a new note takes its front-matter id, else one derived from
        its path. A conflict copy (memvault's or a sync tool's) never takes
        the id it carries: it is not the memory. When two memory notes claim
        one id (a rename on one device racing an edit on another), the
        identity rule (:func:`identity_key`, the vault alone) says which keeps
        it, whichever this device saw first; the other gets an id derived from
        its content and path, written into its front-matter
        (:meth:`_give_up_id`), so every device ends with the same ids. Other
        notes that claim a held id fall back to a derived id and are told why.
        ``taken`` (id -> path holding it) is updated as ids are settled;
        ``changes`` may grow by a note that gives its id up.
        """
        for c in changes:
            if c.old_path and not c.trace_id:
                c.trace_id = known[c.old_path].trace_id or ""
        for c in changes:  # existing notes first: they already hold their ids
            if c.trace_id:
                taken[c.trace_id] = c.stat.path
        i = 0
        while i < len(changes):
            c = changes[i]
            i += 1
            wanted = None if is_copy(c.note) else frontmatter_id(c.note)
            if wanted and wanted != c.trace_id:
                holder = taken.get(wanted)
                if holder is None or holder == c.stat.path or (c.old_path and holder == c.old_path):
                    if c.trace_id:
                        taken.pop(c.trace_id, None)
                    c.trace_id = wanted
                    taken[wanted] = c.stat.path
                    continue
                if c.memory and self._contest(c, wanted, holder, changes, known, taken):
                    continue
                c.note = with_error(c.note, f"id {wanted!r} is already used by {holder}; using a derived id")
            if not c.trace_id:
                salt = 0
                prefix = "m" if c.memory else "n"
                while (candidate := derived_id(c.stat.path, salt, prefix)) in taken:
                    salt += 1
                c.trace_id = candidate
                taken[candidate] = c.stat.path

    def _contest(
        self, c: NoteChange, wanted: str, holder: str, changes: list[NoteChange],
        known: dict[str, rec.FileRow], taken: dict[str, str],
    ) -> bool:
        """Two notes claim memory id ``wanted``: ``c`` and the note at
        ``holder``. Settle it by the identity rule; False leaves ``c`` to the
        old fallback (a derived id in the index only): a store-side write of
        that memory is still pending, or the holder is not a memory."""
        if self.con.execute("SELECT 1 FROM state.outbox WHERE trace_id = ?", (wanted,)).fetchone():
            return False
        in_batch = next((h for h in changes if h.stat.path == holder), None)
        if in_batch is not None:
            holder_note: ParsedNote | None = in_batch.note
        else:
            holder_note = self._read_note(holder)
            if holder_note is None:
                # The holder's note is gone from disk (a rename whose deletion
                # the index has not seen yet): the claimant is that note.
                row = rec.get_file(self.con, holder)
                self._take(c, wanted, taken)
                if row is not None and row.trace_id == wanted:
                    c.displaces, c.takeover = holder, True
                return True
        if holder_note is None or not is_memory_note(holder_note, self.memory_folder):
            return False
        if frontmatter_id(holder_note) == wanted and identity_key(holder_note) <= identity_key(c.note):
            # The holder keeps the id: the claimant gives it up.
            new_id = self._split_id(wanted, c.note, taken)
            c.note, c.stat = self._give_up_id(c.note, c.stat, new_id)
            c.resolutions = c.keys = None
            if c.trace_id:
                taken.pop(c.trace_id, None)
            c.trace_id = new_id
            taken[new_id] = c.stat.path
            return True
        # The claimant keeps the id; the holder gives it up (or, its
        # front-matter naming another id by now, is indexed afresh).
        if in_batch is None:
            st = stat_file(self.root, holder)
            if st is None:
                return False
            from memvault.store.index.reconcile import NoteChange  # reconcile imports this module

            in_batch = NoteChange(untrusted(st), holder_note, holder, memory=True)
            row = rec.get_file(self.con, holder)
            if row is not None:
                known[holder] = row
            changes.append(in_batch)
        in_batch.own_trace = True
        in_batch.resolutions = in_batch.keys = None
        taken.pop(wanted, None)
        if frontmatter_id(holder_note) == wanted:
            new_id = self._split_id(wanted, holder_note, taken)
            in_batch.note, in_batch.stat = self._give_up_id(holder_note, in_batch.stat, new_id)
            in_batch.trace_id = new_id
            taken[new_id] = holder
        else:
            in_batch.trace_id = ""  # settled when the loop reaches it
        self._take(c, wanted, taken)
        c.takeover = True
        return True

    @staticmethod
    def _take(c: NoteChange, wanted: str, taken: dict[str, str]) -> None:
        if c.trace_id:
            taken.pop(c.trace_id, None)
        c.trace_id = wanted
        taken[wanted] = c.stat.path

    def _read_note(self, path: str) -> ParsedNote | None:
        """The note at ``path`` as it is on disk now (None: gone, unreadable)."""
        from memvault.vault_io.confine import read_inside
        from memvault.vault_io.parser import parse_note

        try:
            return parse_note(path, read_inside(self.root, path))
        except (OSError, MemvaultError):
            return None

    def _split_id(self, contested: str, note: ParsedNote, taken: dict[str, str]) -> str:
        """The id a note gives up ``contested`` for: derived from that id, the
        note's path and its text, so every device that sees the same vault
        derives the same one; a collision with another live note (by what the
        vault holds, never by what this device saw) moves to the next."""
        body = " ".join(note.body.split())
        n = 0
        while True:
            seed = f"{contested}\x00{note.path}\x00{body}" + (f"\x00{n}" if n else "")
            candidate = "m-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:12]
            if taken.get(candidate) in (None, note.path):
                return candidate
            n += 1

    def _give_up_id(self, note: ParsedNote, st: FileStat, new_id: str) -> tuple[ParsedNote, FileStat]:
        """Write ``new_id`` into the note's front-matter (the ``id`` line alone)."""
        return self._set_managed(note, st, {"id": new_id})

    def write_identity(self, c: NoteChange) -> None:
        """A memory note made by hand (no ``id`` or no ``created`` in its
        front-matter) gets the id it was given and its ``created`` (its
        mtime, which a sync tool carries) written in, those lines alone,
        once: identity and creation time then come from the vault, so
        another device, a rename, or a rebuild reads the same ones (each
        device took its own otherwise: ``created`` from its clock, the id
        from the path it first saw the note at)."""
        from memvault.store.index.classify import iso_from_ns

        if not c.memory or c.note.error or not c.trace_id or is_copy(c.note):
            return
        values: dict[str, object] = {}
        if "id" not in c.note.frontmatter:
            values["id"] = c.trace_id
        if "created" not in c.note.frontmatter:
            values["created"] = iso_from_ns(c.stat.mtime_ns)
        if values:
            c.note, c.stat = self._set_managed(c.note, c.stat, values)
            c.resolutions = c.keys = None

    def count_edit(self, c: NoteChange) -> None:
        """A memory note whose text no longer matches the fingerprint of the
        version its front-matter names was edited (here, or on another device
        whose sync brought it): write the next version counter, the new
        fingerprint and ``updated`` (the time of the edit: the file's mtime,
        which a sync tool carries; never earlier than the ``updated`` it
        has) into it, those lines alone, in one exchange-and-check replace,
        so the version and its time are the same on every device and each
        edit memvault reads counts once. Every device that does this writes
        the same bytes; a note without a counter is left alone (memvault adds
        one on its own next write)."""
        from memvault.store.index.classify import iso_from_ns, memory_type
        from memvault.vault_io.memory_note import read_memory, text_fingerprint
        from memvault.vault_io.secrets import redact

        if not c.memory or c.note.error:
            return
        doc = read_memory(c.note.frontmatter, c.note.body)
        if doc.version is None:
            return
        type_, _ = memory_type(c.note, self.memory_folder)
        fingerprint = text_fingerprint(redact(doc.content)[0], type_, doc.tags)
        if fingerprint == doc.version_hash:
            return
        values: dict[str, object] = {"version": doc.version + 1, "version_hash": fingerprint}
        edited = iso_from_ns(c.stat.mtime_ns)
        current = c.note.frontmatter.get("updated")
        was = _utc(current) if current is not None else None
        # No line: one is added. A value that is not a time is the person's: left as it is.
        if current is None or (was is not None and was < (_utc(edited) or edited)):
            values["updated"] = edited
        c.note, c.stat = self._set_managed(c.note, c.stat, values)
        c.resolutions = c.keys = None

    def _set_managed(self, note: ParsedNote, st: FileStat, values: dict[str, object]) -> tuple[ParsedNote, FileStat]:
        """Set front-matter keys memvault manages in a note (their lines alone,
        atomically, the file's mode kept) when the file still holds the bytes
        ``note`` was read from; returns the note and its stat as they are now.
        A note changed meanwhile is left alone: the next reconcile of it
        settles the same rule again."""
        from memvault.vault_io.confine import read_inside
        from memvault.vault_io.fm_edit import duplicate_keys, edit_frontmatter
        from memvault.vault_io.note import content_hash
        from memvault.vault_io.parser import parse_note

        try:
            data = read_inside(self.root, note.path)
            if content_hash(data) != note.hash:
                return note, st
            text = data.decode("utf-8")
            if set(duplicate_keys(text)) & set(values):
                return note, st  # a line edit could change the wrong line
            new = edit_frontmatter(text, values).encode("utf-8")
            if new == data:
                return note, st
            if not self.gate.replace(note.path, note.hash, new):
                return note, st
        except (OSError, UnicodeDecodeError, MemvaultError) as exc:
            log.warning("%s: could not write %s into its front-matter: %s", note.path, ", ".join(values), exc)
            return note, st
        fresh = stat_file(self.root, note.path)
        return parse_note(note.path, new), untrusted(fresh if fresh is not None else st)
