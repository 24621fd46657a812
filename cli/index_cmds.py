"""Indexing and inspection commands: sync, search, show, links, backlinks, stats."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memvault.cli.main import (
    AppContext,
    bold,
    cli,
    dim,
    echo,
    emit_json,
    json_option,
    pass_app,
    progress_bar,
    stderr_is_tty,
    warn,
)
from memvault.daemon.client import answer
from memvault.store.answers.search import SearchResult
from memvault.store.queries.search import SearchQuery
from memvault.store.retrieval.when import FORMS, given
from memvault.vault_io.secrets import redact_tree

if TYPE_CHECKING:
    from memvault.store.retrieval.turns import Shown


@cli.command()
@json_option
@click.option("--no-embed", is_flag=True, help="Index text only; leave embedding to the daemon or a later sync.")
@pass_app
def sync(app: AppContext, as_json: bool, no_embed: bool) -> None:
    """Bring the index in line with the vault, then embed what changed.

    Text is indexed first, so keyword search works at once; then new and
    changed notes, memories and facts are embedded for semantic search
    (unchanged text is never embedded twice).
    """
    show_bar = stderr_is_tty() and not as_json
    daemon = None if no_embed else _daemon_pid(app)
    with progress_bar("Indexing", show_bar, minimum=50) as index_progress, \
            progress_bar("Embedding", show_bar, minimum=20) as embed_progress:
        report = app.store.sync(index_progress, embed=not no_embed and daemon is None, embed_progress=embed_progress)
    summary, embedding = report.summary, report.embedding
    if daemon is not None:
        # The daemon's embedding service does it: two processes embedding the
        # same texts would only halve each other's speed.
        from memvault.daemon.client import ask

        ask(app.store.data_dir, "wake", {})
        notice(f"embedding is left to the running daemon (pid {daemon})")
    if as_json:
        data = report.as_dict()
        if daemon is not None:
            data["embedding"] = {"handed_to_daemon": daemon}
        emit_json(data)
        _embed_notice(embedding)
        _fail_if_unwritten(report.unwritten)
        _pending_notice(report.pending)
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
        echo(f"Index is up to date: nothing changed{extra} ({summary.seconds:.2f}s){embedded}.")
    else:
        echo(
            f"added {summary.added}, updated {summary.updated}, moved {summary.moved}, "
            f"deleted {summary.deleted}, skipped {summary.skipped}, errors {summary.errors} "
            f"in {summary.seconds:.2f}s{embedded}"
        )
    _fail_if_unwritten(report.unwritten)
    _pending_notice(report.pending)


def _daemon_pid(app: AppContext) -> int | None:
    """The pid of the daemon serving this vault, if one runs."""
    from memvault.store.serving import daemon_pid

    return daemon_pid(app.store.data_dir)


def _pending_notice(pending: list[dict[str, Any]]) -> None:
    """Note writes another writer may still be finishing (a failed one was
    retried by this sync and, failing again, is an error above): name them."""
    for p in pending:
        warn(f"the {p['action']} of memory {p['id']}'s note ({p['path'] or 'a new note'}) is still pending: "
             "another memvault process may be writing it; the next sync or the daemon finishes it")


def _fail_if_unwritten(errors: list[str]) -> None:
    """Memory notes that still cannot be written: name each, exit 1 (they
    stay pending in the index and are tried again by the next sync)."""
    if not errors:
        return
    for line in errors:
        echo(f"error: {line}", err=True)
    raise click.ClickException(f"{len(errors)} memory note(s) could not be written; they stay pending")


def _embed_notice(report: Any) -> None:
    if report is not None and report.unavailable:
        notice(f"semantic search unavailable: {report.unavailable}; keyword search only")


def notice(message: str) -> None:
    """One informational line on stderr (a degraded mode, not an error)."""
    echo(f"notice: {message}", err=True)


def _check_tags(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    """Each ``--tag`` as Obsidian reads it; one it would not read is a usage
    error (filtering by it would silently find nothing)."""
    if not value:
        return value  # the Markdown module is not imported for nothing
    from memvault.cli.main import UsageFailure
    from memvault.vault_io.errors import UsageError
    from memvault.vault_io.markdown import check_tag

    try:
        return tuple(check_tag(tag) for tag in value)
    except UsageError as exc:
        raise UsageFailure(f"--tag {exc}") from None  # one line, exit 2


def _check_time(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A ``--since``/``--until`` value must parse (checked here so a bad one
    is a usage error before any daemon is asked)."""
    if value is None:
        return None
    from datetime import datetime, timezone

    from memvault.store.retrieval.when import BadTimeError, parse_bound

    try:
        parse_bound(value, datetime.now(timezone.utc))
    except BadTimeError as exc:
        raise click.BadParameter(str(exc)) from None
    return value


def since_until_options(f: Any) -> Any:
    """``--since`` and ``--until``: when the results happened (shared by search and context)."""
    f = click.option("--until", metavar="WHEN", callback=_check_time,
                     help="Only what happened before the end of WHEN (same forms as --since).")(f)
    return click.option("--since", metavar="WHEN", callback=_check_time,
                        help=f"Only what happened since WHEN (event time, else creation): {FORMS}.")(f)


@cli.command()
@click.argument("query", nargs=-1, required=True)
@click.option("-n", "--limit", default=10, show_default=True, type=click.IntRange(1, 1000), help="Most hits to show.")
@click.option("--type", "types", multiple=True, metavar="T",
              help="Only traces of this type: note or a memory type such as semantic (repeatable).")
@click.option("--tag", "tags", multiple=True, metavar="X", callback=_check_tags,
              help="Only traces with this tag or a nested tag (repeatable).")
@click.option("--path", "path_glob", metavar="GLOB", help="Only notes whose vault path matches this glob.")
@click.option("--raw", is_flag=True, help="Pass QUERY to SQLite FTS5 as written (phrases, AND/OR/NOT, prefix*); keyword mode.")
@click.option("--what", "what", type=click.Choice(["all", "notes", "memories", "facts"]), default=None,
              help="What to search: ordinary notes, memories (memory notes and facts), facts, or all (default).")
@click.option("--scope", "scopes", multiple=True, metavar="S", callback=lambda c, p, v: split_scopes(v, "search"),
              help="Only memories of this scope (user, a project...; repeatable); notes and facts have none and stay.")
@click.option("--mode", type=click.Choice(["keyword", "semantic", "hybrid"]), default=None,
              help="Words, meaning, or both fused (default: hybrid when vectors exist, else keyword).")
@click.option("--explain", is_flag=True, help="Show each hit's keyword rank, similarity, graph, recency and strength factors.")
@click.option("--record", is_flag=True, help="Count the memories and facts found as recalled (strength, last access).")
@click.option("--include-deleted", is_flag=True, help="Also find forgotten (soft-deleted) memories.")
@click.option("--include-superseded", is_flag=True, help="Also find old versions of memories and facts.")
@since_until_options
@json_option
@pass_app
def search(
    app: AppContext,
    query: tuple[str, ...],
    limit: int,
    types: tuple[str, ...],
    tags: tuple[str, ...],
    path_glob: str | None,
    raw: bool,
    what: str | None,
    scopes: tuple[tuple[str, ...], str | None],
    mode: str | None,
    explain: bool,
    record: bool,
    include_deleted: bool,
    include_superseded: bool,
    since: str | None,
    until: str | None,
    as_json: bool,
) -> None:
    """Search the index by words and meaning. QUERY is plain language unless --raw is given
    (several words need no quotes)."""
    if not " ".join(query).strip():
        raise click.UsageError("QUERY is empty: give the words to search for")
    store = app.store
    memory_scope, old_what = scopes
    q = SearchQuery(
        " ".join(query), mode=mode, limit=limit, types=tuple(_canonical_types(types)), tags=tags,
        path_glob=path_glob, raw=raw, what=what or old_what or "all", memory_scope=memory_scope,
        include_deleted=include_deleted, include_superseded=include_superseded, explain=explain, record=record,
        passages=as_json,  # people read the snippet; a passage is for JSON readers
        **given(since, until),
    )
    result: SearchResult = answer(store, q)
    for line in result.notices:
        notice(line)
    # Text from the index is redacted already; a path or a link's name is not.
    hits = redact_tree([h.to_json() for h in result.hits])
    for i, hit in enumerate(hits, 1):
        if as_json:
            emit_json(hit)
            continue
        status = f" ({hit['status']})" if hit.get("status") else ""
        scope = f" {hit['scope']}" if hit.get("scope") not in (None, "user") else ""
        echo(f"{i}. ", bold(hit["title"]), f"  [{hit['type']}{scope}]{status}  {hit['path'] or ''}")
        snippet = " ".join((hit["snippet"] or "").split())
        if snippet:
            echo(f"   {snippet}")
        echo(dim(f"   {hit['id']}  score {hit['score']:.4g}  {hit['uri'] or ''}"))
        if explain:
            echo(dim(f"   {_explain_line(hit.get('explain') or {})}"))
    if not hits and not as_json:
        echo("No matches.", err=True)


def _explain_line(e: dict[str, Any]) -> str:
    """One line of ``--explain``: the signals that made the hit's rank."""
    kw = e.get("keyword_rank")
    bm25 = e.get("keyword_bm25")
    kw_text = f"keyword #{kw} ({e.get('keyword_match')})" if kw else "keyword -"
    if kw and bm25 is not None:
        kw_text += f" bm25 {bm25:.3f}"
    if e.get("keyword_neighbours"):
        kw_text += f" (+{e['keyword_neighbours']:.3f} from neighbouring turns)"
    if e.get("mode") == "keyword":
        skipped = ", ".join(e.get("not_applied") or ())
        return f"{kw_text}  (keyword mode: BM25 order; {skipped} not applied)"
    sim = e.get("vector_similarity")
    vr = e.get("vector_rank")
    sim_text = f"similarity {sim:.3f}" + (f" (#{vr})" if vr else "") if sim is not None else "similarity -"
    if e.get("similarity_alone") is not None:
        sim_text += f" in context ({e['similarity_alone']:.3f} alone)"
    passed = f"  passed: {e['passed']}" if e.get("passed") else "  below the floor"
    when = f"  happened {e['event_time'][:10]}" if e.get("event_time") else ""
    time_match = f"  time match x{e['time_match']:.2f}" if (e.get("time_match") or 1) != 1 else ""
    return (
        f"{kw_text}  {sim_text}  graph +{e.get('graph') or 0:.4f}  fused {e.get('fused') or 0:.4f}{time_match}  "
        f"recency x{e.get('recency') or 1:.3f}{when}  strength x{e.get('strength') or 1:.2f}{passed}"
    )


#: What ``--scope`` meant before 0.3 (now ``--what``); a memory scope is any other word.
OLD_SCOPE_VALUES = ("all", "notes", "memories", "facts")


def split_scopes(values: tuple[str, ...], command: str) -> tuple[tuple[str, ...], str | None]:
    """``--scope`` values as (memory scopes, the old ``--what`` value if one
    was given the pre-0.3 way, with a deprecation notice)."""
    old = [v for v in values if v in OLD_SCOPE_VALUES]
    if old:
        notice(f"`{command} --scope {old[-1]}` is the old spelling of `--what {old[-1]}` and still works; "
               "--scope now names a memory scope (user, a project...)")
    return tuple(v for v in values if v not in OLD_SCOPE_VALUES), (old[-1] if old else None)


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

    root = app.store.root
    if os.path.exists(ref) and inside(Path(ref), root) and os.path.realpath(ref) != os.path.realpath(root):
        return Path(os.path.relpath(os.path.realpath(ref), os.path.realpath(root))).as_posix()
    return ref


def _revealed(app: AppContext, data: Shown, heading: str | None) -> Shown:
    """``data`` with the content the note's file holds now, credentials and all
    (the index keeps only the redacted text); a fact, or a note gone from
    disk, is shown as indexed."""
    from dataclasses import replace

    from memvault.store.index.browse import section_span
    from memvault.vault_io.confine import read_inside
    from memvault.vault_io.memory_note import read_memory
    from memvault.vault_io.parser import parse_note

    if data.kind not in ("note", "memory") or not data.path:
        return data
    try:
        note = parse_note(data.path, read_inside(app.store.root, data.path))
    except OSError:
        return data
    content = read_memory(note.frontmatter, note.body).content if data.kind == "memory" else note.body
    if heading:
        found = section_span(content, heading)
        content = content[found[0]:found[1]].strip() if found else data.content
    return replace(data, title=note.title if data.kind == "note" else data.title, content=content)


@cli.command()
@click.argument("ref", metavar="ID|PATH", required=False)
@click.option("--heading", metavar="HEADING", help="Show only this section of a note (its heading's text).")
@click.option("--reveal", is_flag=True,
              help="Show credentials as the note has them (read from the file); without it they are [redacted].")
@click.option("--key", metavar="KEY", help="Show the memory holding this key (instead of ID|PATH).")
@click.option("--scope", default="user", show_default=True, help="With --key: the scope whose key it is.")
@json_option
@pass_app
def show(app: AppContext, ref: str | None, heading: str | None, reveal: bool, key: str | None, scope: str,
         as_json: bool) -> None:
    """Show one note or trace: metadata, tags and content (credentials [redacted] unless --reveal)."""
    if (ref is None) == (key is None):
        raise click.UsageError("give an ID|PATH or --key KEY")
    if key is not None:
        found = app.store.key_holder(key, scope)
        if found.holder is None:
            raise click.ClickException(f"no live memory holds key {found.key} (scope {found.scope})")
        if found.others:
            warn(f"key {found.key} is also held by {', '.join(found.others)}: a clash (see `memvault conflicts`)")
        ref = found.holder
    assert ref is not None
    if heading:
        read = app.store.read(_vault_ref(app, ref), heading)
        data = _revealed(app, read, heading).to_json() if reveal else redact_tree(read.to_json())
    else:
        shown = app.store.show(_vault_ref(app, ref))
        data = _revealed(app, shown, None).to_json() if reveal else redact_tree(shown.to_json())
    if as_json:
        emit_json(data)
        return
    echo(bold(data["title"]))
    held = (data.get("key") or (data.get("metadata") or {}).get("key")) if data.get("kind") == "memory" else None
    for name in ("id", "type", "path", "status", "tags", "created", "updated", "source", "parse_error"):
        value = data[name]
        if value:
            echo(f"{name + ':':12} {', '.join(value) if isinstance(value, list) else value}")
        if name == "type" and held:
            echo(f"{'key:':12} {held}")
    echo("")
    echo(data["content"])


@cli.command()
@click.argument("ref", metavar="ID|PATH")
@json_option
@pass_app
def links(app: AppContext, ref: str, as_json: bool) -> None:
    """Outgoing links, embeds and property links of a note, with resolution status."""
    for d in redact_tree([link.to_json() for link in app.store.links(_vault_ref(app, ref))]):
        if as_json:
            emit_json(d)
            continue
        anchor = f"#{d['anchor']}" if d["anchor"] else ""
        where = d["target_path"] or "—"
        prop = f" ({d['property']})" if d["property"] else ""
        echo(f"{d['kind']:8} {d['status']:10} {d['target']}{anchor}{prop} -> {where}")


@cli.command()
@click.argument("ref", metavar="ID|PATH")
@json_option
@pass_app
def backlinks(app: AppContext, ref: str, as_json: bool) -> None:
    """Notes and traces that link to this one."""
    for d in redact_tree([link.to_json() for link in app.store.backlinks(_vault_ref(app, ref))]):
        if as_json:
            emit_json(d)
            continue
        line = f":{d['line']}" if d["line"] else ""
        echo(f"{d['kind']:8} {d['source_path'] or d['source_id']}{line}")


@cli.command()
@json_option
@click.option("--errors", "list_errors", is_flag=True, help="Also list every note with a parse error.")
@pass_app
def stats(app: AppContext, as_json: bool, list_errors: bool) -> None:
    """Counts: notes, traces, edges, unresolved and ambiguous links, parse errors, index size."""
    data = app.store.stats(parse_errors=list_errors).to_json()
    if as_json:
        emit_json(data)
        return
    for key, value in data.items():
        if key == "parse_error_list":
            continue
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items()) or "none"
        echo(f"{key.replace('_', ' ') + ':':20} {value}")
    for item in data.get("parse_error_list", []):
        echo(f"  {item['path']}: {item['error']}")
