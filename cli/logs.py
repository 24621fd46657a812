"""Logging for every memvault process, set up in one place: :func:`setup_logging`.

Roles (one per kind of process; a later call replaces an earlier one's set-up):

- ``cli``: memvault's warnings and errors on stderr, the message alone
  (as Python prints them with no set-up), control characters escaped, for
  ``memvault`` commands;
- ``daemon``: memvault's messages on stderr, INFO (DEBUG with ``-v``):
  with journald's priority prefix under systemd (it stamps the time),
  timestamped otherwise; watchdog's per-event debug output kept quiet;
- ``mcp``: warnings and up on stderr, prefixed ``memvault mcp:``, the SDK's
  too (the root logger, as ``logging.basicConfig`` would): stdout carries
  the protocol alone;
- ``hook``: the hooks' own lines (:func:`hook_log`, logger ``memvault.hooks``)
  go to ``hooks.log`` in memvault's data dir, one line per event
  (``<UTC time> <event> pid <pid>: <message>``), never to the client.

``hooks.log`` keeps its own small writer, :func:`memvault.cli.turn_hook.log_line`
(the ``hook`` role's handler calls it), rather than the standard library's
``RotatingFileHandler``, for two reasons:

- the per-turn hook runs as ``python -I -m memvault.cli.turn_hook`` after
  every answer of an agent and writes a line on each turn when no daemon
  runs; ``logging.handlers`` would import ``socket``, ``pickle`` and ``queue``
  (about 13 ms on the development machine), which
  tests/test_turn_hook.py keeps out of it;
- several processes write that one file (each hook of each agent session is
  a process of its own), which the standard handler does not support (the
  logging cookbook says so): it holds the file open and decides to rotate
  on its own stream's size. The writer opens, appends one line (one write,
  so lines of two processes do not mix) and closes, and rotates past
  :data:`~memvault.cli.turn_hook.LOG_MAX_BYTES` by one rename to
  ``hooks.log.1`` (two hooks rotating at the same moment can leave the
  shorter log there: a log of hook outcomes can afford it).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

#: The logger of the hooks' own lines (never propagated: they belong in hooks.log alone).
HOOK_LOGGER = "memvault.hooks"

# Priority prefixes journald understands on a service's stderr (sd-daemon(3)).
_JOURNAL_PRIORITY = {logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3, logging.CRITICAL: 2}


class _Redacted(logging.Formatter):
    """A record with its credentials redacted: a message may quote a note's
    name, a title or an argument, and a log (the journal, hooks.log) is kept."""

    def format(self, record: logging.LogRecord) -> str:
        from memvault.vault_io.secrets import redact

        return redact(super().format(record))[0]


class _JournalFormatter(_Redacted):
    """``<N>message``: journald stores the level, and adds its own timestamp."""

    def format(self, record: logging.LogRecord) -> str:
        prio = _JOURNAL_PRIORITY.get(record.levelno, 6)
        return "\n".join(f"<{prio}>{line}" for line in super().format(record).splitlines())


class _Stderr(logging.StreamHandler):
    """A handler on whatever ``sys.stderr`` is when a record comes (as
    logging's last resort is), so a replaced stderr is followed."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


class _Printable(_Redacted):
    """The message alone, its control characters escaped (a warning may name
    a note, and a note's name may hold an escape sequence):
    :func:`memvault.cli.main.printable`, the CLI's one helper."""

    def format(self, record: logging.LogRecord) -> str:
        from memvault.cli.main import printable

        return printable(super().format(record))


class _HookLine(logging.Handler):
    """A record as one line of ``hooks.log``, by its one writer (module docstring)."""

    def emit(self, record: logging.LogRecord) -> None:
        from memvault.cli.turn_hook import log_line
        from memvault.vault_io.secrets import redact

        try:
            log_line(redact(record.getMessage())[0], getattr(record, "event", "hook"))
        except Exception:  # noqa: BLE001 - logging must not break a hook
            pass


def _replace_handlers(logger: logging.Logger, handlers: list[logging.Handler]) -> None:
    for old in logger.handlers:
        if old not in handlers:
            old.close()
    logger.handlers[:] = handlers


def setup_logging(role: str, *, verbose: bool = False) -> None:
    """Set up logging for a ``cli``, ``daemon``, ``mcp`` or ``hook`` process (module docstring)."""
    memvault = logging.getLogger("memvault")
    if role == "cli":
        handler: logging.Handler = _Stderr()
        handler.setFormatter(_Printable("%(message)s"))
        handler.setLevel(logging.WARNING)
        _replace_handlers(memvault, [handler])
        memvault.setLevel(logging.NOTSET)
        memvault.propagate = True
    elif role == "daemon":
        handler = logging.StreamHandler(sys.stderr)
        if os.environ.get("JOURNAL_STREAM"):
            handler.setFormatter(_JournalFormatter("%(message)s"))
        else:
            handler.setFormatter(_Redacted("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S"))
        _replace_handlers(memvault, [handler])
        memvault.setLevel(logging.DEBUG if verbose else logging.INFO)
        memvault.propagate = False
        logging.getLogger("watchdog").setLevel(logging.WARNING)  # its debug output is per raw event
        # watchdog warns when it re-adds a watch it already had (a folder seen both
        # by event and by walking it): harmless, and noise in the journal.
        warnings.filterwarnings("ignore", message="Callback with id", category=RuntimeWarning)
    elif role == "mcp":
        _replace_handlers(memvault, [])  # memvault's records go up to the root's handler
        memvault.setLevel(logging.NOTSET)
        memvault.propagate = True
        root = logging.getLogger()
        if not root.handlers:  # as logging.basicConfig: a set-up already there (a test's) stays
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(_Redacted("memvault mcp: %(levelname)s %(name)s: %(message)s"))
            root.addHandler(handler)
            root.setLevel(logging.WARNING)
    elif role == "hook":
        hooks = logging.getLogger(HOOK_LOGGER)
        _replace_handlers(hooks, [_HookLine()])
        hooks.setLevel(logging.INFO)
        hooks.propagate = False
    else:
        raise ValueError(f"unknown logging role {role!r}")


def hook_log(message: str, event: str) -> None:
    """One line in ``hooks.log`` for hook ``event`` (the ``hook`` role set up
    on first use); never raises."""
    hooks = logging.getLogger(HOOK_LOGGER)
    if not any(isinstance(h, _HookLine) for h in hooks.handlers):
        setup_logging("hook")
    hooks.info(message, extra={"event": event})
