"""Maintenance commands: ``rebuild`` (the derived index from scratch) and ``doctor``."""

from __future__ import annotations

import click

from memvault.cli.main import AppContext, cli, echo, emit_json, json_option, pass_app, progress_bar, stderr_is_tty, warn


@cli.command()
@click.option("--no-embed", is_flag=True, help="Do not match vectors now; the daemon or the next sync will.")
@json_option
@pass_app
def rebuild(app: AppContext, no_embed: bool, as_json: bool) -> None:
    """Drop the derived index and build it again from the vault and the durable state.

    Nothing only memvault knows is lost: memory versions, forgotten memories,
    recall strength, fact history and conflicts live in state.db and come
    back (with a lost data dir, the history comes back from the history logs
    in the vault); vectors come back from the embedding cache without re-embedding.
    Memory notes in the vault's .trash/ come back as forgotten memories.
    """
    show = stderr_is_tty() and not as_json
    with progress_bar("Indexing", show, minimum=50) as index_progress, \
            progress_bar("Embedding", show, minimum=20) as embed_progress:
        report = app.store.rebuild(index_progress, embed=not no_embed, embed_progress=embed_progress)
    if as_json:
        emit_json(report.as_dict())
        return
    for line in report.summary.warnings:
        warn(line)
    r = report.restored
    back = (f"; from the durable state: {r.versions} versions, {r.forgotten} forgotten memories, "
            f"{r.facts} old facts, {r.recall} recall records; {r.from_trash} memories from .trash") if r else ""
    echo(f"Rebuilt the index: {report.summary.added} notes in {report.summary.seconds:.2f}s{back}.")


@cli.command()
@click.option("--repair", is_flag=True, help="Also fix what can be fixed (a sync, a rebuild, pruning).")
@json_option
@pass_app
def doctor(app: AppContext, repair: bool, as_json: bool) -> None:
    """Check the index, the durable state and the vault; say what a repair would do.

    Exits 0 when everything is sound, 1 when problems remain.
    """
    store = app.store
    store.read_con()  # no index yet: say so (exit 1) rather than create one
    report = store.doctor(repair=repair)
    if as_json:
        emit_json({"healthy": report.healthy, "repaired": report.repaired, "unrepaired": report.unrepaired,
                   "findings": [f.as_dict() for f in report.findings]})
    else:
        for name in report.repaired:
            echo(f"repaired: {name}")
        for line in report.unrepaired:  # a repair ran, and this is still wrong
            echo(f"not repaired: {line}")
        for f in report.findings:
            fix = f"  -> would repair with: {f.repair}" if f.repair and not repair else ""
            echo(f"{'warning: ' if f.warning else ''}{f.check}: {f.detail}{fix}")
        if report.healthy:
            # Warnings are the person's to fix; the index and the state are sound.
            what = "Everything else" if report.findings else "Everything"
            echo(f"{what} is in order: index, durable state and vault agree.")
    if not report.healthy:
        raise click.exceptions.Exit(1)
