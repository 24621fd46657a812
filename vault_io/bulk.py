"""Reading, hashing, parsing and link-resolving many notes, on every core.

Parsing is most of the CPU time of a first index, and notes parse
independently, so a large reconcile hands them to a pool of worker
processes (one per core). Each worker also resolves the note's links, which
only needs the set of vault paths, given to it once at start, and makes
whatever else the caller derives from a note's text alone (``derive``: the
index's trace row, redacted), so that too runs on every core. Small
reconciles (the daemon's usual batch of a few files) run the same function
in-process: starting workers would cost more than it saves.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from pathlib import Path

from memvault.vault_io.confine import OutsideVaultError, read_inside
from memvault.vault_io.note import NoteReadError, ParsedNote, content_hash
from memvault.vault_io.parser import parse_note
from memvault.vault_io.resolve import LinkResolver, Resolution, link_key

#: Fewer notes than this are read in-process.
POOL_MIN = 400
#: Notes per task sent to a worker: amortises the round trip, keeps results flowing.
CHUNK = 64

#: What a caller makes of a parsed note besides resolving its links (see the
#: module docstring); a module-level function or a partial of one, so that a
#: forkserver's workers can be handed it.
#: It is given the note, its links' resolutions and their keys.
Derive = Callable[[ParsedNote, tuple[Resolution, ...], tuple[str, ...]], object]


@dataclass(frozen=True)
class ReadResult:
    """One note file as read: unchanged, parsed (with resolved links), or unreadable."""

    path: str
    digest: str | None = None
    note: ParsedNote | None = None  # None: unchanged (same hash) or unreadable
    resolutions: tuple[Resolution, ...] = ()  # for note.links + note.embeds, in order
    keys: tuple[str, ...] = ()  # their link_key()s, in the same order
    error: str | None = None  # why it could not be read
    derived: object = None  # what ``derive`` made of the note, when given one


def read_note_file(
    root: Path, path: str, known_hash: str | None, resolver: LinkResolver, *, keep_blocks: bool = True,
    derive: Derive | None = None,
) -> ReadResult:
    """Read ``path``; parse and resolve it unless its hash equals ``known_hash``
    (``keep_blocks``: see :func:`~.parser.parse_note`), and ``derive`` from it."""
    try:
        data = read_inside(root, path)  # never a file a symlink swapped in from outside the vault
    except OutsideVaultError as exc:
        return ReadResult(path, error=f"leads outside the vault (to {exc.target})")
    except OSError as exc:
        return ReadResult(path, error=f"cannot read: {exc.strerror}")
    digest = content_hash(data)
    if digest == known_hash:
        return ReadResult(path, digest)
    try:
        note = parse_note(path, data, keep_blocks=keep_blocks)
    except NoteReadError as exc:
        return ReadResult(path, digest, error=str(exc).removeprefix(f"{path}: "))
    links = (*note.links, *note.embeds)
    resolutions = tuple(resolver.resolve(link.target, path) for link in links)
    keys = tuple(link_key(link.target) if link.target else "" for link in links)
    return ReadResult(path, digest, note, resolutions, keys, derived=derive(note, resolutions, keys) if derive is not None else None)


# Worker-process state, set once by the pool initializer.
_ROOT: Path | None = None
_RESOLVER: LinkResolver | None = None
_DERIVE: Derive | None = None


def _init_worker(root: str, paths: list[str], parent: int, derive: Derive | None = None) -> None:
    global _ROOT, _RESOLVER, _DERIVE
    _ROOT = Path(root)
    _RESOLVER = LinkResolver(paths)
    _DERIVE = derive
    threading.Thread(target=_exit_with, args=(parent,), name="memvault-parent-watch", daemon=True).start()


def _exit_with(parent: int) -> None:
    """Exit this worker as soon as ``parent`` (the process that started the pool) ends.

    A worker holds both ends of its task queue, so it never sees end-of-file
    when the parent dies; a parent killed with SIGKILL would leave it (and a
    forkserver, which shares the parent's pipes) running for ever.
    """
    try:
        fd = os.pidfd_open(parent)
    except (AttributeError, OSError):  # no pidfd (old kernel): poll, slowly
        while _alive(parent):
            threading.Event().wait(1.0)
    else:
        select.select([fd], [], [])  # readable once the parent has exited
    os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_chunk(items: list[tuple[str, str | None]]) -> list[ReadResult]:
    assert _ROOT is not None and _RESOLVER is not None
    # Sent to the parent: without the blocks, which would cost more to ship than to scan again.
    return [read_note_file(_ROOT, path, known, _RESOLVER, keep_blocks=False, derive=_DERIVE) for path, known in items]


def read_notes(
    root: Path, items: list[tuple[str, str | None]], paths: Iterable[str], resolver: LinkResolver | None = None,
    derive: Derive | None = None,
) -> Generator[ReadResult, None, None]:
    """Read ``items`` ((path, known hash) pairs) in order, in parallel when many.

    ``paths`` is every path links may resolve to; ``resolver`` may be given
    already built from them for the in-process case; ``derive`` is run on
    each parsed note where it was parsed (:attr:`ReadResult.derived`).
    """
    workers = min(os.cpu_count() or 1, 4)
    if len(items) < POOL_MIN or workers < 2:
        resolver = resolver or LinkResolver(paths)
        for path, known in items:
            yield read_note_file(root, path, known, resolver, derive=derive)
        return
    # Imported here: a single write (``memvault add``) reads a note or two
    # in-process, and the pool's modules cost it some 10 ms to load.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork is cheapest and needs nothing from the caller's main module; but a
    # process with other threads (the daemon's observer and query server)
    # could fork a held lock into the child, so that one uses a forkserver.
    ctx = multiprocessing.get_context("fork" if threading.active_count() == 1 else "forkserver")
    chunks = [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]
    pool = ProcessPoolExecutor(
        workers, mp_context=ctx, initializer=_init_worker, initargs=(str(root), list(paths), os.getpid(), derive)
    )
    try:
        for results in pool.map(_read_chunk, chunks):
            yield from results
    finally:
        # Closed early (a stop request): drop the chunks not started yet.
        pool.shutdown(wait=True, cancel_futures=True)
