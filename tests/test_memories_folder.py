"""The memory folder setting: only a plain folder inside the vault is accepted,
and memory notes always land inside the vault."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from memvault.cli.main import cli
from memvault.store.memories.mirror import MemoryOpError
from memvault.store.memory_store import MemoryStore
from memvault.store.settings import ConfigError, check_memory_folder, load_settings

BAD = ["../escaped", "/abs/x", "a/../b", "..", ".hidden", "Notes/.secret", "a//b", "./Memory", "~/x", " ", "a\\b", "x\ny"]


def run(vault: Path, *args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["--vault", str(vault), *args], env=env)


@pytest.mark.parametrize("folder", BAD)
def test_bad_memory_folder_from_the_environment_is_a_usage_error(vault: Path, folder: str) -> None:
    r = run(vault, "add", "Prefers tea.", env={"MEMVAULT_MEMORY_FOLDER": folder})
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line
    assert "environment variable MEMVAULT_MEMORY_FOLDER" in line and "memory_folder" in line
    # nothing was written anywhere near the vault
    assert not any(vault.parent.rglob("*.md"))


@pytest.mark.parametrize("folder", ["", "/abs/x", "../up"])
def test_bad_memory_folder_in_the_config_file_names_the_file(vault: Path, memvault_env: Path, folder: str) -> None:
    config = memvault_env / "config.toml"
    config.write_text(f"memory_folder = {folder!r}\n".replace("'", '"'), encoding="utf-8")
    r = run(vault, "add", "Prefers tea.")
    assert r.exit_code == 2, r.output
    assert str(config) in r.output and "memory_folder" in r.output and "Traceback" not in r.output


def test_good_memory_folders(vault: Path) -> None:
    assert check_memory_folder("Memory/", "x") == "Memory"
    assert check_memory_folder("Brain/Memories", "x") == "Brain/Memories"
    assert check_memory_folder("Gedächtnis", "x") == "Gedächtnis"
    r = run(vault, "add", "Prefers tea.", "--json", env={"MEMVAULT_MEMORY_FOLDER": "Brain/Memories/"})
    assert r.exit_code == 0, r.output
    assert '"path": "Brain/Memories/semantic/prefers-tea-' in r.output


FOLDERS = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
    st.text(alphabet="./a~ \\", max_size=10),  # path syntax, densely
    st.lists(st.sampled_from(["..", ".", "", "a", ".h", "Memory", "/", "~", " b"]), max_size=4).map("/".join),
)


@given(FOLDERS)
def test_memory_notes_always_land_inside_the_vault(tmp_path_factory: pytest.TempPathFactory, folder: str) -> None:
    base = tmp_path_factory.mktemp("case")  # a folder of its own, to see anything written beside the vault
    root = base / "vault"
    root.mkdir()
    try:
        config = load_settings({"vault": str(root), "memory_folder": folder})
    except ConfigError as exc:
        assert "memory_folder" in str(exc)
        return
    vault = MemoryStore(root, config)
    try:
        try:
            result = vault.memories.add(f"Remember {folder!r} well.", "fact")
        except MemoryOpError:  # e.g. a folder name over 255 bytes: refused by the file system, cleanly
            return
        written = list(base.rglob("*.md"))
        assert written == [root / result.path]
        real = Path(os.path.realpath(root / result.path))
        assert real.is_relative_to(Path(os.path.realpath(root)))
        rel = real.relative_to(os.path.realpath(root))
        assert not any(part.startswith(".") for part in rel.parts)
        assert rel.parts[:-2] == tuple(config.memory_folder.split("/"))
    finally:
        vault.close()
