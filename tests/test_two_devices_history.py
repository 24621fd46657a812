"""History in the vault: what only memvault knows (versions with reasons,
forgets, fact history) travels in one append-only log per device inside
the vault, every device merges every log the same way, and a lost data dir
gets the whole history back from the vault with `memvault rebuild`.

Two vault folders, each with its own MEMVAULT_HOME (data dir); the sync
tool is :func:`carry`, a three-way file sync that carries dot-folders as
Syncthing does.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner, Result
from helpers import write
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.cli.main import cli
from memvault.store.db.connection import connect
from memvault.store.history import logfile, replicate
from memvault.store.location import vault_data_dir

LOGS = "Memory/.memvault/history"


class Device:
    """One machine: a vault folder and its own memvault home."""

    def __init__(self, base: Path) -> None:
        self.vault = base / "vault"
        self.home = base / "home"
        self.vault.mkdir(parents=True)
        self.home.mkdir()

    def run(self, *args: str) -> Result:
        result = CliRunner().invoke(cli, ["--vault", str(self.vault), *args],
                                    env={"MEMVAULT_HOME": str(self.home)})
        assert result.exit_code == 0, result.output
        return result

    def add(self, text: str) -> str:
        return json.loads(self.run("add", text, "--json").stdout)["id"]

    def listed(self) -> list[tuple[str, str, str]]:
        out = self.run("list", "--include-deleted", "-n", "500", "--json").stdout
        return sorted((i["id"], i["status"], i["title"]) for i in map(json.loads, out.splitlines()))

    def history(self, memory_id: str) -> list[tuple[str, str, str | None, str]]:
        out = self.run("history", memory_id, "--json").stdout
        return [(v["id"], v["content"].strip(), v["reason"], v["status"]) for v in map(json.loads, out.splitlines())]

    def forgotten(self) -> set[tuple[str, str]]:
        con = connect(self.data_dir / "index.db")
        try:
            return set(con.execute("SELECT memory_id, reason FROM state.forgotten").fetchall())
        finally:
            con.close()

    @property
    def data_dir(self) -> Path:
        import os

        old = os.environ.get("MEMVAULT_HOME")
        os.environ["MEMVAULT_HOME"] = str(self.home)
        try:
            return vault_data_dir(self.vault)
        finally:
            if old is not None:
                os.environ["MEMVAULT_HOME"] = old

    def view(self) -> tuple[list, dict, set]:
        listed = self.listed()
        return listed, {i: self.history(i) for i, status, _ in listed if status == "active"}, self.forgotten()


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


class Sync:
    """A three-way sync of two folders: what one side changed since the last
    round (written, or deleted) goes to the other; nothing clashes here."""

    def __init__(self, a: Path, b: Path) -> None:
        self.a, self.b, self.base = a, b, files(a)

    def __call__(self) -> None:
        fa, fb = files(self.a), files(self.b)
        for rel in sorted(set(fa) | set(fb) | set(self.base)):
            old, va, vb = self.base.get(rel), fa.get(rel), fb.get(rel)
            value = va if va != old else vb
            for root, mine in ((self.a, va), (self.b, vb)):
                if mine == value:
                    continue
                if value is None:
                    (root / rel).unlink()
                else:
                    (root / rel).parent.mkdir(parents=True, exist_ok=True)
                    (root / rel).write_bytes(value)
        self.base = files(self.a)
        assert self.base == files(self.b)


def agree_then_rebuild(a: Device, b: Device) -> tuple[list, dict, set]:
    """Both devices show the same list, history and forgotten set; then b's
    data dir is lost and ``memvault rebuild`` there gives the same back from
    the vault. Returns what they show."""
    seen = a.view()
    assert seen == b.view()
    shutil.rmtree(b.home)
    b.home.mkdir()
    b.run("rebuild", "--no-embed")
    assert b.view() == seen
    return seen


def two(tmp_path: Path) -> tuple[Device, Device, Sync]:
    a, b = Device(tmp_path / "a"), Device(tmp_path / "b")
    a.run("sync", "--no-embed")
    shutil.rmtree(b.vault)
    shutil.copytree(a.vault, b.vault)
    b.run("sync", "--no-embed")
    return a, b, Sync(a.vault, b.vault)


def test_both_devices_show_the_same_history_and_a_lost_data_dir_gets_it_back(tmp_path: Path) -> None:
    a, b, carry = two(tmp_path)
    moved = a.add("Lives in Lisbon")
    a.run("update", moved, "--content", "Lives in Porto", "--reason", "moved north")
    gone = a.add("Prefers tea over coffee")
    a.run("forget", gone, "--reason", "not true")
    carry()
    b.run("sync", "--no-embed")
    # b changes what it has, a changes another memory meanwhile
    b.run("update", moved, "--content", "Lives in Braga", "--reason", "moved again")
    kept = a.add("Standup is at 10:00")
    a.run("update", kept, "--content", "Standup is at 10:30", "--reason", "moved later")
    carry()
    a.run("sync", "--no-embed")
    b.run("sync", "--no-embed")
    carry()
    a.run("sync", "--no-embed")
    b.run("sync", "--no-embed")
    seen = a.view()
    assert seen == b.view()
    assert [h[1] for h in a.history(moved)] == ["Lives in Braga", "Lives in Porto", "Lives in Lisbon"]
    assert [h[2] for h in a.history(moved)][1:] == ["moved again", "moved north"]
    assert (gone, "not true") in a.forgotten()
    assert len(list((a.vault / LOGS).glob("*.jsonl"))) == 2  # one log per device

    # b's data dir is lost: a rebuild gives back what a shows
    shutil.rmtree(b.home)
    b.home.mkdir()
    b.run("rebuild", "--no-embed")
    assert b.view() == seen


def test_a_merge_made_on_one_device_is_history_on_both(tmp_path: Path) -> None:
    a, b, carry = two(tmp_path)
    first = a.add("Prefers dark mode in the editor")
    second = a.add("Likes a dark theme in editors")
    carry()
    b.run("sync", "--no-embed")
    a.run("merge", first, second, "--content", "Prefers dark mode in every editor")
    carry()
    b.run("sync", "--no-embed")
    assert a.view() == b.view()
    merged = [h for h in b.history(first) if h[0] == second]
    assert merged, b.history(first)


def test_a_fact_forgotten_on_one_device_is_forgotten_on_both(tmp_path: Path) -> None:
    a, b, carry = two(tmp_path)
    write(a.vault, "About me.md", "---\nmemory: source\n---\n- Favourite colour is green\n- Drinks black coffee\n")
    a.run("sync", "--no-embed")
    carry()
    b.run("sync", "--no-embed")

    def facts(d: Device) -> list[tuple[str, str, str]]:
        out = d.run("facts", "About me.md", "--all", "--json").stdout
        return sorted((f["id"], f["text"], f["status"]) for f in map(json.loads, out.splitlines()))

    coffee = next(i for i, text, _ in facts(a) if "coffee" in text)
    a.run("forget", coffee, "--reason", "switched to tea")
    carry()
    b.run("sync", "--no-embed")
    assert facts(a) == facts(b) and (coffee, "deleted") in {(i, s) for i, _, s in facts(b)}
    b.run("sync", "--no-embed")  # re-extracting the note keeps it forgotten
    assert facts(a) == facts(b)
    a.run("restore", coffee)
    carry()
    b.run("sync", "--no-embed")
    assert facts(a) == facts(b) and (coffee, "active") in {(i, s) for i, _, s in facts(b)}


def test_the_forget_reason_survives_the_note_move_arriving_first(tmp_path: Path) -> None:
    a, b, carry = two(tmp_path)
    gone = a.add("Takes the 8:10 train")
    carry()
    b.run("sync", "--no-embed")
    a.run("forget", gone, "--reason", "changed jobs")
    logs = {p: p.read_bytes() for p in (a.vault / LOGS).glob("*.jsonl")}
    shutil.rmtree(a.vault / LOGS)  # the sync tool delivers the note's move first
    carry()
    b.run("sync", "--no-embed")
    assert b.forgotten() == {(gone, "note deleted in the vault")}
    for p, data in logs.items():  # then a's log
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    carry()
    b.run("sync", "--no-embed")
    a.run("sync", "--no-embed")
    assert a.forgotten() == b.forgotten() == {(gone, "changed jobs")}


def test_a_torn_last_line_is_skipped_and_closed_off_by_the_next_append(tmp_path: Path) -> None:
    a, b, carry = two(tmp_path)
    first = a.add("Likes rainy days")
    a.run("update", first, "--content", "Likes misty days", "--reason", "autumn")
    log = next((a.vault / LOGS).glob("*.jsonl"))
    with open(log, "ab") as f:
        f.write(b'{"d":"x","n":1,"t":1,"tb":"forgotten","k":["')  # a crash mid-append
    carry()
    b.run("sync", "--no-embed")
    a.run("update", first, "--content", "Likes sunny days", "--reason", "summer")
    assert log.read_bytes().count(b"\n") == len(log.read_bytes().splitlines())
    carry()
    b.run("sync", "--no-embed")
    assert a.history(first) == b.history(first)
    assert [h[2] for h in b.history(first)] == [None, "summer", "autumn"]


def test_compaction_keeps_the_history_identical(tmp_path: Path) -> None:
    a, b, carry = two(tmp_path)
    memory = a.add("Reads before bed")
    for n in range(6):
        a.run("update", memory, "--content", f"Reads {n} pages before bed", "--reason", f"change {n}")
    before = a.view()
    con = connect(a.data_dir / "index.db")
    try:
        with replicate.write_transaction(con):
            replicate.compact(con, a.vault / LOGS, replicate.device_id(con))
    finally:
        con.close()
    tails = [p for p in (a.vault / LOGS).glob("*.jsonl") if not p.name.endswith(logfile.SNAPSHOT_SUFFIX)]
    assert [p.stat().st_size for p in tails] == [0]
    a.run("update", memory, "--content", "Reads a chapter before bed", "--reason", "after compaction")
    carry()
    b.run("sync", "--no-embed")
    assert a.view() == b.view()
    assert len(b.history(memory)) == len(before[1][memory]) + 1
    shutil.rmtree(b.home)  # a new machine reads the snapshot and the tail
    b.home.mkdir()
    b.run("rebuild", "--no-embed")
    assert b.view() == a.view()


def test_an_unwritable_history_folder_keeps_the_changes_queued(tmp_path: Path) -> None:
    a = Device(tmp_path / "a")
    write(a.vault, "Memory/.memvault/history", "not a folder")  # the log cannot be created
    memory = a.add("Walks the dog at seven")
    a.run("update", memory, "--content", "Walks the dog at eight")
    (a.vault / "Memory/.memvault/history").unlink()
    a.run("sync", "--no-embed")
    records = [json.loads(line) for p in (a.vault / LOGS).glob("*.jsonl") for line in p.read_bytes().splitlines()]
    assert {r["k"][0] for r in records if r["tb"] == "memory_versions"} == {f"{memory}.v1"}


# -- the merge does not depend on the order the files are read in -------------

_record = st.builds(
    lambda d, n, t, k, r: {"d": d, "n": n, "t": t, "tb": "forgotten", "k": [k],
                           "r": None if r is None else {"memory_id": k, "reason": r, "at": "x", "trace": "{}"}},
    st.sampled_from(["aaaa", "bbbb", "cccc"]), st.integers(1, 40), st.integers(1, 5), st.sampled_from(["m1", "m2"]),
    st.one_of(st.none(), st.sampled_from(["one", "two", "note deleted in the vault"])),
)


def _merged(tmp: Path, records: list[dict], order: list[int]) -> set:
    """A fresh state that reads the devices' files in ``order`` (one file a round)."""
    folder, data = tmp / "logs", tmp / "data"
    shutil.rmtree(tmp, ignore_errors=True)
    folder.mkdir(parents=True)
    con = connect(data / "index.db")
    try:
        by_device: dict[str, list[dict]] = {}
        for r in records:
            by_device.setdefault(r["d"], []).append(r)
        devices = sorted(by_device)
        for i in order:
            if i < len(devices):
                d = devices[i]
                logfile.append(logfile.tail_path(folder, d), [logfile.encode(r) for r in by_device[d]])
                replicate.sync_history(con, folder, write=False)
        replicate.sync_history(con, folder, write=False)
        return set(con.execute("SELECT memory_id, reason FROM state.forgotten").fetchall())
    finally:
        con.close()


@settings(max_examples=40, deadline=None)
@given(st.lists(_record, max_size=12, unique_by=lambda r: (r["d"], r["n"])), st.permutations([0, 1, 2]))
def test_the_merge_does_not_depend_on_the_order_logs_are_read(tmp_path_factory, records, order) -> None:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("merge")
    assert _merged(tmp / "x", records, order) == _merged(tmp / "y", records, [0, 1, 2])


def test_a_daemon_merges_another_devices_log_when_it_arrives_alone(tmp_path: Path) -> None:
    """The log is in a hidden folder, but the daemon's watcher takes another
    device's log file arriving as a hint: the merge needs no note event."""
    from helpers import wait_for
    from two_devices import Device as Daemon

    a = Device(tmp_path / "a")
    memory = a.add("Parks on level two")
    a.run("update", memory, "--content", "Parks on level three", "--reason", "level two was full")
    b_root = tmp_path / "b" / "vault"
    shutil.copytree(a.vault, b_root, ignore=shutil.ignore_patterns(".memvault"))
    b = Daemon("b", b_root, tmp_path / "b" / "data")
    b.start()
    try:
        assert b.cli is not None
        wait_for(lambda: b.cli.history(memory) != [], timeout=30)
        assert len(b.cli.history(memory)) == 1  # no log yet: this device saw no version
        shutil.copytree(a.vault / LOGS, b_root / LOGS)  # the sync tool brings a's log, and nothing else
        assert wait_for(lambda: len(b.cli.history(memory)) == 2, timeout=30), b.cli.history(memory)
        assert b.cli.history(memory)[1].reason == "level two was full"
    finally:
        b.stop()


def test_a_tail_past_its_limit_is_compacted_and_merges_the_same(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    con = connect(tmp_path / "a" / "index.db")
    try:
        compacted = []
        for n in range(5):
            with replicate.write_transaction(con):
                con.execute("INSERT OR REPLACE INTO state.forgotten VALUES (?, ?, 'at', '{}')", (f"m{n % 3}", f"r{n}"))
            compacted.append(replicate.flush_only(con, folder, compact_lines=3).compacted)
        device = replicate.device_id(con)
        rows = set(con.execute("SELECT memory_id, reason FROM state.forgotten"))
    finally:
        con.close()
    assert compacted == [False, False, False, True, False]  # the fourth line passed the limit
    assert len(logfile.snapshot_path(folder, device).read_bytes().splitlines()) == 1 + 3  # a header, one record a row
    assert len(logfile.tail_path(folder, device).read_bytes().splitlines()) == 1  # the fifth change
    fresh = connect(tmp_path / "b" / "index.db")
    try:
        replicate.sync_history(fresh, folder)
        assert set(fresh.execute("SELECT memory_id, reason FROM state.forgotten")) == rows == {
            ("m0", "r3"), ("m1", "r4"), ("m2", "r2")}
    finally:
        fresh.close()


def _forget_rows(con, rows: list[tuple[str, str]]) -> None:  # type: ignore[no-untyped-def]
    with replicate.write_transaction(con):
        for memory_id, reason in rows:
            con.execute("INSERT OR REPLACE INTO state.forgotten VALUES (?, ?, 'at', '{}')", (memory_id, reason))


def test_a_log_delivered_again_longer_is_read_on_and_a_new_snapshot_is_read_whole(tmp_path: Path) -> None:
    mine, theirs = tmp_path / "a-logs", tmp_path / "b-logs"  # each device's copy of the folder
    a, b = connect(tmp_path / "a" / "index.db"), connect(tmp_path / "b" / "index.db")

    def deliver() -> None:  # the sync tool: a temp file and a rename (a new inode each time)
        theirs.mkdir(exist_ok=True)
        for p in logfile.log_files(mine):
            tmp = theirs / f".syncthing.{p.name}.tmp"
            tmp.write_bytes(p.read_bytes())
            tmp.replace(theirs / p.name)
        for p in logfile.log_files(theirs):
            if not (mine / p.name).exists():
                p.unlink()

    try:
        device = replicate.device_id(a)
        _forget_rows(a, [("m0", "r0"), ("m1", "r1")])
        replicate.flush_only(a, mine)
        deliver()
        assert replicate.sync_history(b, theirs, write=False).read == 2
        _forget_rows(a, [("m2", "r2")])
        replicate.flush_only(a, mine)
        deliver()
        assert replicate.sync_history(b, theirs, write=False).read == 1  # read on, not again from the start
        with replicate.write_transaction(a):
            replicate.compact(a, mine, device)
        deliver()
        replicate.sync_history(b, theirs, write=False)
        # the next snapshot keeps the first record but not the rest: b, which never saw the tail, reads it whole
        _forget_rows(a, [("m1", "r3"), ("m3", "r4")])
        replicate.flush_only(a, mine)
        with replicate.write_transaction(a):
            replicate.compact(a, mine, device)
        deliver()
        assert logfile.tail_path(theirs, device).stat().st_size == 0
        replicate.sync_history(b, theirs, write=False)
        rows = "SELECT memory_id, reason FROM state.forgotten ORDER BY 1"
        assert b.execute(rows).fetchall() == a.execute(rows).fetchall() == [
            ("m0", "r0"), ("m1", "r3"), ("m2", "r2"), ("m3", "r4")]
    finally:
        a.close()
        b.close()


def test_a_change_through_a_long_lived_store_is_in_the_log_when_the_call_returns(tmp_path: Path) -> None:
    from memvault.store.memory_store import MemoryStore
    from memvault.store.settings import load_settings

    root = tmp_path / "vault"
    root.mkdir()
    store = MemoryStore(root, load_settings({"vault": str(root)}), data_dir=tmp_path / "data")

    def logged() -> set[tuple[str, str]]:
        return {(r["tb"], r["k"][0]) for p in logfile.log_files(root / LOGS)
                for r in map(json.loads, p.read_bytes().splitlines())}

    try:
        made = store.add("Bakes bread on Sundays", "semantic")
        store.update(made.id, content="Bakes bread on Saturdays", reason="weekend moved")
        assert ("memory_versions", f"{made.id}.v1") in logged()
        store.forget(made.id, reason="stopped baking")
        assert ("forgotten", made.id) in logged()
    finally:
        store.close()


def test_doctor_names_changes_the_log_does_not_hold_yet_and_a_sync_repairs_them(tmp_path: Path) -> None:
    a = Device(tmp_path / "a")
    memory = a.add("Cycles to work")
    write(a.vault, "Memory/.memvault/history", "not a folder")  # the vault refuses the log
    a.run("update", memory, "--content", "Cycles to work on Mondays")
    r = CliRunner().invoke(cli, ["--vault", str(a.vault), "doctor"], env={"MEMVAULT_HOME": str(a.home)})
    assert r.exit_code == 1 and "history: 1 changes are not yet in this device's history log" in r.output, r.output
    (a.vault / "Memory/.memvault/history").unlink()
    r = CliRunner().invoke(cli, ["--vault", str(a.vault), "doctor", "--repair"], env={"MEMVAULT_HOME": str(a.home)})
    assert r.exit_code == 0 and "repaired: sync" in r.output, r.output


def test_a_damaged_or_foreign_record_is_skipped_and_the_rest_merges(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    good = {"d": "bbbb", "n": 2, "t": 5, "tb": "forgotten", "k": ["m1"],
            "r": {"memory_id": "m1", "reason": "why", "at": "x", "trace": "{}"}}
    logfile.append(logfile.tail_path(folder, "bbbb"), [
        logfile.encode({"d": "bbbb", "n": 1, "t": 4, "tb": "forgotten", "k": ["m0"], "r": {"memory_id": "m0"}}),
        logfile.encode({"d": "bbbb", "n": 3, "t": 6, "tb": "no_such_table", "k": ["x"], "r": None}),
        logfile.encode({"d": "bbbb", "n": 4, "t": 7, "tb": "forgotten", "k": [{"x": 1}], "r": None}),
        b"[1, 2, 3]\n", b"not json\n", logfile.encode(good),
    ])
    con = connect(tmp_path / "data" / "index.db")
    try:
        done = replicate.sync_history(con, folder)
        assert done.bad_lines == 5
        assert con.execute("SELECT memory_id, reason FROM state.forgotten").fetchall() == [("m1", "why")]
    finally:
        con.close()
