"""``memvault mcp``: the MCP server (stdio or Streamable HTTP), its token, client setup.

The server itself is :mod:`.mcp_server`, imported only when a server runs:
``mcp install``, ``uninstall`` and ``token`` never load the SDK.
"""

from __future__ import annotations

import logging
import os
import secrets
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memvault.cli.main import AppContext, UsageFailure, cli, emit_json, json_option, pass_app

if TYPE_CHECKING:
    from memvault.store.memory_store import MemoryStore

TOKEN_FILE = "mcp_token"
DEFAULT_HTTP_HOST = "127.0.0.1"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def token_path(store: "MemoryStore") -> Path:
    """Where the vault's HTTP bearer token is kept (its private data dir)."""
    return store.data_dir / TOKEN_FILE


def ensure_token(store: "MemoryStore", *, rotate: bool = False) -> str:
    """The vault's bearer token, generated (0600) on first use or when ``rotate``."""
    from memvault.store.location import ensure_private_dir

    path = token_path(store)
    if not rotate:
        try:
            token = path.read_text(encoding="ascii").strip()
            if token:
                return token
        except (OSError, UnicodeDecodeError):
            pass
    ensure_private_dir(store.data_dir)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(token + "\n")
    os.chmod(path, 0o600)
    return token


def parse_listen(value: str) -> tuple[str, int]:
    """``[HOST:]PORT`` (``[::1]:8765`` for IPv6) as (host, port)."""
    host, _, port = value.rpartition(":")
    host = host.strip("[]") or DEFAULT_HTTP_HOST
    try:
        number = int(port)
    except ValueError:
        raise UsageFailure(f"--http wants [HOST:]PORT, not {value!r}") from None
    if not 0 < number < 65536:
        raise UsageFailure(f"--http port must be 1-65535, not {number}")
    return host, number


def _quiet_logging() -> None:
    """Logs to stderr, warnings and up: stdout carries the protocol alone."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="memvault mcp: %(levelname)s %(name)s: %(message)s")


@cli.group(invoke_without_command=True)
@click.option("--http", "listen", metavar="[HOST:]PORT",
              help="Serve over Streamable HTTP on this address (loopback unless HOST says otherwise) "
                   "instead of stdio; every request needs the bearer token (`memvault mcp token`).")
@click.option("--read-only", is_flag=True, help="Offer only the read tools (search, context, read, ...).")
@pass_app
@click.pass_context
def mcp(ctx: click.Context, app: AppContext, listen: str | None, read_only: bool) -> None:
    """Serve this vault's memory to agents over MCP (stdio by default).

    Agent clients start `memvault mcp` themselves: `memvault mcp install
    --client ...` writes their config. Needs the `mcp` extra
    (`pip install 'memvault[mcp]'`).
    """
    if ctx.invoked_subcommand is not None:
        return
    _quiet_logging()
    store = app.store  # checks the vault now: a bad path is one line, before any protocol
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        raise click.ClickException("the MCP server needs the mcp extra: pip install 'memvault[mcp]'")
    if listen is None:
        from memvault.cli.mcp_boot import serve_stdio

        def build() -> object:
            from memvault.cli.mcp_server import build_server

            server = build_server(store, read_only=read_only)
            catch_up(store, read_only=read_only)
            return server

        try:
            serve_stdio(build)  # until the client closes stdin
        except KeyboardInterrupt:
            pass
        return
    host, port = parse_listen(listen)
    _serve_http(store, host, port, read_only)


def catch_up(store: "MemoryStore", *, read_only: bool = False) -> None:
    """Without a daemon nobody has indexed what changed in the vault since the
    last sync: do it once now (no embedding, no model), so the agent's
    session starts from the vault as it is. A vault never indexed is left
    to `memvault sync` (that can take minutes); a failure is logged.

    A ``read_only`` server syncs only when the vault did change: over an
    index that is current it writes nothing at all, not even the time of
    the last sync."""
    from memvault.daemon.client import socket_path
    from memvault.vault_io.errors import MemvaultError

    if not store.has_index() or socket_path(store.data_dir).exists():
        return
    try:
        if read_only and not _vault_changed(store):
            return
        store.sync()
    except MemvaultError as exc:
        logging.getLogger("memvault.mcp").warning("could not sync the vault at start: %s", exc)


def _vault_changed(store: "MemoryStore") -> bool:
    """Whether a sync would change the index (doctor's look at the vault)."""
    from memvault.store.index.doctor import check_vault

    return any(f.repair == "sync" for f in check_vault(store))


def _serve_http(store: "MemoryStore", host: str, port: int, read_only: bool) -> None:
    """Streamable HTTP with a static bearer token (see docs/agents.md)."""
    import hmac

    import uvicorn
    from mcp.server.auth.provider import AccessToken, TokenVerifier
    from mcp.server.auth.settings import AuthSettings

    from memvault.cli.mcp_server import build_server

    token = ensure_token(store)
    catch_up(store, read_only=read_only)

    class VaultToken(TokenVerifier):
        async def verify_token(self, value: str) -> AccessToken | None:
            if hmac.compare_digest(value.encode(), token.encode()):
                return AccessToken(token=value, client_id="memvault", scopes=[])
            return None

    shown = f"[{host}]" if ":" in host else host
    server = build_server(store, read_only=read_only, token_verifier=VaultToken(),
                          auth=AuthSettings(issuer_url=f"http://{shown}:{port}", resource_server_url=None))
    app = server.streamable_http_app(host=host)
    if host not in LOOPBACK:
        click.echo(f"warning: serving {store.root} beyond this machine on {host}:{port}; anyone with the token "
                   "can read (and, without --read-only, change) its memory; put TLS in front of it", err=True)
    click.echo(f"memvault MCP for {store.root} on http://{shown}:{port}/mcp"
               f"{' (read-only)' if read_only else ''}; token: `memvault mcp token`", err=True)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=SHUTDOWN_GRACE)

    class PromptExit(uvicorn.Server):
        """Stops within SHUTDOWN_GRACE seconds of a stop signal, whatever the
        calls in flight are doing (uvicorn alone waits for them: a long
        search kept `memvault mcp --http` alive after SIGTERM)."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            super().handle_exit(sig, frame)
            timer = threading.Timer(SHUTDOWN_GRACE, _exit_now)
            timer.daemon = True
            timer.start()

    PromptExit(config).run()


#: Seconds a stopping HTTP server (SIGTERM, Ctrl-C) gives the calls in flight
#: before it exits anyway.
SHUTDOWN_GRACE = 3.0


def _exit_now() -> None:
    """End the process at once: a tool call still running on a worker thread
    (a search stuck in C code) cannot be cancelled, and would hold the exit.
    Reads are safe to abandon; a write that dies half-way leaves its outbox
    entry, which the next start settles (docs/memories.md)."""
    logging.getLogger("memvault.mcp").warning("calls still running %.0fs after the stop; exiting", SHUTDOWN_GRACE)
    sys.stderr.flush()
    os._exit(0)


@mcp.command("token")
@click.option("--rotate", is_flag=True, help="Make a new token (running HTTP servers must be restarted).")
@pass_app
def mcp_token(app: AppContext, rotate: bool) -> None:
    """Print the bearer token HTTP clients must send (generated on first use, kept 0600)."""
    click.echo(ensure_token(app.store, rotate=rotate))


_client = click.option("--client", type=click.Choice(["claude-code", "claude-desktop", "cursor", "vscode", "codex"]),
                       required=True, help="The agent client whose config to change.")
_scope = click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True,
                      help="The client's config for all your projects, or the project in the working directory.")
_name = click.option("--name", default="memvault", show_default=True, help="The server's name in the client's config.")


@mcp.command("install")
@_client
@_scope
@_name
@click.option("--read-only", is_flag=True, help="Install the server with the read tools only.")
@json_option
@pass_app
def mcp_install(app: AppContext, client: str, scope: str, name: str, read_only: bool, as_json: bool) -> None:
    """Add this memvault and vault to a client's MCP servers (other servers and keys stay; a backup is written first)."""
    from memvault.cli.client_config import install_server

    change = install_server(client, scope, app.store.root, name=name, read_only=read_only)
    _report(change, f"MCP server {name!r}", as_json)


@mcp.command("uninstall")
@_client
@_scope
@_name
@json_option
def mcp_uninstall(client: str, scope: str, name: str, as_json: bool) -> None:
    """Remove memvault's entry (only that) from a client's MCP servers."""
    from memvault.cli.client_config import uninstall_server

    _report(uninstall_server(client, scope, name=name), f"MCP server {name!r}", as_json)


def _report(change: object, what: str, as_json: bool) -> None:
    if as_json:
        emit_json(change.as_dict())  # type: ignore[attr-defined]
    else:
        click.echo(change.describe(what))  # type: ignore[attr-defined]
