"""memvault's one exception hierarchy.

Every error memvault raises on purpose derives from :class:`MemvaultError`,
which carries the exit code a command ends with: 2 for a usage problem (a bad
argument, path, option or config value: :class:`UsageError`), 1 for a runtime
failure (no index yet, an unknown id, a note that cannot be written). The CLI
turns any of them into one line on stderr and that exit code; the daemon's
query socket sends the code along, so an answer computed in the daemon fails
exactly as it would in-process. Anything else that escapes is a bug.

It lives in ``vault_io``, the bottom layer, so that every layer can derive
from it without importing a layer above it.
"""

from __future__ import annotations


class MemvaultError(Exception):
    """A failure memvault reports as one line (exit code 1)."""

    exit_code: int = 1


class UsageError(MemvaultError):
    """A problem with what the caller asked for (exit code 2)."""

    exit_code = 2
