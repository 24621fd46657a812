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

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Syncthing", re.compile(r"^(?P<stem>.+)\.sync-conflict-\d{8}-\d{6}-(?P<device>[A-Z0-9]{7})$")),
    ("ownCloud", re.compile(r"^(?P<stem>.+)_conflict-\d{8}-\d{6}$")),
    ("Dropbox", re.compile(
        r"^(?P<stem>.+) \((?P<device>[^()]*)'s conflicted copy \d{4}-\d{2}-\d{2}(?: \(\d+\))?\)$")),
    ("Nextcloud or Obsidian Sync", re.compile(
        r"^(?P<stem>.+) \(conflicted copy (?:(?P<device>[^()\d][^()]*?) )?\d[\d -]*\)$", re.IGNORECASE)),
    ("Nextcloud or Obsidian Sync", re.compile(r"^(?P<stem>.+) \(conflicted copy [^()]*\)$", re.IGNORECASE)),
)


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
    p = PurePosixPath(path)
    for tool, pattern in _PATTERNS:
        m = pattern.match(p.stem)
        if m:
            device = (m.groupdict().get("device") or "").strip() or None
            return SyncConflict(tool, str(p.with_name(m.group("stem") + p.suffix)), device)
    return None
