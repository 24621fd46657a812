"""The one glob dialect of memvault's config: gitignore-style patterns.

Both ``ignore`` (files and folders a scan skips) and ``sources`` (notes that
are memory sources without a marker) take the patterns a ``.gitignore``
takes, matched against vault-relative paths by :mod:`pathspec`:

- ``*`` and ``?`` stay within one folder; ``**`` crosses folders
  (``Projects/**`` is everything under ``Projects/``, ``**/Roadmap.md`` that
  name anywhere);
- a pattern without a ``/`` (other than a trailing one) matches at any
  depth (``*.excalidraw.md``, ``Drafts``); one with a ``/`` is anchored at
  the vault root (``Archive/2023``, ``/Inbox.md``);
- a trailing ``/`` matches folders only (``Attachments/``), and a matched
  folder takes everything under it;
- ``!pattern`` takes a match back (``Archive/*`` then ``!Archive/keep.md``;
  as in git, nothing under a folder that is itself excluded comes back);
- ``[abc]`` is a character class; matching is case-sensitive, like paths.

Until memvault 0.2 ``ignore`` used :mod:`fnmatch` (``*`` crossed folders,
patterns were anchored at the root) and ``sources`` an anchored glob of its
own; :func:`old_dialect_differences` tells where a config written for those
now matches differently, so a sync can say so once.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any


def _spec(patterns: tuple[str, ...]) -> Any:
    # pathspec costs a CLI process ~35 ms to import: only scans and source
    # checks need it, never a search.
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(patterns)


class VaultGlobs:
    """A list of gitignore-style patterns over vault-relative paths."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns: tuple[str, ...] = tuple(p.strip() for p in patterns if p and p.strip())
        self._all: Any = None

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matches(self, path: str, is_dir: bool = False) -> bool:
        """Whether ``path`` (a folder when ``is_dir``) is matched by the list."""
        if not self.patterns:
            return False
        if self._all is None:
            self._all = _spec(self.patterns)
        return bool(self._all.match_file(path + "/" if is_dir else path))

    def excludes(self, path: str) -> bool:
        """Whether a scan skips ``path``: it, or a folder above it, matches."""
        parts = path.split("/")
        return any(self.matches("/".join(parts[:i]), is_dir=True) for i in range(1, len(parts))) or self.matches(path)

    def matching_pattern(self, path: str) -> str | None:
        """The pattern that makes ``path`` match (the last positive one that
        matches it alone), or None when the list does not match it."""
        if not self.matches(path):
            return None
        for pattern in reversed(self.patterns):
            if not pattern.startswith("!") and _single(pattern).match_file(path):
                return pattern
        return None


@lru_cache(maxsize=256)
def _single(pattern: str) -> Any:
    return _spec((pattern,))


@lru_cache(maxsize=64)
def vault_globs(patterns: tuple[str, ...]) -> VaultGlobs:
    """A (cached) :class:`VaultGlobs` for ``patterns``."""
    return VaultGlobs(patterns)


# -- the dialects before 0.2 ------------------------------------------------------


def _old_ignore(pattern: str, path: str) -> bool:
    """The old ``ignore`` rule: fnmatch on the whole path (``*`` crosses
    folders); a pattern matching a folder took everything under it."""
    g = pattern.strip("/")
    parts = path.split("/")
    return any(fnmatch.fnmatchcase("/".join(parts[:i]), g) for i in range(1, len(parts) + 1))


@lru_cache(maxsize=256)
def _old_source_regex(pattern: str) -> re.Pattern[str]:
    """The old ``sources`` rule: anchored; ``*`` within a folder, ``**`` across."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            c = pattern[i]
            out.append("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def old_dialect_differences(key: str, patterns: Sequence[str], paths: Iterable[str], limit: int = 3) -> list[str]:
    """Warnings for ``patterns`` of config key ``key`` ("ignore" or
    "sources") that match ``paths`` differently now than in the old dialect:
    one line per such pattern, with up to ``limit`` example paths."""
    out = []
    paths = list(paths)
    for pattern in patterns:
        if not pattern.strip() or pattern.strip().startswith("!"):
            continue  # negation is new: nothing to compare with
        new = VaultGlobs([pattern])
        if key == "ignore":
            differ = [p for p in paths if new.excludes(p) != _old_ignore(pattern, p)]
        else:
            old = _old_source_regex(pattern.strip().lstrip("/"))
            differ = [p for p in paths if new.matches(p) != bool(old.match(p))]
        if differ:
            examples = ", ".join(sorted(differ)[:limit])
            out.append(
                f"config {key} pattern {pattern!r} now matches {len(differ)} paths differently "
                f"(patterns are gitignore-style since memvault 0.2: `*` stays within a folder, a pattern "
                f"without `/` matches at any depth), e.g. {examples}"
            )
    return out
