"""One glob dialect for `ignore` and `sources`: gitignore-style patterns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import write
from hypothesis import given
from hypothesis import strategies as st

from memvault.cli.main import cli
from memvault.vault_io.globs import VaultGlobs, old_dialect_differences
from memvault.vault_io.scan import scan_vault
from memvault.vault_io.sources import matching_glob

#: (pattern, path, matches as a file): the same table holds for both keys.
CASES = [
    ("*.md", "a.md", True),
    ("*.md", "a/b.md", True),  # no "/" in the pattern: any depth
    ("/*.md", "a/b.md", False),  # anchored at the vault root
    ("Projects/*.md", "Projects/x.md", True),
    ("Projects/*.md", "Projects/a/x.md", False),  # "*" stays within a folder
    ("Projects/**", "Projects/a/b/x.md", True),  # "**" crosses folders
    ("Projects/**", "Other/x.md", False),
    ("**/About me.md", "People/About me.md", True),
    ("About me.md", "People/About me.md", True),
    ("Daily/202?-*.md", "Daily/2024-01-01.md", True),
    ("[AB]*.md", "Alpha.md", True),
    ("[!AB]*.md", "Alpha.md", False),
    ("notes/*.md", "Notes/x.md", False),  # case-sensitive, like paths
    ("Attachments/", "Attachments", False),  # a folder-only pattern, not a file
]


@pytest.mark.parametrize(("pattern", "path", "matches"), CASES)
def test_one_table_for_both_keys(pattern: str, path: str, matches: bool) -> None:
    assert VaultGlobs([pattern]).matches(path) is matches
    assert (matching_glob(path, [pattern]) == pattern) is matches


def test_folder_patterns_and_negation() -> None:
    g = VaultGlobs(["Attachments/", "Archive/*", "!Archive/keep.md"])
    assert g.matches("Attachments", is_dir=True) and g.excludes("Attachments/img/a.png")
    assert g.excludes("Archive/old.md") and not g.excludes("Archive/keep.md")
    assert matching_glob("Archive/keep.md", ["Archive/*", "!Archive/keep.md"]) is None
    assert matching_glob("Archive/old.md", ["Archive/*", "!Archive/keep.md"]) == "Archive/*"


def test_ignore_and_sources_select_the_same_notes(vault: Path, memvault_env: Path) -> None:
    """The same patterns: what `ignore` would skip is exactly what `sources` marks."""
    for rel in ("a.md", "Projects/x.md", "Projects/deep/y.md", "Archive/keep.md", "Archive/old.md", "b.md"):
        write(vault, rel, "- one fact worth keeping here\n")
    patterns = ["Projects/**", "Archive/*", "!Archive/keep.md"]
    skipped = set(scan_vault(vault).files) - set(scan_vault(vault, ignore=patterns).files)
    (memvault_env / "config.toml").write_text(f"sources = {json.dumps(patterns)}\n", encoding="utf-8")
    assert CliRunner().invoke(cli, ["--vault", str(vault), "sync", "--no-embed"]).exit_code == 0
    r = CliRunner().invoke(cli, ["--vault", str(vault), "source", "list", "--json"])
    marked = {json.loads(line)["path"] for line in r.stdout.splitlines()}
    assert marked == skipped == {"Projects/x.md", "Projects/deep/y.md", "Archive/old.md"}


def test_a_pattern_written_for_the_old_dialect_is_reported_once(vault: Path, memvault_env: Path) -> None:
    write(vault, "Private notes.md", "top\n")
    write(vault, "Work/Private plans.md", "deep\n")
    write(vault, "Work/plan.md", "kept\n")
    run = lambda: CliRunner().invoke(cli, ["--vault", str(vault), "sync", "--no-embed"])  # noqa: E731
    assert run().exit_code == 0
    # In 0.1 "Private*" matched only at the vault root; now at any depth.
    (memvault_env / "config.toml").write_text('ignore = ["Private*"]\n', encoding="utf-8")
    first = run()
    assert first.exit_code == 0
    assert "config ignore pattern 'Private*' now matches 1 paths differently" in first.output
    assert "Work/Private plans.md" in first.output
    second = run()
    assert "matches" not in second.output  # once per set of patterns


def test_old_dialect_comparison_for_sources() -> None:
    lines = old_dialect_differences("sources", ["*.md", "Projects/**"], ["a.md", "x/b.md", "Projects/c.md"])
    assert len(lines) == 1 and "'*.md'" in lines[0] and "x/b.md" in lines[0]


segment = st.text(alphabet="ab*?/.", min_size=1, max_size=6)


@given(pattern=segment, path=st.lists(st.sampled_from(["a", "b", "ab", "x.md"]), min_size=1, max_size=4))
def test_matching_never_raises_and_excludes_is_monotone(pattern: str, path: list[str]) -> None:
    """Whatever a person types, matching answers; a match of a folder takes
    everything under it."""
    g = VaultGlobs([pattern])
    rel = "/".join(path)
    if g.matches(path[0], is_dir=True) and len(path) > 1:
        assert g.excludes(rel)
