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

import re

#: Most characters of an argument an error message repeats back.
ECHO_LIMIT = 80
#: A message up to this long is left whole (quotes far apart there are prose, not an echo).
MESSAGE_LIMIT = 240
#: A quoted argument in a message (as ``{value!r}`` writes it; an unrolled loop, linear on megabytes).
_QUOTED_RE = re.compile(r"'([^'\\\n]*(?:\\.[^'\\\n]*)*)'|\"([^\"\\\n]*(?:\\.[^\"\\\n]*)*)\"")
#: An unquoted run without blanks far longer than any word.
_LONG_RUN_RE = re.compile(r"\S{%d,}" % (2 * ECHO_LIMIT + 1))


def shorten(value: str, limit: int = ECHO_LIMIT) -> str:
    """``value`` cut to ``limit`` characters and an ellipsis, for a message."""
    return value if len(value) <= limit else value[:limit] + "…"


def cap_echoes(message: str) -> str:
    """``message`` with every argument it repeats back cut short: a 1.4 MB
    id given by mistake must not come back whole in the error about it."""
    if len(message) <= MESSAGE_LIMIT:
        return message

    def quoted(m: re.Match[str]) -> str:
        q, inner = ("'", m.group(1)) if m.group(1) is not None else ('"', m.group(2))
        return q + shorten(inner) + q

    message = _QUOTED_RE.sub(quoted, message)
    return _LONG_RUN_RE.sub(lambda m: shorten(m.group(0), 2 * ECHO_LIMIT), message)


class MemvaultError(Exception):
    """A failure memvault reports as one line (exit code 1)."""

    exit_code: int = 1


class UsageError(MemvaultError):
    """A problem with what the caller asked for (exit code 2)."""

    exit_code = 2
