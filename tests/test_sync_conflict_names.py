"""Sync tools' conflict-copy names: one pattern on the name string
(vault_io/sync_conflicts.py) answers what the earlier loop of patterns over
``PurePosixPath(path).stem`` answered, for any path."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from hypothesis import given
from hypothesis import strategies as st

from memvault.vault_io.sync_conflicts import SyncConflict, sync_conflict

# The recogniser as it was (one compiled pattern per tool, pathlib stem
# parsing), kept here as the reference the new one must agree with.
_REFERENCE: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Syncthing", re.compile(r"^(?P<stem>.+)\.sync-conflict-\d{8}-\d{6}-(?P<device>[A-Z0-9]{7})$")),
    ("ownCloud", re.compile(r"^(?P<stem>.+)_conflict-\d{8}-\d{6}$")),
    ("Dropbox", re.compile(
        r"^(?P<stem>.+) \((?P<device>[^()]*)'s conflicted copy \d{4}-\d{2}-\d{2}(?: \(\d+\))?\)$")),
    ("Nextcloud or Obsidian Sync", re.compile(
        r"^(?P<stem>.+) \(conflicted copy (?:(?P<device>[^()\d][^()]*?) )?\d[\d -]*\)$", re.IGNORECASE)),
    ("Nextcloud or Obsidian Sync", re.compile(r"^(?P<stem>.+) \(conflicted copy [^()]*\)$", re.IGNORECASE)),
)


def reference(path: str) -> SyncConflict | str | None:
    """The old answer; "raised" where pathlib refused the original's name
    (a copy of a note named ".", which the new code names so instead)."""
    p = PurePosixPath(path)
    for tool, pattern in _REFERENCE:
        m = pattern.match(p.stem)
        if m:
            device = (m.groupdict().get("device") or "").strip() or None
            try:
                return SyncConflict(tool, str(p.with_name(m.group("stem") + p.suffix)), device)
            except ValueError:
                return "raised"
    return None


def agrees(path: str) -> bool:
    old, new = reference(path), sync_conflict(path)
    if old == "raised":
        return new is not None and new.original.rpartition("/")[2] == "."
    return new == old


def test_each_tool_by_name() -> None:
    assert sync_conflict("a/Note.sync-conflict-20261123-142501-ABCDEFG.md") == SyncConflict(
        "Syncthing", "a/Note.md", "ABCDEFG")
    assert sync_conflict("Note_conflict-20261123-142501.md") == SyncConflict("ownCloud", "Note.md", None)
    assert sync_conflict("x/y/Note (Ana's conflicted copy 2026-11-23).md") == SyncConflict(
        "Dropbox", "x/y/Note.md", "Ana")
    assert sync_conflict("Note (conflicted copy 2026-11-23 142501).md") == SyncConflict(
        "Nextcloud or Obsidian Sync", "Note.md", None)
    assert sync_conflict("Note (Conflicted copy laptop 202611231425).md") == SyncConflict(
        "Nextcloud or Obsidian Sync", "Note.md", "laptop")
    assert sync_conflict("Note (CONFLICTED COPY of mine).md") == SyncConflict(
        "Nextcloud or Obsidian Sync", "Note.md", None)
    for plain in ("Note.md", "Book (2020).md", "a/conflict-notes.md", "Note (conflicted copy).md", ".md", "x/"):
        assert sync_conflict(plain) is None, plain


_PIECES = st.sampled_from([
    "Note", "a", "a/b", "Daily/2026", ".", "..", "/", "//", " ", ".md", ".txt", ".", "(", ")", "'s", "_",
    ".sync-conflict-20261123-142501-ABCDEFG", ".sync-conflict-20261123-142501-abcdefg",
    "_conflict-20261123-142501", " (Ana's conflicted copy 2026-11-23)", " (Ana's conflicted copy 2026-11-23 (2))",
    " (conflicted copy 2026-11-23 142501)", " (Conflicted copy laptop 202611231425)", " (CONFLİCTED COPY x)",
    " (conflicted copy )", "\n", "é", "1",
])


@given(st.lists(_PIECES, max_size=8).map("".join))
def test_agrees_with_the_pathlib_loop(path: str) -> None:
    assert agrees(path)


@given(st.text(max_size=40))
def test_agrees_on_any_text(path: str) -> None:
    assert agrees(path)
