"""The ``memvault`` command: a thin Click layer over the library.

Commands parse their arguments, call into ``memvault.daemon`` / ``store``,
and print. Library errors become one clear line on stderr and an exit code:
2 for usage problems (bad vault path, bad option, bad query syntax), 1 for
runtime failures; never a traceback.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import click

from memvault.store.memory_store import Vault


class UsageFailure(click.ClickException):
    """A usage problem detected after parsing (exit code 2)."""

    exit_code = 2


#: Library exceptions (by module and name, so that mapping them imports
#: nothing a command does not need) and the exit code each maps to.
_EXIT_CODES: dict[str, int] = {
    "memvault.store.memory_store.VaultError": 2,
    "memvault.store.settings.ConfigError": 2,
    "memvault.store.retrieval.keyword.QuerySyntaxError": 2,
    "memvault.store.memories.memtypes.UnknownTypeError": 2,
    "memvault.store.memory_store.NoIndexError": 1,
    "memvault.store.db.connection.IndexError_": 1,
    "memvault.store.memories.mirror.MemoryOpError": 1,
    "memvault.store.index.reconcile.VaultMissingError": 1,
    "memvault.daemon.serve.ServerRunningError": 1,
    "memvault.store.facts.source_notes.SourcePathError": 2,
    "memvault.store.facts.source_notes.SourceError": 1,
}


def exit_code_for(exc: BaseException) -> int | None:
    """The exit code for a known library error, None for anything else (a bug)."""
    for cls in type(exc).__mro__:
        code = _EXIT_CODES.get(f"{cls.__module__}.{cls.__qualname__}")
        if code is not None:
            return code
    return None


#: The module that defines each command. A command imports only its own
#: module: start-up time is what a person (or an agent, every turn) waits for.
COMMAND_MODULES: dict[str, str] = {
    **dict.fromkeys(["sync", "search", "show", "links", "backlinks", "stats"], "index_cmds"),
    **dict.fromkeys(["add", "update", "forget", "restore", "history"], "memory_cmds"),
    **dict.fromkeys(["daemon", "status", "service"], "daemon_cmds"),
    **dict.fromkeys(["source", "facts"], "fact_cmds"),
    **dict.fromkeys(["context", "model"], "recall_cmds"),
    "config": "config_cmds",
}


class MemvaultGroup(click.Group):
    """A group that loads command modules on demand and turns known library
    errors into clean exits."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_MODULES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            importlib.import_module(f"{__package__}.{module}")  # its commands attach to `cli`
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException:
            raise
        except Exception as exc:
            code = exit_code_for(exc)
            if code is None:
                raise
            raise (UsageFailure(str(exc)) if code == 2 else click.ClickException(str(exc))) from None


class AppContext:
    """Per-invocation state: the vault is opened on first use only, so
    ``memvault --help`` and ``memvault config`` work without one."""

    def __init__(self, vault_arg: str | None) -> None:
        self.vault_arg = vault_arg
        self._vault: Vault | None = None

    @property
    def vault(self) -> Vault:
        """The selected vault (flag, environment, config), checked."""
        if self._vault is None:
            self._vault = Vault.open(self.vault_arg)
        return self._vault

    def close(self) -> None:
        """Release the index connection."""
        if self._vault is not None:
            self._vault.close()


pass_app = click.make_pass_decorator(AppContext)


@click.group(cls=MemvaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--vault",
    "vault",
    metavar="PATH",
    type=click.Path(file_okay=False, path_type=str),
    help="The Obsidian vault folder (default: $MEMVAULT_VAULT, then `vault` in config.toml).",
)
@click.version_option(package_name="memvault")
@click.pass_context
def cli(ctx: click.Context, vault: str | None) -> None:
    """memvault: long-term memory over an Obsidian vault.

    Index a vault with `sync`, query it with `search`. The index lives in
    memvault's data dir, never inside the vault.
    """
    app = AppContext(vault)
    ctx.obj = app
    ctx.call_on_close(app.close)


def emit_json(obj: Any) -> None:
    """Print one JSON object on its own line."""
    click.echo(json.dumps(obj, ensure_ascii=False, default=str))


def stderr_is_tty() -> bool:
    """Whether progress bars and colours make sense (an interactive terminal)."""
    return sys.stderr.isatty()


def warn(message: str) -> None:
    """Print a warning line on stderr."""
    click.echo(f"warning: {message}", err=True)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="memvault")
