"""Daemon commands: ``daemon`` (foreground, for systemd), ``status``, ``service``."""

from __future__ import annotations

import logging
import signal
from pathlib import Path
from typing import Any

import click

from memvault.cli.main import AppContext, cli, echo, emit_json, json_option, pass_app, warn


@cli.command()
@click.option("--debounce-ms", type=click.IntRange(0, 60_000), metavar="MS",
              help="Wait this long after a path's last event before re-indexing it (default: config debounce_ms).")
@click.option("--rescan-interval", type=click.IntRange(0), metavar="S",
              help="Seconds between full rescans; 0 turns them off (default: config rescan_interval).")
@click.option("--poll", is_flag=True, help="Poll the vault instead of using inotify.")
@click.option("-v", "--verbose", is_flag=True, help="Also log batches that changed nothing, and other details.")
@pass_app
def daemon(app: AppContext, debounce_ms: int | None, rescan_interval: int | None, poll: bool, verbose: bool) -> None:
    """Keep the index up to date in the foreground (for systemd; stop with SIGTERM or Ctrl-C).

    Does a full sync, then watches the vault and re-indexes changed notes
    after a short debounce, with a periodic full rescan as a safety net.
    One daemon per vault; a second one exits with status 1.
    """
    from memvault.cli.logs import setup_logging
    from memvault.daemon.lock import DaemonRunningError
    from memvault.daemon.runner import DaemonRunner

    setup_logging("daemon", verbose=verbose)
    runner = DaemonRunner(app.store, debounce_ms=debounce_ms, rescan_interval=rescan_interval, polling=poll)

    def on_signal(signum: int, _frame: Any) -> None:
        logging.getLogger("memvault.daemon").info("received %s; stopping", signal.Signals(signum).name)
        runner.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        runner.run()
    except DaemonRunningError:
        raise
    except Exception as exc:
        logging.getLogger("memvault.daemon").error("memvault daemon failed", exc_info=True)
        raise click.ClickException(f"memvault daemon failed: {exc}") from None


@cli.command()
@json_option
@pass_app
def status(app: AppContext, as_json: bool) -> None:
    """Whether a daemon serves this vault, its queue and last sync, and index counts.

    Works from memvault's data dir alone, so it also reports while the vault
    folder is missing (an unmounted disk) and a daemon waits for it.
    """
    from memvault.daemon.status import vault_status, vault_without_folder
    from memvault.store.memory_store import VaultError

    try:
        data = vault_status(app.store)
    except VaultError:
        vault = vault_without_folder(app.vault_arg)
        if vault is None:  # not a vault memvault knows: the usage error stands
            raise
        try:
            data = vault_status(vault)
        finally:
            vault.close()
    if as_json:
        emit_json(data)
        return
    missing = " (missing: the folder does not exist)" if data["vault_missing"] else ""
    echo(f"{'vault:':12} {data['vault']}{missing}")
    if data["running"] and data["mode"] == "waiting":
        echo(f"{'daemon:':12} running (pid {data['pid']}, since {data['since']}), "
                   "waiting for the vault folder to come back")
    elif data["running"]:
        mode = data["mode"] or "starting"
        queue = data["queue"] if data["queue"] is not None else "?"
        echo(f"{'daemon:':12} running (pid {data['pid']}, since {data['since']}, {mode} mode, queue {queue})")
    else:
        echo(f"{'daemon:':12} not running")
    echo(f"{'last sync:':12} {data['last_sync'] or 'never'}")
    if data["last_batch"]:
        echo(f"{'last batch:':12} {data['last_batch']}")
    if data["failures"]:
        echo(f"{'failures:':12} {data['failures']} batches or rescans failed (see the daemon's log)")
    index = data["index"]
    if index is None:
        echo(f"{'index:':12} none yet (run `memvault sync` or start the daemon)")
        return
    open_list = data.get("conflict_list") or []
    synced = sum(1 for c in open_list if c.get("kind") == "sync")
    detail = [f"{synced} from file sync"] if synced else []
    detail.append(f"{data['conflicts_recorded']} recorded by memvault in all")
    echo(f"{'conflicts:':12} {data['conflicts']} open ({'; '.join(detail)})")
    for item in open_list:
        # Whose version the copy holds: the other device's (a sync tool's copy,
        # named by device when the copy's name says), this device's store
        # version, or one another device's memvault wrote.
        if item.get("kind") == "sync":
            who = f"device {item['device']}'s" if item.get("device") else "the other device's"
            echo(f"  {item['note']}: {item['detail']}; the other version in {item['conflict_note']} "
                       f"({who}; the note holds the one {item.get('tool') or 'the sync tool'} kept)")
        else:
            side = item.get("side") or "this device's store version"
            echo(f"  {item['note']}: {item['detail']}; {side} in {item['conflict_note']}")
    _print_consolidation(data.get("consolidation"))
    if data.get("contradictions"):
        echo(f"{'contradicts:':12} {data['contradictions']} open contradictions (see `memvault conflicts`)")
    for clash in data.get("key_clashes") or []:
        echo(f"{'key clash:':12} {clash['detail']}")
    for pause in data.get("paused") or []:
        echo(f"{'paused:':12} {pause['detail']}: hooks, ingest and MCP remember store nothing (`memvault resume`)")
    pending = data.get("pending_writes") or []
    if pending:
        failed = sum(1 for p in pending if p["failed"])
        echo(f"{'pending:':12} {len(pending)} memory note writes"
                   + (f", {failed} failed (retried by the next sync; see `memvault doctor`)" if failed else ""))
        for p in pending:
            echo(f"  {p['id']}: {p['action']} {p['path'] or '(a new note)'}" + (" (failed)" if p["failed"] else ""))
    _print_services(data.get("services") or {})
    echo(
        f"{'index:':12} {index['notes']} notes, {index['attachments']} attachments, {index['traces']} traces, "
        f"{index['edges']} edges, {index['parse_errors']} parse errors"
    )


def _print_consolidation(run: dict[str, Any] | None) -> None:
    """The latest consolidation run: who ran it, what it did, what it proposes."""
    if not run:
        return
    from memvault.cli.consolidate_cmds import count_words

    by = {"daemon": "by the daemon", "cli": "from the command line", "merge": "a merge", "mcp": "by an agent"}
    echo(f"{'last run:':12} consolidation {run['run']} {by.get(run['trigger'], run['trigger'])} at "
         f"{run['started']} ({run['status']}): {count_words(run['counts']) or 'nothing done'}")
    if run.get("proposed"):
        echo(f"{'proposed:':12} {count_words(run['proposed'], proposed=True)}, not done: "
             "`memvault consolidate --dry-run` shows them, `memvault consolidate` applies them")


def _print_services(services: dict[str, Any]) -> None:
    """One line per background service: its state, and what it is doing."""
    for name, s in services.items():
        state = s.get("state") or "?"
        if name == "embedding" and state == "running":
            last = s.get("last_run") or {}
            if s.get("unavailable"):
                state = "model unavailable: " + s["unavailable"]
            else:
                state = "idle" if s.get("idle") else f"embedding ({last.get('pending', '?')} pending)"
        elif name == "llm_facts" and state == "running":
            state = f"running, {s.get('queued', 0)} queued"
        echo(f"{name + ':':12} {state}")


@cli.group()
def service() -> None:
    """Install or remove the daemon as a systemd user service."""


def _print_outcome(outcome: Any) -> None:
    for line in outcome.done:
        echo(line)
    for line in outcome.warnings:
        warn(line)
    if outcome.todo:
        echo("Then run:" if not outcome.warnings else "To finish, run:")
        for command in outcome.todo:
            echo(f"  {command}")


@service.command("install")
@click.option("--enable", is_flag=True, help="Also enable and start it (systemctl --user enable --now).")
@click.option("--exec", "exe", metavar="PATH", type=click.Path(dir_okay=False, path_type=Path),
              help="The memvault executable for ExecStart (default: this one).")
@pass_app
def service_install(app: AppContext, enable: bool, exe: Path | None) -> None:
    """Write ~/.config/systemd/user/memvault.service for this vault and reload systemd.

    Exits 0 once the unit file is written, even where systemctl is missing or
    cannot reach your user manager: it then prints the commands to run.
    """
    from memvault.daemon import systemd as svc
    from memvault.store.location import data_home, memvault_executable

    store = app.store
    exe_path = exe.absolute() if exe else memvault_executable()
    if exe_path is None:
        raise svc.ServiceError("cannot find the memvault executable: put it on PATH or pass --exec PATH")
    # The whole data dir, not only this vault's folder: the embedding
    # model is unpacked and verified under it on first use.
    network = store.settings.extractor == "llm"  # the llm extractor calls an HTTP endpoint
    _print_outcome(svc.install(exe_path, store.root, data_home(), enable=enable, network=network))


@service.command("uninstall")
def service_uninstall() -> None:
    """Stop and disable the service and remove its unit file."""
    from memvault.daemon import systemd as svc

    _print_outcome(svc.uninstall())
