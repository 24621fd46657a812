"""Memory commands: add, update, forget, restore, history."""

from __future__ import annotations

from typing import Any

import click

from memvault.cli.main import AppContext, cli, emit_json, json_option, pass_app, warn


def _report(result: Any, as_json: bool, verb: str) -> None:
    if as_json:
        emit_json(result.as_dict())
    elif result.conflict:
        click.echo(f"{result.id}: {result.path}")
    else:
        click.echo(f"{verb} {result.id}" + (f" -> {result.path}" if result.path else ""))
    for w in result.warnings:
        warn(w)
    if result.conflict:
        warn(f"conflict: {result.conflict}; the store's version was written to {result.conflict_path}")


@cli.command()
@click.argument("content")
@click.option("--type", "type_", default="semantic", show_default=True,
              help="identity, semantic, episodic, procedural or prospective (aliases like fact, todo, lesson work).")
@click.option("--tag", "tags", multiple=True, metavar="X", help="A tag (repeatable).")
@click.option("--scope", default="user", show_default=True, help="Whose memory this is (user, a project, an agent...).")
@click.option("--link", "links", multiple=True, metavar="NOTE", help="A note this memory relates to (repeatable).")
@click.option("--source", default="manual", show_default=True, help="Where the memory came from (manual, agent, import...).")
@click.option("--allow-duplicate", is_flag=True,
              help="Add it even when a live memory of the same type and scope says the same.")
@json_option
@pass_app
def add(app: AppContext, content: str, type_: str, tags: tuple[str, ...], scope: str,
        links: tuple[str, ...], source: str, allow_duplicate: bool, as_json: bool) -> None:
    """Remember CONTENT: store it and write it as a note under Memory/<type>/.
    A memory that says the same as a live one is not added: the existing one
    is returned (``duplicate_of``) unless --allow-duplicate."""
    result = app.store.add(content, type_, tags=tags, scope=scope, links=links, source=source,
                           allow_duplicate=allow_duplicate)
    if result.action == "duplicate_of" and not as_json:
        click.echo(f"Already remembered as {result.id} -> {result.path} ({result.reason})")
        return
    _report(result, as_json, "Added")


@cli.command()
@click.argument("ref", metavar="ID")
@click.option("--content", help="New content.")
@click.option("--tag", "tags", multiple=True, metavar="X", help="Replace the tags with these (repeatable).")
@click.option("--type", "type_", help="New memory type (moves the note to that type's folder).")
@click.option("--reason", help="Why it changed; kept with the previous version.")
@json_option
@pass_app
def update(app: AppContext, ref: str, content: str | None, tags: tuple[str, ...], type_: str | None,
           reason: str | None, as_json: bool) -> None:
    """Change a memory; the previous version is kept (see `memvault history`)."""
    if content is None and not tags and type_ is None:
        raise click.UsageError("nothing to update: give --content, --tag or --type")
    result = app.store.update(ref, content=content, tags=list(tags) if tags else None, type_=type_, reason=reason)
    if result.action == "unchanged" and not as_json:
        click.echo(f"{result.id} already says that; nothing changed")
        return
    _report(result, as_json, "Updated")


@cli.command()
@click.argument("ref", metavar="ID")
@click.option("--reason", help="Why it is forgotten.")
@json_option
@pass_app
def forget(app: AppContext, ref: str, reason: str | None, as_json: bool) -> None:
    """Soft-delete a memory: its note moves to .trash/, `restore` brings it back."""
    _report(app.store.forget(ref, reason), as_json, "Forgot")


@cli.command()
@click.argument("ref", metavar="ID")
@json_option
@pass_app
def restore(app: AppContext, ref: str, as_json: bool) -> None:
    """Bring back a forgotten memory and its note."""
    _report(app.store.restore(ref), as_json, "Restored")


@cli.command()
@click.argument("ref", metavar="ID")
@json_option
@pass_app
def history(app: AppContext, ref: str, as_json: bool) -> None:
    """The versions of a memory or fact, newest first."""
    for v in app.store.history(ref):
        if as_json:
            emit_json(v)
            continue
        why = f" ({v['reason']})" if v["reason"] else ""
        click.echo(f"{v['id']}  {v['status']}{why}  {v['updated']}")
        for line in v["content"].splitlines()[:3]:
            click.echo(f"    {line}")
