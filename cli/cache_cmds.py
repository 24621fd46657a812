"""The embedding cache: prune it, and carry it to another device."""

from __future__ import annotations

from pathlib import Path

import click

from memvault.cli.main import AppContext, cli, echo, emit_json, json_option, pass_app


@cli.group()
def cache() -> None:
    """The embedding cache: every vector computed, so no text is embedded twice.

    A second machine that syncs the same vault starts warm: `cache export`
    here, copy the file, `cache import` there, then `sync` embeds only new text.
    """


@cache.command("export")
@click.argument("target", type=click.Path(dir_okay=False, path_type=Path))
@json_option
@pass_app
def cache_export(app: AppContext, target: Path, as_json: bool) -> None:
    """Write a consistent copy of the embedding cache to TARGET (a new file)."""
    n = app.store.cache_export(target)
    if as_json:
        emit_json({"file": str(target), "vectors": n})
    else:
        echo(f"Exported {n} vectors to {target}")


@cache.command("import")
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
@json_option
@pass_app
def cache_import(app: AppContext, source: Path, as_json: bool) -> None:
    """Add the vectors of SOURCE (another device's export) that this cache lacks."""
    n = app.store.cache_import(source)
    if as_json:
        emit_json({"file": str(source), "added": n})
    else:
        echo(f"Added {n} vectors from {source}; `memvault sync` embeds only what neither had")


@cache.command("prune")
@json_option
@pass_app
def cache_prune(app: AppContext, as_json: bool) -> None:
    """Drop vectors no note uses any more (the daemon does this once a day)."""
    report = app.store.cache_prune()
    if as_json:
        emit_json(report.as_dict())
        return
    echo(
        f"Kept {report.kept} vectors in use; dropped {report.dropped_unused} unused and "
        f"{report.dropped_for_size} for size; {report.bytes_before / 2**20:.1f} -> {report.bytes_after / 2**20:.1f} MB"
    )
