"""A store-side write killed between two of its steps, then finished by the next run.

Each test stops the writer at one point (a step raises :class:`Killed`, a
``BaseException`` that unwinds nothing the writer would catch, as SIGKILL
would leave things) and then runs what comes next in real use: ``sync``
(which reconciles the vault first, then flushes the outbox) or the next
command on the same memory. After it: one note per live memory, the change
recorded as asked (a forget's own reason, where its note went), no conflict
or version that no one made. tests/test_faults.py finds these points by
killing real processes at random; here each one is hit on purpose.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from helpers import write

from memvault.store.db import records as rec
from memvault.store.memories import rows as mem
from memvault.store.memories import writer
from memvault.store.memory_store import MemoryStore
from memvault.vault_io import atomic


class Killed(BaseException):
    """The writer dies here."""


@pytest.fixture
def store(vault: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryStore]:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")  # text only: no model to load
    write(vault, "Other.md", "An ordinary note.\n")
    v = MemoryStore.open(str(vault))
    v.sync()
    yield v
    v.close()


@pytest.fixture
def patch() -> Iterator[pytest.MonkeyPatch]:
    """A monkeypatch of the test's own: undoing it (the writer "restarts")
    leaves the shared one's MEMVAULT_HOME and model settings in place."""
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def notes_of(root: Path, memory_id: str) -> list[str]:
    """Visible notes whose front-matter carries ``id: memory_id``."""
    found = []
    for p in root.rglob("*.md"):
        rel = p.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if f"\nid: {memory_id}\n" in "\n" + p.read_text(encoding="utf-8").split("\n---\n", 1)[0] + "\n":
            found.append(rel.as_posix())
    return sorted(found)


def live_memories(v: MemoryStore) -> list[str]:
    return [i for (i,) in v.con.execute("SELECT id FROM traces WHERE kind = 'memory' AND status = 'active'")]


def dies_after(patch: pytest.MonkeyPatch, target: Any, name: str, when: Callable[..., bool] = lambda *a: True) -> None:
    """Make ``target.name`` do its work, then kill the writer (once, when ``when(*args)``)."""
    real = getattr(target, name)
    fired = []

    def step(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        if not fired and when(*args):
            fired.append(True)
            raise Killed
        return result

    patch.setattr(target, name, step)


def kill_a_move_halfway(v: MemoryStore, patch: pytest.MonkeyPatch, memory_id: str) -> None:
    """Change a memory's type and die after its new note is written, before
    the old one is removed (the patches undone, as a new process would be)."""
    # The new note is a new file: written by atomic_create (never over a file made there meanwhile).
    dies_after(patch, atomic, "atomic_create", lambda path, *_: "/procedural/" in path.as_posix())
    with pytest.raises(Killed):
        v.update(memory_id, type_="procedural")
    patch.undo()


def settled(v: MemoryStore) -> None:
    """The next ``sync`` finishes everything and leaves nothing pending."""
    report = v.sync(stale_after=0)
    assert report.unwritten == [], report.unwritten
    assert v.con.execute("SELECT count(*) FROM state.outbox").fetchone()[0] == 0


# -- a move (type change) killed between writing the new note and removing the old --------


@pytest.mark.parametrize("finish", ["sync", "next command", "sync after a reconcile that indexed both"])
def test_a_type_change_killed_halfway_ends_with_one_note(store: MemoryStore, patch: pytest.MonkeyPatch,
                                                         finish: str) -> None:
    v = store
    r = v.add("Keeps the spare keys in the blue drawer.")
    old = r.path
    assert old is not None
    kill_a_move_halfway(v, patch, r.id)
    both = notes_of(v.root, r.id)
    assert len(both) == 2 and old in both  # the kill point: new note written, old one still there
    new = next(p for p in both if p != old)
    if finish == "sync after a reconcile that indexed both":
        # An index that took the new note for a memory of its own (the old
        # note still held its id): hide the entry from one reconcile.
        entry = v.con.execute("SELECT expected_hash FROM state.outbox WHERE trace_id = ?", (r.id,)).fetchone()[0]
        v.con.execute("UPDATE state.outbox SET expected_hash = 'x' WHERE trace_id = ?", (r.id,))
        v.reconciler.sync()
        phantom = rec.get_file(v.con, new)
        assert phantom is not None and phantom.trace_id != r.id
        v.con.execute("UPDATE state.outbox SET expected_hash = ? WHERE trace_id = ?", (entry, r.id))
    if finish == "next command":
        v.update(r.id, tags=["home"])
    else:
        settled(v)
    assert notes_of(v.root, r.id) == [new] and new.startswith("Memory/procedural/")
    assert live_memories(v) == [r.id]  # no second memory made of the new note
    t = rec.get_trace(v.con, r.id)
    assert t is not None and t.type == "procedural" and t.path == new
    assert not mem.conflicts(v.con)
    # one version per change made (the tags update makes its own), none of the retry
    kept = [x.type for x in mem.versions(v.con, r.id)]
    assert kept == (["procedural", "semantic"] if finish == "next command" else ["semantic"])


def test_a_move_whose_old_note_was_edited_after_the_kill_keeps_both_as_a_conflict(
    store: MemoryStore, patch: pytest.MonkeyPatch
) -> None:
    v = store
    r = v.add("Waters the ferns on Sundays.")
    old = r.path
    assert old is not None
    kill_a_move_halfway(v, patch, r.id)
    text = (v.root / old).read_text(encoding="utf-8")
    (v.root / old).write_text(text.replace("Sundays", "Saturdays"), encoding="utf-8")
    v.memories.flush(r.id)  # the next command on it, before any sync
    # The person's edit stays in its note; the store's version beside it as a
    # conflict copy (never a second live note of the memory).
    assert notes_of(v.root, r.id) == [old]
    assert "Saturdays" in (v.root / old).read_text(encoding="utf-8")
    assert [c.path for c in mem.conflicts(v.con)] == [old]


def test_an_update_in_place_killed_before_its_outbox_is_cleared_is_no_conflict(
    store: MemoryStore, patch: pytest.MonkeyPatch
) -> None:
    v = store
    r = v.add("Takes the 8:10 train.")
    dies_after(patch, mem, "clear_outbox")
    with pytest.raises(Killed):
        v.update(r.id, content="Takes the 7:40 train.")
    patch.undo()
    v.memories.flush(r.id)  # its own note, not a person's edit
    assert not mem.conflicts(v.con)
    assert notes_of(v.root, r.id) == [r.path]
    assert "7:40" in (v.root / str(r.path)).read_text(encoding="utf-8")
    settled(v)
    assert not mem.conflicts(v.con)


def test_a_write_that_moved_to_a_free_name_is_recognised_on_retry(
    store: MemoryStore, patch: pytest.MonkeyPatch
) -> None:
    """The planned name was taken meanwhile, the writer wrote ``X 2.md`` and
    died: the entry names ``X 2.md`` first, so the retry finishes there."""
    v = store
    r = v.add("Keeps receipts in the green folder.")
    planned = f"Memory/procedural/{Path(str(r.path)).name}"
    real = writer.free_path

    def taken_meanwhile(path: Path) -> Path:
        if path.as_posix().endswith(planned) and not path.exists():
            write(v.root, planned, "Someone else's note.\n")
        return real(path)

    patch.setattr(writer, "free_path", taken_meanwhile)
    kill_a_move_halfway(v, patch, r.id)
    settled(v)
    mine = notes_of(v.root, r.id)
    assert len(mine) == 1 and mine[0].startswith("Memory/procedural/") and mine[0] != planned
    # Their note keeps its text (a memory note made by hand gains only its id and created lines).
    theirs = (v.root / planned).read_text(encoding="utf-8")
    assert theirs.endswith("---\nSomeone else's note.\n") and r.id not in theirs
    assert len(live_memories(v)) == 2 and r.id in live_memories(v)  # theirs (in the memory folder) and ours


# -- a restore killed after writing the note back -----------------------------------------


@pytest.mark.parametrize("step", ["atomic_create", "clear_outbox"])
@pytest.mark.parametrize("finish", ["sync", "flush", "restore again"])
def test_a_restore_killed_halfway_ends_with_one_note(store: MemoryStore, patch: pytest.MonkeyPatch,
                                                     step: str, finish: str) -> None:
    v = store
    r = v.add("Buys oat milk, not soy.")
    v.forget(r.id)
    trash = rec.get_trace(v.con, r.id).metadata["trash_path"]  # type: ignore[union-attr]
    assert (v.root / trash).is_file()
    # Killed after the note is back: before the trash copy is removed, or after.
    dies_after(patch, atomic if step == "atomic_create" else mem, step)
    with pytest.raises(Killed):
        v.restore(r.id)
    patch.undo()
    assert notes_of(v.root, r.id) == [r.path]
    if finish == "sync":
        settled(v)
    elif finish == "flush":
        v.memories.flush(r.id)
    else:  # the person runs the command again: it finishes, and says so
        again = v.restore(r.id)
        assert (again.action, again.path) == ("restored", r.path)
    assert notes_of(v.root, r.id) == [r.path]
    assert not (v.root / trash).exists()
    t = rec.get_trace(v.con, r.id)
    assert t is not None and t.status == "active" and t.path == r.path
    assert v.con.execute("SELECT count(*) FROM state.forgotten").fetchone()[0] == 0


# -- a forget killed after moving the note to the trash -----------------------------------


@pytest.mark.parametrize("step", ["atomic_move", "sync_paths"])
@pytest.mark.parametrize("finish", ["sync", "flush"])
def test_a_forget_killed_after_the_move_keeps_its_reason_and_trash_path(
    store: MemoryStore, patch: pytest.MonkeyPatch, finish: str, step: str
) -> None:
    v = store
    r = v.add("Used to collect stamps.")
    # Killed right after the move, or once the index saw the note vanish
    # (as "deleted in the vault") but before the forget was recorded.
    if step == "atomic_move":
        dies_after(patch, atomic, step)
    else:
        dies_after(patch, v.memories.indexer, step, lambda paths, *_: not (v.root / list(paths)[0]).exists())
    with pytest.raises(Killed):
        v.forget(r.id, reason="faded")
    patch.undo()
    trashed = sorted(p.relative_to(v.root).as_posix() for p in (v.root / ".trash").iterdir())
    assert trashed == [f".trash/{Path(str(r.path)).name}"]
    if finish == "sync":
        settled(v)
    else:
        v.memories.flush(r.id)
    t = rec.get_trace(v.con, r.id)
    assert t is not None and (t.status, t.reason) == ("deleted", "faded")
    assert (t.metadata.get("trashed_from"), t.metadata.get("trash_path")) == (r.path, trashed[0])
    assert v.con.execute("SELECT reason FROM state.forgotten WHERE memory_id = ?", (r.id,)).fetchone()[0] == "faded"
    # restore brings the trash copy back, and only it
    assert v.restore(r.id).path == r.path
    assert notes_of(v.root, r.id) == [r.path]
    assert list((v.root / ".trash").iterdir()) == []


def test_a_forget_whose_folder_flush_fails_after_the_move_is_done(
    store: MemoryStore, patch: pytest.MonkeyPatch
) -> None:
    v = store
    r = v.add("Drinks green tea after lunch.")
    real = atomic.fsync_dir

    def fails_in_trash(folder: Path) -> None:
        if folder.name == ".trash":
            raise OSError(errno.EIO, "Input/output error", str(folder))
        real(folder)

    patch.setattr(atomic, "fsync_dir", fails_in_trash)
    result = v.forget(r.id, reason="faded")  # no MemoryWriteError: the note did move
    patch.undo()
    assert result.path == f".trash/{Path(str(r.path)).name}"
    t = rec.get_trace(v.con, r.id)
    assert t is not None and (t.status, t.reason, t.metadata.get("trash_path")) == ("deleted", "faded", result.path)
    assert v.con.execute("SELECT count(*) FROM state.outbox").fetchone()[0] == 0


# -- state rows staged with their outbox entry, never alone -------------------------------


def test_an_update_killed_before_its_outbox_entry_leaves_no_version(
    store: MemoryStore, patch: pytest.MonkeyPatch
) -> None:
    v = store
    r = v.add("Runs on Tuesdays.")

    def killed(*args: Any) -> None:
        raise Killed

    patch.setattr(mem, "put_outbox", killed)
    with pytest.raises(Killed):
        v.update(r.id, content="Runs on Wednesdays.")
    patch.undo()
    assert v.con.execute("SELECT count(*) FROM state.memory_versions").fetchone()[0] == 0
    assert mem.current_version(v.con, r.id) == 1
    settled(v)
    assert [h.content for h in v.history(r.id)] == ["Runs on Tuesdays."]
    # and the update done again makes exactly one version
    v.update(r.id, content="Runs on Wednesdays.", expect_version=1)
    assert [h.content for h in v.history(r.id)] == ["Runs on Wednesdays.", "Runs on Tuesdays."]


@pytest.mark.parametrize("command", ["forget", "restore"])
def test_a_forget_or_restore_killed_before_its_outbox_entry_changes_nothing(
    store: MemoryStore, patch: pytest.MonkeyPatch, command: str
) -> None:
    v = store
    r = v.add("Reads on the train.")
    if command == "restore":
        v.forget(r.id)
    before = v.con.execute("SELECT memory_id, reason FROM state.forgotten").fetchall()

    def killed(*args: Any) -> None:
        raise Killed

    patch.setattr(mem, "put_outbox", killed)
    with pytest.raises(Killed):
        getattr(v, command)(r.id)
    patch.undo()
    assert v.con.execute("SELECT memory_id, reason FROM state.forgotten").fetchall() == before
    settled(v)
    assert v.con.execute("SELECT memory_id, reason FROM state.forgotten").fetchall() == before


# -- closing on a disk still full ----------------------------------------------------------


def test_close_does_not_raise_when_the_closing_checkpoint_fails(store: MemoryStore,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    v = store
    real = v.con
    calls: list[bool] = []

    class FullOnClose:
        def close(self, force: bool = False) -> None:
            calls.append(force)
            if not force:
                raise apsw.FullError("database or disk is full")
            real.close()

    v.__dict__["con"] = FullOnClose()
    v.close()  # no exception: the WAL keeps every commit, the next open checkpoints
    assert calls == [False, True]
    assert [r.levelname for r in caplog.records if "write-ahead log" in r.getMessage()] == ["WARNING"]
    assert v.con.execute("SELECT count(*) FROM traces").fetchone()[0] >= 1  # reopens
