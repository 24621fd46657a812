"""Memory in Obsidian's own views: install, remove and check ``.base`` files."""

from __future__ import annotations

from pathlib import Path

import click

from memvault.cli.main import AppContext, cli, echo, emit_json, json_option, pass_app


@cli.group()
def views() -> None:
    """Obsidian Bases views of memory: tables of memories, sessions and conflict copies.

    `views install` writes Memories.base, Sessions.base and Conflicts.base
    into the memory folder; open one in Obsidian, or embed a view in a note
    with ![[Memories.base#Recent changes]]. A view file you change is yours:
    memvault leaves it alone.
    """


def _report(results: list, as_json: bool) -> None:
    """One line (or JSON object) per file: its action, and a note when there is one."""
    for r in results:
        if as_json:
            emit_json(r.as_dict())
        else:
            echo(f"{r.action:<12} {r.path}" + (f": {r.note}" if r.note else ""))


@views.command("install")
@click.option("--force", is_flag=True, help="Replace view files someone changed, after copying each to a backup beside it.")
@json_option
@pass_app
def views_install(app: AppContext, force: bool, as_json: bool) -> None:
    """Write memvault's views into the memory folder (again: writes only what is missing or out of date)."""
    _report(app.store.views_install(force=force), as_json)


@views.command("remove")
@json_option
@pass_app
def views_remove(app: AppContext, as_json: bool) -> None:
    """Delete the view files memvault wrote; one someone changed stays."""
    _report(app.store.views_remove(), as_json)


@views.command("check")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False, path_type=Path))
@json_option
@pass_app
def views_check(app: AppContext, files: tuple[Path, ...], as_json: bool) -> None:
    """Check .base FILES (default: memvault's views in the memory folder)
    against the Bases syntax; exit 1 if any has a problem."""
    from memvault.vault_io.bases import check_base, load_base
    from memvault.vault_io.memory_views import VIEWS

    if not files:
        folder = app.store.root / app.store.settings.memory_folder
        files = tuple(p for p in (folder / name for name in VIEWS) if p.is_file())
    bad = 0
    for path in files:
        try:
            problems = check_base(load_base(path.read_text(encoding="utf-8")), strict=False)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            problems = [str(getattr(exc, "strerror", None) or exc)]
        bad += bool(problems)
        if as_json:
            emit_json({"file": str(path), "ok": not problems, "problems": problems})
        elif problems:
            echo(f"{path}: " + "; ".join(problems))
        else:
            echo(f"{path}: ok")
    if bad:
        raise click.exceptions.Exit(1)
