"""The ``memvault`` command: a thin Click layer over the library.

Commands parse their arguments, call into ``memvault.daemon`` / ``store``,
and print. Library errors become one clear line on stderr and an exit code:
2 for usage problems (bad vault path, bad option, bad query syntax), 1 for
runtime failures; never a traceback.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from memvault.daemon.app import NoIndexError, Vault, VaultError
from memvault.daemon.config import ConfigError


class UsageFailure(click.ClickException):
    """A usage problem detected after parsing (exit code 2)."""

    exit_code = 2


#: Library exceptions and the exit code each maps to.
def _error_map() -> dict[type[BaseException], int]:
    from memvault.store.db import IndexError_
    from memvault.store.search import QuerySyntaxError

    return {VaultError: 2, ConfigError: 2, QuerySyntaxError: 2, NoIndexError: 1, IndexError_: 1}


class MemvaultGroup(click.Group):
    """A group that turns known library errors into clean exits."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except tuple(_error_map()) as exc:
            code = next(c for t, c in _error_map().items() if isinstance(exc, t))
            err = UsageFailure(str(exc)) if code == 2 else click.ClickException(str(exc))
            raise err from None


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


def _register() -> None:
    from . import index_cmds  # noqa: F401  (commands attach themselves to `cli`)
    from . import daemon_cmds  # noqa: F401


_register()


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="memvault")
