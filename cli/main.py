"""The ``memvault`` command: a thin Click layer over the library.

Commands parse their arguments, call the vault's :class:`MemoryStore` (or
the daemon's socket), and print. Every library error is a
:class:`~memvault.vault_io.errors.MemvaultError` and becomes one clear line
on stderr and its exit code: 2 for usage problems (bad vault path, bad
option, bad query syntax), 1 for runtime failures; never a traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import click

from memvault.store.memory_store import MemoryStore
from memvault.vault_io.errors import MemvaultError, cap_echoes


class UsageFailure(click.ClickException):
    """A usage problem detected after parsing (exit code 2)."""

    exit_code = 2


def as_click_error(exc: MemvaultError) -> click.ClickException:
    """One line on stderr and the error's own exit code (1 runtime, 2 usage)."""
    message = cap_echoes(str(exc))  # a huge argument is not echoed back whole
    # Click sets the exit code per exception class; a library error's is 1 or 2.
    return UsageFailure(message) if exc.exit_code == UsageFailure.exit_code else click.ClickException(message)


#: The module that defines each command. A command imports only its own
#: module: start-up time is what a person (or an agent, every turn) waits for.
COMMAND_MODULES: dict[str, str] = {
    **dict.fromkeys(["sync", "search", "show", "links", "backlinks", "stats"], "index_cmds"),
    **dict.fromkeys(["add", "update", "forget", "restore", "history"], "memory_cmds"),
    **dict.fromkeys(["list", "recent"], "browse_cmds"),
    **dict.fromkeys(["mcp"], "mcp_cmds"),
    **dict.fromkeys(["hook"], "hook_cmds"),
    **dict.fromkeys(["daemon", "status", "service"], "daemon_cmds"),
    **dict.fromkeys(["source", "facts"], "fact_cmds"),
    **dict.fromkeys(["context", "model"], "recall_cmds"),
    **dict.fromkeys(["rebuild", "doctor"], "maintenance_cmds"),
    **dict.fromkeys(["merge", "consolidate", "conflicts"], "consolidate_cmds"),
    "cache": "cache_cmds",
    "config": "config_cmds",
    **dict.fromkeys(["ingest", "import", "export", "restore-backup"], "flow_cmds"),
    "views": "views_cmds",
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
        except MemvaultError as exc:
            raise as_click_error(exc) from None
        except Exception as exc:
            if type(exc).__module__ != "apsw":
                raise  # a bug: the traceback says where
            # SQLite failed outside a write transaction (a read, a checkpoint):
            # one line, like every other runtime failure.
            raise click.ClickException(f"database error: {exc}") from None


class AppContext:
    """Per-invocation state: the vault's store is opened on first use only,
    so ``memvault --help`` and ``memvault config`` work without one."""

    def __init__(self, vault_arg: str | None) -> None:
        self.vault_arg = vault_arg
        self._store: MemoryStore | None = None

    @property
    def store(self) -> MemoryStore:
        """The selected vault's store (flag, environment, config), checked."""
        if self._store is None:
            from memvault.daemon.client import daemon_embedder

            self._store = MemoryStore.open(self.vault_arg)
            # A write that needs vectors asks the running daemon's loaded model first.
            self._store.vectors_elsewhere = daemon_embedder(self._store)
        return self._store

    def close(self) -> None:
        """Release the store's connections."""
        if self._store is not None:
            self._store.close()


pass_app = click.make_pass_decorator(AppContext)

#: The one ``--json`` option every command shares: one JSON object per line.
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object per line instead of text for people."
)


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


@contextlib.contextmanager
def progress_bar(label: str, show: bool, *, minimum: int = 0) -> Iterator[Callable[[int, int], None]]:
    """A ``progress(done, total)`` callback drawing a bar on stderr when
    ``show`` (a terminal) and the work has at least ``minimum`` steps;
    silent otherwise (pipes, ``--json``, small jobs)."""
    bar: Any = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if not show or total < minimum:
            return
        if bar is None:
            bar = click.progressbar(length=total, label=label, file=sys.stderr)
        if bar.length != total:
            bar.length = total
        bar.update(done - bar.pos)

    try:
        yield progress
    finally:
        if bar is not None:
            bar.render_finish()


def warn(message: str) -> None:
    """Print a warning line on stderr."""
    click.echo(f"warning: {message}", err=True)


def main() -> None:
    """Console-script entry point."""
    from memvault.cli.logs import setup_logging

    setup_logging("cli")  # the daemon, mcp and hook commands set up their own
    cli(prog_name="memvault")
