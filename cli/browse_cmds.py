"""Browsing without a query: list, recent.

Apart from :mod:`.memory_cmds` so that ``memvault add`` (a command an agent
runs often) does not import the time grammar their ``--since`` help names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from memvault.cli.main import AppContext, bold, cli, dim, echo, emit_json, json_option, pass_app
from memvault.cli.memory_cmds import _check_tags
from memvault.store.retrieval.when import FORMS

if TYPE_CHECKING:
    from memvault.store.answers.browse.listing import TracePage


def _types(types: tuple[str, ...]) -> list[str]:
    from memvault.cli.index_cmds import _canonical_types

    return _canonical_types(types)


def _print_items(page: TracePage, as_json: bool) -> None:
    """One line per item (or one JSON object per item), then where the next page starts."""
    from memvault.vault_io.secrets import redact_tree

    for item in redact_tree([i.to_json() for i in page.items]):  # a path or title may hold what the index's text does not
        if as_json:
            emit_json(item)
            continue
        status = f" ({item['status']})" if item["status"] != "active" else ""
        tags = f"  #{' #'.join(item['tags'])}" if item["tags"] else ""
        scope = f" {item['scope']}" if item["kind"] == "memory" and item["scope"] not in (None, "user") else ""
        scope += f" key {item['key']}" if item.get("key") else ""
        echo(f"{item['id']}  [{item['type']}{scope}]{status}  {(item['updated'] or '')[:16]}  ",
             bold(item["title"] or ""), tags)
    if page.next_cursor and as_json:
        # The page's own line, last, only when more follow (as MCP's answer has it): give it back as --cursor.
        emit_json({"next_cursor": page.next_cursor, "total": page.total})
    elif page.next_cursor:
        echo(dim(f"... {page.total - len(page.items)} more: --cursor {page.next_cursor}"), err=True)


@cli.command("list")
@click.option("--what", type=click.Choice(["memories", "notes", "facts", "all"]), default="memories", show_default=True,
              help="Memories, ordinary notes, facts, or memories and notes.")
@click.option("--type", "types", multiple=True, metavar="T", help="Only this memory type (repeatable).")
@click.option("--scope", "scopes", multiple=True, metavar="S", help="Only memories of this scope (repeatable).")
@click.option("--tag", "tags", multiple=True, metavar="X", callback=_check_tags, help="Only traces with this tag or a nested one (repeatable).")
@click.option("--sort", type=click.Choice(["updated", "happened", "strength", "created", "title"]), default="updated",
              show_default=True, help="Newest change first, latest to happen first, strongest, newest, or by title.")
@click.option("--since", metavar="WHEN", help=f"Only what happened since WHEN (event time, else creation): {FORMS}.")
@click.option("--until", metavar="WHEN", help="Only what happened before the end of WHEN (same forms as --since).")
@click.option("--include-deleted", is_flag=True, help="Also list forgotten memories.")
@click.option("--key", metavar="KEY", help="Only memories holding this key (deploy.* : every key it begins).")
@click.option("-n", "--limit", default=50, show_default=True, type=click.IntRange(1, 500), help="Most items per page.")
@click.option("--cursor", metavar="C", help="Where a previous page ended (printed after it).")
@json_option
@pass_app
def list_cmd(app: AppContext, what: str, types: tuple[str, ...], scopes: tuple[str, ...], tags: tuple[str, ...],
             sort: str, since: str | None, until: str | None, include_deleted: bool, key: str | None, limit: int,
             cursor: str | None, as_json: bool) -> None:
    """List memories (or notes, facts) without a query. With --json, a last
    line {"next_cursor", "total"} when more follow: give it back as --cursor."""
    page = app.store.list(what=what, types=_types(types), scopes=list(scopes), tags=list(tags), sort=sort,
                          since=since, until=until, include_deleted=include_deleted, limit=limit, cursor=cursor,
                          key=key)
    _print_items(page, as_json)
    if not page.items and not as_json:
        echo("Nothing to list.", err=True)


@cli.command()
@click.option("--since", metavar="WHEN", default="7 days", show_default=True,
              help=f"Only what changed since WHEN: {FORMS}.")
@click.option("--until", metavar="WHEN", help="Only what changed before the end of WHEN (same forms as --since).")
@click.option("--what", type=click.Choice(["memories", "notes", "facts", "all"]), default="all", show_default=True,
              help="Memories, notes, facts, or memories and notes.")
@click.option("-n", "--limit", default=20, show_default=True, type=click.IntRange(1, 500), help="Most items per page.")
@click.option("--cursor", metavar="C", help="Where a previous page ended (printed after it).")
@json_option
@pass_app
def recent(app: AppContext, since: str, until: str | None, what: str, limit: int, cursor: str | None,
           as_json: bool) -> None:
    """What changed lately, newest first (forgotten memories too). With
    --json, a last line {"next_cursor", "total"} when more follow."""
    _print_items(app.store.recent(since=since, until=until, what=what, limit=limit, cursor=cursor), as_json)
