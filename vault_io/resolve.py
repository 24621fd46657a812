"""Resolving link text to vault files, with Obsidian's rules.

- ``[[/Folder/Note]]`` is a path from the vault root.
- ``[[Folder/Note]]`` is tried as a vault path, then relative to the linking
  note's folder, then as the tail of a longer path (``A/Folder/Note.md``).
- ``[[Note]]`` matches the file name anywhere, case-insensitively.
- ``.md`` is implied when the link names no file with its exact extension.
- Several candidates: the one in the linking note's folder wins, then the
  shortest path; the link is recorded as ambiguous.
- Aliases never resolve a link (Obsidian only offers them while typing).
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

NOTE_SUFFIX = ".md"


@dataclass(frozen=True)
class Resolution:
    """Where a link points: a vault path, or None while unresolved."""

    path: str | None
    ambiguous: bool = False


UNRESOLVED = Resolution(None)


def link_key(target: str) -> str:
    """The lookup key of a link target: its lower-case file name, ``.md`` dropped.

    Edges store this key so that, when a file with a matching name appears
    or disappears, only the links that could be affected are re-resolved.
    """
    name = target.rstrip("/").rsplit("/", 1)[-1].lower()
    return name[: -len(NOTE_SUFFIX)] if name.endswith(NOTE_SUFFIX) else name


def path_key(path: str) -> str:
    """The :func:`link_key` under which a vault file can be linked."""
    return link_key(path)


class LinkResolver:
    """An in-memory index of vault paths that answers link lookups.

    Paths are matched case-insensitively, as Obsidian does, but a vault on a
    case-sensitive file system may hold ``Note.md`` and ``note.md`` side by
    side: both are kept, the one whose case matches the link wins, and the
    link is recorded as ambiguous.
    """

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self._by_lower: dict[str, list[str]] = defaultdict(list)
        self._by_name: dict[str, list[str]] = defaultdict(list)
        for p in paths:
            self.add(p)

    def __contains__(self, path: str) -> bool:
        return path in self._by_lower.get(path.lower(), ())

    def add(self, path: str) -> None:
        """Make ``path`` a possible link target."""
        low = path.lower()
        same = self._by_lower[low]
        if path in same:
            return
        same.append(path)
        self._by_name[low.rsplit("/", 1)[-1]].append(path)

    def remove(self, path: str) -> None:
        """Forget ``path`` (deleted or moved away)."""
        low = path.lower()
        same = self._by_lower.get(low)
        if not same or path not in same:
            return
        same.remove(path)
        if not same:
            del self._by_lower[low]
        name = low.rsplit("/", 1)[-1]
        bucket = self._by_name.get(name, [])
        if path in bucket:
            bucket.remove(path)
        if not bucket:
            self._by_name.pop(name, None)

    def resolve(self, target: str, source_path: str) -> Resolution:
        """Resolve link text ``target`` written in the note at ``source_path``."""
        if target == "":
            return Resolution(source_path)
        target = target.strip()
        source_dir = posixpath.dirname(source_path)
        if target.startswith("/"):
            return self._exact(target.lstrip("/"))
        if target.startswith(("./", "../")):
            joined = posixpath.normpath(posixpath.join(source_dir, target))
            return UNRESOLVED if joined.startswith("..") else self._exact(joined)
        if "/" in target:
            hit = self._exact(target)
            if hit.path is None and source_dir:
                hit = self._exact(posixpath.normpath(posixpath.join(source_dir, target)))
            if hit.path is None:
                hit = self._choose(self._tail_matches(target.lower()), source_dir, target)
            return hit
        name = target.lower()
        candidates = self._by_name.get(name + NOTE_SUFFIX) or self._by_name.get(name) or []
        return self._choose(candidates, source_dir, target)

    def _exact(self, rel: str) -> Resolution:
        low = rel.lower()
        for suffix in (NOTE_SUFFIX, ""):
            same = self._by_lower.get(low + suffix)
            if same:
                if len(same) == 1:
                    return Resolution(same[0])
                wanted = rel + suffix
                return Resolution(min(same, key=lambda p: (p != wanted, p)), ambiguous=True)
        return UNRESOLVED

    def _tail_matches(self, low_target: str) -> list[str]:
        for suffix in (low_target + NOTE_SUFFIX, low_target):
            tail = "/" + suffix
            bucket = self._by_name.get(suffix.rsplit("/", 1)[-1], [])
            matches = [p for p in bucket if p.lower().endswith(tail)]
            if matches:
                return matches
        return []

    @staticmethod
    def _choose(candidates: list[str], source_dir: str, target: str = "") -> Resolution:
        if not candidates:
            return UNRESOLVED
        if len(candidates) == 1:
            return Resolution(candidates[0])

        def case_differs(p: str) -> bool:
            # Only decides between case variants of one path (same length).
            return not (p.endswith("/" + target) or p == target or p.endswith("/" + target + NOTE_SUFFIX) or p == target + NOTE_SUFFIX)

        best = min(
            candidates,
            key=lambda p: (posixpath.dirname(p) != source_dir, p.count("/"), len(p), case_differs(p), p),
        )
        return Resolution(best, ambiguous=True)
