"""Memory commands: add, update, forget, restore, history (``list`` and ``recent`` are in :mod:`.browse_cmds`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from memvault.cli.main import AppContext, cli, echo, emit_json, json_option, pass_app, warn


def _check_tags(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    """Each ``--tag`` as Obsidian reads it; one it would not read ("two
    words", "1984") is a usage error naming it, never silently dropped."""
    from memvault.cli.main import UsageFailure
    from memvault.vault_io.errors import UsageError
    from memvault.vault_io.markdown import check_tag

    try:
        return tuple(check_tag(tag) for tag in value)
    except UsageError as exc:
        raise UsageFailure(f"--tag {exc}") from None  # one line, exit 2


def _report(result: Any, as_json: bool, verb: str) -> None:
    if as_json:
        emit_json(result.as_dict())
    elif result.conflict:
        echo(f"{result.id}: {result.path}")
    else:
        echo(f"{verb} {result.id}" + (f" -> {result.path}" if result.path else ""))
    for w in result.warnings:
        warn(w)
    if result.conflict:
        warn(f"conflict: {result.conflict}; the store's version was written to {result.conflict_path}")


def _check_key(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--key`` as a key (``editor.theme``); anything else is one usage line (exit 2)."""
    if value is None:
        return None
    from memvault.cli.main import UsageFailure
    from memvault.vault_io.errors import UsageError
    from memvault.vault_io.fact_keys import check_key

    try:
        return check_key(value)
    except UsageError as exc:
        raise UsageFailure(f"--key: {exc}") from None


@cli.command()
@click.argument("content")
@click.option("--type", "type_", default=None,
              help="identity, semantic, episodic, procedural, prospective or ongoing (work in progress; aliases "
                   "like fact, todo, lesson, wip work); "
                   "default semantic (with --key: the type of the memory holding the key).")
@click.option("--tag", "tags", multiple=True, metavar="X", callback=_check_tags, help="A tag (repeatable).")
@click.option("--scope", default=None, help="Whose memory this is (user, a project, an agent...); default user.")
@click.option("--project", type=click.Path(exists=True, file_okay=False), metavar="PATH",
              help="Scope it to this folder's project (its git root's name, or its .memvault scope).")
@click.option("--link", "links", multiple=True, metavar="NOTE", help="A note this memory relates to (repeatable).")
@click.option("--source", default="manual", show_default=True, help="Where the memory came from (manual, agent, import...).")
@click.option("--allow-duplicate", is_flag=True,
              help="Add it even when a live memory of the same type and scope has the same text.")
@click.option("--key", callback=_check_key, metavar="KEY",
              help="The slot this fact fills (editor.theme): a live memory of the scope holding it is "
                   "superseded as a new version, given --reason; without one the write is refused.")
@click.option("--reason", help="With --key: why the memory holding the key is superseded (kept in its history).")
@json_option
@pass_app
def add(app: AppContext, content: str, type_: str | None, tags: tuple[str, ...], scope: str | None,
        project: str | None, links: tuple[str, ...], source: str, allow_duplicate: bool, key: str | None,
        reason: str | None, as_json: bool) -> None:
    """Remember CONTENT: store it and write it as a note under Memory/<type>/.
    The same text as a live memory (up to case, punctuation and inflection) is
    not added: the existing one is returned (``duplicate_of``) unless
    --allow-duplicate. Live memories it resembles are listed (``similar_to``).
    With --key, a new value supersedes the memory holding the key (--reason
    says why; without it: exit 1 and the current text on stdout)."""
    from memvault.daemon.client import add as add_memory  # the running daemon writes it, else this process
    from memvault.store.queries.write import NewMemory

    if reason is not None and key is None:
        raise click.UsageError("--reason goes with --key (`update --reason` for other changes)")
    if project is not None:
        if scope is not None:
            raise click.UsageError("give --scope or --project, not both")
        from memvault.store.project import project_at

        found = project_at(project)
        scope = found.scope if found is not None else None
    scope = scope or "user"
    new = NewMemory(content, type_ if key else type_ or "semantic", tags=tags, scope=scope, links=links,
                    source=source, allow_duplicate=allow_duplicate, key=key, reason=reason)
    from memvault.vault_io.errors import MemvaultError

    try:
        result = add_memory(app.store, new)
    except MemvaultError as exc:
        current = getattr(exc, "current", None)
        if isinstance(current, dict):  # the key is held: what holds it goes to stdout, the refusal to stderr
            emit_json({"error": str(exc), "current": current}) if as_json else echo(current["content"])
        raise
    if result.action == "duplicate_of" and not as_json:
        echo(f"Already remembered as {result.id} -> {result.path} ({result.reason})")
        return
    _report(result, as_json, "Superseded key " + key + " of" if key and result.action == "updated" else "Added")
    if not as_json:
        for s in result.similar_to or []:
            echo(f"  similar to {s['id']} ({s['measure']} {s['similarity']}): {s['text']}")
        _echo_contradicts(result)


def _echo_contradicts(result: Any) -> None:
    """One line per live claim the new text contradicts (flagged at once; `conflicts` lists them)."""
    for c in result.contradicts or []:
        echo(f"  contradicts {c['id']} ({c['kind']}; it is now possibly outdated): {c['text']}")


@cli.command()
@click.argument("ref", metavar="ID")
@click.option("--content", help="New content.")
@click.option("--tag", "tags", multiple=True, metavar="X", callback=_check_tags, help="Replace the tags with these (repeatable).")
@click.option("--type", "type_", help="New memory type (moves the note to that type's folder).")
@click.option("--reason", help="Why it changed; kept with the previous version.")
@click.option("--expect-version", type=click.IntRange(1), metavar="N",
              help="Refuse (exit 1, printing the current text) unless the memory is still at version N "
                   "(`show --json` gives it): nobody, e.g. you in Obsidian, changed it since it was read.")
@click.option("--done", is_flag=True, help="Ongoing work is finished: it becomes episodic (what happened).")
@json_option
@pass_app
def update(app: AppContext, ref: str, content: str | None, tags: tuple[str, ...], type_: str | None,
           reason: str | None, expect_version: int | None, done: bool, as_json: bool) -> None:
    """Change a memory; the previous version is kept (see `memvault history`)."""
    if content is None and not tags and type_ is None and not done:
        raise click.UsageError("nothing to update: give --content, --tag, --type or --done")
    from memvault.store.memories.guard import VersionConflict

    try:
        result = app.store.update(ref, content=content, tags=list(tags) if tags else None, type_=type_,
                                  reason=reason, expect_version=expect_version, done=done)
    except VersionConflict as exc:
        # The current text goes to stdout, so a script (or agent) can redo
        # its change on top of it; the refusal is the one error line.
        if as_json:
            emit_json({"error": str(exc), "current": exc.current})
        else:
            echo(str(exc.current["content"]))
        raise
    if result.action == "unchanged" and not as_json:
        echo(f"{result.id} already says that; nothing changed")
        return
    _report(result, as_json, "Updated")
    if not as_json:
        _echo_contradicts(result)


@cli.command()
@click.argument("ref", metavar="ID", required=False)
@click.option("--reason", help="Why it is forgotten.")
@click.option("--all", "every", is_flag=True, help="Every live memory of --scope (a backup is written first).")
@click.option("--scope", metavar="S", help="With --all: the scope whose memories are forgotten.")
@click.option("--yes", is_flag=True, help="With --all: do not ask to type the scope (for scripts).")
@click.option("--backup", type=click.Path(path_type=Path), metavar="PATH",
              help="With --all: where the backup goes (a file or folder; default: backups/ in memvault's data dir).")
@json_option
@pass_app
def forget(app: AppContext, ref: str | None, reason: str | None, every: bool, scope: str | None, yes: bool,
           backup: Path | None, as_json: bool) -> None:
    """Soft-delete a memory (its note moves to .trash/) or retire one fact (its
    note is not touched; it stays retired when the note is re-read).
    `restore` brings either back. `forget --all --scope S` forgets every live
    memory of a scope: it asks you to type the scope (or --yes), writes a
    backup of memvault's state first, then moves each note to .trash/."""
    if every:
        if ref is not None or not scope or not scope.strip():
            raise click.UsageError("--all takes --scope S and no ID")
        _forget_scope(app, scope.strip(), reason, yes, backup, as_json)
        return
    if ref is None or scope is not None or yes or backup is not None:
        raise click.UsageError("give the ID to forget (--scope, --yes and --backup go with --all)")
    _report(app.store.forget(ref, reason), as_json, "Forgot")


def _forget_scope(app: AppContext, scope: str, reason: str | None, yes: bool, backup: Path | None,
                  as_json: bool) -> None:
    """``forget --all --scope S``: count, confirm by typing the scope, back up, forget."""
    count = len(app.store.live_in_scope(scope))
    if count == 0:
        emit_json({"scope": scope, "forgotten": 0}) if as_json else echo(f"No live memory has scope {scope}.")
        return
    if not yes:
        try:
            typed = click.prompt(f"Forget all {count} live memories of scope {scope!r} (their notes go to .trash/, "
                                 "a backup is written first)? Type the scope to confirm", default="",
                                 show_default=False, err=True)
        except click.Abort:  # no input (end of file, Ctrl-C)
            raise click.ClickException("not confirmed: nothing was forgotten (give --yes in a script)") from None
        if typed.strip() != scope:
            raise click.ClickException(f"you typed {typed.strip()!r}, not {scope!r}: nothing was forgotten")
    done = app.store.forget_scope(scope, reason=reason, backup=backup)
    if as_json:
        emit_json(done.as_dict())
    else:
        echo(f"Forgot {len(done.forgotten)} memories of scope {scope} (backup: {done.backup}; "
             "`memvault restore ID` brings one back)")
    for memory_id, why in done.failed:
        warn(f"{memory_id}: {why}")
    if done.failed:
        raise click.exceptions.Exit(1)


@cli.command()
@click.argument("ref", metavar="ID")
@json_option
@pass_app
def restore(app: AppContext, ref: str, as_json: bool) -> None:
    """Bring back a forgotten memory and its note, a forgotten fact, or a
    session note retention moved to the trash (its id or old path)."""
    _report(app.store.restore(ref), as_json, "Restored")


@cli.command()
@click.argument("ref", metavar="ID")
@json_option
@pass_app
def history(app: AppContext, ref: str, as_json: bool) -> None:
    """The versions of a memory or fact, newest first."""
    from memvault.vault_io.secrets import redact, redact_tree

    for v in app.store.history(ref):
        if as_json:
            # a reason or text written before redaction reached them (or typed into a log) is redacted here
            emit_json(redact_tree(v.to_json()))
            continue
        why = f" ({redact(v.reason)[0]})" if v.reason else ""
        echo(f"{v.id}  {v.status}{why}  {v.updated}")
        for line in redact(v.content)[0].splitlines()[:3]:
            echo(f"    {line}")
