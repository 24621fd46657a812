"""The daemon loop on real vaults with the real inotify observer, in a thread."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
from pathlib import Path

import pytest
from helpers import wait_for, write
from test_daemon_support import content, indexed, on_disk, running

from memvault.daemon import watch
from memvault.store.index.reconcile import Indexer
from memvault.store.memory_store import MemoryStore

# watchdog re-adds the watch of a folder it saw both by event and by walking
# (mkdir -p, then files): a harmless RuntimeWarning from its internals.
pytestmark = pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")


def presync(root: Path) -> None:
    v = MemoryStore.open(str(root))
    try:
        v.sync()
    finally:
        v.close()


def settled(runner) -> bool:
    return len(runner.queue) == 0


# -- bursts and folders ------------------------------------------------------------


def test_burst_of_1000_files_all_indexed_in_few_batches(vault: Path) -> None:
    (vault / "burst").mkdir()
    with running(vault) as (runner, rec):
        for i in range(1000):
            (vault / "burst" / f"note {i:04}.md").write_text(f"# Note {i}\nburst word{i}\n")
        wait_for(lambda: len(indexed(vault, "burst/")) == 1000, timeout=30)
        # The index commits before the hook hears of it: wait for the hook too.
        wait_for(lambda: len(rec.reindexed()) == 1000 and settled(runner))
        batches = rec.of("batch")
        counts = rec.reindexed()
    assert len(batches) <= 20, f"{len(batches)} batches for one burst"
    assert set(counts.values()) == {1}, "each new note indexed exactly once"
    assert "burst word999" in (content(vault, "burst/note 0999.md") or "")


def test_nested_new_folders_filled_at_once(vault: Path) -> None:
    with running(vault) as (runner, _):
        deep = vault / "a" / "b" / "c"
        deep.mkdir(parents=True)  # mkdir -p, then files at once: watches may come late
        for rel in ("a/top.md", "a/b/mid.md", "a/b/c/deep.md", "a/b/c/img.png"):
            write(vault, rel, f"text of {rel}")
        wait_for(lambda: indexed(vault, "a/") == {"a/top.md", "a/b/mid.md", "a/b/c/deep.md", "a/b/c/img.png"})
        write(vault, "a/b/c/later.md", "written after the watch exists")
        wait_for(lambda: "a/b/c/later.md" in indexed(vault, "a/"))


def test_folder_moved_in_renamed_and_moved_out(vault: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "Projects"
    for i in range(30):
        write(outside, f"sub/p{i}.md", f"project note {i}")
    write(outside, "readme.md", "the readme")
    expected = {f"Projects/sub/p{i}.md" for i in range(30)} | {"Projects/readme.md"}
    with running(vault) as (runner, rec):
        os.rename(outside, vault / "Projects")
        wait_for(lambda: indexed(vault, "Projects/") == expected)

        os.rename(vault / "Projects", vault / "Work")
        renamed = {"Work/" + p.removeprefix("Projects/") for p in expected}
        wait_for(lambda: indexed(vault, "Work/") == renamed and not indexed(vault, "Projects/"))
        # A renamed folder keeps its notes' identities: moves, not delete + add.
        wait_for(lambda: sum(s.moved for _, _, s in rec.of("batch")) == len(expected))
        assert rec.deleted() == 0

        os.rename(vault / "Work", tmp_path / "outside" / "Work")
        wait_for(lambda: not indexed(vault, "Work/"))
    assert indexed(vault) == set()


def test_deleted_folder_removes_its_notes(vault: Path) -> None:
    for i in range(10):
        write(vault, f"Old/n{i}.md", f"old {i}")
    write(vault, "keep.md", "kept")
    presync(vault)
    with running(vault):
        shutil.rmtree(vault / "Old")
        wait_for(lambda: indexed(vault) == {"keep.md"})


# -- editor save styles ----------------------------------------------------------------


def save_in_place(p: Path, text: str) -> None:  # Obsidian, VS Code, nano
    with open(p, "w", encoding="utf-8") as fh:
        fh.write(text[: len(text) // 2])
        fh.flush()
        fh.write(text[len(text) // 2 :])


def save_vim(p: Path, text: str) -> None:
    """vim's default: probe file 4913, swap file, backup by rename, new file, backup removed."""
    swp = p.with_name(f".{p.name}.swp")
    swp.write_bytes(b"swap")
    probe = p.with_name("4913")
    probe.write_bytes(b"")
    probe.unlink()
    backup = p.with_name(p.name + "~")
    os.rename(p, backup)
    with open(p, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    backup.unlink()
    swp.unlink()


def save_jetbrains(p: Path, text: str) -> None:
    """JetBrains "safe write": temp file, original to ___jb_old___, temp renamed, old removed."""
    tmp = p.with_name(p.name + "___jb_tmp___")
    old = p.with_name(p.name + "___jb_old___")
    tmp.write_text(text, encoding="utf-8")
    os.rename(p, old)
    os.rename(tmp, p)
    old.unlink()


def save_atomic_replace(p: Path, text: str) -> None:  # write temp, os.replace over the note
    tmp = p.with_name(f"{p.stem}.tmp.{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, p)


def save_delete_then_create(p: Path, text: str) -> None:
    p.unlink()
    p.write_text(text, encoding="utf-8")


@pytest.mark.parametrize(
    "save", [save_in_place, save_vim, save_jetbrains, save_atomic_replace, save_delete_then_create],
    ids=lambda f: f.__name__.removeprefix("save_"),
)
def test_each_editor_save_style_reindexes_once(vault: Path, save) -> None:
    write(vault, "Daily/note.md", "# Note\nfirst version\n")
    write(vault, "other.md", "links to [[note]]")
    presync(vault)
    with running(vault, debounce_ms=150) as (runner, rec):
        save(vault / "Daily" / "note.md", "# Note\nsecond version with marker zebra\n")
        wait_for(lambda: "zebra" in (content(vault, "Daily/note.md") or ""))
        wait_for(lambda: rec.reindexed() and settled(runner))
        counts = rec.reindexed()
    assert counts == {"Daily/note.md": 1}, counts
    assert indexed(vault) == {"Daily/note.md", "other.md"}, "no temp or backup file left in the index"
    assert rec.deleted() == 0


# -- hidden, ignored, vault settings ---------------------------------------------------------


def test_hidden_and_ignored_paths_are_not_hints(vault: Path) -> None:
    write(vault, ".obsidian/app.json", json.dumps({"userIgnoreFilters": ["Templates/"]}))
    presync(vault)
    with running(vault) as (runner, rec):
        write(vault, ".obsidian/workspace.json", "{}")
        write(vault, ".trash/old.md", "trashed")
        write(vault, ".git/objects/x", "blob")
        write(vault, "Templates/daily.md", "template")
        write(vault, "visible.md", "seen")
        wait_for(lambda: "visible.md" in rec.hinted())
        hinted = rec.hinted()
    assert hinted == {"visible.md"}
    assert indexed(vault) == {"visible.md"}


def test_changed_excluded_files_setting_triggers_a_rescan(vault: Path) -> None:
    write(vault, ".obsidian/app.json", "{}")
    write(vault, "Archive/a.md", "archived")
    write(vault, "b.md", "current")
    presync(vault)
    with running(vault) as (runner, rec):
        write(vault, ".obsidian/app.json", json.dumps({"userIgnoreFilters": ["Archive/"]}))
        wait_for(lambda: indexed(vault) == {"b.md"})
        write(vault, "Archive/new.md", "ignored from now on")
        write(vault, "c.md", "not ignored")
        wait_for(lambda: "c.md" in indexed(vault))
        wait_for(lambda: rec.of("rescan"))  # the settings change ran a full rescan
    assert "Archive/new.md" not in indexed(vault)


# -- missed events, vanished vault, fallback ---------------------------------------------------


def test_rescan_brings_index_in_line_after_missed_events(vault: Path) -> None:
    for i in range(300):
        write(vault, f"n/{i:03}.md", f"note {i} original")
    presync(vault)
    # A polling observer that never polls stands for an observer that lost
    # every event; only the periodic rescan can see these 500 changes.
    with running(vault, polling=True, poll_interval=3600, rescan_interval=1.0) as (runner, rec):
        for i in range(100):
            (vault / "n" / f"{i:03}.md").unlink()
        for i in range(100, 250):
            (vault / "n" / f"{i:03}.md").write_text(f"note {i} edited walrus")
        for i in range(250):
            write(vault, f"m/{i:03}.md", f"new note {i}")
        expected = on_disk(vault)
        wait_for(lambda: indexed(vault) == expected, timeout=30)
        wait_for(lambda: "walrus" in (content(vault, "n/249.md") or ""))
        wait_for(lambda: rec.of("rescan"))
        assert not rec.of("batch"), "no events reached the daemon"
    assert runner.mode == "stopping"


def test_vault_moved_away_and_back_deletes_nothing(vault: Path, tmp_path: Path) -> None:
    for i in range(20):
        write(vault, f"v/{i}.md", f"kept {i}")
    presync(vault)
    before = indexed(vault)
    away = tmp_path / "away"
    with running(vault) as (runner, rec):
        os.rename(vault, away)  # unmounted disk, renamed folder: the path is gone
        wait_for(lambda: runner.mode == "waiting", timeout=10)
        (away / "v" / "0.md").write_text("edited while away")
        write(away, "new.md", "added while away")
        assert indexed(vault) == before, "a vanished vault deletes nothing"
        os.rename(away, vault)
        wait_for(lambda: runner.mode == "watch" and "new.md" in indexed(vault), timeout=10)
        wait_for(lambda: content(vault, "v/0.md") == "edited while away")
        write(vault, "after.md", "watched again")
        wait_for(lambda: "after.md" in indexed(vault))
    assert rec.deleted() == 0
    assert indexed(vault) == before | {"new.md", "after.md"}


def test_vault_deleted_and_recreated(vault: Path) -> None:
    for i in range(5):
        write(vault, f"{i}.md", f"old {i}")
    presync(vault)
    with running(vault) as (runner, rec):
        shutil.rmtree(vault)
        wait_for(lambda: runner.mode == "waiting", timeout=10)
        vault.mkdir()
        write(vault, "0.md", "old 0")
        write(vault, "fresh.md", "a new start")
        wait_for(lambda: runner.mode == "watch" and indexed(vault) == {"0.md", "fresh.md"}, timeout=10)
        write(vault, "x/later.md", "the new folder is watched")
        wait_for(lambda: "x/later.md" in indexed(vault))


def test_inotify_watch_limit_falls_back_to_polling(vault: Path, monkeypatch, caplog) -> None:
    class FullInotify(watch.Observer):  # type: ignore[misc, valid-type]
        def start(self) -> None:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")

    monkeypatch.setattr(watch, "Observer", FullInotify)
    caplog.set_level(logging.WARNING, logger="memvault.daemon")
    with running(vault, poll_interval=0.2) as (runner, _):
        assert runner.mode == "poll"
        write(vault, "polled.md", "seen by polling")
        wait_for(lambda: "polled.md" in indexed(vault))
    msg = next(r.getMessage() for r in caplog.records if "inotify" in r.getMessage())
    assert "inotify watch limit reached (fs.inotify.max_user_watches=" in msg
    assert "falling back to polling every 0.2 s" in msg


def test_partly_watched_vault_falls_back_to_polling(vault: Path, monkeypatch, caplog) -> None:
    write(vault, "a/b.md", "x")
    # As if max_user_watches ran out half-way: fewer watches than folders.
    monkeypatch.setattr(watch, "watchable_dirs", lambda root: 10_000)
    caplog.set_level(logging.WARNING, logger="memvault.daemon")
    with running(vault, poll_interval=0.2) as (runner, _):
        assert runner.mode == "poll"
    assert any("falling back to polling" in r.getMessage() for r in caplog.records)


def test_watch_limit_reached_later_switches_to_polling_at_the_rescan(vault: Path, monkeypatch, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="memvault.daemon")
    with running(vault, rescan_interval=0.3, poll_interval=0.2) as (runner, rec):
        assert runner.mode == "watch"
        # From now on, folders outnumber watches (as if new ones went unwatched).
        monkeypatch.setattr(watch, "watchable_dirs", lambda root: 10_000)
        wait_for(lambda: runner.mode == "poll")
        write(vault, "later/polled.md", "found by polling")
        wait_for(lambda: "later/polled.md" in indexed(vault))
    assert any("falling back to polling" in r.getMessage() for r in caplog.records)


def test_inotify_watches_cover_every_folder(vault: Path) -> None:
    for rel in ("a/b/c/x.md", "d/y.md", ".obsidian/plugins/p/data.json"):
        write(vault, rel, "x")
    with running(vault) as (runner, _):
        assert runner.mode == "watch"
        assert watch.inotify_watches(runner.watcher._observer) == watch.watchable_dirs(vault) == 8


# -- shutdown and hooks ------------------------------------------------------------------


def test_stop_applies_the_pending_queue_at_once(vault: Path) -> None:
    with running(vault, debounce_ms=60_000) as (runner, rec):
        write(vault, "pending.md", "not yet due")
        wait_for(lambda: len(runner.queue) == 1)
    assert [kind for kind, _, _ in rec.of("final")] == ["final"]
    assert "pending.md" in indexed(vault)


def test_interrupted_memory_write_is_finished_by_the_daemon(vault: Path) -> None:
    from memvault.store.db import records as rec
    from memvault.store.db.connection import write_transaction
    from memvault.store.memories import rows as mem

    v = MemoryStore.open(str(vault))
    r = v.memories.add("Water the ferns.", "todo")
    t = rec.get_trace(v.con, r.id)
    t.content = "Water the ferns every Friday."
    with write_transaction(v.con):  # a CLI writer that died before writing the note
        rec.put_trace(v.con, t)
        mem.put_outbox(v.con, t, "write", r.path, "0" * 64)
        v.con.execute("UPDATE state.outbox SET created = created - 60")
    v.close()
    with running(vault):
        wait_for(lambda: "every Friday" in (vault / r.path).read_text(encoding="utf-8"))
        wait_for(lambda: v.con.execute("SELECT count(*) FROM state.outbox").fetchone()[0] == 0)


def test_state_file_published(vault: Path) -> None:
    from memvault.daemon.status import read_state

    with running(vault, publish_interval=0.05) as (runner, rec):
        write(vault, "a.md", "x")
        try:
            wait_for(lambda: (read_state(runner.store.data_dir) or {}).get("batches") == 1, timeout=3)
        except AssertionError:
            print(read_state(runner.store.data_dir), runner.batches, rec.calls)
            raise
        state = read_state(runner.store.data_dir)
        assert state["pid"] == os.getpid() and state["mode"] == "watch" and state["queue"] == 0


def test_indexer_is_the_one_used(vault: Path) -> None:
    # The runner confirms hints through Indexer.sync_paths: a path that
    # changed back to its indexed bytes is not rewritten.
    write(vault, "same.md", "unchanged")
    presync(vault)
    with running(vault) as (runner, rec):
        (vault / "same.md").write_text("unchanged")
        wait_for(lambda: rec.of("batch") and settled(runner))
        assert rec.reindexed() == {}
    assert isinstance(MemoryStore.open(str(vault)).reconciler, Indexer)


def test_busy_index_keeps_the_hints_and_retries(vault: Path, monkeypatch, caplog) -> None:
    import apsw

    from memvault.store.db import connection as db

    monkeypatch.setattr(db, "BUSY_TIMEOUT_MS", 50)  # the daemon's connection gives up fast
    monkeypatch.setattr(db, "WRITE_WAIT_S", 0.2)
    caplog.set_level(logging.WARNING, logger="memvault.daemon")
    with running(vault) as (runner, _):
        other = apsw.Connection(str(runner.store.index_path))
        other.execute("BEGIN IMMEDIATE")  # a CLI writer holding the write lock
        try:
            write(vault, "waits.md", "written while the index is locked")
            wait_for(lambda: any("index busy" in r.getMessage() for r in caplog.records))
        finally:
            other.execute("ROLLBACK")
            other.close()
        wait_for(lambda: "waits.md" in indexed(vault))


def test_inotify_queue_overflow_triggers_a_rescan(vault: Path) -> None:
    with running(vault) as (runner, rec):  # scheduled rescans are off here
        # watchdog only logs an overflow (from its inotify reader thread):
        logging.getLogger("watchdog.observers.inotify_c").warning(
            "Inotify queue overflowed; filesystem events were lost"
        )
        wait_for(lambda: rec.of("rescan"))


def test_a_failing_batch_is_logged_and_the_daemon_goes_on(vault: Path, monkeypatch, caplog) -> None:
    real = Indexer.sync_paths
    calls = []

    def flaky(self, paths):
        calls.append(set(paths))
        if len(calls) == 1:
            raise RuntimeError("a bug in a derived-data observer")
        return real(self, paths)

    monkeypatch.setattr(Indexer, "sync_paths", flaky)
    caplog.set_level(logging.ERROR, logger="memvault.daemon")
    with running(vault) as (runner, _):
        write(vault, "first.md", "lost to the failing batch")
        wait_for(lambda: runner.failures == 1)
        write(vault, "second.md", "indexed normally")
        wait_for(lambda: "second.md" in indexed(vault))
    assert any("the next rescan retries them" in r.getMessage() for r in caplog.records)


def test_store_write_with_daemon_running_is_one_file_write(vault: Path) -> None:

    with running(vault) as (runner, rec):
        v = MemoryStore.open(str(vault))
        try:
            result = v.memories.add("Tea at four, every day.", "event")
        finally:
            v.close()
        note = vault / result.path
        first = (note.stat().st_ino, note.stat().st_mtime_ns, note.read_bytes())
        # the daemon sees the create event, confirms it by hash, and leaves it
        wait_for(lambda: result.path in rec.hinted())
        wait_for(lambda: len(runner.queue) == 0)
        assert (note.stat().st_ino, note.stat().st_mtime_ns, note.read_bytes()) == first
        assert result.path not in rec.reindexed()  # already indexed by its writer: nothing to redo
        assert sorted(p.name for p in (vault / "Memory" / "episodic").iterdir()) == [note.name]


def test_watchdogs_double_watch_warning_stays_out_of_the_daemons_log() -> None:
    """The daemon silences only watchdog's benign "watched twice" warning
    (folders made in a burst); other warnings of that module still show."""
    import subprocess
    import sys

    code = (
        "import warnings, memvault.daemon.watch\n"
        "for text in ('Callback with id 1 already exists for watch <w>. It will be Overwritten.', 'another thing'):\n"
        "    warnings.warn_explicit(text, RuntimeWarning, 'inotify.py', 365, module='watchdog.observers.inotify')\n"
    )
    out = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True, text=True, check=True)
    assert "already exists" not in out.stderr and "another thing" in out.stderr
