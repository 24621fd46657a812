"""Faults at random points: a full disk, I/O errors, a read-only vault, SIGKILL.

A loop injects one fault at a time into real commands: ``OSError`` (ENOSPC,
EIO, EACCES, EROFS) from the vault writer's system calls, SQLite's own
full-disk and I/O errors from the databases (through a VFS that fails
writes on demand), and SIGKILL of a ``memvault`` process at a random moment
of ``add``, ``update`` and ``sync``, of ``consolidate`` (on a store where a
run merges, archives, promotes, flags and closes tasks), ``consolidate
--undo`` and ``merge``, and of a running daemon in the middle of a batch of
vault edits, an agent's ``add`` and its scheduled consolidation. After each fault:

- the failure was one clear line (exit 1, no traceback);
- both databases pass ``integrity_check``;
- no partial note and no visible temp file is in the vault;
- no text a command reported as saved is lost (for consolidation: every
  memory text live before is live, forgotten or an earlier version, and
  every live memory has exactly one note);
- the next run completes whatever was pending (a killed consolidation's log
  is settled: undoing every run, newest first, brings every text back live;
  a second run has nothing to do; an undo cut short finishes when run again).

Bounded for CI; ``HYPOTHESIS_PROFILE=dev`` (or MEMVAULT_FAULT_ROUNDS) loops longer.
The bugs these loops found are pinned at the end by deterministic tests
(tests/test_write_recovery.py has one for each kill point).
"""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import apsw
import pytest
from click.testing import CliRunner
from helpers import opened, wait_for, write

from memvault.cli.main import cli
from memvault.store.location import vault_data_dir
from memvault.vault_io import atomic, replace
from memvault.vault_io.gate import Gate

ROUNDS = int(os.environ.get("MEMVAULT_FAULT_ROUNDS", "60" if os.environ.get("HYPOTHESIS_PROFILE") == "dev" else "12"))
MEMVAULT = [sys.executable, "-c", "from memvault.cli.main import main; main()"]
ERRNOS = [errno.ENOSPC, errno.EIO, errno.EACCES, errno.EROFS]


class FaultyOS:
    """``os`` for the vault writer, failing the ``nth`` call of the write path."""

    CALLS = ("open", "fsync", "replace", "rename", "link")

    def __init__(self, nth: int, code: int) -> None:
        self.nth, self.code, self.count = nth, code, 0

    def __getattr__(self, name: str) -> Any:
        real = getattr(os, name)
        if name not in self.CALLS:
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            if self.count == self.nth:
                raise OSError(self.code, os.strerror(self.code), str(args[0]) if args else None)
            return real(*args, **kwargs)

        return call


class FailingFile(apsw.VFSFile):
    """A database file whose writes fail while :attr:`failing` is set: after
    :attr:`countdown` more writes succeed, when that is set, and for
    :attr:`burst` writes, when that is set (a disk that fails for a moment)."""

    failing: type[apsw.Error] | None = None
    countdown: int | None = None
    burst: int | None = None
    #: Fail only appends to the write-ahead logs (commits), not the closing checkpoint.
    wal_only = False

    def __init__(self, vfs: str, name: Any, flags: list[int]) -> None:
        super().__init__(vfs, name, flags)
        self.wal = str(name.filename() if hasattr(name, "filename") else name).endswith("-wal")

    def xWrite(self, data: bytes, offset: int) -> None:  # noqa: N802 - SQLite's name
        if FailingFile.failing is not None and (self.wal or not FailingFile.wal_only):
            if FailingFile.countdown:
                FailingFile.countdown -= 1
            elif FailingFile.burst != 0:
                if FailingFile.burst is not None:
                    FailingFile.burst -= 1
                raise FailingFile.failing("injected disk failure")
        super().xWrite(data, offset)


class FailingVFS(apsw.VFS):
    """The default VFS for the test: real files, writes failing on demand."""

    def __init__(self) -> None:
        super().__init__("memvault-faulty", "unix", makedefault=True)

    def xOpen(self, name: Any, flags: list[int]) -> FailingFile:  # noqa: N802 - SQLite's name
        return FailingFile("unix", name, flags)


@pytest.fixture
def failing_vfs():  # type: ignore[no-untyped-def]
    vfs = FailingVFS()
    yield FailingFile
    FailingFile.failing, FailingFile.countdown, FailingFile.burst, FailingFile.wal_only = None, None, None, False
    vfs.unregister()


def run(vault: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


def one_clean_line(r: Any) -> None:
    """A failure that is one line on stderr, exit 1, no traceback."""
    assert r.exit_code == 1, (r.exit_code, r.output)
    errors = [line for line in r.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) >= 1 and "Traceback" not in r.output, r.output


def sound(vault: Path) -> None:
    """Both databases intact, no visible temp or partial file, nothing pending."""
    with opened(vault) as v:
        for schema in ("main", "state"):
            assert v.con.execute(f"PRAGMA {schema}.integrity_check").fetchall() == [("ok",)]
    visible = [p for p in vault.rglob("*") if p.is_file() and not any(s.startswith(".") for s in p.relative_to(vault).parts)]
    assert not [p for p in visible if "memvault-tmp" in p.name], visible


def complete_pending(vault: Path) -> None:
    """The next run finishes what a failure left (the daemon would, after 30 s)."""
    with opened(vault) as v:
        report = v.sync(stale_after=0)
        assert report.unwritten == [], report.unwritten
        assert v.con.execute("SELECT count(*) FROM state.outbox").fetchone()[0] == 0


def memory_texts(vault: Path) -> str:
    return " ".join(p.read_text(encoding="utf-8") for p in (vault / "Memory").rglob("*.md")) if (vault / "Memory").exists() else ""


OPERATIONS = ("add", "update", "forget", "restore", "source")


def operate(vault: Path, op: str, rng: random.Random, ids: list[str], word: str) -> Any:
    if op == "add" or not ids:
        return run(vault, "add", f"Remember {word} always.", "--json")
    target = rng.choice(ids)
    if op == "update":
        return run(vault, "update", target, "--content", f"Now {word} instead.")
    if op == "forget":
        return run(vault, "forget", target)
    if op == "restore":
        return run(vault, "restore", target)
    write(vault, f"Sources/{word}.md", f"- A fact about {word} worth keeping\n")
    return run(vault, "source", "add", f"Sources/{word}.md")


def test_vault_write_faults_at_random_points(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(20261123)
    run(vault, "sync", "--no-embed")
    ids: list[str] = []
    saved: set[str] = set()  # words a command reported as saved
    for i in range(ROUNDS):
        op, code, nth = rng.choice(OPERATIONS), rng.choice(ERRNOS), rng.randint(1, 4)
        word = f"tok{i}x"
        faulty = FaultyOS(nth, code)
        monkeypatch.setattr(atomic, "os", faulty)
        monkeypatch.setattr(replace, "os", faulty)  # a note rewritten in place: exchange-and-check
        r = operate(vault, op, rng, ids, word)
        monkeypatch.setattr(atomic, "os", os)
        monkeypatch.setattr(replace, "os", os)
        if r.exit_code == 0:
            if op == "add":
                ids.append(json.loads(r.stdout)["id"])
            if op in ("add", "update"):
                saved.add(word)
        else:
            one_clean_line(r)
            assert os.strerror(code) in r.output or "could not be written" in r.output or "cannot" in r.output, r.output
            if op in ("add", "update") and "saved in the index" in r.output:
                saved.add(word)  # committed: its note must follow
        sound(vault)
        complete_pending(vault)
        texts = memory_texts(vault)
        with opened(vault) as v:
            indexed = " ".join(c for (c,) in v.con.execute("SELECT content FROM traces"))
        missing = {w for w in saved if w not in texts and w not in indexed}
        assert not missing, f"round {i} ({op}, {errno.errorcode[code]} at call {nth}) lost {missing}"


@pytest.mark.parametrize("failure", [apsw.FullError, apsw.IOError])
def test_database_write_faults_are_one_line_and_change_nothing(vault: Path, failing_vfs, failure) -> None:  # type: ignore[no-untyped-def]
    write(vault, "A.md", "Alpha\n")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    before = sorted(p.name for p in vault.rglob("*.md"))
    failing_vfs.failing = failure
    one_clean_line(run(vault, "add", "Remember the disk was full."))
    write(vault, "B.md", "Beta\n")
    one_clean_line(run(vault, "sync", "--no-embed"))
    failing_vfs.failing = None
    # Nothing of the failed add reached the vault (its first write, the outbox
    # entry, failed): only the note written by hand beside the one before.
    assert before == ["A.md"]
    assert sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*") if p.is_file()) == ["A.md", "B.md"]
    assert run(vault, "sync", "--no-embed").exit_code == 0
    sound(vault)
    assert "Beta" in run(vault, "search", "beta", "--mode", "keyword").output
    assert run(vault, "add", "Remember the disk was full.").exit_code == 0


def _kill_at_random(cmd: list[str], env: dict[str, str], delay: float) -> None:
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)  # the point of the test: a kill at an arbitrary moment
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def test_sigkill_at_random_points_of_add_update_and_sync(vault: Path, memvault_env: Path) -> None:
    rng = random.Random(7)
    env = {**os.environ, "MEMVAULT_HOME": str(memvault_env), "MEMVAULT_CONFIG": str(memvault_env / "config.toml"),
           "MEMVAULT_EMBEDDING_MODEL": "none"}
    for i in range(40):
        write(vault, f"Notes/{i}.md", f"Note {i} about the garden.\n")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    first = json.loads(run(vault, "add", "The first memory.", "--json").stdout)["id"]
    for i in range(max(4, ROUNDS // 2)):
        op = rng.choice(["add", "update", "sync"])
        write(vault, f"Notes/{i % 40}.md", f"Note {i} about the garden, edited {i}.\n")
        cmd = [*MEMVAULT, "--vault", str(vault)]
        cmd += {"add": ["add", f"Remember kill{i}x always."], "update": ["update", first, "--content", f"Now kill{i}x."],
                "sync": ["sync", "--no-embed"]}[op]
        _kill_at_random(cmd, env, rng.uniform(0.05, 0.6))
        sound(vault)
        complete_pending(vault)
        with opened(vault) as v:
            for (content,) in v.con.execute("SELECT content FROM traces WHERE kind = 'memory' AND status = 'active'"):
                # whatever the index holds as live is in a note after the next run
                assert content.split()[0] in memory_texts(vault)


# -- consolidation, merge and undo, killed at random points ----------------------------

#: The day consolidation plans for (``--today``), so a run is the same whatever the clock.
TODAY = date(2026, 11, 1)
CONSOLIDATE = ["consolidate", "--today", TODAY.isoformat()]
THINGS = ["dark mode", "tabs over spaces", "green tea", "morning runs", "paper notebooks", "quiet trains"]
PLACES = ["editor", "office", "kitchen", "city", "project", "season"]
HABITS = [("climbing", "Ana", "Thursday"), ("chess", "Rui", "Monday")]


def memory_note(root: Path, mid: str, content: str, type_: str = "semantic", *, age: int, strength: float = 0.5,
                extra: str = "", today: date = TODAY) -> None:
    """A memory note as memvault writes them, made ``age`` days before ``today``."""
    made = (today - timedelta(days=age)).isoformat()
    write(root, f"Memory/{type_}/{mid}.md",
          f"---\nid: {mid}\ntype: {type_}\nscope: user\nstrength: {strength}\ncreated: '{made}T09:00:00+00:00'\n"
          f"updated: '{made}T09:00:00+00:00'\nsource: manual\n{extra}---\n{content}\n")


def busy_store(root: Path, today: date = TODAY) -> None:
    """A store on which a run really writes: near-duplicate pairs to merge,
    faded memories to archive, recurring episodes to promote, done tasks to
    close, numbers that contradict, and everything decays (as of ``today``)."""

    def note(mid: str, content: str, type_: str = "semantic", **kwargs: Any) -> None:
        memory_note(root, mid, content, type_, today=today, **kwargs)

    for i, (thing, place) in enumerate(zip(THINGS, PLACES)):
        note(f"m-dup{i}a", f"Prefers {thing} in every {place}", age=60 + i, strength=0.4)
        note(f"m-dup{i}b", f"prefers {thing} in every {place}!", age=50 + i, strength=0.6)
        note(f"m-fade{i}", f"Used to keep {thing} notes in the old {place}", age=300 + i, strength=0.1)
    for j, (habit, who, day) in enumerate(HABITS):
        for k, text in enumerate((f"{day} {habit} session with {who}", f"{habit.capitalize()} session with {who} on {day}",
                                  f"{day} {habit} with {who} again")):
            note(f"m-ep{j}{k}", text, "episodic", age=26 - 7 * k)
    for i, thing in enumerate(("cats", "bikes")):
        note(f"m-task{i}", f"[x] Renew the {thing} insurance", "prospective", age=90,
            extra=f"due: {(today - timedelta(days=30)).isoformat()}\n")
        note(f"m-num{i}a", f"Has {i + 2} {thing}", age=100)
        note(f"m-num{i}b", f"Has {i + 3} {thing}", age=40)
    with opened(root) as v:
        v.sync()


def live_memories(vault: Path) -> dict[str, str]:
    """Content of every live memory, by id."""
    with opened(vault) as v:
        return dict(v.con.execute("SELECT id, content FROM traces WHERE kind = 'memory' AND status = 'active'"))


def kept_texts(vault: Path) -> set[str]:
    """Every memory text the store can give back: live, or durably kept as a
    forgotten memory (``restore``), an earlier version (``history``) or a
    merged member (``restore`` takes it back out)."""
    with opened(vault) as v:
        con = v.con
        return ({c for (c,) in con.execute("SELECT content FROM traces WHERE kind = 'memory' AND status = 'active'")}
                | {c for (c,) in con.execute("SELECT json_extract(trace, '$.content') FROM state.forgotten")}
                | {c for (c,) in con.execute("SELECT json_extract(trace, '$.content') FROM state.memory_versions")})


def note_paths(vault: Path) -> dict[str, list[str]]:
    """The visible notes carrying each memory id in their front-matter."""
    found: dict[str, list[str]] = {}
    for p in vault.rglob("*.md"):
        rel = p.relative_to(vault)
        if any(s.startswith(".") for s in rel.parts):
            continue
        head = p.read_text(encoding="utf-8").split("\n---\n", 1)[0]
        for line in head.splitlines():
            if line.startswith("id: "):
                found.setdefault(line[4:].strip(), []).append(rel.as_posix())
    return found


def consolidation_sound(vault: Path, texts: set[str]) -> None:
    """After a kill (once pending note writes are finished): a sound vault,
    every live memory in exactly one note, every text of ``texts`` still to
    be had."""
    sound(vault)
    complete_pending(vault)
    live = live_memories(vault)
    lost = texts - kept_texts(vault)
    assert not lost, lost
    paths = note_paths(vault)
    assert set(paths) == set(live), paths
    doubled = {mid: p for mid, p in paths.items() if len(p) > 1}
    assert not doubled, doubled


def finishes(vault: Path, day: date = TODAY) -> None:
    """A following run completes, and one after it has nothing left to do."""
    r = run(vault, "consolidate", "--today", day.isoformat(), "--json")
    assert r.exit_code == 0, r.output
    again = run(vault, "consolidate", "--today", day.isoformat(), "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout.splitlines()[-1])["counts"] == {}, again.stdout
    with opened(vault) as v:  # and no run of the log looks as if it were still going
        assert v.con.execute("SELECT id FROM state.consolidation_runs WHERE status = 'running'").fetchall() == []


def undo_all(vault: Path) -> None:
    """Undo every run, newest first: the log held every action it did."""
    with opened(vault) as v:
        ids = [r["run"] for r in v.consolidation_runs(limit=100) if r["status"] != "undone"]
    for run_id in ids:
        r = run(vault, "consolidate", "--undo", run_id)
        assert r.exit_code == 0, (run_id, r.output)


def finishes_and_undoes(vault: Path, original: set[str], round_: int) -> None:
    """After a faulted round: a following run finishes (:func:`finishes`), the
    vault is still sound, and undoing every run gives back ``original``."""
    finishes(vault)
    consolidation_sound(vault, original)
    undo_all(vault)
    assert set(live_memories(vault).values()) == original, round_


def timed(cmd: list[str], env: dict[str, str]) -> float:
    """Wall time of an uninterrupted run (the range the kills are drawn from)."""
    started = time.monotonic()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return time.monotonic() - started


@pytest.fixture
def quiet_env(memvault_env: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment of a killed ``memvault`` process, the same as the test's
    own (no embedding model: text rules only, and no model to load)."""
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")
    return {**os.environ}


KILLS = max(3, ROUNDS // 4)


@pytest.mark.parametrize("what", ["consolidate", "undo", "merge"])
def test_sigkill_at_random_points_of_consolidation(what: str, tmp_path: Path, quiet_env: dict[str, str]) -> None:
    """A fresh busy store each round; round 0 runs the command whole (and
    times it), the others kill it at a random moment of that span."""
    rng = random.Random(f"consolidation-{what}")
    span = 0.0
    for i in range(KILLS + 1):
        vault = tmp_path / f"v{i}"
        busy_store(vault)
        original = set(live_memories(vault).values())
        cmd = [*MEMVAULT, "--vault", str(vault)]
        if what == "consolidate":
            cmd += CONSOLIDATE
        elif what == "merge":
            cmd += ["merge", "m-dup0b", "m-dup0a", "m-dup1a", "m-dup1b"]
        else:
            r = run(vault, *CONSOLIDATE, "--json")
            assert r.exit_code == 0, r.output
            cmd += ["consolidate", "--undo", json.loads(r.stdout.splitlines()[-1])["run"]]
        if i == 0:
            span = timed(cmd, quiet_env)  # the first round runs whole: how long a run takes
        else:
            _kill_at_random(cmd, quiet_env, rng.uniform(0.1, span))
        consolidation_sound(vault, original)
        if what == "undo":
            with opened(vault) as v:
                status = v.consolidation_runs(limit=1)[0]["status"]
            if status != "undone":  # killed before it ended: run again, it finishes
                r = subprocess.run(cmd, env=quiet_env, capture_output=True, text=True, timeout=120)
                assert r.returncode == 0, r.stderr
                with opened(vault) as v:
                    assert v.consolidation_runs(limit=1)[0]["status"] == "undone"
            assert set(live_memories(vault).values()) == original
            consolidation_sound(vault, original)
            continue
        finishes_and_undoes(vault, original, i)


# -- the daemon, killed while it works ---------------------------------------------------


def run_states(vault: Path) -> list[str]:
    """The status of every consolidation run, read beside a running daemon."""
    con = apsw.Connection(str(vault_data_dir(vault) / "state.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        con.set_busy_timeout(5000)
        return [s for (s,) in con.execute("SELECT status FROM consolidation_runs")]
    except apsw.SQLError:  # no table yet: the daemon has not migrated the state
        return []
    finally:
        con.close()


def burst(vault: Path, i: int, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    """A batch of work for the daemon: a person edits memory notes and other
    notes in the vault while an agent adds a memory (a process of its own,
    beside the daemon). Returns the adding process and the texts edited in."""
    edits = {}
    for j, mid in enumerate(("m-dup2a", "m-fade3", "m-num0b")):
        path = next(vault.joinpath("Memory").rglob(f"{mid}.md"), None)
        if path is not None:
            text = path.read_text(encoding="utf-8").rstrip("\n") + f" (edited {i}.{j})\n"
            path.write_text(text, encoding="utf-8")
            edits[mid] = text.split("\n---\n", 1)[1].strip()
    for j in range(20):
        write(vault, f"Notes/{j}.md", f"Note {j} about the garden, round {i}.\n")
    agent = subprocess.Popen([*MEMVAULT, "--vault", str(vault), "add", f"Remember daemon{i}x always."], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return agent, edits


def test_sigkill_of_the_daemon_in_a_batch_and_a_consolidation(tmp_path: Path, quiet_env: dict[str, str]) -> None:
    """The daemon, killed while it indexes a burst, while an agent's note is
    written beside it, or while its schedule consolidates; then sync and a
    consolidation finish the work."""
    from test_daemon_support import NotifySocket

    rng = random.Random("daemon")
    # Consolidation as soon as the vault was quiet for a second after the burst
    # (once: the next is due in an hour), on the real clock's day.
    # Every kind of action opted into (consolidate.auto): the run writes notes, so a kill can cut one short.
    env = {**quiet_env, "MEMVAULT_CONSOLIDATE_INTERVAL": "3600", "MEMVAULT_CONSOLIDATE_QUIET": "1",
           "MEMVAULT_CONSOLIDATE_AUTO": "decay,archive,merge,promote,contradiction,task_done"}
    env = {k: v for k, v in env.items() if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")}
    today = datetime.now(timezone.utc).date()
    span = 0.0
    for i in range(KILLS + 1):
        vault = tmp_path / f"v{i}"
        busy_store(vault, today)
        original = set(live_memories(vault).values())
        sock = NotifySocket(tmp_path / f"notify-{i}.sock")
        daemon = subprocess.Popen([*MEMVAULT, "--vault", str(vault), "daemon", "--debounce-ms", "100"],
                                  env={**env, "NOTIFY_SOCKET": str(sock.path)},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        agent = None
        try:
            sock.wait_for("READY=1", timeout=60)
            started = time.monotonic()
            agent, edits = burst(vault, i, env)
            if i == 0:  # the first round runs whole: how long the batch and the run take
                wait_for(lambda: run_states(vault) == ["done"], timeout=60)
                span = time.monotonic() - started
            else:
                time.sleep(rng.uniform(0.0, span))  # the point of the test: a kill at an arbitrary moment
            daemon.send_signal(signal.SIGKILL)
            daemon.wait(timeout=30)
            added = agent.wait(timeout=60) == 0
        finally:
            for proc in (daemon, agent):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=30)
            sock.close()
        texts = original | set(edits.values()) | ({f"Remember daemon{i}x always."} if added else set())
        consolidation_sound(vault, texts)
        finishes(vault, today)
        consolidation_sound(vault, texts)


# -- write faults in the middle of a consolidation run ---------------------------------


def one_line_only(r: Any) -> None:
    """A failure that is exactly one line on stderr (besides warnings), exit 1."""
    one_clean_line(r)
    assert len([line for line in r.stderr.splitlines() if line.startswith("Error:")]) == 1, r.stderr


def test_vault_write_faults_during_consolidation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 quiet_env: dict[str, str]) -> None:
    """ENOSPC, EIO, EACCES or EROFS at a random note write of a run: it stops
    with one line, what it did is logged, the next run goes on."""
    rng = random.Random("consolidation-faults")
    failed = 0
    for i in range(KILLS):
        vault = tmp_path / f"v{i}"
        busy_store(vault)
        original = set(live_memories(vault).values())
        code, nth = rng.choice(ERRNOS), rng.randint(1, 60)  # a run makes ~20 note writes, ~4 calls each
        monkeypatch.setattr(atomic, "os", FaultyOS(nth, code))
        r = run(vault, *CONSOLIDATE)
        monkeypatch.setattr(atomic, "os", os)
        if r.exit_code != 0:
            failed += 1
            one_line_only(r)
            assert os.strerror(code) in r.stderr, r.stderr
        consolidation_sound(vault, original)
        finishes_and_undoes(vault, original, i)
    assert failed, "no round hit a fault"


@pytest.mark.parametrize("failure", [apsw.FullError, apsw.IOError])
def test_database_write_faults_during_consolidation(failure: type[apsw.Error], tmp_path: Path, failing_vfs,  # type: ignore[no-untyped-def]
                                                    quiet_env: dict[str, str]) -> None:
    """SQLite's full disk or I/O error at a random commit of a run: one line,
    the databases intact, the next run settles the log and goes on."""
    rng = random.Random(f"consolidation-db-{failure.__name__}")
    failed = 0
    for i in range(max(2, KILLS // 2)):
        vault = tmp_path / f"v{i}"
        busy_store(vault)
        original = set(live_memories(vault).values())
        # Commits fail from a random point of the run on; the closing
        # checkpoint works (when it fails too: the test below).
        failing_vfs.countdown, failing_vfs.wal_only, failing_vfs.failing = rng.randint(0, 60), True, failure
        r = run(vault, *CONSOLIDATE)
        failing_vfs.failing = None
        if r.exit_code != 0:
            failed += 1
            one_line_only(r)
        consolidation_sound(vault, original)
        finishes_and_undoes(vault, original, i)
    assert failed, "no round hit a fault"


# -- once strict xfails: a full disk at close, a move and a restore killed halfway ------


def test_a_disk_that_stays_full_until_the_command_ends_is_one_line(vault: Path, failing_vfs, quiet_env) -> None:  # type: ignore[no-untyped-def]
    busy_store(vault)
    failing_vfs.countdown, failing_vfs.failing = 90, apsw.FullError  # the run commits, then every write fails
    r = run(vault, *CONSOLIDATE)
    failing_vfs.failing = None
    one_line_only(r)


class Killed(BaseException):
    """The writer dies here (as SIGKILL would, without unwinding anything)."""


def test_a_move_killed_halfway_leaves_one_note(vault: Path, monkeypatch: pytest.MonkeyPatch, quiet_env) -> None:  # type: ignore[no-untyped-def]
    busy_store(vault)
    with opened(vault) as v:
        run_id = v.consolidate(today=TODAY).run_id  # m-task0 is done: its note moves to Memory/episodic/
    real = Gate.write

    def dies_after_writing(gate: Gate, rel: str, data: bytes, *args: Any, **kwargs: Any) -> bool:
        done = real(gate, rel, data, *args, **kwargs)
        if rel.endswith("prospective/m-task0.md"):
            raise Killed  # the note is back in its folder, the run's copy not yet removed
        return done

    monkeypatch.setattr(Gate, "write", dies_after_writing)
    with pytest.raises(Killed), opened(vault) as v:
        v.undo_consolidation(run_id)
    monkeypatch.setattr(Gate, "write", real)
    complete_pending(vault)
    assert len(note_paths(vault)["m-task0"]) == 1


def test_a_restore_killed_halfway_leaves_one_note(vault: Path, monkeypatch: pytest.MonkeyPatch, quiet_env) -> None:  # type: ignore[no-untyped-def]
    busy_store(vault)
    with opened(vault) as v:
        v.forget("m-fade0")
    real = Gate.create  # a restored note is a new file (never written over one made meanwhile)

    def dies_after_writing(gate: Gate, rel: str, data: bytes, *args: Any, **kwargs: Any) -> bool:
        real(gate, rel, data, *args, **kwargs)
        raise Killed

    monkeypatch.setattr(Gate, "create", dies_after_writing)
    with pytest.raises(Killed), opened(vault) as v:
        v.restore("m-fade0")
    monkeypatch.setattr(Gate, "create", real)
    complete_pending(vault)
    assert len(note_paths(vault)["m-fade0"]) == 1
