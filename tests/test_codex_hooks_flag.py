"""`hook install --client codex` turns on the feature flag Codex runs no hook
without (issue 35): ``[features] codex_hooks = true`` in config.toml, only
that line written, every other byte kept; already on (either name), nothing."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault.cli.clients import client_config
from memvault.cli.main import cli

THEIRS = """\
# my codex settings
model = "o3"  # the default

[features]
# experiments I run
web_search_request = true
codex_hooks = false  # off while I tried something

[mcp_servers.memory]
command = "npx"
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home (Codex home under it) so no real config is touched."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setattr(client_config.sys, "platform", "linux")
    return home


def install(vault: Path, *extra: str) -> object:
    return CliRunner().invoke(cli, ["--vault", str(vault), "hook", "install", "--client", "codex", *extra])


def test_a_fresh_install_writes_the_hooks_and_turns_the_feature_on(home: Path, vault: Path) -> None:
    r = install(vault, "--json")
    assert r.exit_code == 0, r.output
    hooks_change, flag_change = map(json.loads, r.output.splitlines())
    config = home / ".codex" / "config.toml"
    assert hooks_change["path"] == str(home / ".codex" / "hooks.json") and hooks_change["action"] == "added"
    assert flag_change["path"] == str(config) and flag_change["action"] == "added"
    assert config.read_text() == "[features]\ncodex_hooks = true\n"
    assert "Stop" in json.loads((home / ".codex" / "hooks.json").read_text())["hooks"]
    again = install(vault)
    assert again.exit_code == 0 and again.output.count("already up to date") == 2
    # Uninstall takes memvault's hooks out and leaves the flag (other hooks may need it).
    assert CliRunner().invoke(cli, ["--vault", str(vault), "hook", "uninstall", "--client", "codex"]).exit_code == 0
    assert tomllib.loads(config.read_text())["features"] == {"codex_hooks": True}


def test_a_flag_set_to_false_is_turned_on_and_only_its_line_changes(home: Path, vault: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(THEIRS)
    r = install(vault)
    assert r.exit_code == 0, r.output
    assert f"updated Codex's hooks feature flag in {config}" in r.output and "it was false" in r.output
    assert config.read_text() == THEIRS.replace("codex_hooks = false  # off while I tried something",
                                                "codex_hooks = true")
    assert config.with_name("config.toml.memvault-backup").read_text() == THEIRS


@pytest.mark.parametrize("features", ["hooks = true", "codex_hooks = true"])
def test_already_on_under_either_name_is_left_alone(home: Path, vault: Path, features: str) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    text = f'model = "o3"\r\n\r\n[features]\r\n{features}\r\n'
    config.write_bytes(text.encode())
    r = install(vault)
    assert r.exit_code == 0 and "Codex's hooks feature flag already up to date" in r.output
    assert config.read_bytes() == text.encode()


def test_features_in_a_table_without_the_flag_gets_one_line_crlf_kept(home: Path, vault: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_bytes(b'[features]\r\nweb_search_request = true\r\n\r\n[profiles.fast]\r\nmodel = "o4-mini"\r\n')
    assert install(vault).exit_code == 0
    assert config.read_bytes() == (b'[features]\r\nweb_search_request = true\r\ncodex_hooks = true\r\n\r\n'
                                   b'[profiles.fast]\r\nmodel = "o4-mini"\r\n')


def test_features_written_inline_is_refused_before_anything_is_written(home: Path, vault: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    inline = 'features = { codex_hooks = false }\n'
    config.write_text(inline)
    r = install(vault)
    assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1 and "set it by hand" in r.output
    assert "Traceback" not in r.output and "nothing was written" in r.output
    assert config.read_text() == inline and not (home / ".codex" / "hooks.json").exists()
    assert sorted(p.name for p in config.parent.iterdir()) == ["config.toml"]


def test_project_scope_turns_it_on_in_the_projects_codex_folder(
    home: Path, vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    assert install(vault, "--scope", "project").exit_code == 0
    assert tomllib.loads((project / ".codex" / "config.toml").read_text()) == {"features": {"codex_hooks": True}}
    assert (project / ".codex" / "hooks.json").is_file() and not (home / ".codex").exists()
