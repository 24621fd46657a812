"""The two guards of store-side memory writes: the version an update is based on, and secrets.

An update may say which version of the memory it was based on (what an
agent, or a script, read earlier). :func:`check_version` refuses it with
:class:`VersionConflict` when the memory has moved on since, carrying the
memory as it is now, so the change can be redone on top of it instead of
superseding an edit (usually a person's, in Obsidian) nobody saw. The
caller imports pending vault edits first, so such an edit counts.

Content is at most :data:`MAX_CONTENT_BYTES` (:func:`check_size`).

Secrets found in the content of an add or update are replaced by
``[redacted]`` (:func:`~memvault.vault_io.secrets.redact`) before anything is
stored; :func:`redaction_warnings` is the one line that says so.
"""

from __future__ import annotations

import apsw

from memvault.store.db import records as rec
from memvault.store.memories import rows as mem
from memvault.vault_io.errors import MemvaultError, UsageError

#: Largest memory content, in bytes of UTF-8: a memory is one claim, an
#: episode or a procedure, not a document (a 1.4 MB memory once made every
#: search for its words take minutes). A longer text belongs in a note,
#: where it can be a memory source.
MAX_CONTENT_BYTES = 64 * 1024


class ContentTooLarge(UsageError):
    """Memory content over :data:`MAX_CONTENT_BYTES` (a usage error: exit 2)."""


def check_size(content: str) -> None:
    """Raise :class:`ContentTooLarge` when ``content`` is over the limit."""
    size = len(content.encode("utf-8", "surrogatepass"))
    if size > MAX_CONTENT_BYTES:
        raise ContentTooLarge(
            f"memory content is {size:,} bytes; the limit is {MAX_CONTENT_BYTES // 1024} KiB "
            "(keep a longer text as a note, or mark it a memory source)"
        )


class VersionConflict(MemvaultError):
    """An update based on a version older than the memory's current one
    (someone, usually a person in Obsidian, changed it since it was read).
    ``current`` holds the memory as it is now, so the change can be redone
    on top of it."""

    def __init__(self, trace: rec.TraceRow, version: int, expected: int, reason: str | None) -> None:
        why = f" ({reason})" if reason else ""
        super().__init__(
            f"memory {trace.id} is at version {version}, not {expected}: it changed since you read it{why}; "
            "redo the change on its current text"
        )
        self.current = {
            "id": trace.id, "version": version, "type": trace.type, "tags": list(trace.tags),
            "scope": trace.scope, "updated": trace.updated, "content": trace.content,
        }


def check_version(con: apsw.Connection, trace: rec.TraceRow, expected: int | None) -> int:
    """The memory's current version; raises :class:`VersionConflict` when
    ``expected`` is given and is not it."""
    version = mem.current_version(con, trace.id)
    if expected is not None and expected != version:
        raise VersionConflict(trace, version, expected, mem.last_version_reason(con, trace.id))
    return version


def redaction_warnings(n: int) -> list[str]:
    """The one line that says a memory's content had ``n`` secrets taken out (none for 0)."""
    if not n:
        return []
    return [f"{n} secret{'s' if n != 1 else ''} in the content {'were' if n != 1 else 'was'} stored as "
            "[redacted] (memvault never indexes, embeds or writes credentials)"]
