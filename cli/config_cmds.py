"""`memvault config`: every setting, its value, where the value came from."""

from __future__ import annotations

import click

from memvault.cli.main import AppContext, cli, emit_json, pass_app


@cli.command("config")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per setting.")
@pass_app
def config_cmd(app: AppContext, as_json: bool) -> None:
    """List every configuration key with its effective value, origin and meaning.

    Values come from, highest first: command-line flags, MEMVAULT_* environment
    variables, the config file, the defaults.
    """
    from memvault.store.settings import KEYS, load_config

    config = load_config({"vault": app.vault_arg})
    if not as_json:
        exists = "" if config.file.exists() else " (does not exist; defaults apply)"
        click.echo(f"config file: {config.file}{exists}\n")
    for key in KEYS:
        value, origin = config[key.name], config.origins[key.name]
        if as_json:
            emit_json({"key": key.name, "value": value, "default": key.default, "origin": origin,
                       "env": key.env, "doc": key.doc})
            continue
        click.echo(f"{key.name} = {value!r}" + ("" if origin == "default" else f"   [{origin}]"))
        click.echo(click.style(f"    {key.doc} Default {key.default!r}; env {key.env}.", dim=True))
