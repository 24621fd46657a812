"""Memory sources: which notes are marked, and marking or unmarking one.

A note is a *memory source* (its content is extracted into facts) when

- its front-matter says ``memory: source`` (any case), or
  ``memory_source: true``;
- it carries the tag ``#memory/source`` (in the body or in ``tags:``); or
- its vault path matches one of the ``sources`` globs of the config.

The globs are gitignore-style patterns, the same dialect as ``ignore``
(:mod:`.globs`): ``*`` stays within one folder, ``**`` crosses folders
(``Projects/**`` is everything under ``Projects/``), a pattern without a
``/`` matches at any depth (``About me.md``), ``!pattern`` takes a match back.

Marking and unmarking edit one front-matter key with
:func:`vault_io.fm_edit.edit_frontmatter`, so every other byte of the note
(BOM, CRLF line ends, comments, key order) stays as it was.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.fm_edit import duplicate_keys, edit_frontmatter
from memvault.vault_io.globs import vault_globs
from memvault.vault_io.note import ParsedNote

SOURCE_TAG = "memory/source"
MARKER_KEY = "memory"
MARKER_VALUE = "source"
ALT_MARKER_KEY = "memory_source"

_TRUE = {"true", "yes", "on", "1"}
_EMPTY_BLOCK_RE = re.compile(r"(\ufeff?)(---[ \t]*\r?\n---[ \t]*(?:\r?\n|\Z))")


class MarkError(MemvaultError):
    """A note that cannot be marked or unmarked by editing its front-matter."""


def matching_glob(path: str, globs: Iterable[str]) -> str | None:
    """The ``sources`` pattern that marks ``path`` as a source, if any."""
    return vault_globs(tuple(globs)).matching_pattern(path)


def _marks_by_memory(value: object) -> bool:
    return isinstance(value, str) and value.strip().lower() == MARKER_VALUE


def _marks_by_alt(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in _TRUE)


def frontmatter_marked(frontmatter: dict[str, Any]) -> bool:
    """Whether the front-matter marks the note (``memory: source`` or ``memory_source: true``)."""
    return _marks_by_memory(frontmatter.get(MARKER_KEY)) or _marks_by_alt(frontmatter.get(ALT_MARKER_KEY))


def tag_marked(tags: Iterable[str]) -> bool:
    """Whether ``#memory/source`` is among ``tags`` (any case)."""
    return any(t.lower() == SOURCE_TAG for t in tags)


@dataclass(frozen=True)
class SourceMarks:
    """Why a note is a memory source: each way it is marked."""

    frontmatter: bool = False
    tag: bool = False
    glob: str | None = None

    def __bool__(self) -> bool:
        return self.frontmatter or self.tag or self.glob is not None

    @property
    def names(self) -> list[str]:
        """``["frontmatter", "tag", "glob"]``, the marks present."""
        return [n for n, on in (("frontmatter", self.frontmatter), ("tag", self.tag), ("glob", self.glob)) if on]

    def describe(self) -> str:
        """A short human phrase: ``front-matter``, ``tag #memory/source``, ``glob 'X/**'``."""
        parts = []
        if self.frontmatter:
            parts.append("front-matter")
        if self.tag:
            parts.append(f"tag #{SOURCE_TAG}")
        if self.glob is not None:
            parts.append(f"config glob {self.glob!r}")
        return ", ".join(parts) or "not marked"


def source_marks(note: ParsedNote, globs: Sequence[str] = ()) -> SourceMarks:
    """How ``note`` is marked as a memory source (falsy when it is not one)."""
    return SourceMarks(
        frontmatter=frontmatter_marked(note.frontmatter),
        tag=tag_marked(note.tags),
        glob=matching_glob(note.path, globs),
    )


def _marker_keys(frontmatter: dict[str, Any]) -> list[str]:
    """The keys whose value marks the note: only those are removed.
    ``memory_source: false`` (or ``memory: semantic``) is a person's
    statement, not a mark, and stays."""
    keys = []
    if _marks_by_memory(frontmatter.get(MARKER_KEY)):
        keys.append(MARKER_KEY)
    if _marks_by_alt(frontmatter.get(ALT_MARKER_KEY)):
        keys.append(ALT_MARKER_KEY)
    return keys


def _is_empty(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _refuse_duplicates(text: str, note: ParsedNote) -> None:
    twice = [k for k in duplicate_keys(text) if k in (MARKER_KEY, ALT_MARKER_KEY)]
    if twice:
        raise MarkError(
            f"{note.path}: its front-matter has the key {twice[0]!r} more than once; "
            "fix the front-matter first"
        )


def mark_text(text: str, note: ParsedNote) -> str:
    """``text`` (the whole file, BOM and line ends as read) with ``memory: source`` added.

    Unchanged when the front-matter already marks the note. A ``memory``
    key that is there but empty (a template's placeholder) is left as it
    is and ``memory_source: true`` is added instead, so that ``remove``
    (which deletes only that key) gives back every byte. Raises
    :class:`MarkError` for a note whose front-matter cannot be edited safely
    (invalid YAML, a marker key written twice) or whose ``memory`` key
    already holds something else (``memory: semantic`` makes it a memory
    note, not a source).
    """
    if note.error and "front-matter" in note.error:
        raise MarkError(f"{note.path}: {note.error}; fix the front-matter first")
    if frontmatter_marked(note.frontmatter):
        return text
    _refuse_duplicates(text, note)
    existing = note.frontmatter.get(MARKER_KEY)
    if not _is_empty(existing):
        if isinstance(existing, str):
            raise MarkError(
                f"{note.path}: its front-matter already says memory: {existing!r} (a memory note); "
                "memory notes are not memory sources"
            )
        raise MarkError(
            f"{note.path}: its front-matter already says memory: {existing!r}; "
            "change or remove that key first"
        )
    if MARKER_KEY in note.frontmatter:
        if ALT_MARKER_KEY in note.frontmatter:
            # "memory:" empty and "memory_source: false": the person's own
            # words on both keys; replacing either would lose one of them.
            raise MarkError(
                f"{note.path}: its front-matter says {ALT_MARKER_KEY}: "
                f"{note.frontmatter[ALT_MARKER_KEY]!r}; change it to true to mark the note"
            )
        return edit_frontmatter(text, set_keys={ALT_MARKER_KEY: True})
    return edit_frontmatter(text, set_keys={MARKER_KEY: MARKER_VALUE})


def unmark_text(text: str, note: ParsedNote) -> str:
    """``text`` without the front-matter keys that mark the note
    (``memory: source``, ``memory_source: true``); unchanged when neither
    marks it, and ``memory_source: false`` or any other key always stays. A
    front-matter block left empty (just its two ``---`` lines) is removed:
    ``add`` creates one on a note without front-matter. (A block the person
    left empty themselves cannot be told apart from it after ``add``.)
    """
    if note.error and "front-matter" in note.error:
        raise MarkError(f"{note.path}: {note.error}; fix the front-matter first")
    keys = _marker_keys(note.frontmatter)
    if not keys:
        return text
    _refuse_duplicates(text, note)
    edited = edit_frontmatter(text, remove=keys)
    # A block left with nothing but its fences goes too, so that `source add`
    # then `source remove` on a note without front-matter gives back its bytes.
    m = _EMPTY_BLOCK_RE.match(edited)
    if m:
        edited = edited[: m.start(2)] + edited[m.end(2) :]
    return edited
