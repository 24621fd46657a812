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
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import click

from memvault.store.memory_store import MemoryStore
from memvault.vault_io.errors import MemvaultError, cap_echoes


class UsageFailure(click.ClickException):
    """A usage problem detected after parsing (exit code 2)."""

    exit_code = 2


def as_click_error(exc: MemvaultError) -> click.ClickException:
    """One line on stderr and the error's own exit code (1 runtime, 2 usage)."""
    message = printable(cap_echoes(str(exc)))  # a huge argument is not echoed back whole, a control not raw
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
    **dict.fromkeys(["context", "reflect", "model"], "recall_cmds"),
    **dict.fromkeys(["rebuild", "doctor"], "maintenance_cmds"),
    **dict.fromkeys(["merge", "consolidate", "conflicts"], "consolidate_cmds"),
    "cache": "cache_cmds",
    "config": "config_cmds",
    **dict.fromkeys(["ingest", "import", "export", "restore-backup"], "flow_cmds"),
    "views": "views_cmds",
    **dict.fromkeys(["pause", "resume"], "pause_cmds"),
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
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            with_vault_option(command)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemvaultError as exc:
            raise as_click_error(exc) from None
        except click.ClickException as exc:  # a message may name a file or echo an argument
            exc.message = printable(exc.message)  # type: ignore[misc]  # Final for typing; set as __init__ does
            raise
        except Exception as exc:
            if type(exc).__module__ != "apsw":
                raise  # a bug: the traceback says where
            # SQLite failed outside a write transaction (a read, a checkpoint):
            # one line, like every other runtime failure.
            raise click.ClickException(printable(f"database error: {exc}")) from None


class AppContext:
    """Per-invocation state: the vault's store is opened on first use only,
    so ``memvault --help`` and ``memvault config`` work without one."""

    def __init__(self, vault_arg: str | None) -> None:
        self.vault_arg = vault_arg
        #: Settings a command's own flags give (dotted key -> value; None: unset), read when the store opens.
        self.overrides: dict[str, Any] = {}
        self._store: MemoryStore | None = None

    @property
    def store(self) -> MemoryStore:
        """The selected vault's store (flag, environment, config), checked."""
        if self._store is None:
            from memvault.daemon.client import daemon_embedder

            self._store = MemoryStore.open(self.vault_arg, self.overrides)
            # A write that needs vectors asks the running daemon's loaded model first.
            self._store.vectors_elsewhere = daemon_embedder(self._store)
            # What a command writes is searchable by meaning when it answers (embedded here or by the daemon).
            self._store.embed_writes = True
        return self._store

    def close(self) -> None:
        """Release the store's connections."""
        if self._store is not None:
            self._store.close()


pass_app = click.make_pass_decorator(AppContext)

_VAULT_HELP = "The Obsidian vault folder (default: $MEMVAULT_VAULT, then `vault` in config.toml)."


def _vault_after(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """``--vault`` given after the command (``memvault search X --vault V``):
    the same as before it; the two given differently is a usage error."""
    app = ctx.find_object(AppContext)
    if value is None or app is None:
        return
    if app.vault_arg is not None and app.vault_arg != value:
        raise click.UsageError(f"--vault is given twice ({app.vault_arg!r} and {value!r}); give it once")
    app.vault_arg = value


def with_vault_option(command: click.Command) -> None:
    """Let ``command`` (and every command of a group, at any depth) take
    ``--vault`` after its name too, as the tour says: on every command."""
    if not any(p.name == "vault" for p in command.params):
        command.params.append(click.Option(
            ["--vault", "vault"], metavar="PATH", type=click.Path(file_okay=False, path_type=str),
            expose_value=False, callback=_vault_after, is_eager=True, show_default=False, help=_VAULT_HELP))
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            with_vault_option(sub)

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
    help=_VAULT_HELP + " Also after the command.",
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


#: Every control character but tab and newline: C0, DEL and C1 (``\x9b`` is CSI on many terminals).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: The controls JSON leaves raw with ``ensure_ascii=False`` (it escapes C0 itself).
_JSON_RAW = {c: f"\\u{c:04x}" for c in range(0x7F, 0xA0)}


def printable(text: str) -> str:
    """``text`` with every control character but tab and newline shown as an
    escape (``\\x1b``), so what a note holds cannot drive the terminal: no
    OSC 8 hidden link, OSC 0 title, OSC 52 clipboard write, CSI cursor move
    or clear, C1 control, BEL, nor a carriage return that overwrites a line.
    A reader still sees what is there."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


@dataclass(frozen=True)
class Styled:
    """A part of a line printed in a style of memvault's own (its text escaped first)."""

    text: str
    bold: bool = False
    dim: bool = False


def bold(text: str) -> Styled:
    """``text`` printed bold (a title)."""
    return Styled(text, bold=True)


def dim(text: str) -> Styled:
    """``text`` printed dim (ids, scores, hints)."""
    return Styled(text, dim=True)


def echo(*parts: "str | Styled", err: bool = False) -> None:
    """Print one line for people: the one printer of every command (a test
    keeps it so). Each part's control characters are escaped
    (:func:`printable`); a :class:`Styled` part then gets its style."""
    line = "".join(
        click.style(printable(p.text), bold=p.bold or None, dim=p.dim or None) if isinstance(p, Styled)
        else printable(p) for p in parts
    )
    click.echo(line, err=err)


def emit_json(obj: Any) -> None:
    """Print one JSON object on its own line. JSON escapes C0 controls; DEL
    and C1 (which ``ensure_ascii=False`` leaves raw) are escaped too, so a
    terminal shown the line runs none of them; a parser reads the same text."""
    click.echo(json.dumps(obj, ensure_ascii=False, default=str).translate(_JSON_RAW))


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
    echo(f"warning: {message}", err=True)


def main() -> None:
    """Console-script entry point."""
    from memvault.cli.logs import setup_logging

    setup_logging("cli")  # the daemon, mcp and hook commands set up their own
    cli(prog_name="memvault")
