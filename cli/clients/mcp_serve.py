"""Running the MCP server: on stdio (answering the handshake while the SDK
loads, :mod:`.mcp_boot`) or on Streamable HTTP with the vault's bearer token,
after a catch-up sync. ``memvault mcp`` (:mod:`memvault.cli.mcp_cmds`) parses
its options and calls :func:`serve_stdio_server` or :func:`serve_http`; the
server itself is :func:`memvault.cli.mcp_server.build_server`.
"""

from __future__ import annotations

import logging
import os
import secrets
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.cli.main import UsageFailure, echo

if TYPE_CHECKING:
    from memvault.store.memory_store import MemoryStore

TOKEN_FILE = "mcp_token"
#: The tool list a cold stdio start answers before the SDK loads (:class:`~.mcp_boot.ToolsCache`), in the data home.
TOOLS_CACHE = "mcp-tools.json"
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



def serve_stdio_server(store: "MemoryStore", *, read_only: bool = False, project: str | None = None) -> None:
    """Serve ``store`` on this process's stdin and stdout until the client
    closes stdin; the sessions' project is ``project`` (a folder), else the
    working folder's (:func:`.mcp_reads.session_project`)."""
    from memvault.cli.clients.mcp_boot import ToolsCache, serve_stdio, tools_key
    from memvault.cli.clients.mcp_reads import early_call, session_project
    from memvault.store.location import data_home

    found = session_project(store, project)

    def build() -> object:
        from memvault.cli.mcp_server import build_server

        server = build_server(store, read_only=read_only, project=found)
        catch_up(store, read_only=read_only)
        return server

    try:
        serve_stdio(build, ToolsCache(data_home() / TOOLS_CACHE, tools_key(read_only)),
                    early_call(store, read_only, found))
    except KeyboardInterrupt:
        pass


def catch_up(store: "MemoryStore", *, read_only: bool = False) -> None:
    """Without a daemon nobody has indexed what changed in the vault since the
    last sync: do it once now (no embedding, no model), so the agent's
    session starts from the vault as it is. A vault never indexed is left
    to `memvault sync` (that can take minutes); a failure is logged.

    A ``read_only`` server never syncs: a sync writes the vault (a new
    note's id line, the device's history log), and a read-only server writes
    nothing there. It answers from the index as the last sync (the daemon's,
    or `memvault sync`) left it, and says so on stderr when the vault changed since."""
    from memvault.daemon.client import socket_path
    from memvault.vault_io.errors import MemvaultError

    if not store.has_index() or socket_path(store.data_dir).exists():
        return
    try:
        if read_only:
            if _vault_changed(store):
                logging.getLogger("memvault.mcp").warning(
                    "the vault changed since the last sync, and a read-only server does not sync: it answers "
                    "from the index as it is (run `memvault sync`, or the daemon, to bring it up to date)")
            return
        store.sync()
    except MemvaultError as exc:
        logging.getLogger("memvault.mcp").warning("could not sync the vault at start: %s", exc)


def _vault_changed(store: "MemoryStore") -> bool:
    """Whether a sync would change the index (doctor's look at the vault: it reads only)."""
    from memvault.store.index.doctor import check_vault

    return any(f.repair == "sync" for f in check_vault(store.ctx))


def serve_http(store: "MemoryStore", host: str, port: int, read_only: bool, project: str | None = None) -> None:
    """Streamable HTTP with a static bearer token (see docs/agents.md). Its
    clients work anywhere: a project scope only when ``project`` names one."""
    import hmac

    import uvicorn
    from mcp.server.auth.provider import AccessToken, TokenVerifier
    from mcp.server.auth.settings import AuthSettings
    from pydantic import AnyHttpUrl

    from memvault.cli.mcp_server import build_server

    token = ensure_token(store)
    catch_up(store, read_only=read_only)

    class VaultToken(TokenVerifier):
        async def verify_token(self, value: str) -> AccessToken | None:
            if hmac.compare_digest(value.encode(), token.encode()):
                return AccessToken(token=value, client_id="memvault", scopes=[])
            return None

    shown = f"[{host}]" if ":" in host else host
    from memvault.cli.clients.mcp_reads import session_project

    server = build_server(store, read_only=read_only, project=session_project(store, project, here=False),
                          remote=True, token_verifier=VaultToken(),
                          auth=AuthSettings(issuer_url=AnyHttpUrl(f"http://{shown}:{port}"), resource_server_url=None))
    app = server.streamable_http_app(host=host)
    if host not in LOOPBACK:
        echo(f"warning: serving {store.root} beyond this machine on {host}:{port}; anyone with the token "
                   "can read (and, without --read-only, change) its memory; put TLS in front of it", err=True)
    echo(f"memvault MCP for {store.root} on http://{shown}:{port}/mcp"
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
SHUTDOWN_GRACE = 3  # whole seconds: uvicorn takes an int


def _exit_now() -> None:
    """End the process at once: a tool call still running on a worker thread
    (a search stuck in C code) cannot be cancelled, and would hold the exit.
    Reads are safe to abandon; a write that dies half-way leaves its outbox
    entry, which the next start settles (docs/memories.md)."""
    logging.getLogger("memvault.mcp").warning("calls still running %.0fs after the stop; exiting", SHUTDOWN_GRACE)
    sys.stderr.flush()
    os._exit(0)

