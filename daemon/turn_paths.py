"""Which transcripts the per-turn hook may hand the daemon: the clients' own folders.

Imported by the hook process (:mod:`memvault.cli.turn_hook`, which must start
in a few milliseconds: ``os`` only) and by the daemon's
:class:`~memvault.daemon.turn_ingest.TurnIngester`, which checks again: a
request on the socket cannot make the daemon copy an arbitrary file of the
person's into the vault.
"""

from __future__ import annotations

import os

#: Extra folders whose transcripts may be ingested per turn (``os.pathsep``-separated).
TRANSCRIPT_DIRS_ENV = "MEMVAULT_TRANSCRIPT_DIRS"


def transcript_dirs() -> list[str]:
    """Where the clients keep transcripts, plus :data:`TRANSCRIPT_DIRS_ENV`.

    Claude Code: ``$CLAUDE_CONFIG_DIR`` (else ``~/.claude``) ``/projects``;
    Codex: ``$CODEX_HOME`` (else ``~/.codex``) ``/sessions`` and ``/archived_sessions``.
    """
    claude = os.path.expanduser(os.environ.get("CLAUDE_CONFIG_DIR") or "~/.claude")
    codex = os.path.expanduser(os.environ.get("CODEX_HOME") or "~/.codex")
    extra = [os.path.expanduser(p) for p in os.environ.get(TRANSCRIPT_DIRS_ENV, "").split(os.pathsep) if p.strip()]
    return [os.path.join(claude, "projects"), os.path.join(codex, "sessions"),
            os.path.join(codex, "archived_sessions"), *extra]


def transcript_refusal(path: object) -> str | None:
    """Why ``path`` is not ingested per turn, or None when it may be: an
    absolute path to a readable ``.jsonl`` file inside :func:`transcript_dirs`
    (symlinks resolved, so a link cannot lead out)."""
    if not isinstance(path, str) or not path:
        return "no transcript_path in the hook input"
    if not os.path.isabs(path):
        return f"transcript path {path!r} is not absolute"
    real = os.path.realpath(path)
    if not real.endswith(".jsonl"):
        return f"transcript {path} is not a .jsonl file"
    bases = [os.path.realpath(d) for d in transcript_dirs()]
    if not any(real.startswith(base.rstrip(os.sep) + os.sep) for base in bases):
        return f"transcript {path} is outside the transcript folders ({', '.join(bases)}; more in ${TRANSCRIPT_DIRS_ENV})"
    if not os.path.isfile(real) or not os.access(real, os.R_OK):
        return f"transcript {path} is not a readable file"
    return None
