"""Marking notes as memory sources, and listing sources and their facts.

``memvault source add`` inserts ``memory: source`` into a note's
front-matter (creating the block if there is none), ``source remove``
deletes it again (and ``memory_source`` if present); every other byte of
the note stays identical. Each then indexes the note at once, so its facts
appear (or are retired) before the command returns.

A note marked only by the ``#memory/source`` tag or by a ``sources`` glob
cannot be unmarked by editing a key: ``remove`` says how it is marked and
leaves the file alone (:class:`SourceError`, exit code 1). Remove the tag in
the note, or change the glob in the config.
"""

from __future__ import annotations

import builtins
import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.store.db import records as rec
from memvault.store.db.rows import count, first, rows
from memvault.store.facts import rows as sf
from memvault.vault_io.confine import OutsideVaultError, check_inside, read_inside
from memvault.vault_io.errors import MemvaultError, UsageError
from memvault.vault_io.note import NoteReadError, ParsedNote, content_hash
from memvault.vault_io.parser import parse_note
from memvault.vault_io.scan import is_hidden
from memvault.vault_io.sources import (
    MarkError,
    SourceMarks,
    mark_text,
    source_marks,
    unmark_text,
)

if TYPE_CHECKING:
    from memvault.store.answers.browse.facts import SourceFacts
    from memvault.store.answers.review import MemorySource
    from memvault.store.api_sync import SyncReport
    from memvault.store.context import StoreContext

#: How often a note that changed while being marked is read and marked again.
REWRITE_TRIES = 3

#: Reconciles these vault paths now, with everything a sync does after it
#: (the facade's ``sync_paths``).
SyncPaths = Callable[[list[str]], "SyncReport"]


class SourceError(MemvaultError):
    """A source operation that cannot be done (runtime problem, exit code 1)."""


class SourcePathError(UsageError):
    """A PATH argument that does not name a note of the vault (exit code 2)."""


@dataclass
class SourceResult:
    """What ``source add`` / ``source remove`` did to one note."""

    path: str
    action: str  # marked | already | unmarked | not-a-source | still-marked | refused
    marks: list[str] = field(default_factory=list)
    facts: int = 0
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"path": self.path, "action": self.action, "marks": self.marks, "facts": self.facts,
                "message": self.message}


def vault_relative(root: Path, arg: str, *, must_exist: bool = True) -> str:
    """The vault-relative POSIX path of a PATH argument.

    Relative paths are taken from the vault root; absolute ones must lie
    inside the vault; ``.md`` may be left out. Raises :class:`SourcePathError` otherwise, or for a
    file that is not a visible Markdown note (or is missing, if
    ``must_exist``); :class:`OutsideVaultError` for a symlink out of the vault.
    """
    raw = Path(arg).expanduser()
    if raw.is_absolute():
        # Taken by name, not through symlinks: a vault path that is a symlink
        # out of the vault is refused below as such, not as "outside".
        rel = _under(Path(os.path.abspath(raw)), Path(os.path.abspath(root)), root.resolve())
        if rel is None:  # reached through a symlink above the vault (~/Notes -> /data/notes)
            rel = _under(raw.resolve(), root.resolve())
        if rel is None:
            raise SourcePathError(f"{arg} is outside the vault {root}")
    else:
        rel = posixpath.normpath(arg.replace("\\", "/"))
        if rel.startswith("../") or rel == ".." or rel.startswith("/"):
            raise SourcePathError(f"{arg} is outside the vault {root}")
    if rel in ("", "."):
        raise SourcePathError(f"{arg} is the vault folder, not a note")
    if not rel.lower().endswith(".md"):
        if (root / rel).exists():
            raise SourcePathError(f"{arg} is not a Markdown note (.md)")
        rel += ".md"  # "About me" names "About me.md", as in a wikilink
    if is_hidden(rel):
        raise SourcePathError(f"{arg} is in a hidden folder that memvault does not index")
    check_inside(root, rel, shown=arg)  # a symlink out of the vault: exit 1, nothing read
    if must_exist and not (root / rel).is_file():
        raise SourcePathError(f"{rel}: no such note in the vault {root}")
    return rel


def _under(path: Path, *roots: Path) -> str | None:
    """``path`` relative to the first of ``roots`` it lies under, as POSIX; None if none."""
    for base in roots:
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            continue
    return None


class Sources:
    """Mark, unmark and list memory sources of one vault."""

    def __init__(self, ctx: StoreContext, sync_paths: SyncPaths, refresh_globs: Callable[[], None]) -> None:
        """The sources of ``ctx``'s vault: ``sync_paths`` indexes a note just
        marked or unmarked; ``refresh_globs`` brings the facts in line with
        changed ``sources`` globs before a listing."""
        self.ctx = ctx
        self.root = ctx.root
        self.globs: list[str] = list(ctx.settings.sources)
        self.sync_paths = sync_paths
        self.refresh_globs = refresh_globs

    def _read(self, rel: str) -> tuple[bytes, ParsedNote]:
        try:
            data = read_inside(self.root, rel)
            note = parse_note(rel, data)
        except OSError as exc:
            raise SourceError(f"{rel}: cannot read: {exc.strerror}") from None
        except (NoteReadError, OutsideVaultError) as exc:
            raise SourceError(str(exc)) from None
        if note.undecodable:
            # Marking rewrites the file, which would turn the bad bytes into
            # U+FFFD for good: a person must fix them first.
            raise SourceError(f"{rel}: {note.error.split(';')[0] if note.error else 'not valid UTF-8'}; "
                              "fix the bytes in an editor before marking or unmarking it")
        return data, note

    def _write(self, rel: str, data: bytes, note: ParsedNote, edit: Callable[[str, ParsedNote], str]) -> bool:
        """Write ``edit`` of the note (read as ``data``) back by
        exchange-and-check (:meth:`~memvault.vault_io.gate.Gate.replace`): an
        edit a person saved meanwhile is never lost; the note is read and
        edited again instead (a few times). Whether it was written."""
        for _ in range(REWRITE_TRIES):
            try:
                new = edit(data.decode("utf-8"), note).encode("utf-8")
            except MarkError as exc:
                raise SourceError(str(exc)) from None
            if new == data:
                return False
            try:
                if self.ctx.gate.replace(rel, content_hash(data), new):
                    return True
            except OSError as exc:
                raise SourceError(f"{rel}: cannot write: {exc.strerror}") from None
            data, note = self._read(rel)  # changed since it was read: edit what is there now
        raise SourceError(f"{rel}: changed each time it was about to be written; nothing written, try again")

    def _index(self, paths: list[str]) -> list[str]:
        report = self.sync_paths(paths)
        warnings: list[str] = report.summary.warnings + report.unwritten
        return warnings

    def _count(self, rel: str) -> int:
        return count(
            self.ctx.con,
            "SELECT count(*) FROM facts f JOIN traces t ON t.id = f.trace_id "
            "WHERE t.path = ? AND t.kind = 'fact' AND t.status = 'active'",
            (rel,),
        )

    def add(self, args: list[str]) -> tuple[list[SourceResult], list[str]]:
        """Mark each note with ``memory: source`` and index it; (results, warnings)."""
        rels = [vault_relative(self.root, a) for a in args]
        results: list[SourceResult] = []
        for rel in dict.fromkeys(rels):
            data, note = self._read(rel)
            before = source_marks(note, self.globs)
            changed = self._write(rel, data, note, mark_text)
            results.append(SourceResult(rel, "marked" if changed else "already", _marks_after(before, True)))
        warnings = self._index([r.path for r in results])
        for r in results:
            r.facts = self._count(r.path)
        return results, warnings

    def remove(self, args: list[str]) -> tuple[list[SourceResult], list[str]]:
        """Remove the front-matter marker of each note and index it.

        A note marked only by tag or glob is reported as ``refused`` and left
        alone; one still marked another way after the key is gone as
        ``still-marked``.
        """
        rels = [vault_relative(self.root, a) for a in args]
        results: list[SourceResult] = []
        for rel in dict.fromkeys(rels):
            data, note = self._read(rel)
            marks = source_marks(note, self.globs)
            if not marks:
                results.append(SourceResult(rel, "not-a-source", message=f"{rel} is not a memory source"))
                continue
            if not marks.frontmatter:
                results.append(SourceResult(
                    rel, "refused", marks.names,
                    message=f"{rel} is a memory source by its {marks.describe()}, not by its front-matter; "
                    + _how_to_unmark(marks),
                ))
                continue
            self._write(rel, data, note, unmark_text)
            after = SourceMarks(False, marks.tag, marks.glob)
            if after:
                results.append(SourceResult(
                    rel, "still-marked", after.names,
                    message=f"removed memory: source, but {rel} is still a memory source by its "
                    f"{after.describe()}; " + _how_to_unmark(after),
                ))
            else:
                results.append(SourceResult(rel, "unmarked"))
        warnings = self._index([r.path for r in results if r.action in ("unmarked", "still-marked")])
        for r in results:
            r.facts = self._count(r.path)
        return results, warnings

    def list(self) -> builtins.list[MemorySource]:
        """Every memory source in the index, with how it is marked and its fact count."""
        from memvault.store.answers.review import MemorySource

        con = self.ctx.read_con()
        self.refresh_globs()  # a changed `sources` glob, before listing
        counts: dict[str, int] = {source_id: n for source_id, n in rows(
            con,
            "SELECT f.source_id, count(*) FROM facts f JOIN traces t ON t.id = f.trace_id "
            "WHERE t.status = 'active' GROUP BY f.source_id",
        )}
        return [
            MemorySource(path=s.path, id=s.source_id, marks=tuple(s.marks.split()), facts=counts.get(s.source_id, 0),
                         redacted=s.redacted, extractor=s.extractor, extracted_at=s.extracted_at)
            for s in sf.all_sources(con)
        ]

    def facts(self, arg: str, include_superseded: bool = False) -> SourceFacts:
        """The facts of one source note, with its vault path and whether it is indexed."""
        from memvault.store.answers.browse.facts import SourceFact, SourceFacts

        con = self.ctx.read_con()
        rel = vault_relative(self.root, arg, must_exist=False)
        ids: builtins.list[str] = []
        row = first(con, "SELECT trace_id FROM files WHERE path = ?", (rel,))
        if row and row[0]:
            ids.append(row[0])
        ids += [s.source_id for s in sf.sources_at(con, rel)]
        ids += [r[0] for r in con.execute(
            "SELECT DISTINCT f.source_id FROM facts f JOIN traces t ON t.id = f.trace_id WHERE t.path = ?", (rel,)
        )]
        found = sf.facts_of(con, list(dict.fromkeys(ids)), None if include_superseded else [sf.ACTIVE])
        out = [
            SourceFact(
                id=t.id, type=t.type, status=t.status, reason=t.reason, text=t.content,
                heading_path=m.heading_path, block_id=m.block_id, anchor=m.anchor,
                lines=(m.line_start, m.line_end), source_uri=m.source_uri, segment=m.segment,
                context=m.context or None, due=m.due, tags=tuple(t.tags),
                links=tuple(e.target_name for e in rec.edges_from(con, t.id) if e.kind == sf.LINK),
                created=t.created, updated=t.updated,
            )
            for t, m in found
        ]
        return SourceFacts(rel, tuple(out), bool(row))


def _marks_after(before: SourceMarks, frontmatter: bool) -> list[str]:
    return SourceMarks(frontmatter or before.frontmatter, before.tag, before.glob).names


def _how_to_unmark(marks: SourceMarks) -> str:
    steps = []
    if marks.tag:
        steps.append("remove the #memory/source tag from the note")
    if marks.glob is not None:
        steps.append(f"remove or narrow the glob {marks.glob!r} in `sources` of the config")
    return " and ".join(steps)
