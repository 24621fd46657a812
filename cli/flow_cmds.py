"""Memory flowing in and out: ``ingest``, ``import``, ``export``, ``restore-backup``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from memvault.cli.main import AppContext, cli, echo, emit_json, json_option, pass_app, progress_bar, stderr_is_tty, warn


@cli.command()
@click.argument("transcript", metavar="PATH|-")
@click.option("--session", metavar="ID", help="The session id (default: the transcript's own, else its file's path and first turn).")
@click.option("--title", help="The session note's title (default: the transcript's summary, else its first request).")
@click.option("--source", "client", metavar="CLIENT",
              help="The client that held the conversation (default: claude-code for Claude Code transcripts, "
                   "else generic).")
@click.option("--min-importance", type=click.FloatRange(0, 1), default=None, metavar="SCORE",
              help="Keep only chat facts scoring this or more, 0 to 1 (default: ingest.min_importance).")
@click.option("--max-per-turn", type=click.IntRange(0), default=None, metavar="N",
              help="Keep at most N facts of one turn, 0 for no cap (default: ingest.max_per_turn).")
@json_option
@pass_app
def ingest(app: AppContext, transcript: str, session: str | None, title: str | None, client: str | None,
           min_importance: float | None, max_per_turn: int | None, as_json: bool) -> None:
    """Turn a conversation transcript into memory: its session note and facts.

    PATH is a Claude Code session transcript (JSONL, a hook's transcript_path)
    or a generic JSONL of {"role", "content", "timestamp"?} lines; "-" reads
    stdin. The session note goes under Memory/episodic/sessions/; ingesting
    a session that grew appends only its new turns, the same transcript
    again changes nothing. Secrets are redacted before anything is written.
    --min-importance and --max-per-turn keep fewer facts; every turn stays in the note.
    """
    app.overrides.update({"ingest.min_importance": min_importance, "ingest.max_per_turn": max_per_turn})
    source = sys.stdin.buffer if transcript == "-" else transcript
    report = app.store.ingest(source, session=session, title=title, client=client)
    if as_json:
        emit_json(report.as_dict())
    else:
        plan = report.plan
        what = {"imported": "Wrote", "updated": "Updated", "skipped": "Unchanged:"}[plan.action]
        # Say what happened: appended turns, and turns kept but marked superseded (changed at the source).
        detail = (f"appended {plan.new_turns} turn{'' if plan.new_turns == 1 else 's'}, {plan.superseded} superseded"
                  if plan.action == "updated"
                  else f"{len(plan.conv.turns)} turns" if plan.action == "imported" else plan.why)
        echo(f"{what} {plan.path or plan.note_id} ({detail}; {report.facts} facts)")
    for line in capped(report.warnings, "warnings"):
        warn(line)


#: Most error or warning lines a command prints; the rest are counted ("... and N more").
LINES_SHOWN = 20


def capped(lines: list[str], what: str) -> list[str]:
    """The first :data:`LINES_SHOWN` of ``lines``, then one line counting the rest:
    a binary or foreign file must not bury the summary under a hundred lines."""
    if len(lines) <= LINES_SHOWN:
        return list(lines)
    return [*lines[:LINES_SHOWN], f"... and {len(lines) - LINES_SHOWN} more {what} (--json lists them all)"]


IMPORT_FORMATS = ("chatgpt", "claude", "mem0", "mcp-memory", "csv", "json", "jsonl", "markdown")
EXPORT_FORMATS = ("json", "jsonl", "markdown", "obsidian", "csv", "sqlite")


def _format_and_path(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str | None, Path]:
    """``[FORMAT] PATH``: the format (None: detect it) and the path, checked (a usage line, exit 2)."""
    from memvault.cli.main import UsageFailure

    if len(value) not in (1, 2):
        raise UsageFailure("give [FORMAT] PATH: one file or folder to import, the format first when you name it")
    fmt, path = (None, value[0]) if len(value) == 1 else value
    if fmt is not None and fmt not in IMPORT_FORMATS:
        raise UsageFailure(f"unknown import format {fmt!r}: use one of {', '.join(IMPORT_FORMATS)} "
                           "(or leave it out: memvault import PATH)")
    if not Path(path).exists():
        raise UsageFailure(f"{path} does not exist")
    return fmt, Path(path)


@cli.command("import")
@click.argument("args", metavar="[FORMAT] PATH", nargs=-1, required=True, callback=_format_and_path)
@click.option("--dry-run", is_flag=True, help="Say what would be imported; write nothing.")
@click.option("--folder", default="Imports", show_default=True,
              help="Vault folder for imported ordinary notes (Claude project documents).")
@json_option
@pass_app
def import_(app: AppContext, args: tuple[str | None, Path], dry_run: bool, folder: str, as_json: bool) -> None:
    """Import memories and conversations from another tool.

    FORMAT may be left out: the one format that takes PATH is used, and a
    file none or several take is refused in one line (name the format).

    \b
    chatgpt     ChatGPT export: the zip, its folder, conversations.json or conversations-NNN.json
    claude      Claude.ai export: the zip, its folder, conversations.json, projects.json
    mem0        the JSON of mem0's get_all()
    mcp-memory  the MCP memory server's memory.jsonl
    csv         a `content` column; optional type, tags, scope, created, updated,
                strength, id; other columns become note properties
    json/jsonl  memvault's own export
    markdown    a folder of notes with front-matter (id, type, scope, tags, strength)

    Conversations become session notes (Memory/episodic/sessions/), the rest
    memories. Importing the same file again imports nothing; an item changed
    at its source updates its memory as a new version. One bad item is one
    error line and never stops the rest.
    """
    fmt, path = args
    show = stderr_is_tty() and not as_json
    with progress_bar("Importing", show) as progress:
        report = app.store.import_(fmt, path, dry_run=dry_run, folder=folder, progress=progress)
    if as_json:
        emit_json(report.as_dict())
    else:
        would = "would be " if dry_run else ""
        echo(f"{report.imported} {would}imported, {report.updated} {would}updated, {report.skipped} skipped, "
             f"{len(report.errors)} errors" + (f"; {report.redacted} secrets redacted" if report.redacted else "")
             + ("" if fmt else f" (read as {report.format})"))
        for line in capped(report.warnings, "warnings"):
            warn(line)
        for line in capped([f"{ref}: {why}" for ref, why in report.errors], "errors"):
            echo(f"error: {line}", err=True)
    if report.errors:
        raise click.exceptions.Exit(1)


@cli.command()
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS), default="json", show_default=True,
              help="json/jsonl: lossless; markdown/obsidian: a folder of notes; csv: a row per memory; "
                   "sqlite: a backup of the databases (restore with `memvault restore-backup`).")
@click.option("--output", "-o", type=click.Path(path_type=Path), metavar="PATH",
              help="File (json, jsonl, csv; default stdout), folder (markdown, obsidian), "
                   "file or folder (sqlite; default memvault-backup-<vault>-<time>.zip here).")
@click.option("--types", "types", metavar="T,T", help="Only memories (and facts) of these types, comma separated.")
@click.option("--scope", help="Only memories of this scope.")
@click.option("--include-deleted", is_flag=True, help="Forgotten memories too (json and jsonl always hold them).")
@click.option("--embeddings", is_flag=True, help="json/jsonl: include each memory's and fact's vectors.")
@json_option
@pass_app
def export(app: AppContext, fmt: str, output: Path | None, types: str | None, scope: str | None,
           include_deleted: bool, embeddings: bool, as_json: bool) -> None:
    """Export memories: losslessly (json, jsonl), as notes, as CSV, or a database backup."""
    from memvault.store.flows.export import ExportOptions
    from memvault.store.memories.memtypes import canonical_type

    chosen = tuple(canonical_type(t) for t in (types or "").split(",") if t.strip())
    if as_json and output is None and fmt in ("json", "jsonl", "csv"):
        raise click.UsageError("--json prints a summary: give --output for the export itself")
    report = app.store.export(ExportOptions(
        format=fmt, output=output, types=chosen, scope=scope, include_deleted=include_deleted or fmt in ("json", "jsonl"),
        embeddings=embeddings,
    ))
    if as_json:
        emit_json(report.as_dict())
    elif report.output != "-":
        counts = ", ".join(f"{n} {kind}" for kind, n in report.counts.items() if n)
        what = "Backup written to" if fmt == "sqlite" else "Exported to"
        echo(f"{what} {report.output}" + (f" ({counts})" if counts and fmt != "sqlite" else ""))


@cli.command("restore-backup")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@json_option
@pass_app
def restore_backup(app: AppContext, file: Path, as_json: bool) -> None:
    """Restore memvault's durable state from a backup (`export --format sqlite`).

    Stop the daemon first. The current state.db is kept beside it as
    state.db.before-restore-<time>; the index is then rebuilt from the vault
    and the restored state.
    """
    report = app.store.restore_backup(file)
    if as_json:
        emit_json(report.as_dict())
        return
    kept = f"; the previous state is kept as {report.kept}" if report.kept else ""
    r = report.sync.restored if report.sync is not None else None
    back = (f": {r.versions} versions, {r.forgotten} forgotten memories, {r.facts} old facts, "
            f"{r.recall} recall records") if r else ""
    echo(f"Restored {file.name} (made {report.manifest.get('created')}){back}{kept}.")
