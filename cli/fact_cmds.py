"""Memory-source commands: source add/remove/list, and facts."""

from __future__ import annotations

import click

from memvault.cli.main import AppContext, cli, echo, emit_json, json_option, pass_app, warn
from memvault.vault_io.secrets import redact_tree


@cli.group()
def source() -> None:
    """Mark notes as memory sources: their content becomes searchable facts.

    A note is a source when its front-matter says `memory: source` (or
    `memory_source: true`), when it has the tag #memory/source, or when its
    path matches a `sources` glob of the config. PATHs are vault-relative
    (absolute paths inside the vault work too).
    """


@source.command("add")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@json_option
@pass_app
def source_add(app: AppContext, paths: tuple[str, ...], as_json: bool) -> None:
    """Add `memory: source` to each note's front-matter and extract its facts."""
    results, warnings = app.store.source_add(paths)
    for r in results:
        if as_json:
            emit_json(r.as_dict())
        elif r.action == "marked":
            echo(f"Marked {r.path} as a memory source: {r.facts} facts")
        else:
            echo(f"{r.path} is already marked as a memory source: {r.facts} facts")
    for w in warnings:
        warn(w)


@source.command("remove")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@json_option
@pass_app
def source_remove(app: AppContext, paths: tuple[str, ...], as_json: bool) -> None:
    """Remove `memory: source` from each note; its facts are retired (kept as superseded).

    A note marked only by its #memory/source tag or a config glob is left
    alone and the command exits with status 1: remove the tag, or change
    the glob.
    """
    results, warnings = app.store.source_remove(paths)
    refused = False
    for r in results:
        if as_json:
            emit_json(r.as_dict())
        elif r.action == "unmarked":
            echo(f"Unmarked {r.path}: its facts are retired")
        elif r.action == "not-a-source":
            echo(f"{r.path} is not a memory source; nothing to do")
        elif r.action == "still-marked":
            echo(f"Removed the front-matter marker of {r.path}")
        if r.action in ("refused", "still-marked"):
            warn(r.message)
        refused = refused or r.action == "refused"
    for w in warnings:
        warn(w)
    if refused:
        raise click.ClickException("some notes could not be unmarked by editing their front-matter (see above)")


@source.command("list")
@json_option
@pass_app
def source_list(app: AppContext, as_json: bool) -> None:
    """List the memory sources in the index, how each is marked, and its fact count."""
    rows = redact_tree([s.to_json() for s in app.store.source_list()])  # a note's path may hold a secret
    for row in rows:
        if as_json:
            emit_json(row)
            continue
        marks = ", ".join(row["marks"]) or "-"
        secrets = f", {row['redacted']} secrets redacted" if row["redacted"] else ""
        echo(f"{row['path']}  ({marks}; {row['facts']} facts{secrets})")
    if not rows and not as_json:
        echo("No memory sources yet: mark a note with `memvault source add PATH`.", err=True)


@cli.command()
@click.argument("path", metavar="PATH")
@click.option("--all", "include_all", is_flag=True, help="Also list superseded facts (changed or removed).")
@json_option
@pass_app
def facts(app: AppContext, path: str, include_all: bool, as_json: bool) -> None:
    """List the facts extracted from the source note PATH: id, type, anchor, lines."""
    answer = app.store.facts(path, include_all)
    rel = answer.path
    if not answer.facts:
        if not answer.indexed:
            raise click.ClickException(f"{rel} is not in the index: run `memvault sync` first")
        if not as_json:
            echo(f"{rel} has no facts (mark it with `memvault source add {rel}`)", err=True)
        return
    # facts are redacted; their source's path may not be (redact_tree reads JSON)
    for f in redact_tree([fact.to_json() for fact in answer.facts]):
        if as_json:
            emit_json(f)
            continue
        first, last = f["lines"]
        lines = "" if first is None else (f"L{first}" if first == last else f"L{first}-{last}")
        where = " > ".join(p for p in (f["heading_path"], f["context"]) if p)
        if f["block_id"]:
            where = f"{where} ^{f['block_id']}".strip()
        status = "" if f["status"] == "active" else f"  ({f['status']}: {f['reason']})"
        due = f"  due {f['due']}" if f["due"] else ""
        echo(f"{f['id']}  {f['type']:11} {lines:9} {where}{status}{due}")
        echo(f"    {f['text']}")
