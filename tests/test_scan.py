"""Which files a vault scan sees, and which it skips with a warning."""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers import write

from memvault.vault_io.scan import IgnoreRules, scan_vault


def test_hidden_folders_and_files_are_skipped(vault: Path) -> None:
    write(vault, "Note.md", "x")
    for hidden in (".obsidian/workspace.md", ".trash/Old.md", ".git/HEAD.md", ".hidden/x.md", "Folder/.secret.md"):
        write(vault, hidden, "x")
    write(vault, "Folder/Visible.md", "x")
    assert sorted(scan_vault(vault).files) == ["Folder/Visible.md", "Note.md"]


def test_notes_and_attachments_are_told_apart(vault: Path) -> None:
    write(vault, "Note.md", "x")
    write(vault, "UPPER.MD", "x")
    write(vault, "img/pic.png", b"\x89PNG")
    files = scan_vault(vault).files
    assert files["Note.md"].is_note and files["UPPER.MD"].is_note
    assert not files["img/pic.png"].is_note


def test_obsidian_excluded_files_prefix_and_regex(vault: Path) -> None:
    write(vault, ".obsidian/app.json", json.dumps({"userIgnoreFilters": ["Templates/", "/\\.excalidraw\\.md$/", "Arch"]}))
    write(vault, "Templates/T.md", "x")
    write(vault, "Archive/old.md", "x")
    write(vault, "Drawing.excalidraw.md", "x")
    write(vault, "Keep.md", "x")
    assert sorted(scan_vault(vault).files) == ["Keep.md"]


def test_malformed_app_json_means_no_filters(vault: Path) -> None:
    write(vault, ".obsidian/app.json", "{not json")
    write(vault, "Templates/T.md", "x")
    assert "Templates/T.md" in scan_vault(vault).files


def test_configured_ignore_globs(vault: Path) -> None:
    write(vault, "Private/diary.md", "x")
    write(vault, "a/b/c.draft.md", "x")
    write(vault, "Keep.md", "x")
    files = scan_vault(vault, ignore=["Private", "*.draft.md"]).files
    assert sorted(files) == ["Keep.md"]


def test_ignore_rules_directory_prefix() -> None:
    rules = IgnoreRules(["Templates/"], [])
    assert rules.ignored("Templates", is_dir=True)
    assert not rules.ignored("TemplatesX/a.md")


def test_symlink_loop_is_not_followed(vault: Path) -> None:
    write(vault, "A/note.md", "x")
    os.symlink(vault / "A", vault / "A" / "loop")
    os.symlink(vault, vault / "A" / "root-loop")
    result = scan_vault(vault)
    assert sorted(result.files) == ["A/note.md"]
    assert {w.path for w in result.warnings} == {"A/loop", "A/root-loop"}
    assert all("loop" in w.message for w in result.warnings)


def test_symlinks_leading_outside_the_vault_are_skipped_with_one_warning_each(vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "shared.md", "x")
    os.symlink(outside, vault / "Linked")
    os.symlink(outside / "shared.md", vault / "one.md")
    os.symlink("/proc/self/environ", vault / "env.md")
    result = scan_vault(vault)
    assert result.files == {}
    assert result.outside == {"Linked", "one.md", "env.md"}
    assert sorted(w.path for w in result.warnings) == ["Linked", "env.md", "one.md"]
    assert all("leads outside the vault" in w.message for w in result.warnings)


def test_symlinks_that_stay_inside_the_vault_still_work(vault: Path) -> None:
    write(vault, "Real/note.md", "x")
    os.symlink(vault / "Real", vault / "Alias")
    os.symlink(vault / "Real" / "note.md", vault / "shortcut.md")
    result = scan_vault(vault)
    assert sorted(result.files) == ["Real/note.md", "shortcut.md"]  # Alias: the same real folder, walked once
    assert not result.outside and [w.path for w in result.warnings] == ["Alias"]


def test_broken_symlink_warns(vault: Path) -> None:
    os.symlink(vault / "missing.md", vault / "dangling.md")
    result = scan_vault(vault)
    assert not result.files
    assert [w.path for w in result.warnings] == ["dangling.md"]
    assert "broken symlink" in result.warnings[0].message


def test_size_cap_skips_with_warning_and_marks_skipped(vault: Path) -> None:
    write(vault, "big.md", "x" * 2000)
    write(vault, "small.md", "x")
    result = scan_vault(vault, max_file_size=1000)
    assert list(result.files) == ["small.md"]
    assert result.skipped == {"big.md"}
    assert "limit" in result.warnings[0].message and result.warnings[0].path == "big.md"


def test_non_utf8_file_name_is_skipped_with_warning(vault: Path) -> None:
    raw = os.fsencode(vault) + b"/bad\xffname.md"
    with open(raw, "wb") as fh:
        fh.write(b"x")
    write(vault, "good.md", "x")
    result = scan_vault(vault)
    assert list(result.files) == ["good.md"]
    assert "not valid UTF-8" in result.warnings[0].message


def test_odd_file_names_are_kept(vault: Path) -> None:
    names = ["quote's.md", 'dq"x.md', "back`tick`.md", "#hash.md", "spa ce.md", "ünï cødé.md", "new\nline.md"]
    for n in names:
        write(vault, n, "x")
    assert sorted(scan_vault(vault).files) == sorted(names)
