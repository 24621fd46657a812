"""``memvault mcp``: the MCP server (stdio or Streamable HTTP), its token, client setup.

The commands only: running the server is :mod:`.clients.mcp_serve`, the
server itself :mod:`.mcp_server`, imported only when a server runs (``mcp
install``, ``uninstall`` and ``token`` never load the SDK), and the client
configs are edited by :mod:`.clients.client_config`.
"""

from __future__ import annotations

import click

from memvault.cli.main import AppContext, cli, echo, emit_json, json_option, pass_app


@cli.group(invoke_without_command=True)
@click.option("--http", "listen", metavar="[HOST:]PORT",
              help="Serve over Streamable HTTP on this address (loopback unless HOST says otherwise) "
                   "instead of stdio; every request needs the bearer token (`memvault mcp token`).")
@click.option("--read-only", is_flag=True, help="Offer only the read tools (search, context, read, ...).")
@click.option("--project", type=click.Path(exists=True, file_okay=False), metavar="PATH",
              help="The project the agent works in (its git root's name is the scope `remember` writes and "
                   "`context` prefers); default: the working folder's, for stdio (agents.project_scope).")
@pass_app
@click.pass_context
def mcp(ctx: click.Context, app: AppContext, listen: str | None, read_only: bool, project: str | None) -> None:
    """Serve this vault's memory to agents over MCP (stdio by default).

    Agent clients start `memvault mcp` themselves: `memvault mcp install
    --client ...` writes their config. Needs the `mcp` extra
    (`pip install 'memvault[mcp]'`).
    """
    if ctx.invoked_subcommand is not None:
        return
    from memvault.cli.logs import setup_logging

    setup_logging("mcp")  # stderr, warnings and up: stdout carries the protocol alone
    store = app.store  # checks the vault now: a bad path is one line, before any protocol
    store.read_only = read_only  # never writes the vault: no sync on open, no history log on close
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        raise click.ClickException("the MCP server needs the mcp extra: pip install 'memvault[mcp]'")
    from memvault.cli.clients import mcp_serve

    if listen is None:
        mcp_serve.serve_stdio_server(store, read_only=read_only, project=project)  # until the client closes stdin
        return
    host, port = mcp_serve.parse_listen(listen)
    mcp_serve.serve_http(store, host, port, read_only, project)


@mcp.command("token")
@click.option("--rotate", is_flag=True, help="Make a new token (running HTTP servers must be restarted).")
@pass_app
def mcp_token(app: AppContext, rotate: bool) -> None:
    """Print the bearer token HTTP clients must send (generated on first use, kept 0600)."""
    from memvault.cli.clients.mcp_serve import ensure_token

    echo(ensure_token(app.store, rotate=rotate))


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
    from memvault.cli.clients.client_config import install_server

    change = install_server(client, scope, app.store.root, name=name, read_only=read_only)
    _report(change, f"MCP server {name!r}", as_json)


@mcp.command("uninstall")
@_client
@_scope
@_name
@json_option
def mcp_uninstall(client: str, scope: str, name: str, as_json: bool) -> None:
    """Remove memvault's entry (only that) from a client's MCP servers."""
    from memvault.cli.clients.client_config import uninstall_server

    _report(uninstall_server(client, scope, name=name), f"MCP server {name!r}", as_json)


def _report(change: object, what: str, as_json: bool) -> None:
    if as_json:
        emit_json(change.as_dict())  # type: ignore[attr-defined]
    else:
        echo(change.describe(what))  # type: ignore[attr-defined]
