"""Rough edges (issue 19): every odd input ends in one clear line naming the
file or argument, with the right exit code (1 runtime, 2 usage), no
traceback and nothing half-written; or the input is understood."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import write

from memvault.cli.main import cli


@pytest.fixture(autouse=True)
def no_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")


def run(vault: Path, *args: str, input: str | bytes | None = None) -> Result:
    """One CLI command on ``vault``, as a person types it."""
    return CliRunner().invoke(cli, ["--vault", str(vault), *args], input=input)


def one_error_line(result: Result, code: int, *names: str) -> str:
    """Check ``result`` failed with ``code`` and exactly one stderr line that
    names each of ``names`` (and no traceback); return that line."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "Traceback" not in result.output
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


@pytest.fixture
def indexed(vault: Path) -> Path:
    """A vault with an index and one memory."""
    write(vault, "a.md", "# A note\n")
    assert run(vault, "add", "Prefers dark mode in every editor", "--tag", "ui").exit_code == 0
    return vault


# -- export ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["markdown", "obsidian"])
def test_export_notes_onto_an_existing_file_is_a_usage_error(indexed: Path, tmp_path: Path, fmt: str) -> None:
    existing = tmp_path / "existing"
    existing.write_text("mine\n")
    one_error_line(run(indexed, "export", "--format", fmt, "-o", str(existing)), 2, str(existing))
    assert existing.read_text() == "mine\n"


@pytest.mark.parametrize(("fmt", "output"), [("sqlite", "/proc/x/"), ("csv", "/proc/x.csv"), ("json", "/proc/x.json"),
                                             ("markdown", "/proc/x")])
def test_export_to_an_unwritable_place_is_one_line(indexed: Path, fmt: str, output: str) -> None:
    one_error_line(run(indexed, "export", "--format", fmt, "-o", output), 1, output.rstrip("/"))


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_export_of_one_file_onto_a_folder_is_a_usage_error(indexed: Path, tmp_path: Path, fmt: str) -> None:
    one_error_line(run(indexed, "export", "--format", fmt, "-o", str(tmp_path)), 2, str(tmp_path))


def test_a_failed_export_leaves_the_old_file_whole(indexed: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """An export that fails halfway leaves neither half a file nor a temp file."""
    from memvault.store.flows import export as ex

    out = tmp_path / "out.csv"
    out.write_text("the previous export\n")

    def broken(memories: object, *args: object) -> object:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ex, "write_csv", lambda out, memories: (out.write("id,half"), broken(memories))[1])
    one_error_line(run(indexed, "export", "--format", "csv", "-o", str(out)), 1, str(out))
    assert out.read_text() == "the previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["out.csv"]
