"""Recall commands: ``context`` (memories for a prompt), ``reflect`` (a question answered from memory)
and ``model`` (the embedder)."""

from __future__ import annotations

import click

from memvault.cli.index_cmds import notice, since_until_options, split_scopes
from memvault.cli.main import AppContext, UsageFailure, cli, echo, emit_json, json_option, pass_app
from memvault.daemon.client import answer
from memvault.store.answers.recall import RecallBlock
from memvault.store.queries.recall import ContextQuery
from memvault.store.retrieval.when import given
from memvault.vault_io.secrets import redact, redact_tree


@cli.command()
@click.argument("message")
@click.option("--budget", type=click.IntRange(0, 100_000), default=None, metavar="TOKENS",
              help="Most tokens the block may use (default: recall.budget, 800).")
@click.option("--what", type=click.Choice(["auto", "memories", "all"]), default=None,
              help="auto (default): memories, facts and conversation turns ranked together, a note only when it "
                   "beats them; memories: memories and facts only; all: ordinary notes too.")
@click.option("--scope", "scopes", multiple=True, metavar="S", callback=lambda c, p, v: split_scopes(v, "context"),
              help="Only memories of this scope (user, a project...; repeatable).")
@click.option("--identity", type=click.Choice(["relevant", "always"]), default=None,
              help="Identity memories only beside something relevant, or always (default: recall.identity).")
@click.option("--no-record", is_flag=True, help="Do not count this recall (strength, last access).")
@click.option("--pinned", is_flag=True, help="Relevant memories marked `pinned: true` first.")
@click.option("--project", type=click.Path(exists=True, file_okay=False), metavar="PATH",
              help="Prefer the memories of this folder's project (its git root's name, or its .memvault scope), "
                   "then the person's own (user), as the hooks and MCP do for an agent's session.")
@since_until_options
@json_option
@pass_app
def context(app: AppContext, message: str, budget: int | None, what: str | None,
            scopes: tuple[tuple[str, ...], str | None], identity: str | None, no_record: bool, pinned: bool,
            project: str | None, since: str | None, until: str | None, as_json: bool) -> None:
    """The memories that matter for MESSAGE, as a `## Recalled Memory` block for a prompt.

    The most relevant memories, facts and turns of conversations, ranked
    together, until the token budget is used (a note only when it beats
    them); identity lines when relevant, pinned or asked for ("who am I?").
    Prints nothing (and exits 0) when nothing is relevant enough.
    """
    store = app.store
    memory_scope, old_what = scopes
    what = what or old_what or "auto"
    if what not in ("auto", "memories", "all"):
        raise UsageFailure(f"context recalls auto, memories or all, not {what}")
    prefer = None
    if project is not None:
        from memvault.store.project import project_at

        found = project_at(project)
        prefer = found.scope if found is not None else None
    q = ContextQuery(message, budget=budget, what=what, memory_scope=memory_scope, identity=identity,
                     record=not no_record, pinned=pinned, prefer_scope=prefer, **given(since, until))
    block: RecallBlock = answer(store, q)
    for line in block.notices:
        notice(line)
    if block.full and not as_json:
        notice(block.full)
    # Text from the index is redacted already; a path or a link's name is not.
    data = redact_tree({k: v for k, v in block.to_json().items() if k != "notices"})
    if as_json:
        emit_json(data)
    elif data["text"]:
        echo(data["text"])


@cli.command()
@click.argument("question")
@click.option("--budget", type=click.IntRange(0, 100_000), default=None, metavar="TOKENS",
              help="Most tokens the recall block may use (default: recall.budget, 800).")
@click.option("--no-llm", is_flag=True, help="The evidence alone, even with an llm configured.")
@json_option
@pass_app
def reflect(app: AppContext, question: str, budget: int | None, no_llm: bool, as_json: bool) -> None:
    """Answer QUESTION from memory, citing memory ids and note links.

    With an llm configured (extractor = "llm") the model answers from the
    evidence in one call; without one, prints the evidence pack: the recall
    block and the contradictions and open action items it touches, for an
    agent (or you) to answer from.
    """
    if not question.strip():
        raise UsageFailure("QUESTION is empty: reflect needs a question")
    store = app.store
    block: RecallBlock = answer(store, ContextQuery(question, budget=budget, record=False))
    result = store.reflect(question, block, use_llm=not no_llm)
    if result.warning and not as_json:
        notice(result.warning)
    if as_json:
        emit_json(redact_tree(result.to_json()))
    else:
        echo(redact(result.text)[0])


@cli.group()
def model() -> None:
    """The embedding model: status, and downloading a configured one."""


@model.command("pull")
@click.argument("name", required=False)
@pass_app
def model_pull(app: AppContext, name: str | None) -> None:
    """Download NAME (default: the configured `embedding.model`) for offline use.

    The only command that uses the network. The default model ships with
    memvault and needs no download.
    """
    from memvault.store import location
    from memvault.store.embedding.model import pull_model, resolve_model
    from memvault.store.settings import load_settings

    value = name or load_settings({"vault": app.vault_arg}).embedding.model
    spec = resolve_model(value)
    if spec is None:
        raise click.ClickException("embedding.model is none: vectors are turned off, nothing to pull")
    where = pull_model(spec, location.data_home())
    if spec.bundled:
        echo(f"The default model is bundled and verified: {where}")
    else:
        echo(f"Downloaded {spec.name} to {where}; run `memvault sync` to embed the vault with it.")


@model.command("status")
@json_option
@pass_app
def model_status(app: AppContext, as_json: bool) -> None:
    """The configured model and how much of the vault has its vectors."""
    data = app.store.model_status().to_json()
    if as_json:
        emit_json(data)
        return
    for key, value in data.items():
        echo(f"{key + ':':12} {value}")
    left = [f"{n} {what}" for n, what in ((data.get("unembedded", 0), "texts without a vector"),
                                          (data.get("queued", 0), "notes or memories not yet cut into texts")) if n]
    if left:
        echo(f"{'to finish:':12} {' and '.join(left)}: `memvault sync` embeds them "
             "(a running daemon does it by itself)")
