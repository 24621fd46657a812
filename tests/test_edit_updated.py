"""A person's edit of a memory note in Obsidian is a new version, and its
`updated:` says when it was made (issue 35): memvault writes the edit's time
(the file's mtime, which a sync tool carries) with the version lines, in the
same one exchange-and-check replace, and no other byte of the person's."""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memvault.store.memory_store import MemoryStore
from memvault.store.settings import load_settings
from memvault.vault_io.frontmatter import split_frontmatter

OLD = "2026-01-05T09:00:00+00:00"  # when memvault wrote the memory
EDIT = datetime(2026, 3, 14, 15, 9, 26, tzinfo=timezone.utc)  # when the person saved their edit


def store(root: Path) -> MemoryStore:
    root.mkdir(parents=True, exist_ok=True)
    return MemoryStore(root, load_settings({"vault": str(root)}), data_dir=root.parent / "data")


def written_long_ago(s: MemoryStore, text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    from memvault.store.db import records

    monkeypatch.setattr(records, "now_iso", lambda: OLD)
    made = s.memories.add(text, "semantic")
    monkeypatch.undo()
    assert made.path is not None
    note = s.root / made.path
    assert f"updated: '{OLD}'" in note.read_text(encoding="utf-8")
    return note, made.id


def person_edits(note: Path, old: str, new: str, when: datetime = EDIT) -> bytes:
    """Obsidian's save: the person's bytes, at ``when``."""
    data = note.read_text(encoding="utf-8").replace(old, new).encode("utf-8")
    note.write_bytes(data)
    os.utime(note, (when.timestamp(), when.timestamp()))
    return data


def fm_lines(data: bytes) -> list[str]:
    return (split_frontmatter(data.decode("utf-8"))[0] or "").splitlines()


def test_an_edit_bumps_updated_with_the_version_and_nothing_else(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    s = store(tmp_path / "vault")
    note, memory_id = written_long_ago(s, "Takes the 8:10 train to work.", monkeypatch)
    typed = person_edits(note, "8:10", "8:40")
    s.sync()
    after = note.read_bytes()
    assert f"updated: '{EDIT.isoformat()}'" in after.decode("utf-8")
    # Only memvault's three lines changed: the person's body and every other line are their bytes.
    assert split_frontmatter(after.decode("utf-8"))[1] == split_frontmatter(typed.decode("utf-8"))[1]
    changed = {line.split(":", 1)[0] for line in set(fm_lines(after)) ^ set(fm_lines(typed))}
    assert changed == {"version", "version_hash", "updated"}
    item = s.read(memory_id)
    assert (item.version, item.updated, item.content) == (2, EDIT.isoformat(), "Takes the 8:40 train to work.")
    history = s.history(memory_id)
    assert [h.content for h in history] == ["Takes the 8:40 train to work.", "Takes the 8:10 train to work."]
    # Settled: another sync writes nothing (same bytes, same mtime).
    stat = note.stat()
    s.sync()
    assert note.read_bytes() == after and note.stat().st_mtime_ns == stat.st_mtime_ns
    s.close()


def test_a_later_updated_the_person_wrote_or_a_word_of_theirs_is_kept(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    s = store(tmp_path / "vault")
    note, _ = written_long_ago(s, "Plays chess on Sundays.", monkeypatch)
    person_edits(note, f"updated: '{OLD}'", "updated: '2027-01-01T00:00:00+00:00'")
    person_edits(note, "chess", "go")
    s.sync()
    text = note.read_text(encoding="utf-8")
    assert "updated: '2027-01-01T00:00:00+00:00'" in text and "\nversion: 2\n" in text  # never moved back
    person_edits(note, "updated: '2027-01-01T00:00:00+00:00'", "updated: last spring")
    person_edits(note, "go", "bridge")
    s.sync()
    text = note.read_text(encoding="utf-8")
    assert "updated: last spring" in text and "\nversion: 3\n" in text  # not a time: theirs
    s.close()


def test_two_devices_reading_the_same_edit_write_the_same_bytes(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = store(tmp_path / "a" / "vault"), store(tmp_path / "b" / "vault")
    note, _ = written_long_ago(a, "Waters the fern on Fridays.", monkeypatch)
    rel = note.relative_to(a.root)
    (b.root / rel).parent.mkdir(parents=True)
    shutil.copy2(note, b.root / rel)
    b.sync()
    person_edits(note, "Fridays", "Mondays")
    shutil.copy2(note, b.root / rel)  # the sync tool brings the edit before a has read it
    a.sync()
    b.sync()
    assert note.read_bytes() == (b.root / rel).read_bytes()
    assert f"updated: '{EDIT.isoformat()}'" in note.read_text(encoding="utf-8")
    a.close()
    b.close()
