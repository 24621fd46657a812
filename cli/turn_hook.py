"""The per-turn hook, fast: hand the transcript to the daemon and exit.

::

    python -I -m memvault.cli.turn_hook --vault ~/Notes --client claude-code   < hook JSON
    memvault hook turn --client claude-code                                    (the same, slower to start)

Claude Code and Codex run it at their ``Stop`` event, after every answer,
so it must cost next to nothing: it reads the hook's JSON, checks the
transcript path (:func:`~memvault.daemon.turn_ingest.transcript_refusal`),
sends the daemon's query socket one ``ingest`` request and exits 0; the
daemon ingests the new turns in the background (:mod:`memvault.daemon.turn_ingest`).
It prints nothing. Without a daemon it only logs that the turns wait for the
session end (or for a turn while a daemon runs: ingest reads the whole
transcript, so nothing is missed). Anything unexpected is one line in
``hooks.log`` and exit 0: a hook never breaks the client.

``memvault hook install`` writes this module's command rather than
``memvault hook turn``: the ``memvault`` command imports Click and the
store (about 100 ms). This path imports ``json``, ``_socket`` (not
``socket``, whose enums cost milliseconds; nor :mod:`memvault.daemon.client`,
which imports ``typing`` and ``hashlib``: it speaks the same protocol in
:func:`request`), :mod:`memvault.daemon.turn_paths` and
:mod:`memvault.store.location`. Measured in ``bench/bench_turn_hook.py``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

# No ``typing`` import (3 ms at start-up): ``object`` where ``Any`` would do.

EVENT = "turn"
LOG_NAME = "hooks.log"
LOG_MAX_BYTES = 1 << 20
#: Seconds to reach the daemon and hear it queued the request (it answers
#: without doing the work; these only guard against a wedged daemon).
CONNECT_TIMEOUT = 0.05
REPLY_TIMEOUT = 0.5
#: The query socket's file name and protocol version (:mod:`memvault.daemon.client`'s; a test keeps them equal).
SOCKET_NAME = "query.sock"
PROTOCOL = 3
#: Longest reply read (an ingest reply is a line of a hundred bytes).
MAX_REPLY = 64 * 1024
#: ``sun_path`` holds 108 bytes; a longer socket path is reached through /proc (as the client does).
_MAX_SUN_PATH = 100


#: Control characters as a log line shows them (``\x1b``): a session title may hold an escape sequence.
_ESCAPED = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}


def log_line(message: str, event: str = EVENT) -> None:
    """One line in ``hooks.log`` in memvault's data dir, for this hook or
    (``event``) any other: the one writer of that log, here because this
    module stays light (never raises: logging must not break a hook either)."""
    from memvault.store.location import ensure_data_home

    try:
        path = ensure_data_home() / LOG_NAME
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            path.replace(path.with_name(LOG_NAME + ".1"))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())  # as isoformat() writes UTC
        line = f"{stamp} {event} pid {os.getpid()}: {' '.join(message.split()).translate(_ESCAPED)}\n"
        # Owner-only: the log names projects and session titles. One an older
        # memvault made readable to all is memvault's own file to tighten.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            if os.fstat(fd).st_mode & 0o077:
                os.fchmod(fd, 0o600)
            os.write(fd, line.encode("utf-8", "replace"))  # one write: two processes' lines do not mix
        finally:
            os.close(fd)
    except OSError:
        pass


def read_stdin() -> dict[str, object]:
    """The hook's JSON object on stdin ({} when there is none or it is not an object)."""
    stdin = sys.stdin
    if stdin is None or stdin.isatty():
        return {}
    try:
        data = json.loads(stdin.read() or "{}")
    except (ValueError, OSError, UnicodeDecodeError, RecursionError):  # RecursionError: nested too deeply
        return {}
    return data if isinstance(data, dict) else {}


def _vault(given: str | None) -> Path:
    """The vault: ``--vault``, else ``$MEMVAULT_VAULT``, else config.toml's
    (the slow way, never taken by an installed hook: it names its vault)."""
    if given or os.environ.get("MEMVAULT_VAULT"):
        return Path(given or os.environ["MEMVAULT_VAULT"]).expanduser()
    from memvault.store.memory_store import MemoryStore

    store = MemoryStore.open(None)
    try:
        return store.root
    finally:
        store.close()


def announce(data: dict[str, object], vault: str | None, client: str) -> str:
    """Hand the turn's transcript to the vault's daemon; what to log ("" when queued)."""
    from memvault.daemon.turn_paths import transcript_refusal

    path = data.get("transcript_path")
    refusal = transcript_refusal(path)
    if refusal is not None:
        return f"{refusal}; not ingested"
    from memvault.store.location import vault_data_dir

    session = data.get("session_id") if isinstance(data.get("session_id"), str) else None
    args = {"path": path, "session": session, "client": client}
    if isinstance(data.get("cwd"), str):  # the session's project: its pause or `memory: off` holds
        args["cwd"] = data["cwd"]
    reply = request(vault_data_dir(_vault(vault)) / SOCKET_NAME, {"v": PROTOCOL, "op": "ingest", "args": args})
    if reply is not None and reply.get("ok") is True:
        return ""
    later = "its turns will be ingested at session end (or at a later turn while a daemon runs)"
    if reply is None:
        return f"no daemon took {path}: {later}"
    error = reply.get("error")
    if isinstance(error, dict):  # refused: its own check of the path, a full queue
        return f"the daemon did not queue {path}: {error.get('message')}; {later}"
    return f"the daemon did not understand the request ({reply.get('message')}; an older daemon?): {later}"


def request(sock_path: Path, message: dict[str, object]) -> dict[str, object] | None:
    """The daemon's reply to one request line, or None (no socket, nobody
    listening, no answer in time, not JSON)."""
    if not sock_path.exists():
        return None
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    folder = None
    try:
        address = str(sock_path)
        if len(address.encode()) > _MAX_SUN_PATH:
            folder = os.open(sock_path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            address = f"/proc/self/fd/{folder}/{sock_path.name}"
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(address)
        sock.settimeout(REPLY_TIMEOUT)
        sock.sendall(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
        data = b""
        while b"\n" not in data and len(data) < MAX_REPLY:
            chunk = sock.recv(MAX_REPLY)
            if not chunk:
                break
            data += chunk
        reply = json.loads(data.partition(b"\n")[0])
    except (OSError, ValueError):
        return None
    finally:
        sock.close()
        if folder is not None:
            os.close(folder)
    return reply if isinstance(reply, dict) else None


def _options(argv: list[str]) -> tuple[str | None, str]:
    """(``--vault``, ``--client``) from the arguments; unknown ones are ignored."""
    vault, client = None, "claude-code"
    it = iter(argv)
    for arg in it:
        name, eq, value = arg.partition("=")
        if name in ("--vault", "--client"):
            value = value if eq else next(it, "")
            if name == "--vault":
                vault = value or None
            else:
                client = value or client
    return vault, client


def main(argv: list[str] | None = None) -> None:
    """The hook process: never raises, prints nothing, exits 0."""
    try:
        vault, client = _options(sys.argv[1:] if argv is None else argv)
        message = announce(read_stdin(), vault, client)
    except BaseException as exc:  # noqa: BLE001 - anything at all: the session must go on
        message = f"failed: {type(exc).__name__}: {exc}; nothing queued"
    if message:
        log_line(message)


if __name__ == "__main__":
    main()
    sys.exit(0)
