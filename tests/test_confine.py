"""Nothing leaks, nothing is lost (issue 19), through the CLI on real files.

A symlink whose real path leaves the vault is never read: not by ``sync``
(a full scan, or the daemon's batches of watched paths), ``show``, ``source
add``, ``rebuild``'s look at ``.trash``; ``stats`` and ``doctor`` count it. A
note with a byte that is not UTF-8 is indexed anyway, with a warning naming
it, and never rewritten; ``doctor`` names it as a warning a person must act
on, which ``--repair`` does not pretend to fix.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli
from memvault.vault_io.bulk import read_note_file
from memvault.vault_io.confine import OutsideVaultError, read_inside
from memvault.vault_io.resolve import LinkResolver

CANARY = "zanzibar quokka"
BROKEN = b"# Field notes\nThe heron came back at dawn \xff\xfe and left by noon.\n"


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")  # embedding is not what these tests are about
    return CliRunner()


def run(runner: CliRunner, vault: Path, *args: str):
    return runner.invoke(cli, ["--vault", str(vault), *args])


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the vault holding a secret note."""
    folder = tmp_path / "outside"
    write(folder, "Secret.md", f"Herons nest by the {CANARY} pond.\n")
    return folder


def indexed_paths(vault: Path) -> set[str]:
    with opened(vault) as store:
        return {r[0] for r in store.read_con().execute("SELECT path FROM files")}


def one_error_line(result) -> str:
    """The command failed with exit 1 and said why in one line, no traceback."""
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def test_symlinks_out_of_the_vault_are_skipped_counted_and_refused(
    vault: Path, outside: Path, runner: CliRunner
) -> None:
    write(vault, "Real/Kept.md", "A note that stays.\n")
    os.symlink("/proc/self/environ", vault / "env.md")
    os.symlink(outside / "Secret.md", vault / "Secret.md")
    os.symlink(outside, vault / "Elsewhere")
    os.symlink(vault / "Real" / "Kept.md", vault / "Shortcut.md")  # stays inside: still a note
    synced = run(runner, vault, "sync")
    assert synced.exit_code == 0, synced.output
    for path in ("env.md", "Secret.md", "Elsewhere"):
        assert synced.stderr.count(f"{path}: symlink leads outside the vault") == 1, synced.stderr
    assert indexed_paths(vault) == {"Real/Kept.md", "Shortcut.md"}
    assert run(runner, vault, "show", "Shortcut.md").exit_code == 0
    for ref in ("env.md", "/env", "Secret.md", "Elsewhere/Secret.md"):
        assert "leads outside the vault" in one_error_line(run(runner, vault, "show", ref))
    assert CANARY not in run(runner, vault, "search", CANARY, "--mode", "keyword").output
    stats = json.loads(run(runner, vault, "stats", "--json").output)
    assert stats["skipped_outside_vault"] == 3
    doctor = run(runner, vault, "doctor")
    assert doctor.exit_code == 0, doctor.output  # a warning for a person, not an unhealthy vault
    assert "skipped: 3 outside the vault" in doctor.output


def test_a_note_replaced_by_a_symlink_out_of_the_vault_leaves_the_index(
    vault: Path, outside: Path, runner: CliRunner
) -> None:
    note = write(vault, "Plans.md", "Ordinary plans for the week.\n")
    assert run(runner, vault, "sync").exit_code == 0
    note.unlink()
    os.symlink(outside / "Secret.md", note)
    assert run(runner, vault, "sync").exit_code == 0
    assert indexed_paths(vault) == set()
    assert "No matches" in run(runner, vault, "search", CANARY, "--mode", "keyword").output


def test_watched_paths_that_lead_outside_are_skipped_with_a_warning(vault: Path, outside: Path) -> None:
    write(vault, "Inside.md", "inside words\n")
    with opened(vault) as store:
        store.sync()
        # What the daemon's watcher hands over when symlinks appear (a folder's files included).
        write(vault, "Inside.md", "inside words, edited\n")
        os.symlink(outside / "Secret.md", vault / "Linked.md")
        os.symlink(outside, vault / "Folder")
        report = store.sync_paths(["Inside.md", "Linked.md", "Folder/Secret.md"])
        paths = {r[0] for r in store.read_con().execute("SELECT path FROM files")}
        stats = store.stats()
    assert paths == {"Inside.md"}
    assert sorted(w.split(":")[0] for w in report.summary.warnings) == ["Folder/Secret.md", "Linked.md"]
    assert stats.skipped_outside_vault == 2


def test_reads_check_the_file_they_opened(vault: Path, outside: Path) -> None:
    # A symlink swapped in after the scan: the read itself refuses it.
    os.symlink(outside / "Secret.md", vault / "Swapped.md")
    with pytest.raises(OutsideVaultError):
        read_inside(vault, "Swapped.md")
    res = read_note_file(vault, "Swapped.md", None, LinkResolver([]))
    assert res.note is None and res.error is not None and "leads outside the vault" in res.error
    os.mkfifo(vault / "Pipe.md")  # never blocks the reader
    with pytest.raises(OSError):
        read_inside(vault, "Pipe.md")
    write(vault, "Fine.md", "fine")
    os.symlink(vault / "Fine.md", vault / "Alias.md")
    assert read_inside(vault, "Alias.md") == b"fine"


def test_source_add_refuses_a_symlink_out_of_the_vault_and_writes_nothing(
    vault: Path, outside: Path, runner: CliRunner
) -> None:
    os.symlink(outside / "Secret.md", vault / "Secret.md")
    before = (outside / "Secret.md").read_bytes()
    for arg in ("Secret.md", str(vault / "Secret.md")):
        assert "leads outside the vault" in one_error_line(run(runner, vault, "source", "add", arg))
    assert (vault / "Secret.md").is_symlink() and (outside / "Secret.md").read_bytes() == before


def test_a_bad_byte_does_not_hide_a_note_and_doctor_says_a_person_must_fix_it(
    vault: Path, runner: CliRunner
) -> None:
    note = write(vault, "Field notes.md", BROKEN)
    write(vault, "Other.md", "Nothing odd here.\n")
    synced = run(runner, vault, "sync")
    assert synced.exit_code == 0, synced.output
    warned = [line for line in synced.stderr.splitlines() if "UTF-8" in line]
    assert len(warned) == 1 and "Field notes.md" in warned[0]
    found = run(runner, vault, "search", "heron", "--mode", "keyword")
    assert "Field notes.md" in found.output
    assert "\ufffd" in run(runner, vault, "show", "Field notes.md").output
    for args in (("doctor",), ("doctor", "--repair")):
        doctor = run(runner, vault, *args)
        assert doctor.exit_code == 0, doctor.output
        assert "Field notes.md (byte 0xff at offset 42)" in doctor.output
        assert "fix them in an editor" in doctor.output and "repaired" not in doctor.output
    assert json.loads(run(runner, vault, "doctor", "--json").output)["healthy"] is True
    assert json.loads(run(runner, vault, "stats", "--json").output)["undecodable"] == 1
    assert "fix the bytes" in one_error_line(run(runner, vault, "source", "add", "Field notes.md"))
    assert note.read_bytes() == BROKEN  # never rewritten, by sync, doctor or source add


def test_ingest_never_revises_a_session_note_whose_path_leads_outside(vault: Path, tmp_path: Path) -> None:
    transcript = Path(__file__).parent / "fixtures" / "imports" / "claude-code-session.jsonl"
    with opened(vault) as store:
        first = store.ingest(transcript)
        data_dir = store.data_dir
    # The note moved out of the vault, a symlink left in its place, and the
    # durable state lost: the planned path now leads to a file elsewhere.
    elsewhere = tmp_path / "elsewhere.md"
    elsewhere.write_bytes((vault / first.path).read_bytes() + f"\n{CANARY}\n".encode())
    before = elsewhere.read_bytes()
    (vault / first.path).unlink()
    os.symlink(elsewhere, vault / first.path)
    import shutil

    shutil.rmtree(data_dir)
    shutil.rmtree(vault / "Memory/.memvault")  # the history logs too: nothing knows the session
    with opened(vault) as store:
        again = store.ingest(transcript)
    assert again.path != first.path and again.action == "imported"  # a note of its own, inside the vault
    assert CANARY not in (vault / again.path).read_text("utf-8")
    assert (vault / first.path).is_symlink() and elsewhere.read_bytes() == before


def test_an_import_folder_never_reads_a_file_a_symlink_leads_out_of_it(
    runner: CliRunner, vault: Path, outside: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "to-import"
    write(folder, "Kept.md", "---\ntype: semantic\n---\nThe heron nests by the mill.\n")
    (folder / "Secret.md").symlink_to(outside / "Secret.md")
    (folder / "env.md").symlink_to("/proc/self/environ")
    (folder / "Elsewhere").symlink_to(outside, target_is_directory=True)
    result = run(runner, vault, "import", "markdown", str(folder))
    assert result.exit_code == 0, result.output
    assert "1 imported" in result.output and "Traceback" not in result.output
    warned = [line for line in result.stderr.splitlines() if "leads outside" in line]
    assert len(warned) == 2 and any("Secret.md" in w for w in warned) and any("env.md" in w for w in warned)
    texts = "".join(p.read_text("utf-8", "replace") for p in vault.rglob("*.md"))
    assert "The heron nests by the mill." in texts
    assert CANARY not in texts and "PATH=" not in texts


def test_doctor_names_a_file_whose_name_is_not_utf8(runner: CliRunner, vault: Path) -> None:
    write(vault, "Kept.md", "# Kept\n")
    with open(os.path.join(os.fsencode(vault), b"caf\xe9 notes.md"), "wb") as fh:  # a Latin-1 name
        fh.write(b"# Cafe\nThe espresso machine manual.\n")
    assert run(runner, vault, "sync").exit_code == 0
    report = json.loads(run(runner, vault, "doctor", "--json").output)
    assert report["healthy"] is True  # a warning a person acts on, not a fault
    [finding] = [f for f in report["findings"] if "not UTF-8" in f["detail"]]
    assert finding["warning"] and "caf\ufffd notes.md" in finding["detail"] and "rename" in finding["detail"]
