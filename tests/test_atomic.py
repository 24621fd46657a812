"""Atomic writes and free names inside the vault: names are bounded in bytes."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memvault.vault_io.atomic import NAME_MAX, atomic_write, fit_name, free_path, truncate_utf8

# File-name characters of every width in UTF-8: ASCII, Latin, CJK (3 bytes), emoji (4 bytes).
NAME_CHARS = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\x00")


def nbytes(name: str) -> int:
    return len(name.encode("utf-8"))


def test_truncate_utf8_cuts_on_a_character_boundary() -> None:
    assert truncate_utf8("abc", 10) == "abc"
    assert truncate_utf8("漢漢漢", 7) == "漢漢"  # 6 bytes: the third would need 9
    assert truncate_utf8("a😀", 4) == "a"


def test_fit_name_shortens_the_stem_only() -> None:
    stem = "漢" * 84  # 252 bytes
    name = fit_name(stem, " (conflict 2026-01-02 030405).md")
    assert nbytes(name) <= NAME_MAX and name.endswith(" (conflict 2026-01-02 030405).md")
    assert name.startswith("漢" * 70)
    assert fit_name("short", ".md") == "short.md"


def test_atomic_write_next_to_a_243_byte_name(tmp_path: Path) -> None:
    # 80 CJK characters + ".md" = 243 bytes: legal, but the temp name used to be
    # cut by characters and came out over 255 bytes (ENAMETOOLONG).
    target = tmp_path / ("漢" * 80 + ".md")
    target.write_text("old", encoding="utf-8")
    os.chmod(target, 0o600)
    assert atomic_write(target, "new".encode()) is True
    assert target.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no temp file left


def test_free_path_counters_fit_a_long_name(tmp_path: Path) -> None:
    stem = "é" * 125  # 250 bytes + ".md" = 253
    first = tmp_path / f"{stem}.md"
    first.write_text("1")
    second = free_path(first)
    assert second != first and nbytes(second.name) <= NAME_MAX and second.name.endswith(" 2.md")
    second.write_text("2")
    third = free_path(first)
    assert third.name.endswith(" 3.md") and nbytes(third.name) <= NAME_MAX


@given(st.text(NAME_CHARS, min_size=1, max_size=90).filter(lambda s: s not in (".", "..")), st.integers(0, 3))
def test_any_legal_name_can_be_written_and_gets_free_names(stem: str, taken: int) -> None:
    name = fit_name(stem, ".md")
    assert nbytes(name) <= NAME_MAX
    folder = Path(tempfile.mkdtemp(prefix="memvault-atomic-"))
    try:
        path = folder / name
        assert atomic_write(path, b"x") is True
        assert atomic_write(path, b"x") is False  # identical bytes are not rewritten
        for _ in range(taken):
            other = free_path(path)
            assert nbytes(other.name) <= NAME_MAX and other.parent == folder
            atomic_write(other, b"y")
        assert not [p for p in folder.iterdir() if p.name.endswith(".memvault-tmp")]
    finally:
        shutil.rmtree(folder)
