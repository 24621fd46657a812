"""Two-way sync under any interleaving of person-side and store-side changes.

A Hypothesis state machine edits, renames and deletes memory notes the way a
person in Obsidian would, and adds, updates, forgets and restores memories
through the store, with syncs (what the daemon does within a second) at
arbitrary points. After every step:

* no text either side ever wrote is lost: each word written is still in a
  vault file (notes, conflict copies, ``.trash``) or in the index (live,
  superseded or deleted traces);
* reading never writes: a sync leaves every file's bytes and mtime as they were,
  and an update that changes nothing writes nothing;
* after a sync, every live memory has exactly one note, and every memory note
  belongs to a live memory;
* a conflict copy (``conflict_of:``) is never a memory: it is indexed as an
  ordinary note and listed as an open conflict until the person deletes it.

Real conflicts come from the writer's ``before_write`` seam: the person saves
the note after the store committed its change and before the writer checks
the note and replaces it, which is the race the check exists for.

Two steps throw state away: dropping the derived index and rebuilding it
(live memories, their histories, vault edits included, the forgotten set and
the merged memories must come back unchanged from the durable state), and
dropping the whole data dir and rebuilding from the vault and its history logs
(every memory the vault holds, live notes and ``.trash/``, must come back with
the same id, and live, forgotten or merged into the same survivor as before).
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from memvault.store.memories.mirror import Memories, MemoryOpError, MemoryWriteError
from memvault.store.memory_store import MemoryStore
from memvault.vault_io.parser import parse_note

_counter = itertools.count()


def token() -> str:
    """A word that appears nowhere else, so it can be traced."""
    return f"tok{next(_counter)}x"


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in root.rglob("*.md")
    }


def standing(live: dict[str, str], forgotten: set[str], merged: dict[str, str]) -> dict[str, str]:
    """Each memory's standing in the index: "live", "forgotten" or "merged into <id>"."""
    out = {i: "forgotten" for i in forgotten}
    out.update({i: f"merged into {s}" for i, s in merged.items()})
    out.update({i: "live" for i in live})
    return out


def without_counter(files: dict[str, tuple[bytes, int]]) -> dict[str, bytes]:
    """The files' bytes without the lines a sync may write into an edited
    memory note: the version counter and fingerprint, and `updated` (the edit's time)."""
    return {p: re.sub(rb"(?m)^(version(_hash)?|updated): .*\n", b"", data) for p, (data, _) in files.items()}


#: How many machines ran and how many person-store races they staged, for
#: :func:`test_the_machine_staged_real_races` (run after TestMirror).
RUNS = {"machines": 0, "races": 0}


class MirrorMachine(RuleBasedStateMachine):
    """Store and person take turns on the same memories."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="memvault-mirror-"))
        self.root = self.tmp / "vault"
        self.root.mkdir()
        os.environ["MEMVAULT_HOME"] = str(self.tmp / "home")
        self.vault = MemoryStore.open(str(self.root))
        self.written: set[str] = set()  # every token either side wrote
        self.ids: list[str] = []

    def teardown(self) -> None:
        self.vault.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @property
    def mem(self) -> Memories:
        """The store's memory writer (a rebuild replaces it)."""
        return self.vault.memories

    @initialize()
    def first_sync(self) -> None:
        self.mem.indexer.sync()
        RUNS["machines"] += 1

    # -- helpers -----------------------------------------------------------------

    def conflict_copies(self) -> list[Path]:
        out = []
        for p in (self.root / "Memory").rglob("*.md") if (self.root / "Memory").exists() else []:
            if "conflict_of" in parse_note(p.relative_to(self.root).as_posix(), p.read_bytes()).frontmatter:
                out.append(p)
        return out

    def race_with_person(self) -> list[str]:
        """Arm the writer's seam: the person saves the note between the
        store's commit and its write. Returns the tokens written (filled in
        when the race happened)."""
        raced: list[str] = []

        def edit(path: str) -> None:
            self.mem.before_write = None  # one save per race
            p = self.root / path
            if p.exists():
                word = token()
                p.write_text(p.read_text(encoding="utf-8") + f"\nRaced {word} by hand.\n", encoding="utf-8")
                self.written.add(word)
                raced.append(word)
                RUNS["races"] += 1

        self.mem.before_write = edit
        return raced

    def note_of(self, memory_id: str) -> Path | None:
        for p in (self.root / "Memory").rglob("*.md") if (self.root / "Memory").exists() else []:
            try:
                note = parse_note(p.relative_to(self.root).as_posix(), p.read_bytes())
            except Exception:
                continue
            if note.frontmatter.get("id") == memory_id:
                return p
        return None

    # -- store side ----------------------------------------------------------------

    @rule(kind=st.sampled_from(["fact", "event", "lesson", "todo", "profile"]))
    def store_add(self, kind: str) -> None:
        word = token()
        result = self.mem.add(f"Remember {word} always.", kind)
        self.written.add(word)
        if result.id not in self.ids:
            self.ids.append(result.id)

    @precondition(lambda self: self.ids)
    @rule(data=st.data(), change_type=st.booleans())
    def store_update(self, data: st.DataObject, change_type: bool) -> None:
        memory_id = data.draw(st.sampled_from(self.ids))
        word = token()
        try:
            self.mem.update(memory_id, content=f"Now {word} instead.", type_="event" if change_type else None,
                            reason="test")
        except MemoryWriteError:
            raise  # a note that could not be written is a failure here, not a refusal
        except MemoryOpError:
            return  # deleted: refused, and nothing was written
        self.written.add(word)

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def store_update_racing_person_save(self, data: st.DataObject) -> None:
        memory_id = data.draw(st.sampled_from(self.ids))
        word = token()
        raced = self.race_with_person()
        try:
            result = self.mem.update(memory_id, content=f"Raced {word} store.", reason="test")
        except MemoryWriteError:
            raise  # a note that could not be written is a failure here, not a refusal
        except MemoryOpError:
            return  # deleted: refused, and nothing was written
        finally:
            self.mem.before_write = None
        self.written.add(word)
        if raced:
            assert result.action == "conflict" and result.conflict_path, result
            assert word in (self.root / result.conflict_path).read_text(encoding="utf-8")
            assert raced[0] in (self.root / result.path).read_text(encoding="utf-8")

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def store_forget_racing_person_save(self, data: st.DataObject) -> None:
        raced = self.race_with_person()
        try:
            result = self.mem.forget(data.draw(st.sampled_from(self.ids)))
        except MemoryWriteError:
            raise  # a note that could not be written is a failure here, not a refusal
        except MemoryOpError:
            return
        finally:
            self.mem.before_write = None
        if raced:  # an edit beats a deletion: the note stays, live
            assert result.action == "conflict" and (self.root / result.path).exists()

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def store_update_to_same_text(self, data: st.DataObject) -> None:
        memory_id = data.draw(st.sampled_from(self.ids))
        row = self.vault.con.execute("SELECT content, status FROM traces WHERE id = ?", (memory_id,)).fetchone()
        if row is None or row[1] != "active":
            return
        self.mem.indexer.sync()  # the person's pending edits first, as update itself would
        row = self.vault.con.execute("SELECT content FROM traces WHERE id = ?", (memory_id,)).fetchone()
        before = snapshot(self.root)
        try:
            result = self.mem.update(memory_id, content=row[0])
        except MemoryWriteError:
            raise  # a note that could not be written is a failure here, not a refusal
        except MemoryOpError:
            return
        assert result.action == "unchanged"
        assert snapshot(self.root) == before, "an update that changed nothing rewrote a file"

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def store_forget(self, data: st.DataObject) -> None:
        try:
            self.mem.forget(data.draw(st.sampled_from(self.ids)))
        except MemoryWriteError:
            raise  # a note that could not be written is a failure here, not a refusal
        except MemoryOpError:
            pass

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def store_restore(self, data: st.DataObject) -> None:
        try:
            self.mem.restore(data.draw(st.sampled_from(self.ids)))
        except MemoryWriteError:
            raise  # a note that could not be written is a failure here, not a refusal
        except MemoryOpError:
            pass

    # -- person side -----------------------------------------------------------------

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def person_edit(self, data: st.DataObject) -> None:
        path = self.note_of(data.draw(st.sampled_from(self.ids)))
        if path is None:
            return
        word = token()
        path.write_text(path.read_text(encoding="utf-8") + f"\nAdded {word} by hand.\n", encoding="utf-8")
        self.written.add(word)

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def person_rename(self, data: st.DataObject) -> None:
        path = self.note_of(data.draw(st.sampled_from(self.ids)))
        if path is None:
            return
        target = path.with_name(f"renamed {token()}.md")
        os.rename(path, target)

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def person_delete(self, data: st.DataObject) -> None:
        # Obsidian moves a deleted note to the vault's .trash folder.
        path = self.note_of(data.draw(st.sampled_from(self.ids)))
        if path is not None:
            (self.root / ".trash").mkdir(exist_ok=True)
            os.rename(path, self.root / ".trash" / f"{token()}.md")

    @rule(data=st.data())
    def person_merges_conflict(self, data: st.DataObject) -> None:
        # The person resolves a conflict: copies the store's text into the
        # note (when it is still there) and deletes the conflict copy.
        copies = self.conflict_copies()
        if not copies:
            return
        copy = data.draw(st.sampled_from(copies))
        note = parse_note(copy.relative_to(self.root).as_posix(), copy.read_bytes())
        target = self.note_of(str(note.frontmatter["conflict_of"]))
        if target is None:
            return  # nothing to merge into: the copy stays
        target.write_text(target.read_text(encoding="utf-8") + "\n" + note.body, encoding="utf-8")
        copy.unlink()

    @rule()
    def sync(self) -> None:
        before = snapshot(self.root)
        self.mem.indexer.sync()
        # Reading writes nothing but, in a memory note edited since memvault
        # last counted a version of it, the next `version`, its
        # `version_hash` and the edit's `updated` (issue 20: the version travels with the note)...
        assert without_counter(snapshot(self.root)) == without_counter(before), "a sync (reading) changed a file"
        # ...and that once: a second sync writes nothing at all.
        settled = snapshot(self.root)
        self.mem.indexer.sync()
        assert snapshot(self.root) == settled, "a sync (reading) changed a file"
        self.check_one_note_per_live_memory()

    # -- throwing state away -------------------------------------------------------------

    def remembered(self) -> tuple[dict[str, str], dict[str, list[tuple]], set[str], dict[str, str]]:
        """Live memories (id -> content), their histories, the forgotten ids,
        and the merged ones (id -> the memory it was merged into)."""
        con = self.vault.con
        live = dict(con.execute("SELECT id, content FROM traces WHERE kind = 'memory' AND status = 'active'"))
        histories = {
            i: [(v.id, v.status, v.reason, v.content, v.type) for v in self.vault.history(i)]
            for i in live
        }
        forgotten = {r[0] for r in con.execute("SELECT id FROM traces WHERE kind = 'memory' AND status = 'deleted'")}
        # A merged memory is neither live nor forgotten: it is superseded by
        # its survivor (docs/consolidation.md, Merge), its note in .trash/.
        merged = dict(con.execute(
            "SELECT id, json_extract(metadata, '$.merged_into') FROM traces WHERE kind = 'memory' "
            "AND status = 'superseded' AND json_valid(metadata) AND json_extract(metadata, '$.merged_into') IS NOT NULL"))
        return live, histories, forgotten, merged

    @rule()
    def drop_the_index_and_rebuild(self) -> None:
        self.vault.sync()  # what a person changed is part of what must survive
        before = self.remembered()
        files = snapshot(self.root)
        self.vault.rebuild()
        assert self.remembered() == before
        assert snapshot(self.root) == files, "a rebuild (reading) changed a file"

    @rule()
    def drop_everything_and_rebuild_from_the_vault(self) -> None:
        self.vault.sync()
        held = self.memory_notes()
        live, _, forgotten, merged = self.remembered()
        before = standing(live, forgotten, merged)
        self.vault.close()
        shutil.rmtree(self.vault.data_dir)
        self.vault.rebuild()
        live, _, forgotten, merged = self.remembered()
        assert live == {i: c for i, (where, c) in held.items() if where == "live"}
        assert {i for i, (where, _) in held.items() if where == "trash"} <= forgotten | set(live) | set(merged)
        # The history logs are in the vault: every memory it holds stands as
        # it did (live, forgotten, or merged into the same survivor).
        after = standing(live, forgotten, merged)
        assert {i: after.get(i) for i in held} == {i: before.get(i) for i in held}
        # Versions were only memvault's: what survives is what the vault holds.
        self.written &= self.tokens_held()

    def memory_notes(self) -> dict[str, tuple[str, str]]:
        """Memory ids in the vault: id -> ("live" | "trash", content as the index reads it)."""
        out: dict[str, tuple[str, str]] = {}
        con = self.vault.con
        for where, folder in (("trash", self.root / ".trash"), ("live", self.root / "Memory")):
            for p in folder.rglob("*.md") if folder.exists() else []:
                note = parse_note(p.relative_to(self.root).as_posix(), p.read_bytes())
                if "conflict_of" in note.frontmatter or not note.frontmatter.get("id"):
                    continue
                mid = str(note.frontmatter["id"])
                row = con.execute("SELECT content FROM traces WHERE id = ?", (mid,)).fetchone()
                out[mid] = (where, row[0] if row else "")
        return out

    def tokens_held(self) -> set[str]:
        on_disk = " ".join(p.read_text(encoding="utf-8", errors="replace") for p in self.root.rglob("*.md"))
        in_index = " ".join(c for (c,) in self.vault.con.execute("SELECT content FROM traces"))
        return set(re.findall(r"tok\d+x", on_disk + " " + in_index))

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def nothing_written_is_lost(self) -> None:
        missing = self.written - self.tokens_held()
        assert not missing, f"lost text: {sorted(missing)}"

    def check_one_note_per_live_memory(self) -> None:
        live = {
            r[0] for r in self.vault.con.execute("SELECT id FROM traces WHERE kind = 'memory' AND status = 'active'")
        }
        holders: dict[str, list[str]] = {}
        listed = {c.conflict_note for c in self.vault.conflicts()}
        for p in (self.root / "Memory").rglob("*.md") if (self.root / "Memory").exists() else []:
            rel = p.relative_to(self.root).as_posix()
            note = parse_note(rel, p.read_bytes())
            if "conflict_of" in note.frontmatter:
                # The store's side of a clash: an ordinary note, never a
                # second (or a forgotten) memory, and an open conflict.
                kind = self.vault.con.execute(
                    "SELECT t.kind FROM files f JOIN traces t ON t.id = f.trace_id WHERE f.path = ?", (rel,)
                ).fetchone()
                assert kind == ("note",), f"conflict copy {rel} is indexed as {kind}"
                assert rel in listed, f"conflict copy {rel} is not listed by status"
                continue
            key = str(note.frontmatter.get("id", rel))
            holders.setdefault(key, []).append(p.name)
        for memory_id in live:
            indexed = self.vault.con.execute("SELECT path FROM files WHERE trace_id = ?", (memory_id,)).fetchall()
            assert len(indexed) == 1, f"{memory_id} has notes {indexed}"
        for key, names in holders.items():
            assert len(names) == 1, f"{key} is held by several notes: {names}"


MirrorMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
TestMirror = MirrorMachine.TestCase


def test_the_machine_staged_real_races() -> None:
    """The race rules assert only when a race happened: make sure they did."""
    if RUNS["machines"] == 0:
        pytest.skip("runs after TestMirror in this file")
    assert RUNS["races"] > 0
