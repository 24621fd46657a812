"""`memvault config`: every setting, its value, where the value came from."""

from __future__ import annotations

from memvault.cli.main import AppContext, cli, dim, echo, emit_json, json_option, pass_app


@cli.command("config")
@json_option
@pass_app
def config_cmd(app: AppContext, as_json: bool) -> None:
    """List every configuration key with its effective value, origin and meaning.

    Values come from, highest first: command-line flags, MEMVAULT_* environment
    variables, the config file, the defaults.
    """
    from memvault.store.settings import KEYS, load_settings

    config = load_settings({"vault": app.vault_arg})
    if not as_json:
        exists = "" if config.file.exists() else " (does not exist; defaults apply)"
        echo(f"config file: {config.file}{exists}\n")
    for key in KEYS:
        value, origin = config.values[key.name], config.origins[key.name]
        if as_json:
            emit_json({"key": key.name, "value": value, "default": key.default, "origin": origin,
                       "env": key.env, "doc": key.doc})
            continue
        echo(f"{key.name} = {value!r}" + ("" if origin == "default" else f"   [{origin}]"))
        echo(dim(f"    {key.doc} Default {key.default!r}; env {key.env}."))
