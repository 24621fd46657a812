"""``memvault hook``: session hooks for Claude Code and Codex (JSON on stdin, text on stdout).

::

    memvault hook session-start   # identity, what changed lately, what is relevant to the project
    memvault hook prompt          # the `context` block for the user's prompt (nothing when nothing is relevant)
    memvault hook session-end     # hand the transcript to conversation ingest
    memvault hook pre-compact     # the same, before the client compacts the conversation
    memvault hook turn            # after each answer: the daemon ingests the new turns (see .turn_hook)
    memvault hook install --client claude-code [--scope user|project]

Both clients add what a ``SessionStart`` or ``UserPromptSubmit`` hook prints
to the model's context. A hook must never break the agent's session: on any
error, or past its time budget (:data:`BUDGET_WARM` seconds when a daemon
answers warm, :data:`BUDGET_COLD` without one, when recall goes by words
alone so as not to load the model; :data:`BUDGET_INGEST` for
the ingest hooks, whose output nobody waits for; counted from the moment
the hook command starts its work), it prints nothing, exits 0 and logs why
to ``hooks.log`` in memvault's data dir. The work runs on a
thread; past the budget the process ends at once, whatever that thread is
doing (a SQLite transaction in flight is rolled back, never half-written).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from memvault.cli.main import AppContext, cli, echo, emit_json, json_option, pass_app
from memvault.vault_io import json_input
from memvault.vault_io.secrets import redact

if TYPE_CHECKING:
    from memvault.store.answers.recall import RecallBlock
    from memvault.store.memory_store import MemoryStore
    from memvault.store.project import Project
    from memvault.store.queries.recall import ContextQuery

#: Seconds a context hook may take with a running daemon (warm answers) and without.
BUDGET_WARM = 0.3
BUDGET_COLD = 2.0
#: Seconds an ingest hook may take (it runs when the session ends; installed with a 30 s client timeout).
BUDGET_INGEST = 25.0
#: Clients cap injected context at 10,000 characters.
MAX_CHARS = 9000


def log_line(event: str, message: str) -> None:
    """Append one line to the hooks log (:func:`memvault.cli.logs.hook_log`)."""
    from memvault.cli.logs import hook_log

    hook_log(message, event)


def read_input() -> dict[str, Any]:
    """The hook's JSON input (an empty object when there is none or it is not JSON)."""
    if sys.stdin is None or sys.stdin.isatty():
        return {}
    try:
        data = json_input.loads(sys.stdin.read() or "{}")
    except (ValueError, OSError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def daemon_serves(store: "MemoryStore") -> bool:
    """Whether this vault's daemon socket is there (warm answers)."""
    from memvault.daemon.client import socket_path

    return socket_path(store.data_dir).exists()


def run_hook(app: AppContext, event: str, work: Callable[["MemoryStore", dict[str, Any]], str],
             timeout: float | None, ingest: bool = False) -> None:
    """Run ``work(store, input)`` within the budget; print its text, or nothing.

    Never raises and always exits 0: a failure, a missing vault or a
    timeout is logged, not shown (exit 2 would block a prompt).
    """
    started = time.monotonic()
    data = read_input()
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            store = app.store
            result["budget"] = timeout if timeout is not None else (
                BUDGET_INGEST if ingest else BUDGET_WARM if daemon_serves(store) else BUDGET_COLD)
            budget_known.set()
            result["text"] = work(store, data)
        except BaseException as exc:  # noqa: BLE001 - anything at all: the session must go on
            result["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            budget_known.set()

    budget_known = threading.Event()
    thread = threading.Thread(target=target, name=f"memvault-hook-{event}", daemon=True)
    thread.start()
    budget_known.wait(timeout if timeout is not None else BUDGET_COLD)
    budget = result.get("budget", timeout if timeout is not None else BUDGET_COLD)
    thread.join(max(0.0, budget - (time.monotonic() - started)))
    if thread.is_alive():
        log_line(event, f"gave up after {time.monotonic() - started:.2f}s (budget {budget}s); printed nothing")
        sys.stdout.flush()
        os._exit(0)  # the worker may be stuck in C code (a model load): end now, print nothing
    if "error" in result:
        log_line(event, f"failed: {result['error']}; printed nothing")
        return
    # What a hook prints goes into an agent's context: no credential, not
    # even one in a path or a link's name (the index's text is redacted already).
    text = redact((result.get("text") or "").strip())[0]
    if text:
        echo(text[:MAX_CHARS])


def _context(store: "MemoryStore", q: "ContextQuery") -> "RecallBlock":
    """The recall block from the daemon (warm); without one, by words alone in-process."""
    from memvault.daemon.client import answer

    return answer(store, q, local=store.answer_by_words)


def session_project(data: dict[str, Any]) -> "Project | None":
    """The session's project: :func:`memvault.store.project.project_at` of the hook's ``cwd``."""
    from memvault.store.project import project_at

    cwd = data.get("cwd")
    return project_at(cwd if isinstance(cwd, str) and cwd else os.getcwd())


def session_scope(store: "MemoryStore", data: dict[str, Any]) -> str | None:
    """The scope of the session's project, or None when ``agents.project_scope`` is off."""
    if not store.settings.agents.project_scope:
        return None
    found = session_project(data)
    return found.scope if found is not None else None


def paused_notice(store: "MemoryStore", project: "Project | None") -> str:
    """One line for the agent when what the session says is not stored now ("" otherwise)."""
    from memvault.store.pause import MemoryPaused

    try:
        store.check_capture(project, "nothing this session says is stored; do not call remember")
    except MemoryPaused as exc:
        return f"memvault: {exc}\n"
    return ""


def session_start_text(store: "MemoryStore", data: dict[str, Any], budget: int | None) -> str:
    """Who the person is, the lessons and decisions of the working
    directory's project, what is relevant to it and what changed lately
    (:mod:`memvault.store.retrieval.session_start`), within ``budget``
    tokens: from the daemon (warm, its tokenizer loaded), else in-process by
    words alone."""
    from memvault.daemon.client import answer
    from memvault.store.queries.recall import SessionStartQuery

    project = session_project(data)
    if project is not None and project.memory_off:  # the project wants no memory at all: none recalled either
        return ""
    q = SessionStartQuery(project=session_scope(store, data), budget=budget)
    return paused_notice(store, project) + str(answer(store, q, local=store.answer_by_words).text)


def prompt_text(store: "MemoryStore", data: dict[str, Any], budget: int | None, what: str) -> str:
    """The ``context`` block for the user's prompt ("" when nothing is relevant):
    the session's project's memories first, then the person's own (``user``)."""
    prompt = data.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return ""
    project = session_project(data)
    if project is not None and project.memory_off:
        return ""
    from memvault.store.queries.recall import ContextQuery

    q = ContextQuery(prompt, budget=budget, what=what, identity="relevant", prefer_scope=session_scope(store, data))
    return _context(store, q).text


def ingest_transcript(store: "MemoryStore", data: dict[str, Any], event: str, client: str) -> str:
    """Hand the session's transcript to conversation ingest; prints nothing.

    Only a transcript in the clients' own folders is read, as the per-turn
    hook and the daemon confine themselves (:mod:`memvault.daemon.turn_paths`):
    hook input names a path, and no other file of the person's is to be
    copied into the vault because some input said so."""
    from memvault.daemon.turn_paths import transcript_refusal
    from memvault.store.pause import MemoryPaused

    path = data.get("transcript_path")
    refused = transcript_refusal(path)
    if refused is not None or not isinstance(path, str):
        log_line(event, f"{refused}; nothing to ingest")
        return ""
    cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else None
    try:
        report = store.ingest(Path(os.path.realpath(path)), session=data.get("session_id"), client=client, cwd=cwd)
    except MemoryPaused as exc:
        log_line(event, f"{path}: {exc}")
        return ""
    log_line(event, f"ingested {path}: {json.dumps(report.as_dict(), default=str)[:500]}")
    return ""


@cli.group()
def hook() -> None:
    """Session hooks for agent clients: JSON on stdin, text on stdout, always exit 0.

    `memvault hook install --client claude-code` adds them to the client's settings.
    """


_client = click.option("--client", default="claude-code", show_default=True,
                       help="Which client runs the hook (recorded with ingested sessions).")
_timeout = click.option("--timeout", type=click.FloatRange(0.05, 600), default=None, metavar="SECONDS",
                        help=f"Time budget (default {BUDGET_WARM}s with a daemon, {BUDGET_COLD}s without).")
_budget = click.option("--budget", type=click.IntRange(50, 4000), default=None, metavar="TOKENS",
                       help="Token budget of the recall block (default: recall.budget).")


@hook.command("session-start")
@_client
@_timeout
@_budget
@pass_app
def hook_session_start(app: AppContext, client: str, timeout: float | None, budget: int | None) -> None:
    """Print identity memories, what changed lately and what is relevant to the project."""
    run_hook(app, "session-start", lambda s, d: session_start_text(s, d, budget), timeout)


@hook.command("prompt")
@_client
@_timeout
@_budget
@click.option("--what", type=click.Choice(["auto", "memories", "all"]), default="auto", show_default=True,
              help="auto: memories, facts and conversation turns, a note when it beats them; "
                   "memories: memories and facts; all: note passages too.")
@pass_app
def hook_prompt(app: AppContext, client: str, timeout: float | None, budget: int | None, what: str) -> None:
    """Print the recall block for the user's prompt (nothing when nothing is relevant)."""
    run_hook(app, "prompt", lambda s, d: prompt_text(s, d, budget, what), timeout)


def _ingest_hook(event: str, doc: str) -> None:
    """Define ``memvault hook <event>``: the transcript to conversation ingest."""

    @hook.command(event, help=doc)
    @_client
    @_timeout
    @pass_app
    def command(app: AppContext, client: str, timeout: float | None) -> None:
        run_hook(app, event, lambda s, d: ingest_transcript(s, d, event, client), timeout, ingest=True)


_ingest_hook("session-end", "Hand the finished session's transcript to conversation ingest.")
_ingest_hook("pre-compact", "Hand the transcript to conversation ingest before the client compacts it.")


@hook.command("turn")
@_client
def hook_turn(client: str) -> None:
    """After each answer: ask the daemon to ingest the new turns in the background.

    Installed as `python -m memvault.cli.turn_hook`, which starts faster than
    this command; without a daemon it only logs that the turns wait for the session end.
    """
    from memvault.cli.turn_hook import announce, log_line, read_stdin

    vault = click.get_current_context().find_root().params.get("vault")
    try:
        message = announce(read_stdin(), vault, client)
    except Exception as exc:  # noqa: BLE001 - a hook never breaks the session
        message = f"failed: {type(exc).__name__}: {exc}; nothing queued"
    if message:
        log_line(message)


_hook_client = click.option("--client", type=click.Choice(["claude-code", "codex"]), required=True,
                            help="The client whose settings get the hooks.")
_scope = click.option("--scope", type=click.Choice(["user", "project"]), default="user", show_default=True,
                      help="Settings for all your projects, or the project in the working directory.")


@hook.command("install")
@_hook_client
@_scope
@click.option("--only", metavar="HOOKS", help="Install only these, comma-separated (session-start, prompt, "
                                              "pre-compact, session-end, turn); memvault's others are taken out.")
@json_option
@pass_app
def hook_install(app: AppContext, client: str, scope: str, only: str | None, as_json: bool) -> None:
    """Merge memvault's hooks into the client's settings (other hooks and keys stay; a backup first)."""
    from memvault.cli.clients.client_config import hook_names, install_codex_hooks, install_hooks

    names = hook_names(only) if only is not None else None  # checked before the vault is opened
    if client == "codex":  # and the feature flag Codex runs no hook without
        hooks, flag = install_codex_hooks(scope, app.store.root, only=names)
        for change, what in ((hooks, "memvault hooks"), (flag, "Codex's hooks feature flag")):
            emit_json(change.as_dict()) if as_json else echo(change.describe(what))
        return
    change = install_hooks(client, scope, app.store.root, only=names)
    emit_json(change.as_dict()) if as_json else echo(change.describe("memvault hooks"))


@hook.command("uninstall")
@_hook_client
@_scope
@json_option
def hook_uninstall(client: str, scope: str, as_json: bool) -> None:
    """Remove memvault's hooks (only those) from the client's settings."""
    from memvault.cli.clients.client_config import uninstall_hooks

    change = uninstall_hooks(client, scope)
    emit_json(change.as_dict()) if as_json else echo(change.describe("memvault hooks"))
