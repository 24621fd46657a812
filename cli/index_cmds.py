"""Indexing and inspection commands: sync, search, show, links, backlinks, stats."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from memvault.vault_io.uri import obsidian_uri

from memvault.cli.main import AppContext, cli, emit_json, pass_app, stderr_is_tty, warn


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--no-embed", is_flag=True, help="Index text only; leave embedding to the daemon or a later sync.")
@pass_app
def sync(app: AppContext, as_json: bool, no_embed: bool) -> None:
    """Bring the index in line with the vault, then embed what changed.

    Text is indexed first, so keyword search works at once; then new and
    changed notes, memories and facts are embedded for semantic search
    (unchanged text is never embedded twice).
    """
    from memvault.store.db import records as rec
    from memvault.store.db.connection import write_transaction

    vault = app.vault
    indexer = vault.indexer()
    show_bar = stderr_is_tty() and not as_json
    bar = None
    if show_bar:
        bar = click.progressbar(length=1, label="Indexing", file=sys.stderr)

    def progress(done: int, total: int) -> None:
        if bar is None or total < 50:
            return
        if bar.length != total:
            bar.length = total
        bar.update(done - bar.pos)

    try:
        summary = indexer.sync(progress=progress)
    finally:
        if bar is not None:
            bar.render_finish()
    from memvault.store.memories.mirror import flush_outbox

    # Store writes a crashed writer left half-done (older than 30 s, so a
    # writer still at work is not raced).
    unwritten: list[str] = []
    summary.warnings += [f"finished an interrupted write of {r.id}" for r in flush_outbox(vault, 30.0, errors=unwritten)]
    with write_transaction(vault.con):
        rec.set_meta(vault.con, "last_sync", rec.now_iso())
    embedding = None if no_embed else _embed(vault, show_bar)
    if as_json:
        data = summary.as_dict()
        if embedding is not None:
            data["embedding"] = embedding.as_dict()
        data["unwritten"] = unwritten
        emit_json(data)
        _embed_notice(embedding)
        _fail_if_unwritten(unwritten)
        return
    for line in summary.warnings:
        warn(line)
    for line in summary.parse_errors:
        warn(line)
    _embed_notice(embedding)
    embedded = (
        f"; embedded {embedding.embedded} texts in {embedding.seconds:.2f}s"
        if embedding is not None and embedding.embedded
        else ""
    )
    if not summary.changed:
        extra = f", {summary.skipped} skipped" if summary.skipped else ""
        click.echo(f"Index is up to date: nothing changed{extra} ({summary.seconds:.2f}s){embedded}.")
    else:
        click.echo(
            f"added {summary.added}, updated {summary.updated}, moved {summary.moved}, "
            f"deleted {summary.deleted}, skipped {summary.skipped}, errors {summary.errors} "
            f"in {summary.seconds:.2f}s{embedded}"
        )
    _fail_if_unwritten(unwritten)


def _fail_if_unwritten(errors: list[str]) -> None:
    """Memory notes that still cannot be written: name each, exit 1 (they
    stay pending in the index and are tried again by the next sync)."""
    if not errors:
        return
    for line in errors:
        click.echo(f"error: {line}", err=True)
    raise click.ClickException(f"{len(errors)} memory note(s) could not be written; they stay pending")


def _embed(vault: Any, show_bar: bool) -> Any:
    """Chunk and embed whatever the sync changed (a progress bar on a terminal)."""
    from memvault.store.embedding.pipeline import EmbeddingPipeline

    pipeline = EmbeddingPipeline.for_vault(vault, vault.con)
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if not show_bar or total < 20:
            return
        if bar is None:
            bar = click.progressbar(length=total, label="Embedding", file=sys.stderr)
        bar.update(done - bar.pos)

    try:
        return pipeline.run(progress)
    finally:
        if bar is not None:
            bar.render_finish()
        pipeline.close()


def _embed_notice(report: Any) -> None:
    if report is not None and report.unavailable:
        notice(f"semantic search unavailable: {report.unavailable}; keyword search only")


def notice(message: str) -> None:
    """One informational line on stderr (a degraded mode, not an error)."""
    click.echo(f"notice: {message}", err=True)


def _check_tags(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    for tag in value:
        if not tag.strip().lstrip("#").strip("/"):
            raise click.BadParameter(f"{tag!r} is not a tag", ctx=ctx, param=param)
    return value


@cli.command()
@click.argument("query", nargs=-1, required=True)
@click.option("-n", "--limit", default=10, show_default=True, type=click.IntRange(1, 1000), help="Most hits to show.")
@click.option("--type", "types", multiple=True, metavar="T",
              help="Only traces of this type: note or a memory type such as semantic (repeatable).")
@click.option("--tag", "tags", multiple=True, metavar="X", callback=_check_tags,
              help="Only traces with this tag or a nested tag (repeatable).")
@click.option("--path", "path_glob", metavar="GLOB", help="Only notes whose vault path matches this glob.")
@click.option("--raw", is_flag=True, help="Pass QUERY to SQLite FTS5 as written (phrases, AND/OR/NOT, prefix*); keyword mode.")
@click.option("--scope", "scope", type=click.Choice(["all", "notes", "memories", "facts"]), default="all",
              show_default=True, help="What to search: ordinary notes, memories (memory notes and facts), facts, or all.")
@click.option("--mode", type=click.Choice(["keyword", "semantic", "hybrid"]), default=None,
              help="Words, meaning, or both fused (default: hybrid when vectors exist, else keyword).")
@click.option("--explain", is_flag=True, help="Show each hit's keyword rank, similarity, graph, recency and strength factors.")
@click.option("--record", is_flag=True, help="Count the memories and facts found as recalled (strength, last access).")
@click.option("--include-deleted", is_flag=True, help="Also find forgotten (soft-deleted) memories.")
@click.option("--include-superseded", is_flag=True, help="Also find old versions of memories and facts.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per hit.")
@pass_app
def search(
    app: AppContext,
    query: tuple[str, ...],
    limit: int,
    types: tuple[str, ...],
    tags: tuple[str, ...],
    path_glob: str | None,
    raw: bool,
    scope: str,
    mode: str | None,
    explain: bool,
    record: bool,
    include_deleted: bool,
    include_superseded: bool,
    as_json: bool,
) -> None:
    """Search the index by words and meaning. QUERY is plain language unless --raw is given
    (several words need no quotes)."""
    vault = app.vault
    args = {
        "query": " ".join(query), "mode": mode, "limit": limit, "types": list(_canonical_types(types)), "tags": list(tags),
        "path_glob": path_glob, "raw": raw, "scope": scope, "include_deleted": include_deleted,
        "include_superseded": include_superseded, "explain": explain, "record": record,
    }
    result = None
    if mode != "keyword" and not raw:
        result = ask_daemon(vault, "search", args)
    if result is None:
        from memvault.store.retrieval.retriever import Retriever

        retriever = Retriever(vault, vault.read_con())
        try:
            result = retriever.search(**args)
        finally:
            retriever.close()
    for line in result["notices"]:
        notice(line)
    hits = result["hits"]
    for i, hit in enumerate(hits, 1):
        if as_json:
            emit_json(hit)
            continue
        status = f" ({hit['status']})" if hit.get("status") else ""
        click.echo(f"{i}. {click.style(hit['title'], bold=True)}  [{hit['type']}]{status}  {hit['path'] or ''}")
        snippet = " ".join(hit["snippet"].split())
        if snippet:
            click.echo(f"   {snippet}")
        click.echo(click.style(f"   {hit['id']}  score {hit['score']:.4g}  {hit['uri'] or ''}", dim=True))
        if explain:
            click.echo(click.style(f"   {_explain_line(hit.get('explain') or {})}", dim=True))
    if not hits and not as_json:
        click.echo("No matches.", err=True)


def _explain_line(e: dict[str, Any]) -> str:
    """One line of ``--explain``: the signals that made the hit's rank."""
    kw = e.get("keyword_rank")
    bm25 = e.get("keyword_bm25")
    kw_text = f"keyword #{kw} ({e.get('keyword_match')})" if kw else "keyword -"
    if kw and bm25 is not None:
        kw_text += f" bm25 {bm25:.3f}"
    if e.get("mode") == "keyword":
        skipped = ", ".join(e.get("not_applied") or ())
        return f"{kw_text}  (keyword mode: BM25 order; {skipped} not applied)"
    sim = e.get("vector_similarity")
    vr = e.get("vector_rank")
    sim_text = f"similarity {sim:.3f}" + (f" (#{vr})" if vr else "") if sim is not None else "similarity -"
    passed = f"  passed: {e['passed']}" if e.get("passed") else ""
    return (
        f"{kw_text}  {sim_text}  graph +{e.get('graph') or 0:.4f}  fused {e.get('fused') or 0:.4f}  "
        f"recency x{e.get('recency') or 1:.3f}  strength x{e.get('strength') or 1:.2f}{passed}"
    )


def ask_daemon(vault: Any, op: str, args: dict[str, Any]) -> dict[str, Any] | None:
    """The daemon's answer to ``op``, or None when no daemon serves this vault
    (the caller then answers in-process). Errors it reports are raised here."""
    from memvault.daemon.client import ask

    # A RemoteError carries the exit code the failure has in-process.
    return ask(vault.data_dir, op, args, config=vault.config.values)


def _canonical_types(types: tuple[str, ...]) -> list[str]:
    """``--type`` values: ``note`` or a memory type (aliases accepted)."""
    from memvault.store.memories.memtypes import NOTE_TYPE, UnknownTypeError, canonical_type

    try:
        return [NOTE_TYPE if t.strip().lower() == NOTE_TYPE else canonical_type(t) for t in types]
    except UnknownTypeError as exc:
        raise click.BadParameter(f"{exc} -- or {NOTE_TYPE!r} for ordinary notes", param_hint="'--type'") from None


def _vault_ref(app: AppContext, ref: str) -> str:
    """``ref`` as given, or as a vault path when it names a file inside the
    vault by an absolute or working-directory-relative path."""
    import os

    from memvault.store.location import inside

    root = app.vault.root
    if os.path.exists(ref) and inside(ref, root) and os.path.realpath(ref) != os.path.realpath(root):
        return Path(os.path.relpath(os.path.realpath(ref), os.path.realpath(root))).as_posix()
    return ref


def _trace_or_fail(app: AppContext, ref: str) -> tuple[Any, Any]:
    from memvault.store.index.lookup import find_trace

    con = app.vault.read_con()
    trace = find_trace(con, _vault_ref(app, ref))
    if trace is None:
        raise click.ClickException(f"no note or trace matches {ref!r} (give an id or a vault path)")
    return con, trace


@cli.command()
@click.argument("ref", metavar="ID|PATH")
@click.option("--json", "as_json", is_flag=True, help="Print the trace as one JSON object.")
@pass_app
def show(app: AppContext, ref: str, as_json: bool) -> None:
    """Show one note or trace: metadata, tags and content."""
    from memvault.store.db import records as rec

    con, t = _trace_or_fail(app, ref)
    f = con.execute("SELECT parse_error FROM files WHERE trace_id = ?", (t.id,)).fetchone()
    data = {
        "id": t.id, "kind": t.kind, "type": t.type, "title": t.title, "path": t.path,
        "uri": obsidian_uri(app.vault.name, t.path) if t.path else None,
        "status": t.status, "tags": t.tags, "created": t.created, "updated": t.updated,
        "source": t.source, "scope": t.scope, "strength": t.strength,
        "metadata": t.metadata, "parse_error": f[0] if f else None, "content": t.content,
        "links": len(rec.edges_from(con, t.id)),
    }
    if as_json:
        emit_json(data)
        return
    click.echo(click.style(t.title, bold=True))
    for key in ("id", "type", "path", "status", "tags", "created", "updated", "source", "parse_error"):
        value = data[key]
        if value:
            click.echo(f"{key + ':':12} {', '.join(value) if isinstance(value, list) else value}")
    click.echo("")
    click.echo(t.content)


def _edge_dict(e: Any, con: Any, outgoing: bool) -> dict[str, Any]:
    status = "resolved" if e.target_path or e.target_id else "unresolved"
    if e.ambiguous:
        status = "ambiguous"
    out = {"kind": e.kind, "target": e.target_name, "anchor": e.anchor, "display": e.display,
           "property": e.prop, "line": e.line, "status": status, "target_path": e.target_path,
           "target_id": e.target_id}
    if not outgoing:
        row = con.execute("SELECT path, title FROM traces WHERE id = ?", (e.source_id,)).fetchone()
        out = {"source_id": e.source_id, "source_path": row[0] if row else None,
               "source_title": row[1] if row else None, **out}
    return out


@cli.command()
@click.argument("ref", metavar="ID|PATH")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per link.")
@pass_app
def links(app: AppContext, ref: str, as_json: bool) -> None:
    """Outgoing links, embeds and property links of a note, with resolution status."""
    from memvault.store.db import records as rec

    con, t = _trace_or_fail(app, ref)
    for e in rec.edges_from(con, t.id):
        d = _edge_dict(e, con, outgoing=True)
        if as_json:
            emit_json(d)
            continue
        anchor = f"#{e.anchor}" if e.anchor else ""
        where = e.target_path or "—"
        prop = f" ({e.prop})" if e.prop else ""
        click.echo(f"{e.kind:8} {d['status']:10} {e.target_name}{anchor}{prop} -> {where}")


@cli.command()
@click.argument("ref", metavar="ID|PATH")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per incoming link.")
@pass_app
def backlinks(app: AppContext, ref: str, as_json: bool) -> None:
    """Notes and traces that link to this one."""
    from memvault.store.db import records as rec

    from memvault.store.index.lookup import find_attachment

    con = app.vault.read_con()
    attachment = find_attachment(con, _vault_ref(app, ref))
    if attachment:  # an image or PDF: no trace, but notes embed and link it
        from memvault.vault_io.resolve import path_key

        incoming = rec.edges_to_path(con, attachment, path_key(attachment))
    else:
        incoming = rec.edges_to(con, _trace_or_fail(app, ref)[1].id)
    for e in incoming:
        d = _edge_dict(e, con, outgoing=False)
        if as_json:
            emit_json(d)
            continue
        line = f":{e.line}" if e.line else ""
        click.echo(f"{e.kind:8} {d['source_path'] or d['source_id']}{line}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the counts as one JSON object.")
@click.option("--errors", "list_errors", is_flag=True, help="Also list every note with a parse error.")
@pass_app
def stats(app: AppContext, as_json: bool, list_errors: bool) -> None:
    """Counts: notes, traces, edges, unresolved and ambiguous links, parse errors, index size."""
    from memvault.store.index.lookup import parse_errors
    from memvault.store.index.lookup import stats as index_stats

    vault = app.vault
    con = vault.read_con()
    data = index_stats(con, vault.index_path)
    data["vault"] = str(vault.root)
    if list_errors:
        data["parse_error_list"] = [{"path": p, "error": e} for p, e in parse_errors(con)]
    if as_json:
        emit_json(data)
        return
    for key, value in data.items():
        if key == "parse_error_list":
            continue
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items()) or "none"
        click.echo(f"{key.replace('_', ' ') + ':':20} {value}")
    for item in data.get("parse_error_list", []):
        click.echo(f"  {item['path']}: {item['error']}")
