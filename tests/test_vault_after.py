"""``--vault`` after the command (issue 35): ``memvault search X --vault V``
works as ``memvault --vault V search X`` does, on every command and subcommand."""

from __future__ import annotations

from pathlib import Path

import click
from click.testing import CliRunner
from helpers import write

from memvault.cli.main import COMMAND_MODULES, cli


def every_command() -> list[tuple[list[str], click.Command]]:
    """Each command's words and the command, subcommands of groups included."""
    ctx = click.Context(cli)
    out: list[tuple[list[str], click.Command]] = []

    def walk(words: list[str], command: click.Command) -> None:
        out.append((words, command))
        if isinstance(command, click.Group):
            for name, sub in sorted(command.commands.items()):
                walk(words + [name], sub)

    for name in sorted(COMMAND_MODULES):
        command = cli.get_command(ctx, name)
        assert command is not None, name
        walk([name], command)
    return out


def test_every_command_takes_vault_after_its_name(vault: Path) -> None:
    commands = every_command()
    assert len(commands) > 40
    for words, command in commands:
        assert any(p.name == "vault" for p in command.params), words
        r = CliRunner().invoke(cli, [*words, "--vault", str(vault), "--help"])
        assert r.exit_code == 0 and "--vault PATH" in r.output, (words, r.output)


def test_vault_after_the_command_is_the_vault_used(vault: Path, tmp_path: Path) -> None:
    write(vault, "Deploy.md", "# Deploy\n\nWe deploy the billing service with blue-green.\n")
    runner = CliRunner()
    assert runner.invoke(cli, ["sync", "--no-embed", "--vault", str(vault)]).exit_code == 0
    r = runner.invoke(cli, ["search", "billing", "--vault", str(vault), "--mode", "keyword"])
    assert r.exit_code == 0 and "Deploy.md" in r.output, r.output
    r = runner.invoke(cli, ["source", "add", "Deploy.md", "--vault", str(vault)])
    assert r.exit_code == 0 and "Marked Deploy.md" in r.output, r.output
    r = runner.invoke(cli, ["--vault", str(vault), "search", "billing", "--vault", str(vault), "--mode", "keyword"])
    assert r.exit_code == 0 and "Deploy.md" in r.output  # the same one twice: fine
    other = tmp_path / "other"
    other.mkdir()
    r = runner.invoke(cli, ["--vault", str(vault), "search", "billing", "--vault", str(other)])
    assert r.exit_code == 2 and "--vault is given twice" in r.output and r.output.count("Error:") == 1
    assert "Traceback" not in r.output
