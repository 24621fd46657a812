"""Two devices, one memory, for a set time (issue 20's longer harness).

Two copies of a vault, each with its own data dir and a live daemon (the
real :class:`DaemonRunner` of ``tests/two_devices.py``: watcher, reconcile,
outbox), and a Syncthing-like sync tool between them (newer wins, the other
side kept as ``NAME.sync-conflict-YYYYMMDD-HHMMSS-DEVICE.md``; a rename
arrives as a delete and a create). For ``--seconds`` a seeded driver does, on
both sides, what agents and people do: CLI operations through each device's
store (add, the same add on both, update, update with ``--expect-version``,
forget, restore), hand edits of memory notes and journal notes, renames of
memory notes, a rename on one device racing an edit of the same note on the
other, deleting a journal note; and (since batch 9) deleting a memory note
by hand (unlinked, or moved to ``.trash/`` as Obsidian does), dragging one
into another type's folder, editing its front-matter by hand (a tag added,
its ``type`` changed, its id kept), an agent's add of what a live memory
says with ``--allow-duplicate`` (for consolidation to merge),
``consolidate`` on one device (mostly applied, now and then a dry run), a
merge by hand (``memvault merge``), an undo of the latest run or merge, a
memory note written by hand (no id), and an editor's in-place save of a memory
note (the file truncated and written, no rename; now and then twice within
a few ms); the sync tool runs at random moments, while
the daemons are busy (as Syncthing does), not only once they are idle. With
``--contention`` both sides hit the same memories and the same journal
notes; without it each side works on what it made.

Then it settles (daemons idle, sync rounds until one carries nothing) and
counts, each of which should be zero:

- ``lost_tokens_<device>``: tokens written and not deliberately removed
  (a journal note deleted by hand; a memory note deleted by hand is not:
  its memory keeps its text) that are nowhere on that device: not in a
  note, a conflict copy, ``.trash/``, a history log, nor the index or
  ``state.db``'s earlier versions and forgotten memories;
- ``list_differences``: live memories (id, content, created, version) one
  device lists and the other does not;
- ``history_differences``: earlier versions (id, text, reason), forgotten
  memories (id, reason) and ``history <id>`` of live memories that differ;
- ``attribute_differences``: live memories whose type or tags differ
  between the devices;
- ``shared_state_differences``: rows of the consolidation state the history
  logs share (merges, runs with their status, their actions, memory links,
  contradictions) that one device has and the other not;
- ``type_mismatches``: live memories whose type in the index is not the one
  their note says (front-matter ``type``, else its folder; both devices);
- ``hand_deletions_wrong``: memories whose note a person deleted (nothing
  aimed at them after) that are not either live on both devices (the other
  device's edit beat the deletion) or forgotten on both as ``note deleted
  in the vault`` (forgotten alike on both, when a forget or a merge had
  aimed at them before);
- ``shared_ids``: ids carried by more than one live memory note (both devices);
- ``phantoms``: live memories without a note (both devices);
- ``notes_without_memory``: live memory notes whose id no live memory has,
  or the reverse (both devices; a note made by hand without an id counts
  by the id its device's index gave it);
- ``quiet_window_changes``: files that changed in a quiet window of
  ``--quiet`` seconds after settling (a ping-pong);
- ``unsettled``: 1 if the devices never settled;
- ``rebuild_list`` / ``rebuild_history`` / ``rebuild_forgotten`` /
  ``rebuild_merges``: after the
  second device's daemon is stopped, its data dir deleted and ``memvault
  rebuild --no-embed`` run there as a process, what differs from the first
  device;
- ``op_errors``: an operation that failed other than by a refusal memvault
  documents (a memory forgotten or not yet here, a version conflict).

Prints one line per count and writes ``bench/out/two_devices-<stamp>.json``.

    python bench/bench_two_devices.py --seconds 120 --seed 1 --contention
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO / "tests"))

from _common import MEMVAULT_EXE, OUT, isolate_env, machine_info, mktemp, write_json  # noqa: E402

TOKEN = re.compile(r"tok\d+x")


def build(tmp: Path) -> Any:
    """Everything after the environment is isolated: imports that read it."""
    from two_devices import Device, FileSync, files_of

    from memvault.store.location import vault_data_dir

    class LiveSync(FileSync):
        """The harness's sync tool, run while daemons write: a file both
        sides changed during a round is simply a conflict for the next round
        (the harness's own round asserts nothing wrote meanwhile)."""

        vanished = 0  # rounds cut short by a file a daemon moved meanwhile

        def round(self) -> int:
            try:
                return super().round()
            except FileNotFoundError:  # a daemon renamed a file between the scan and the copy
                self.vanished += 1
                return 1

        def _settle(self, agreed: dict[str, str | None]) -> None:
            from two_devices import _digest

            now_a, now_b = _digest(files_of(self.a.root)), _digest(files_of(self.b.root))
            self.base = {}
            for path in set(now_a) | set(now_b) | set(agreed):
                ha, hb = now_a.get(path), now_b.get(path)
                value = ha if ha == hb else agreed.get(path)
                if value is not None:
                    self.base[path] = value

    first = tmp / "laptop" / "Notes"
    first.mkdir(parents=True)
    (first / "Welcome.md").write_text("# Welcome\n\nThe shared vault.\n", encoding="utf-8")
    second = tmp / "desktop" / "Notes"
    shutil.copytree(first, second)
    devices = [Device("laptop", first, vault_data_dir(first)), Device("desktop", second, vault_data_dir(second))]
    sync = LiveSync(*devices)
    return devices, sync, files_of


class Driver:
    """The seeded people and agents on both devices."""

    def __init__(self, devices: list[Any], sync: Any, rng: random.Random, contention: bool) -> None:
        self.devices, self.sync, self.rng, self.contention = devices, sync, rng, contention
        self.written: set[str] = set()
        self.removed: set[str] = set()
        self.owner: dict[str, str] = {}  # memory id -> device that made it
        self.ops: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.errors: list[str] = []
        self.n = 0
        self.log: list[str] = []  # one line per step: what, where, on what, which token
        self.note = ""  # what the running step touched, for its log line
        self.current = ""  # the running step's operation
        self.touched: dict[str, str] = {}  # memory id -> the last operation that aimed at it
        self.aimed: dict[str, set[str]] = {}  # memory id -> every operation that aimed at it
        self.hand_deleted: set[str] = set()  # memory ids whose note a person deleted
        self.merged: set[str] = set()  # memory ids a consolidation merged into another
        self.runs: dict[str, list[str]] = {}  # consolidation run (or merge) -> the memory ids it aimed at

    def token(self) -> str:
        self.n += 1
        word = f"tok{self.n}x"
        self.written.add(word)
        return word

    # -- what a device may touch -------------------------------------------------

    def memory_notes(self, d: Any) -> dict[str, Path]:
        from memvault.vault_io.parser import parse_note

        out: dict[str, Path] = {}
        folder = d.root / "Memory"
        for p in folder.rglob("*.md") if folder.exists() else []:
            try:
                note = parse_note(p.relative_to(d.root).as_posix(), p.read_bytes())
            except FileNotFoundError:
                continue
            if "conflict_of" in note.frontmatter or ".sync-conflict-" in p.name or p.name.startswith("."):
                continue
            if note.frontmatter.get("id"):
                out[str(note.frontmatter["id"])] = p
        return out

    def targets(self, d: Any, ids: list[str]) -> list[str]:
        """With contention every id; without, the ids this device made."""
        if self.contention:
            return ids
        return [i for i in ids if self.owner.get(i) == d.name]

    def pick(self, options: list[Any]) -> Any:
        return options[self.rng.randrange(len(options))] if options else None

    # -- operations ----------------------------------------------------------------

    def step(self) -> None:
        ops = [("add", 4), ("same_add", 1), ("update", 4), ("update_expect", 2), ("forget", 1), ("restore", 1),
               ("edit_memory_note", 4), ("rename", 1), ("journal", 3), ("delete_journal", 0.3),
               ("sync", 4), ("sync_when_idle", 1)]
        if self.contention:
            ops.append(("rename_races_edit", 2))
        ops += [("delete_memory_note", 0.7), ("move_type_folder", 0.7), ("edit_frontmatter", 1),
                ("consolidate", 0.3), ("add_duplicate", 0.7), ("inplace_save", 2),
                ("create_memory_note", 0.7), ("merge", 0.3), ("undo_consolidation", 0.15)]
        name = self.rng.choices([o for o, _ in ops], weights=[w for _, w in ops])[0]
        d = self.pick(self.devices)
        self.current = name
        self.note, start = "", self.n
        try:
            getattr(self, f"op_{name}")(d)
            self.ops[name] += 1
            self.log.append(f"{len(self.log)} {name} {d.name} {self.note} tok{start + 1}x.." if self.n > start
                            else f"{len(self.log)} {name} {d.name} {self.note}")
        except Exception as e:  # noqa: BLE001 - the count of unexpected failures is a result
            from memvault.store.memories.mirror import MemoryOpError
            from memvault.vault_io.errors import MemvaultError

            self.log.append(f"{len(self.log)} {name} {d.name} {self.note} refused: {type(e).__name__}: {e}")
            self.written -= {f"tok{i}x" for i in range(start + 1, self.n + 1)}  # refused: never written
            if isinstance(e, (MemoryOpError, MemvaultError)):
                self.refused[name] += 1
            else:
                self.errors.append(f"{name} on the {d.name}: {type(e).__name__}: {e}")

    def op_add(self, d: Any) -> None:
        made = d.cli.add(f"Remember {self.token()} always.", self.pick(["fact", "event", "todo", "lesson"]))
        self.note = f"{made.id} {made.action}"
        self.owner.setdefault(made.id, d.name)
        self.touch(made.id)

    def op_same_add(self, d: Any) -> None:
        word = self.token()
        for dev in self.devices:
            made = dev.cli.add(f"Shared {word} on both.", "fact")
            self.note += f"{made.id} {made.action} "
            self.owner.setdefault(made.id, d.name)
            self.touch(made.id)

    def live_ids(self, d: Any, status: str = "active") -> list[str]:
        return [i for (i,) in d.cli.con.execute(
            "SELECT id FROM traces WHERE kind = 'memory' AND status = ? ORDER BY id", (status,))]

    def op_update(self, d: Any) -> None:
        target = self.pick(self.targets(d, self.live_ids(d)))
        self.note = str(target)
        self.touch(target)
        if target:
            d.cli.update(target, content=f"Now {self.token()} instead.", reason="bench")

    def op_update_expect(self, d: Any) -> None:
        target = self.pick(self.targets(d, self.live_ids(d)))
        self.note = str(target)
        self.touch(target)
        if target:
            version = d.cli.read(target).version
            d.cli.update(target, content=f"Checked {self.token()} here.", expect_version=version)

    def op_forget(self, d: Any) -> None:
        target = self.pick(self.targets(d, self.live_ids(d)))
        self.note = str(target)
        self.touch(target)
        if target:
            d.cli.forget(target, reason="bench forgets")

    def op_restore(self, d: Any) -> None:
        target = self.pick(self.targets(d, self.live_ids(d, "deleted")))
        self.note = str(target)
        self.touch(target)
        if target:
            d.cli.restore(target)

    def memory_note_to_edit(self, d: Any) -> tuple[Path, str] | None:
        """A memory note picked for a hand edit (noted and touched) and its text; None: none to edit."""
        notes = self.memory_notes(d)
        target = self.pick(self.targets(d, sorted(notes)))
        if not target:
            return None
        p = notes[target]
        self.note = f"{target} {p.relative_to(d.root)}"
        self.touch(target)
        try:
            return p, p.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def op_edit_memory_note(self, d: Any) -> None:
        found = self.memory_note_to_edit(d)
        if found:
            p, old = found
            p.write_text(old + f"\nEdited {self.token()} on the {d.name}.\n", encoding="utf-8")

    def op_rename(self, d: Any) -> None:
        notes = self.memory_notes(d)
        target = self.pick(self.targets(d, sorted(notes)))
        if target:
            self.note = f"{target} {notes[target].relative_to(d.root)}"
            self.touch(target)
            try:
                notes[target].rename(notes[target].with_name(f"renamed-{d.name}-{self.n}-{self.rng.randrange(10**6)}.md"))
            except FileNotFoundError:
                return

    def op_rename_races_edit(self, d: Any) -> None:
        """One device renames a memory note the other edits, before the sync tool runs."""
        other = self.devices[1] if d is self.devices[0] else self.devices[0]
        mine, theirs = self.memory_notes(d), self.memory_notes(other)
        target = self.pick(sorted(set(mine) & set(theirs)))
        if not target:
            return
        edited = theirs[target]
        self.touch(target)
        self.note = f"{target} edited {edited.relative_to(other.root)} renamed {mine[target].relative_to(d.root)}"
        try:
            edited.write_text(edited.read_text(encoding="utf-8") + f"\nEdited {self.token()} while renamed.\n",
                              encoding="utf-8")
            mine[target].rename(mine[target].with_name(f"renamed-{d.name}-{self.n}-{self.rng.randrange(10**6)}.md"))
        except FileNotFoundError:
            return

    def journal_path(self, d: Any) -> Path:
        n = self.rng.randrange(4)
        return d.root / "Journal" / (f"{n}.md" if self.contention else f"{d.name}-{n}.md")

    def op_journal(self, d: Any) -> None:
        p = self.journal_path(d)
        self.note = str(p.relative_to(d.root))
        p.parent.mkdir(exist_ok=True)
        old = p.read_text(encoding="utf-8") if p.exists() else ""
        p.write_text(old + f"Wrote {self.token()} on the {d.name}.\n", encoding="utf-8")

    def op_delete_journal(self, d: Any) -> None:
        """Deliberate removal: the note's tokens need not survive (unless
        the other device's edit wins over the deletion, as it should)."""
        p = self.journal_path(d)
        self.note = str(p.relative_to(d.root))
        try:
            text = p.read_text(encoding="utf-8")
            p.unlink()
        except FileNotFoundError:
            return
        self.removed |= set(TOKEN.findall(text))

    def op_sync(self, d: Any) -> None:
        self.note = f"carried {self.sync.round()}, {self.sync.conflicts_written} conflicts so far"

    def op_sync_when_idle(self, d: Any) -> None:
        from helpers import wait_for
        from test_two_devices import caught_up

        for dev in self.devices:
            wait_for(lambda dev=dev: caught_up(dev), timeout=60)
        self.note = f"carried {self.sync.round()}, {self.sync.conflicts_written} conflicts so far"

    # -- what people and agents also do (batch 9) ----------------------------------

    def touch(self, *ids: str) -> None:
        """The driver's last operation on each of ``ids`` (for the hand-deletion check)."""
        for i in ids:
            if i:
                self.touched[i] = self.current
                self.aimed.setdefault(i, set()).add(self.current)

    def op_delete_memory_note(self, d: Any) -> None:
        """A person deletes a memory note in Obsidian: moved to ``.trash/``
        (Obsidian's default) or unlinked. Not a deliberate removal of its
        tokens: memvault keeps the memory's text (forgotten, in its history).
        Before an unlink the person has looked at the note: its device has
        read it as it is (a note written and unlinked within the daemon's
        debounce leaves nothing anyone could keep)."""
        notes = self.memory_notes(d)
        target = self.pick(self.targets(d, sorted(notes)))
        if not target:
            return
        p = notes[target]
        how = self.pick(["trash", "unlink"])
        self.note = f"{target} {how} {p.relative_to(d.root)}"
        self.touch(target)
        try:
            if how == "unlink":
                self.wait_indexed(d, p)
                p.unlink()
            else:
                trash = d.root / ".trash"
                trash.mkdir(exist_ok=True)
                dest, n = trash / p.name, 1
                while dest.exists():  # Obsidian numbers a name the trash already has
                    dest, n = trash / f"{p.stem} {n}{p.suffix}", n + 1
                p.rename(dest)
        except FileNotFoundError:
            return
        self.hand_deleted.add(target)

    def wait_indexed(self, d: Any, p: Path, timeout: float = 10.0) -> None:
        """Until the device's index holds the note at ``p`` as it is on disk."""
        from test_two_devices import index_rows

        from memvault.vault_io.note import content_hash

        rel = p.relative_to(d.root).as_posix()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                now = content_hash(p.read_bytes())
            except FileNotFoundError:
                return
            if index_rows(d, "SELECT hash FROM files WHERE path = ?", (rel,)) == [(now,)] and d.idle():
                return
            time.sleep(0.01)

    def op_move_type_folder(self, d: Any) -> None:
        """A person drags a memory note into another type's folder
        (``Memory/semantic/x.md`` -> ``Memory/episodic/x.md``)."""
        from memvault.store.memories.memtypes import MEMORY_TYPES

        notes = self.memory_notes(d)
        target = self.pick(self.targets(d, sorted(notes)))
        if not target:
            return
        p = notes[target]
        rel = p.relative_to(d.root / "Memory").parts
        here = rel[0] if len(rel) > 1 else None
        folder = self.pick([t for t in MEMORY_TYPES if t != here])
        dest = d.root / "Memory" / folder / p.name
        self.note = f"{target} {p.relative_to(d.root)} -> {dest.relative_to(d.root)}"
        self.touch(target)
        if dest.exists():
            return
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            p.rename(dest)
        except FileNotFoundError:
            return

    def op_edit_frontmatter(self, d: Any) -> None:
        """A person edits a memory note's properties by hand: a tag added,
        or its ``type`` changed; the ``id`` line stays."""
        from memvault.store.memories.memtypes import MEMORY_TYPES

        notes = self.memory_notes(d)
        target = self.pick(self.targets(d, sorted(notes)))
        if not target:
            return
        p = notes[target]
        self.touch(target)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        head, sep, body = text.partition("\n---\n")
        if not text.startswith("---\n") or not sep:
            return
        lines = head.split("\n")
        if self.rng.random() < 0.5:
            tag = f"tag{self.rng.randrange(20)}"
            at = next((i for i, ln in enumerate(lines) if ln.startswith("tags:")), None)
            if at is None:
                lines.insert(len(lines), f"tags:\n  - {tag}")
            elif lines[at].strip() == "tags: []":
                lines[at] = f"tags:\n  - {tag}"
            else:
                lines.insert(at + 1, f"  - {tag}")
            self.note = f"{target} {p.relative_to(d.root)} tag {tag}"
        else:
            at = next((i for i, ln in enumerate(lines) if ln.startswith("type:")), None)
            current = lines[at].split(":", 1)[1].strip() if at is not None else None
            new = self.pick([t for t in MEMORY_TYPES if t != current])
            if at is None:
                lines.insert(1, f"type: {new}")
            else:
                lines[at] = f"type: {new}"
            self.note = f"{target} {p.relative_to(d.root)} type {current} -> {new}"
        try:
            with open(p, "r+", encoding="utf-8", newline="") as f:  # an editor's in-place save
                f.truncate(0)
                f.write("\n".join(lines) + sep + body)
        except FileNotFoundError:
            return

    def op_add_duplicate(self, d: Any) -> None:
        """An agent adds again what a live memory says, in other case and
        punctuation, with ``--allow-duplicate``: what ``consolidate`` merges."""
        target = self.pick(self.targets(d, self.live_ids(d)))
        self.note = str(target)
        if not target:
            return
        row = d.cli.con.execute("SELECT content, type FROM traces WHERE id = ?", (target,)).fetchone()
        if row is None:
            return
        content, type_ = row
        made = d.cli.add(self.pick([content.upper(), content.rstrip(".") + "!", content.lower()]), type_,
                         allow_duplicate=True)
        self.note = f"{target} -> {made.id} {made.action}"
        self.owner.setdefault(made.id, d.name)
        self.touch(target, made.id)

    def op_create_memory_note(self, d: Any) -> None:
        """A person writes a memory note by hand in a type's folder: no id,
        now and then a tag (with contention both devices pick from the same
        few names, so the same new note can be made on both)."""
        from memvault.store.memories.memtypes import MEMORY_TYPES

        folder = self.pick(list(MEMORY_TYPES))
        k = self.rng.randrange(8)
        p = d.root / "Memory" / folder / (f"hand-{k}.md" if self.contention else f"hand-{d.name}-{self.n}-{k}.md")
        self.note = str(p.relative_to(d.root))
        if p.exists():
            return
        p.parent.mkdir(parents=True, exist_ok=True)
        head = f"---\ntags:\n  - tag{self.rng.randrange(20)}\n---\n" if self.rng.random() < 0.5 else ""
        try:
            with open(p, "x", encoding="utf-8") as f:
                f.write(f"{head}Hand wrote {self.token()} on the {d.name}.\n")
        except FileExistsError:
            return

    def op_merge(self, d: Any) -> None:
        """An agent merges two live memories by hand (``memvault merge``)."""
        ids = self.targets(d, self.live_ids(d))
        if len(ids) < 2:
            return
        first, second = self.rng.sample(ids, 2)
        self.note = f"{second} into {first}"
        self.touch(first, second)
        outcome = d.cli.merge([first, second], None, why="bench merges")
        self.note += f" merged {outcome.merged} run {outcome.undo.get('run')}"
        self.merged.update(outcome.merged)
        if outcome.undo.get("run"):
            self.runs[outcome.undo["run"]] = [first, second]

    def op_undo_consolidation(self, d: Any) -> None:
        """An agent undoes the latest consolidation run (or merge) it sees."""
        done = [r for r in d.cli.consolidation_runs(5) if r["status"] == "done"]
        run = done[0]["run"] if done else None
        self.note = str(run)
        if not run:
            return
        self.touch(*self.runs.get(run, []))
        report = d.cli.undo_consolidation(run)
        self.note += f" undone {len(report.undone)} refused {len(report.refused)}"

    def op_consolidate(self, d: Any) -> None:
        """``memvault consolidate`` on one device (now and then a dry run):
        its merges and archives travel through the history logs."""
        dry = self.rng.random() < 0.25
        report = d.cli.consolidate(dry_run=dry)
        counts = report.counts()
        self.note = f"{'dry ' if dry else ''}run {report.run_id} {dict(counts)} failed {len(report.failed)}"
        if not dry:
            self.runs[report.run_id] = [i for a in report.actions for i in a.get("ids", [])]
            for action in report.actions:
                self.touch(*action.get("ids", []))
                if action.get("kind") == "merge":
                    self.merged.update(action.get("ids", [])[1:])

    def op_inplace_save(self, d: Any) -> None:
        """An Obsidian-style save of a memory note: the file opened with
        truncation and written in place (no rename), now and then twice
        within a few ms (autosave while typing)."""
        found = self.memory_note_to_edit(d)
        if not found:
            return
        p, text = found
        for _ in range(2 if self.rng.random() < 0.4 else 1):
            try:
                f = open(p, "r+", encoding="utf-8", newline="")  # noqa: SIM115 - the save below
            except FileNotFoundError:
                return
            with f:
                text += f"\nTyped {self.token()} on the {d.name}.\n"
                f.truncate(0)
                f.write(text)
            time.sleep(self.rng.uniform(0.001, 0.005))


# -- after it settles --------------------------------------------------------------


def settle(devices: list[Any], sync: Any) -> bool:
    """Daemons idle, then sync rounds until one carries nothing."""
    from helpers import wait_for
    from test_two_devices import caught_up

    try:
        for _ in range(60):
            for d in devices:
                wait_for(lambda d=d: caught_up(d), timeout=120)
            if sync.round() == 0:
                for d in devices:
                    wait_for(lambda d=d: caught_up(d), timeout=120)
                return True
    except AssertionError:  # a daemon never caught up (a batch that keeps failing)
        pass
    return False


LIVE = ("SELECT id, content, created, json_extract(metadata, '$.version') FROM traces "
        "WHERE kind = 'memory' AND status = 'active' ORDER BY id")
VERSIONS = ("SELECT id, json_extract(trace, '$.content'), reason, memory_id, superseded_at "
            "FROM memory_versions ORDER BY id")
FORGOTTEN = "SELECT memory_id, reason, at FROM forgotten ORDER BY memory_id"
FORGOTTEN_TEXT = "SELECT json_extract(trace, '$.content') FROM forgotten"
ATTRIBUTES = ("SELECT t.id, t.type, (SELECT group_concat(tag, ' ') FROM (SELECT tag FROM trace_tags g "
              "WHERE g.trace_id = t.id ORDER BY tag)) FROM traces t "
              "WHERE kind = 'memory' AND status = 'active' ORDER BY id")
#: The durable state a consolidation run makes, which the history logs share.
SHARED = {
    "merges": "SELECT memory_id, survivor_id FROM merges",
    "runs": "SELECT id, status, trigger FROM consolidation_runs",
    "actions": "SELECT run_id, seq, kind, ids FROM consolidation_actions",
    "links": "SELECT source_id, kind, target_id FROM memory_links",
    "contradictions": "SELECT older_id, newer_id, status FROM contradictions",
}


def state_rows(data_dir: Path, sql: str) -> list[tuple]:
    """Rows of a device's durable state (read-only)."""
    from two_devices import read_rows

    return read_rows(data_dir, "state.db", sql)


def history_of(store: Any, ids: list[str]) -> dict[str, list[tuple]]:
    """``history <id>`` of each memory as (id, content, reason) rows."""
    return {i: [(v.id, v.content, v.reason) for v in store.history(i)] for i in ids}


def lost_tokens(d: Any, expected: set[str], files_of: Any) -> list[str]:
    """Expected tokens found nowhere on the device (vault files, index, state)."""
    from test_two_devices import index_rows

    text = " ".join(b.decode("utf-8", "replace") for b in files_of(d.root).values())
    text += " ".join(c or "" for (c,) in index_rows(d, "SELECT content FROM traces"))
    text += " ".join(r[1] or "" for r in state_rows(d.data_dir, VERSIONS))
    text += " ".join(c or "" for (c,) in state_rows(d.data_dir, FORGOTTEN_TEXT))  # a forgotten memory's last text
    return sorted(expected - set(TOKEN.findall(text)))


def note_counts(d: Any) -> tuple[int, int, int]:
    """(ids shared by live notes, phantoms, live notes and memories that differ)."""
    from test_two_devices import index_rows

    from memvault.vault_io.parser import parse_note

    ids: Counter[str] = Counter()
    indexed = dict(index_rows(d, "SELECT path, trace_id FROM files WHERE kind = 'note'"))
    folder = d.root / "Memory"
    for p in folder.rglob("*.md") if folder.exists() else []:
        if ".sync-conflict-" in p.name or any(part.startswith(".") for part in p.relative_to(d.root).parts):
            continue
        rel = p.relative_to(d.root).as_posix()
        note = parse_note(rel, p.read_bytes())
        if "conflict_of" in note.frontmatter:
            continue
        if not note.frontmatter.get("id"):  # made by hand: the id the device derived for it
            ids[str(indexed.get(rel, f"unindexed:{rel}"))] += 1
            continue
        ids[str(note.frontmatter["id"])] += 1
    shared = sum(1 for n in ids.values() if n > 1)
    phantoms = index_rows(d, "SELECT id FROM traces t WHERE kind = 'memory' AND status = 'active' "
                             "AND NOT EXISTS (SELECT 1 FROM files f WHERE f.trace_id = t.id)")
    live = {i for (i,) in index_rows(d, "SELECT id FROM traces WHERE kind = 'memory' AND status = 'active'")}
    return shared, len(phantoms), len(set(ids) ^ live)


def type_mismatches(d: Any) -> list[str]:
    """Live memory notes whose memory's type in the index is not the one
    the note says (its front-matter ``type``, else its folder)."""
    from test_two_devices import index_rows

    from memvault.store.index.classify import memory_type
    from memvault.vault_io.parser import parse_note

    indexed = {p: (i, t) for p, i, t in index_rows(
        d, "SELECT f.path, t.id, t.type FROM files f JOIN traces t ON t.id = f.trace_id "
           "WHERE t.kind = 'memory' AND t.status = 'active'")}
    out = []
    for path, (i, type_) in sorted(indexed.items()):
        try:
            note = parse_note(path, (d.root / path).read_bytes())
        except FileNotFoundError:
            out.append(f"{i} {path}: no file")
            continue
        wanted, _ = memory_type(note, "Memory")
        if wanted != type_:
            out.append(f"{i} {path}: {type_} in the index, {wanted} by the note")
    return out


def hand_deletions(devices: list[Any], driver: Driver) -> list[str]:
    """Memories whose note a person deleted, nothing aimed at them after:
    each is live on both devices (its note came back: an edit beat the
    deletion) or forgotten on both as ``note deleted in the vault`` (or, when
    a forget or a merge aimed at it before, forgotten alike on both)."""
    from test_two_devices import index_rows

    from memvault.store.memories.rows import NOTE_DELETED

    out = []
    ids = sorted(i for i in driver.hand_deleted if driver.touched.get(i) == "delete_memory_note")
    for i in ids:
        seen = []
        for d in devices:
            row = index_rows(d, "SELECT status, reason FROM traces WHERE id = ?", (i,))
            forgot = state_rows(d.data_dir, f"SELECT reason FROM forgotten WHERE memory_id = '{i}'")
            seen.append((row[0][0] if row else None, forgot[0][0] if forgot else None))
        live = [s == "active" for s, _ in seen]
        if all(live):
            continue
        # A forget or a merge before the deletion (on a device the deletion
        # had not reached) may be what both devices keep; they must agree.
        other_end = bool(driver.aimed.get(i, set()) & {"forget", "consolidate", "merge", "undo_consolidation"})
        if any(live) or seen[0] != seen[1] or (not other_end and seen[0] != ("deleted", NOTE_DELETED)):
            out.append(f"{i}: {seen}")
    return out


def rebuild_there(a: Any, b: Any, forgotten_a: list[tuple], live_a: list[tuple],
                  history_a: dict[str, list[tuple]], merges_a: list[tuple]) -> dict[str, Any]:
    """Stop b, delete its data dir, ``memvault rebuild`` as a process; compare with a."""
    from test_two_devices import index_rows

    from memvault.store.memory_store import MemoryStore
    from memvault.store.settings import load_settings

    b.stop()
    b.runner, b.cli = None, None
    shutil.rmtree(b.data_dir)
    t = time.perf_counter()
    proc = subprocess.run([str(MEMVAULT_EXE), "--vault", str(b.root), "rebuild", "--no-embed", "--json"],
                          capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - t
    out: dict[str, Any] = {"rebuild_exit": proc.returncode, "rebuild_seconds": round(seconds, 2)}
    if proc.returncode != 0:
        out["rebuild_stderr"] = proc.stderr[-2000:]
        out.update(rebuild_list=len(live_a), rebuild_history=len(history_a), rebuild_forgotten=len(forgotten_a),
                   rebuild_merges=len(merges_a))
        return out
    live_b = index_rows(b, LIVE)
    out["rebuild_list"] = len(set(live_a) ^ set(live_b))
    out["rebuild_forgotten"] = len(set(forgotten_a) ^ set(state_rows(b.data_dir, FORGOTTEN)))
    out["rebuild_merges"] = len(set(merges_a) ^ set(state_rows(b.data_dir, SHARED["merges"])))
    fresh = MemoryStore(b.root, load_settings({"vault": str(b.root)}), data_dir=b.data_dir)
    try:
        history_b = history_of(fresh, [i for (i, *_) in live_a if i in {r[0] for r in live_b}])
    finally:
        fresh.close()
    out["rebuild_history"] = sum(1 for i in history_a if history_a[i] != history_b.get(i))
    out["rebuild_list_of_hand_notes"] = sum(1 for r in set(live_a) ^ set(live_b) if str(r[1]).startswith("Hand wrote"))
    out["rebuild_differences"] = {
        "list": [list(r) for r in sorted(set(live_a) ^ set(live_b))][:20],
        "history": [i for i in history_a if history_a[i] != history_b.get(i)][:20],
    }
    return out


def check(devices: list[Any], sync: Any, driver: Driver, files_of: Any, quiet: float) -> dict[str, Any]:
    """Settle, then every count of the module docstring."""
    from test_two_devices import index_rows

    a, b = devices
    counts: dict[str, Any] = {}
    t = time.perf_counter()
    settled = settle(devices, sync)
    details: dict[str, Any] = {"settle_seconds": round(time.perf_counter() - t, 2)}
    counts["unsettled"] = 0 if settled else 1

    expected = driver.written - driver.removed
    for d in devices:
        lost = lost_tokens(d, expected, files_of)
        counts[f"lost_tokens_{d.name}"] = len(lost)
        details[f"lost_tokens_{d.name}"] = lost[:50]

    live_a, live_b = index_rows(a, LIVE), index_rows(b, LIVE)
    diff = sorted(set(live_a) ^ set(live_b))
    counts["list_differences"] = len(diff)
    details["list_differences"] = [list(r) for r in diff][:20]
    details["list_differences_of_hand_notes"] = sum(1 for r in diff if str(r[1]).startswith("Hand wrote"))

    va, vb = state_rows(a.data_dir, VERSIONS), state_rows(b.data_dir, VERSIONS)
    fa, fb = state_rows(a.data_dir, FORGOTTEN), state_rows(b.data_dir, FORGOTTEN)
    ids = [i for (i, *_) in live_a]
    ha = history_of(a.cli, ids)
    hb = history_of(b.cli, [i for i in ids if i in {r[0] for r in live_b}])
    shown = [i for i in ids if ha[i] != hb.get(i)]
    counts["history_differences"] = len(set(va) ^ set(vb)) + len(set(fa) ^ set(fb)) + len(shown)
    details["history_differences"] = {"versions": [list(r) for r in sorted(set(va) ^ set(vb))][:10],
                                      "forgotten": [list(r) for r in sorted(set(fa) ^ set(fb))][:10],
                                      "shown": shown[:10]}

    attrs = [index_rows(d, ATTRIBUTES) for d in devices]
    counts["attribute_differences"] = len(set(attrs[0]) ^ set(attrs[1]))
    details["attribute_differences"] = [list(r) for r in sorted(set(attrs[0]) ^ set(attrs[1]))][:20]
    shared_rows = {k: [state_rows(d.data_dir, sql) for d in devices] for k, sql in SHARED.items()}
    shared_diff = {k: sorted(set(ra) ^ set(rb), key=str) for k, (ra, rb) in shared_rows.items()}
    counts["shared_state_differences"] = sum(len(v) for v in shared_diff.values())
    details["shared_state_differences"] = {k: [list(r) for r in v][:10] for k, v in shared_diff.items() if v}
    mismatched = {d.name: type_mismatches(d) for d in devices}
    counts["type_mismatches"] = sum(len(v) for v in mismatched.values())
    details["type_mismatches"] = {k: v[:10] for k, v in mismatched.items() if v}
    wrong = hand_deletions(devices, driver)
    counts["hand_deletions_wrong"] = len(wrong)
    details["hand_deletions_wrong"] = wrong[:20]

    for key in ("shared_ids", "phantoms", "notes_without_memory"):
        counts[key] = 0
    for d in devices:
        shared, phantoms, unmatched = note_counts(d)
        counts["shared_ids"] += shared
        counts["phantoms"] += phantoms
        counts["notes_without_memory"] += unmatched

    before = [files_of(d.root) for d in devices]
    end = time.monotonic() + quiet
    changed: set[str] = set()
    while time.monotonic() < end:  # a quiet window: any write in it is a ping-pong
        now = [files_of(d.root) for d in devices]
        for d, old, new in zip(devices, before, now):
            changed |= {f"{d.name}:{p}" for p in set(old) | set(new) if old.get(p) != new.get(p)}
        time.sleep(0.1)
    counts["quiet_window_changes"] = len(changed)
    details["quiet_window_changes"] = sorted(changed)[:20]

    details.update(
        memories_live=len(live_a), memories_forgotten=len(fa), versions=len(va),
        hand_deleted=len(driver.hand_deleted), merged=len(driver.merged),
        merges=len(shared_rows["merges"][0]), consolidation_runs=len(shared_rows["runs"][0]),
        conflict_copies=sum(1 for p in files_of(a.root) if ".sync-conflict-" in p),
        history_logs={d.name: sorted(p for p in files_of(d.root) if "/." in "/" + p and p.endswith(".jsonl"))[:10]
                      for d in devices},
    )
    rebuilt = rebuild_there(a, b, fa, live_a, ha, shared_rows["merges"][0])
    details.update({k: v for k, v in rebuilt.items() if not k.startswith("rebuild_") or k in
                    ("rebuild_exit", "rebuild_seconds", "rebuild_stderr", "rebuild_differences",
                                                   "rebuild_list_of_hand_notes")})
    for key in ("rebuild_list", "rebuild_history", "rebuild_forgotten", "rebuild_merges"):
        counts[key] = rebuilt[key]
    counts["op_errors"] = len(driver.errors)
    return {"counts": counts, "details": details}


def main() -> int:
    """Run the devices for ``--seconds``, settle, count, write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=120.0, help="how long both sides keep changing things")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--contention", action="store_true", help="both sides hit the same memories and notes")
    ap.add_argument("--quiet", type=float, default=3.0, help="the quiet window after settling (s)")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder (printed) for a look")
    args = ap.parse_args()

    tmp = mktemp("memvault-bench-two-")
    isolate_env(tmp / "home")
    info = machine_info()
    result: dict[str, Any] = {"args": vars(args), "machine": info}
    started: list[Any] = []
    try:
        devices, sync, files_of = build(tmp)
        rng = random.Random(args.seed)
        driver = Driver(devices, sync, rng, args.contention)
        for d in devices:
            d.start()
            started.append(d)
        sync.round()
        t0 = time.monotonic()
        while time.monotonic() - t0 < args.seconds:
            driver.step()
            if rng.random() < 0.3:  # people pause; the daemons and the sync tool get between steps
                time.sleep(rng.uniform(0, 0.05))
        ran = time.monotonic() - t0
        checked = check(devices, sync, driver, files_of, args.quiet)
        result.update(checked)
        result["run"] = {
            "seconds": round(ran, 1), "steps": sum(driver.ops.values()), "ops": dict(driver.ops),
            "refused": dict(driver.refused), "errors": driver.errors[:20], "tokens_written": len(driver.written),
            "tokens_removed": len(driver.removed), "sync_rounds": sync.rounds,
            "sync_conflicts_written": sync.conflicts_written, "rounds_cut_by_a_vanished_file": sync.vanished,
        }
    finally:
        for d in started:
            try:
                d.stop()
            except Exception:  # noqa: BLE001 - free the other device too
                pass
        if started:
            log = OUT / f"two_devices-s{args.seed}{'-c' if args.contention else ''}-ops.log"
            OUT.mkdir(parents=True, exist_ok=True)
            log.write_text("\n".join(driver.log) + "\n")
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    run = result["run"]
    print(f"seed {args.seed}, {run['seconds']} s, contention {args.contention}: {run['steps']} steps, "
          f"{run['tokens_written']} tokens, {run['sync_rounds']} sync rounds, "
          f"{run['sync_conflicts_written']} sync-conflict copies, {result['details']['memories_live']} live memories")
    for key, value in result["counts"].items():
        print(f"{key}: {value}")
    total = sum(result["counts"].values())
    result["all_zero"] = total == 0
    path = write_json(f"two_devices-s{args.seed}{'-c' if args.contention else ''}", result)
    print(json.dumps({"all_zero": total == 0, "json": str(path)}))
    return 0 if total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
