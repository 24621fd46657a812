"""Recall commands: ``context`` (memories for a prompt) and ``model`` (the embedder)."""

from __future__ import annotations

import click

from memvault.cli.index_cmds import ask_daemon, notice
from memvault.cli.main import AppContext, cli, emit_json, pass_app


@cli.command()
@click.argument("message")
@click.option("--budget", type=click.IntRange(0, 100_000), default=None, metavar="TOKENS",
              help="Most tokens the block may use (default: recall.budget, 800).")
@click.option("--scope", type=click.Choice(["memories", "all"]), default="memories", show_default=True,
              help="Recall memories and facts only, or ordinary notes too.")
@click.option("--no-record", is_flag=True, help="Do not count this recall (strength, last access).")
@click.option("--json", "as_json", is_flag=True, help="Print the block, its token count and its items as one JSON object.")
@pass_app
def context(app: AppContext, message: str, budget: int | None, scope: str, no_record: bool, as_json: bool) -> None:
    """The memories that matter for MESSAGE, as a `## Recalled Memory` block for a prompt.

    Identity memories first, then the most relevant memories and facts until
    the token budget is used. Prints nothing (and exits 0) when nothing is
    relevant enough.
    """
    vault = app.vault
    args = {"message": message, "budget": budget, "scope": scope, "record": not no_record}
    result = ask_daemon(vault, "context", args)
    if result is None:
        from memvault.store.retrieval.retriever import Retriever

        retriever = Retriever(vault, vault.read_con())
        try:
            result = retriever.context(**args)
        finally:
            retriever.close()
    for line in result["notices"]:
        notice(line)
    if as_json:
        emit_json({k: result[k] for k in ("text", "tokens", "budget", "items")})
    elif result["text"]:
        click.echo(result["text"])


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
    from memvault.store.settings import load_config
    from memvault.store import location
    from memvault.store.embedding.model import ModelUnavailable, pull_model, resolve_model

    value = name or load_config({"vault": app.vault_arg})["embedding.model"]
    spec = resolve_model(value)
    if spec is None:
        raise click.ClickException("embedding.model is none: vectors are turned off, nothing to pull")
    try:
        where = pull_model(spec, location.data_home())
    except ModelUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    if spec.bundled:
        click.echo(f"The default model is bundled and verified: {where}")
    else:
        click.echo(f"Downloaded {spec.name} to {where}; run `memvault sync` to embed the vault with it.")


@model.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as one JSON object.")
@pass_app
def model_status(app: AppContext, as_json: bool) -> None:
    """The configured model and how much of the vault has its vectors."""
    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.model import resolve_model

    vault = app.vault
    spec = resolve_model(vault.config["embedding.model"])
    data: dict[str, object] = {"model": vault.config["embedding.model"], "key": spec.key if spec else None}
    if spec is not None:
        con = vault.read_con()
        cache = vec.open_cache(vault.data_dir, create=False)
        done, total = vec.coverage(con, cache, spec.key)
        data.update(chunks=total, embedded=done, queued=vec.queue_size(con),
                    unavailable=vec.recorded_unavailable(con, spec.key))
        if cache is not None:
            cache.close()
    if as_json:
        emit_json(data)
        return
    for key, value in data.items():
        click.echo(f"{key + ':':12} {value}")
