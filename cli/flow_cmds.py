"""Memory flowing in and out: ``ingest``, ``import``, ``export``, ``restore-backup``."""

from __future__ import annotations

import sys

import click

from memvault.cli.main import AppContext, cli, emit_json, json_option, pass_app, progress_bar, stderr_is_tty, warn


@cli.command()
@click.argument("transcript", metavar="PATH|-")
@click.option("--session", metavar="ID", help="The session id (default: the transcript's own, else its first turn).")
@click.option("--title", help="The session note's title (default: the transcript's summary, else its first request).")
@click.option("--source", "client", metavar="CLIENT",
              help="The client that held the conversation (default: claude-code for Claude Code transcripts, "
                   "else generic).")
@json_option
@pass_app
def ingest(app: AppContext, transcript: str, session: str | None, title: str | None, client: str | None,
           as_json: bool) -> None:
    """Turn a conversation transcript into memory: its session note and facts.

    PATH is a Claude Code session transcript (JSONL, a hook's transcript_path)
    or a generic JSONL of {"role", "content", "timestamp"?} lines; "-" reads
    stdin. The session note goes under Memory/episodic/sessions/; ingesting
    a session that grew appends only its new turns, the same transcript
    again changes nothing. Secrets are redacted before anything is written.
    """
    source = sys.stdin.buffer if transcript == "-" else transcript
    report = app.store.ingest(source, session=session, title=title, client=client)
    if as_json:
        emit_json(report.as_dict())
    else:
        plan = report.plan
        what = {"imported": "Wrote", "updated": "Appended to", "skipped": "Unchanged:"}[plan.action]
        detail = (f"{plan.new_turns} new turns" if plan.action == "updated"
                  else f"{len(plan.conv.turns)} turns" if plan.action == "imported" else plan.why)
        click.echo(f"{what} {plan.path or plan.note_id} ({detail}; {report.facts} facts)")
    for line in report.warnings:
        warn(line)


__all__ = ["ingest", "progress_bar", "stderr_is_tty"]
