"""`memvault mcp install` / `hook install`: sample config files of each client, merged, never broken."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault.cli.clients import client_config
from memvault.cli.main import cli

OTHER_SERVER = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home (and XDG config dir, Codex home) so no real client config is touched."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setattr(client_config.sys, "platform", "linux")
    return home


def invoke(vault: Path, *args: str) -> object:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


SAMPLES = {
    # client: (path under home, JSON with another server and unrelated keys, the servers key)
    "claude-code": (".claude.json", {"numStartups": 12, "projects": {"/x": {"mcpServers": {}}},
                                     "mcpServers": {"memory": {"type": "stdio", **OTHER_SERVER}}}, "mcpServers"),
    "claude-desktop": (".config/Claude/claude_desktop_config.json",
                       {"mcpServers": {"memory": OTHER_SERVER}, "globalShortcut": "Ctrl+Space"}, "mcpServers"),
    "cursor": (".cursor/mcp.json", {"mcpServers": {"memory": OTHER_SERVER}}, "mcpServers"),
    "vscode": (".config/Code/User/mcp.json", {"inputs": [{"id": "tok", "type": "promptString"}],
                                             "servers": {"memory": {"type": "stdio", **OTHER_SERVER}}}, "servers"),
}


@pytest.mark.parametrize("client", sorted(SAMPLES))
def test_install_merges_into_each_json_client_and_uninstall_removes_only_ours(
    client: str, home: Path, vault: Path
) -> None:
    rel, sample, key = SAMPLES[client]
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    original = json.dumps(sample, indent=4)
    path.write_text(original)
    r = invoke(vault, "mcp", "install", "--client", client)
    assert r.exit_code == 0, r.output
    assert f"added MCP server 'memvault' to {path}" in r.output and "backup" in r.output
    data = json.loads(path.read_text())
    entry = data[key]["memvault"]
    assert entry["args"] == ["--vault", str(vault), "mcp"] and Path(entry["command"]).is_absolute()
    assert data[key]["memory"] == sample[key]["memory"]  # the other server stays
    for k, v in sample.items():  # and every other key
        if k != key:
            assert data[k] == v
    if client in ("claude-code", "vscode"):
        assert entry["type"] == "stdio"
    assert entry["env"]["MEMVAULT_HOME"]  # the client starts servers with a bare environment
    assert path.with_name(path.name + ".memvault-backup").read_text() == original
    again = invoke(vault, "mcp", "install", "--client", client)
    assert again.exit_code == 0 and "already up to date" in again.output
    r = invoke(vault, "mcp", "uninstall", "--client", client)
    assert r.exit_code == 0 and "removed" in r.output
    assert json.loads(path.read_text()) == sample


def test_install_creates_a_missing_file(home: Path, vault: Path) -> None:
    r = invoke(vault, "mcp", "install", "--client", "cursor", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["action"] == "added" and out["backup"] is None
    assert set(json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]) == {"memvault"}


@pytest.mark.parametrize("client", ["claude-code", "cursor", "vscode", "claude-desktop", "codex"])
def test_a_file_that_does_not_parse_is_refused_untouched(client: str, home: Path, vault: Path) -> None:
    path = client_config.mcp_config_path(client, "user", home)
    path.parent.mkdir(parents=True, exist_ok=True)
    broken = '{"mcpServers": {"memory": ' if client != "codex" else '[mcp_servers.memory\ncommand = "npx"\n'
    path.write_text(broken)
    r = invoke(vault, "mcp", "install", "--client", client)
    assert r.exit_code == 1
    assert "nothing was written" in r.output and len(r.output.strip().splitlines()) == 1
    assert path.read_text() == broken
    assert not path.with_name(path.name + ".memvault-backup").exists()


CODEX = """\
# my codex settings
model = "o4-mini"

[mcp_servers.memory]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-memory"]

[mcp_servers.memory.env]
DEBUG = "1"

[profiles.fast]
model = "o4-mini"
"""


def test_codex_toml_keeps_every_other_byte(home: Path, vault: Path) -> None:
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(CODEX)
    r = invoke(vault, "mcp", "install", "--client", "codex")
    assert r.exit_code == 0, r.output
    text = path.read_text()
    assert text.startswith(CODEX.rstrip("\n"))
    data = tomllib.loads(text)
    assert data["mcp_servers"]["memory"]["env"] == {"DEBUG": "1"} and data["profiles"]["fast"]["model"] == "o4-mini"
    assert data["mcp_servers"]["memvault"]["args"] == ["--vault", str(vault), "mcp"]
    # Installing again with another vault replaces only our table.
    other = vault.parent / "other"
    other.mkdir()
    assert invoke(other, "mcp", "install", "--client", "codex").exit_code == 0
    data = tomllib.loads(path.read_text())
    assert data["mcp_servers"]["memvault"]["args"][1] == str(other)
    assert invoke(vault, "mcp", "uninstall", "--client", "codex").exit_code == 0
    assert path.read_text().rstrip("\n") == CODEX.rstrip("\n")


CODEX_COMMENTED = """\
# Codex settings, by hand
model = "o4-mini"  # the fast one

[mcp_servers.memvault]
# memvault: my notes vault
command = "/old/bin/memvault"  # before the move
args = ["--vault", "/old/vault", "mcp"]
tricky = \"\"\"
[mcp_servers.not_a_table]
\"\"\"

[mcp_servers.memvault.env]
MEMVAULT_HOME = "/old/home"

# GitHub's server, for the work repos
[mcp_servers.github]
command = "gh-mcp"   # keep this comment
args = [
  "--repo",  # a comment inside an array
  "[not, a, header]",
]

[profiles.fast]
model = "o4-mini"
"""


def codex_config(home: Path, text: str | None) -> Path:
    path = home / ".codex" / "config.toml"
    if text is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path


def test_codex_install_into_a_fresh_file(home: Path, vault: Path) -> None:
    path = codex_config(home, None)
    r = invoke(vault, "mcp", "install", "--client", "codex", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["action"] == "added"
    text = path.read_text()
    assert text.startswith("[mcp_servers.memvault]\n")
    assert tomllib.loads(text)["mcp_servers"]["memvault"]["args"] == ["--vault", str(vault), "mcp"]
    assert not path.with_name(path.name + ".memvault-backup").exists()


def test_codex_install_again_is_idempotent(home: Path, vault: Path) -> None:
    path = codex_config(home, CODEX)
    assert invoke(vault, "mcp", "install", "--client", "codex").exit_code == 0
    once = path.read_bytes()
    backup = path.with_name(path.name + ".memvault-backup")
    backup.unlink()
    r = invoke(vault, "mcp", "install", "--client", "codex", "--json")
    assert r.exit_code == 0 and json.loads(r.output)["action"] == "unchanged"
    assert path.read_bytes() == once and not backup.exists()  # nothing written, not even a backup


def test_codex_keeps_comments_around_and_inside_our_table(home: Path, vault: Path) -> None:
    path = codex_config(home, CODEX_COMMENTED)
    before = tomllib.loads(CODEX_COMMENTED)
    r = invoke(vault, "mcp", "install", "--client", "codex", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["action"] == "updated"
    text = path.read_text()
    data = tomllib.loads(text)
    assert data["mcp_servers"]["memvault"]["args"] == ["--vault", str(vault), "mcp"]
    ours = data["mcp_servers"]["memvault"]
    assert "tricky" not in ours and ours.get("env") == client_config.server_entry("codex", vault).get("env")
    assert data["mcp_servers"]["github"] == before["mcp_servers"]["github"] and data["profiles"] == before["profiles"]
    for line in ("# Codex settings, by hand", 'model = "o4-mini"  # the fast one', "# memvault: my notes vault",
                 "# GitHub's server, for the work repos", 'command = "gh-mcp"   # keep this comment',
                 '  "--repo",  # a comment inside an array', '  "[not, a, header]",'):
        assert line in text.splitlines(), line
    # In place: our table is where it was, before GitHub's (and its comment).
    assert text.index("[mcp_servers.memvault]") < text.index("# GitHub's server") < text.index("[mcp_servers.github]")
    assert (path.with_name(path.name + ".memvault-backup")).read_text() == CODEX_COMMENTED
    r = invoke(vault, "mcp", "uninstall", "--client", "codex")
    assert r.exit_code == 0, r.output
    text = path.read_text()
    data = tomllib.loads(text)
    assert "memvault" not in data["mcp_servers"] and data["mcp_servers"]["github"] == before["mcp_servers"]["github"]
    assert "# memvault: my notes vault" in text and "# GitHub's server, for the work repos" in text


def test_codex_file_with_crlf_line_endings_keeps_them(home: Path, vault: Path) -> None:
    crlf = CODEX_COMMENTED.replace("\n", "\r\n")
    path = codex_config(home, None)
    path.parent.mkdir(parents=True)
    path.write_bytes(crlf.encode())
    assert invoke(vault, "mcp", "install", "--client", "codex").exit_code == 0
    raw = path.read_bytes().decode()
    assert "\n" not in raw.replace("\r\n", "") and "# GitHub's server, for the work repos\r\n" in raw
    assert invoke(vault, "mcp", "uninstall", "--client", "codex").exit_code == 0
    assert "\n" not in path.read_bytes().decode().replace("\r\n", "")


def test_codex_entry_written_inline_is_refused_untouched(home: Path, vault: Path) -> None:
    inline = 'model = "o3"\n\n[mcp_servers]\nmemvault = { command = "x", args = [] }\n'
    path = codex_config(home, inline)
    r = invoke(vault, "mcp", "install", "--client", "codex")
    assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1 and "nothing was written" in r.output
    assert path.read_text() == inline and not path.with_name(path.name + ".memvault-backup").exists()


def test_project_scope_writes_in_the_working_directory(
    home: Path, vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    r = invoke(vault, "mcp", "install", "--client", "claude-code", "--scope", "project")
    assert r.exit_code == 0, r.output
    assert "memvault" in json.loads((project / ".mcp.json").read_text())["mcpServers"]
    r = invoke(vault, "mcp", "install", "--client", "claude-desktop", "--scope", "project")
    assert r.exit_code == 2 and "use --scope user" in r.output


def test_hook_install_merges_into_claude_code_settings(home: Path, vault: Path) -> None:
    path = home / ".claude" / "settings.json"
    path.parent.mkdir()
    theirs = {"type": "command", "command": "echo hello"}
    sample = {"model": "opus", "hooks": {"SessionStart": [{"matcher": "startup", "hooks": [theirs]}],
                                         "PostToolUse": [{"matcher": "Edit", "hooks": [theirs]}]}}
    path.write_text(json.dumps(sample))
    r = invoke(vault, "hook", "install", "--client", "claude-code")
    assert r.exit_code == 0, r.output
    data = json.loads(path.read_text())
    assert data["model"] == "opus" and data["hooks"]["PostToolUse"] == sample["hooks"]["PostToolUse"]
    starts = data["hooks"]["SessionStart"]
    assert starts[0] == sample["hooks"]["SessionStart"][0]
    commands = [h["command"] for groups in data["hooks"].values() for g in groups for h in g["hooks"]]
    for sub in ("session-start", "prompt", "pre-compact", "session-end"):
        assert any(f"hook {sub} --client claude-code" in c and str(vault) in c for c in commands), sub
    assert invoke(vault, "hook", "install", "--client", "claude-code").output.startswith("memvault hooks already")
    assert invoke(vault, "hook", "uninstall", "--client", "claude-code").exit_code == 0
    assert json.loads(path.read_text()) == sample


@pytest.mark.parametrize("client,rel", [("cursor", ".cursor/mcp.json"), ("codex", ".codex/config.toml")])
def test_a_symlinked_config_is_written_through_and_stays_a_link(
    client: str, rel: str, home: Path, vault: Path, tmp_path: Path
) -> None:
    """A config kept in a dotfiles repo and linked into place: the change goes
    to the file the link leads to (atomically, there); the link stays."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / Path(rel).name
    real.write_text('{"mcpServers": {"memory": {"command": "npx"}}}\n' if rel.endswith(".json")
                    else '[mcp_servers.memory]\ncommand = "npx"\n')
    real.chmod(0o600)
    link = home / rel
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    r = invoke(vault, "mcp", "install", "--client", client)
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and link.resolve() == real and (real.stat().st_mode & 0o777) == 0o600
    text = real.read_text()
    assert "memvault" in text and "memory" in text
    assert not [p for p in link.parent.iterdir() if p.name.endswith("memvault-tmp")]
    r = invoke(vault, "mcp", "uninstall", "--client", client)
    assert r.exit_code == 0, r.output
    assert link.is_symlink() and "memvault" not in real.read_text().replace("memvault-backup", "")


def test_a_symlinked_config_that_leads_nowhere_is_refused_untouched(home: Path, vault: Path) -> None:
    link = home / ".cursor" / "mcp.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(home / "gone" / "mcp.json")
    r = invoke(vault, "mcp", "install", "--client", "cursor")
    assert r.exit_code == 1 and r.output.count("\n") == 1 and "Traceback" not in r.output, r.output
    assert "mcp.json" in r.output and "symlink" in r.output and "nothing was written" in r.output
    assert link.is_symlink() and not (home / "gone").exists()


@pytest.mark.parametrize("args", [["--help"], ["mcp", "--help"], ["hook", "--help"]])
def test_the_cli_never_imports_the_mcp_sdk_outside_the_server(args: list[str]) -> None:
    import subprocess
    import sys

    code = f"import sys; sys.argv = ['memvault', *{args!r}]; from memvault.cli.main import main; main()"
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in p.stderr.splitlines() if line.startswith("import time:")}
    assert not {m for m in imported if m.split(".")[0] in ("mcp", "mcp_types", "pydantic", "uvicorn")}
