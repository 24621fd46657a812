"""Conflict copies that file-sync tools write beside a note.

When two devices change the same file before they sync, the sync tool keeps
one version under the note's name and writes the other beside it, under a
name of its own making. Such a copy holds a person's text (never lose it)
but it is not a second note of the same memory: memvault indexes it as an
ordinary note, lists it, and offers its differing text in its conflict
report. Recognised by name:

- Syncthing: ``Note.sync-conflict-20261123-142501-ABCDEFG.md``
- Dropbox: ``Note (Ana's conflicted copy 2026-11-23).md``
- Nextcloud, Obsidian Sync: ``Note (conflicted copy 2026-11-23 142501).md``,
  ``Note (Conflicted copy laptop 202611231425).md``
- ownCloud: ``Note_conflict-20261123-142501.md``
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

#: Each tool's name shape, tried in this order (the first that matches wins).
#: A name shape's groups are ``<tag>`` (the note's stem) and ``<tag>_device``.
_SHAPES: tuple[tuple[str, str, str], ...] = (
    ("st", "Syncthing", r"(?P<st>.+)\.sync-conflict-\d{8}-\d{6}-(?P<st_device>[A-Z0-9]{7})"),
    ("oc", "ownCloud", r"(?P<oc>.+)_conflict-\d{8}-\d{6}"),
    ("db", "Dropbox", r"(?P<db>.+) \((?P<db_device>[^()]*)'s conflicted copy \d{4}-\d{2}-\d{2}(?: \(\d+\))?\)"),
    ("nc", "Nextcloud or Obsidian Sync",
     r"(?i:(?P<nc>.+) \(conflicted copy (?:(?P<nc_device>[^()\d][^()]*?) )?\d[\d -]*\))"),
    ("nx", "Nextcloud or Obsidian Sync", r"(?i:(?P<nx>.+) \(conflicted copy [^()]*\))"),
)
#: All the shapes as one pattern on a note's stem: the regex engine tries the
#: alternatives in order, as a loop over the shapes would, in one call.
_NAME = re.compile("^(?:" + "|".join(shape for _, _, shape in _SHAPES) + ")$")
_TOOL = {tag: tool for tag, tool, _ in _SHAPES}


@dataclass(frozen=True)
class SyncConflict:
    """A sync tool's conflict copy: which tool, and the note it belongs to."""

    tool: str
    original: str  # vault path of the note the copy sits beside
    #: The device (or account) whose version the copy holds, when its name
    #: says: Syncthing's short device id, Dropbox's account name, the device
    #: name Nextcloud and Obsidian Sync may put in. The note beside it holds
    #: the version the sync tool kept.
    device: str | None = None

    def describe(self) -> str:
        """Whose version the copy holds, for a person: "Syncthing's copy of
        device ABCDEFG's version"."""
        if self.device is None:
            who = "the other device's version"
        else:
            who = f"{'device ' if self.tool == 'Syncthing' else ''}{self.device}'s version"
        return f"{self.tool}'s copy of {who}"


def sync_conflict(path: str) -> SyncConflict | None:
    """The sync tool's conflict copy that ``path`` is, if its name says so."""
    # Every shape needs a ")" or "conflict-" in the name: most paths are
    # settled by two substring tests (this runs several times per note).
    if ")" not in path and "conflict-" not in path:
        return None
    folder, stem, suffix = _split(path)
    m = _NAME.match(stem)
    if m is None:
        return None
    tag = next(tag for tag in _TOOL if m.group(tag) is not None)
    device = (m.groupdict().get(f"{tag}_device") or "").strip() or None
    return SyncConflict(_TOOL[tag], folder + m.group(tag) + suffix, device)


def _split(path: str) -> tuple[str, str, str]:
    """A vault path's folder (with its closing "/", or ""), its name's stem
    and suffix, as ``PurePosixPath(path)`` reads them. Vault paths are plain
    (no ``//``, no ``.`` parts, no leading or trailing slash); any other
    string goes through pathlib."""
    if "//" in path or path.startswith(("/", "./")) or path.endswith(("/", "/.")) or path in ("", ".") \
            or "/./" in path:
        p = PurePosixPath(path)
        parent = str(p.parent)
        folder = "" if parent == "." else parent.removesuffix("/") + "/"
        return folder, p.stem, p.suffix
    parent, slash, name = path.rpartition("/")
    i = name.rfind(".")
    if 0 < i < len(name) - 1:
        return parent + slash, name[:i], name[i:]
    return parent + slash, name, ""
