"""Memory sources: which notes are marked, and marking or unmarking one.

A note is a *memory source* (its content is extracted into facts) when

- its front-matter says ``memory: source`` (any case), or
  ``memory_source: true``;
- it carries the tag ``#memory/source`` (in the body or in ``tags:``); or
- its vault path matches one of the ``sources`` globs of the config.

Globs match the whole vault-relative path: ``*`` and ``?`` stay within one
folder, ``**`` crosses folders (``**`` alone is every note, ``Projects/**``
everything under ``Projects/``, ``**/About me.md`` that name anywhere), and
``[abc]`` is a character class. Matching is case-sensitive, like paths.

Marking and unmarking edit one front-matter key with
:func:`vault_io.fm_edit.edit_frontmatter`, so every other byte of the note
(BOM, CRLF line ends, comments, key order) stays as it was.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from .fm_edit import edit_frontmatter
from .note import ParsedNote

SOURCE_TAG = "memory/source"
MARKER_KEY = "memory"
MARKER_VALUE = "source"
ALT_MARKER_KEY = "memory_source"

_TRUE = {"true", "yes", "on", "1"}
_EMPTY_BLOCK_RE = re.compile(r"(\ufeff?)(---[ \t]*\r?\n---[ \t]*(?:\r?\n|\Z))")


class MarkError(Exception):
    """A note that cannot be marked or unmarked by editing its front-matter."""


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """The compiled regex for one ``sources`` glob (see the module docstring)."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                i += 2
                if i < n and pattern[i] == "/":
                    out.append("(?:.*/)?")  # "**/" matches zero or more folders
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            close = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if close < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : close]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = close
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z")


def matching_glob(path: str, globs: Iterable[str]) -> str | None:
    """The first glob of ``globs`` that matches ``path``, if any."""
    for pattern in globs:
        pattern = pattern.strip().lstrip("/")
        if pattern and glob_regex(pattern).match(path):
            return pattern
    return None


def frontmatter_marked(frontmatter: dict) -> bool:
    """Whether the front-matter marks the note (``memory: source`` or ``memory_source: true``)."""
    value = frontmatter.get(MARKER_KEY)
    if isinstance(value, str) and value.strip().lower() == MARKER_VALUE:
        return True
    alt = frontmatter.get(ALT_MARKER_KEY)
    return alt is True or (isinstance(alt, str) and alt.strip().lower() in _TRUE)


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


def _marker_keys(frontmatter: dict) -> list[str]:
    keys = []
    value = frontmatter.get(MARKER_KEY)
    if isinstance(value, str) and value.strip().lower() == MARKER_VALUE:
        keys.append(MARKER_KEY)
    if ALT_MARKER_KEY in frontmatter:
        keys.append(ALT_MARKER_KEY)
    return keys


def mark_text(text: str, note: ParsedNote) -> str:
    """``text`` (the whole file, BOM and line ends as read) with ``memory: source`` added.

    Unchanged when the front-matter already marks the note. Raises
    :class:`MarkError` for a note whose front-matter cannot be edited safely
    (invalid YAML) or whose ``memory`` key already holds something else
    (``memory: semantic`` makes it a memory note, not a source).
    """
    if note.error and "front-matter" in note.error:
        raise MarkError(f"{note.path}: {note.error}; fix the front-matter first")
    if frontmatter_marked(note.frontmatter):
        return text
    existing = note.frontmatter.get(MARKER_KEY)
    if existing not in (None, ""):
        raise MarkError(
            f"{note.path}: its front-matter already says memory: {existing!r} (a memory note); "
            "memory notes are not memory sources"
        )
    return edit_frontmatter(text, set_keys={MARKER_KEY: MARKER_VALUE})


def unmark_text(text: str, note: ParsedNote) -> str:
    """``text`` without the front-matter marker keys (``memory: source``,
    ``memory_source``); unchanged when the front-matter has neither. A
    front-matter block left empty (just its two ``---`` lines) is removed.
    """
    if note.error and "front-matter" in note.error:
        raise MarkError(f"{note.path}: {note.error}; fix the front-matter first")
    keys = _marker_keys(note.frontmatter)
    if not keys:
        return text
    edited = edit_frontmatter(text, remove=keys)
    # A block left with nothing but its fences goes too, so that `source add`
    # then `source remove` on a note without front-matter gives back its bytes.
    m = _EMPTY_BLOCK_RE.match(edited)
    if m:
        edited = edited[: m.start(2)] + edited[m.end(2) :]
    return edited
