"""``memvault pause`` and ``resume``: nothing an agent's session says is stored meanwhile (see :mod:`memvault.store.pause`)."""

from __future__ import annotations

import click

from memvault.cli.main import AppContext, cli, echo, emit_json, json_option, pass_app

_project = click.option("--project", type=click.Path(exists=True, file_okay=False), metavar="PATH",
                        help="Only this folder's project (its git root's name, or its .memvault scope).")


def _scope(project: str | None) -> str:
    """The scope a pause covers: ``*`` (all memory), or the project's of folder ``project``."""
    if project is None:
        return "*"
    from memvault.store.project import project_at

    found = project_at(project)
    if found is None:
        raise click.UsageError(f"--project {project!r} is not a folder")
    return found.scope


@cli.command()
@_project
@click.option("--for", "span", metavar="SPAN", help="End it by itself after this long (2h, 30m, 1h30m, 3 days); "
                                                      "default: until `memvault resume`.")
@click.option("--reason", help="Why (shown in `status`).")
@json_option
@pass_app
def pause(app: AppContext, project: str | None, span: str | None, reason: str | None, as_json: bool) -> None:
    """Pause memory: hooks and ingest store nothing an agent's session says,
    and MCP remember/update are refused, until `resume` (or --for). On every
    device that shares the vault (through its history log)."""
    from memvault.store.pause import parse_for

    row = app.store.pause(_scope(project), span=parse_for(span) if span is not None else None, reason=reason)
    if as_json:
        emit_json(row.to_json())
    else:
        echo(f"Paused: {row.describe()}. `memvault resume` turns it back on.")


@cli.command()
@_project
@json_option
@pass_app
def resume(app: AppContext, project: str | None, as_json: bool) -> None:
    """Turn memory back on: end every pause (--project: that project's pauses only)."""
    ended = app.store.resume(None if project is None else _scope(project))
    if as_json:
        emit_json({"resumed": [r.to_json() for r in ended]})
        return
    if not ended:
        echo("Memory was not paused" + ("" if project is None else " for that project") + ".")
    for r in ended:
        echo(f"Resumed: {r.describe()}")
    still = app.store.pauses()
    if still:
        echo("Still paused: " + "; ".join(r.describe() for r in still) + " (`memvault resume` ends all)")
