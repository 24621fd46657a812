"""``memvault ingest``: one conversation transcript becomes (or grows) a session note.

The entry point of the agents' ``session-end``/``pre-compact`` hooks too
(the store's ``ingest`` with the hook's ``transcript_path`` and
``session_id``). The transcript is read (:mod:`.transcript`), redacted,
written as a session note (:mod:`.sessions`: append-only, idempotent) and
indexed before this returns, so its turns are searchable and its facts
(:mod:`memvault.store.facts.conversation`) are in ``context`` at once.

Ingests of one vault take turns (an ``flock`` on ``ingest.lock`` in its
data dir): the daemon's per-turn ingest (:mod:`memvault.daemon.turn_ingest`)
and a session-end hook may read the same transcript at once, and two writers
planning from the same note would both append its new turns.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from memvault.store.context import StoreContext
from memvault.store.facts.rows import ACTIVE, facts_of
from memvault.store.flows.sessions import SessionPlan, SessionWriter, Sync, SyncPaths
from memvault.store.flows.text_check import check_chunks, check_opener
from memvault.store.flows.transcript import TranscriptError, read_transcript
from memvault.store.project import Project
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.locks import flock_within


@dataclass
class IngestReport:
    """What one ingest did."""

    plan: SessionPlan
    facts: int = 0  # live facts of the session note after the ingest
    warnings: list[str] = field(default_factory=list)

    @property
    def action(self) -> str:
        """imported | updated | skipped."""
        return self.plan.action

    @property
    def path(self) -> str | None:
        """The session note's vault path."""
        return self.plan.path

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {**self.plan.as_dict(), "facts": self.facts, "warnings": list(self.warnings)}


def ingest(
    ctx: StoreContext,
    source: str | Path | IO[str] | IO[bytes],
    *,
    sync: Sync,
    sync_paths: SyncPaths,
    session: str | None = None,
    title: str | None = None,
    client: str | None = None,
    project: Project | None = None,
    llm_digest: bool = True,
) -> IngestReport:
    """Write the conversation of ``source`` (a transcript path or stream) as
    its session note, appending what is new; index it (``sync``: the whole
    vault first when it was never indexed; ``sync_paths``: the note written).

    ``project``: the session's (:mod:`memvault.store.project`; None: the
    project of the folder the transcript says it worked in, if it says).
    Nothing is written while memory is paused for it or off in it
    (:class:`~memvault.store.pause.MemoryPaused`), and turns said while a
    pause held are left out for good (:mod:`memvault.store.pause`).
    ``llm_digest``: the configured llm writes the note's digest block
    (:mod:`.digest`; False: the rules do, as for a daemon's per-turn ingest)."""
    from memvault.store.pause import check_capture, outside_pauses
    from memvault.store.project import project_at

    check_capture(ctx.con, project, "nothing was ingested")  # before the transcript is even read
    source = _checked(source)
    conv, warnings = read_transcript(source, session=session, title=title, client=client)
    if not conv.turns:
        # an empty file, or JSON lines that hold no conversation: one line, never a silent "unchanged"
        ref = str(source) if isinstance(source, (str, Path)) else getattr(source, "name", "<stdin>")
        raise TranscriptError(f"{ref}: no conversation turns in it (expected {EXPECTED})")
    if project is None and conv.cwd:
        project = project_at(conv.cwd)
        check_capture(ctx.con, project, "nothing was ingested")
    conv.turns, paused = outside_pauses(ctx.con, project.scope if project is not None else None, conv.turns)
    if paused:
        warnings.append(f"{paused} turn{'s' if paused != 1 else ''} said while memory was paused "
                        f"{'were' if paused != 1 else 'was'} left out")
    with one_ingest_at_a_time(ctx.data_dir):
        if not ctx.has_index():
            sync()  # a first index of the vault, so search finds more than this session
        writer = SessionWriter(ctx, sync, sync_paths, llm_digest=llm_digest)
        plan = writer.plan(conv)
        report = IngestReport(plan, warnings=warnings)
        if plan.digest_warning:
            report.warnings.append(plan.digest_warning)
        written = writer.write([plan])
        if written is not None:
            report.warnings += list(written.summary.warnings)
        report.facts = len(facts_of(ctx.con, [plan.note_id], [ACTIVE]))
    return report


#: The lock file of a vault's ingests, in its data dir.
LOCK_FILE = "ingest.lock"
#: Seconds an ingest waits for another one of the same vault (one takes well under a second).
LOCK_WAIT = 20.0


class IngestBusyError(MemvaultError):
    """Another ingest of this vault held its lock for longer than :data:`LOCK_WAIT`."""


@contextlib.contextmanager
def one_ingest_at_a_time(data_dir: Path) -> Iterator[None]:
    """Hold the ingest lock of the vault whose data dir is ``data_dir``
    (module docstring); the kernel drops it
    if the holder dies, so a killed hook never blocks the next ingest."""
    from memvault.store.location import ensure_private_dir

    fd = os.open(ensure_private_dir(data_dir) / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        if not flock_within(fd, LOCK_WAIT):
            raise IngestBusyError(f"another ingest of this vault has run for over {LOCK_WAIT:.0f}s; try again")
        yield
    finally:
        os.close(fd)


#: What a transcript is, as said when a file is refused.
EXPECTED = 'a Claude Code transcript or JSONL of {"role", "content"} lines'


def _checked(source: str | Path | IO[str] | IO[bytes]) -> str | Path | IO[str] | IO[bytes]:
    """``source`` once it is known to be UTF-8 text: a binary or Latin-1 file is
    refused in one line before anything is read into a note (as mojibake)."""
    if isinstance(source, (str, Path)):
        path = Path(source).expanduser()
        if path.is_file():  # a missing file is the transcript reader's usage error
            check_opener(lambda: path.open("rb"), str(path), EXPECTED)
        return source
    raw = source.read()
    if isinstance(raw, str):
        return io.StringIO(raw)
    name = getattr(source, "name", "<stdin>")
    check_chunks([raw], str(name), EXPECTED)
    stream = io.BytesIO(raw)
    stream.name = name  # the reader names the stream in its messages
    return stream
