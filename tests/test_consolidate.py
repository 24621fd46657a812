"""memvault consolidate: the plan's steps, dry run = run, twice = once, undo
restores the store and the vault files exactly, the log, durable state
across a rebuild, context's outdated marking, the daemon's schedule."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened, run_scheduled_consolidation, wait_for, write
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.cli.main import cli
from memvault.store.consolidation import rows as clog
from memvault.store.db.connection import write_transaction
from memvault.store.queries.recall import ContextQuery

TODAY = date(2026, 11, 1)


def note(root: Path, mid: str, content: str, type_: str = "semantic", *, created: str = "2026-10-01",
         strength: float = 0.5, scope: str = "user", tags: tuple[str, ...] = (), extra: str = "") -> Path:
    """A memory note as memvault writes them, with a chosen id and creation day."""
    tag_lines = "".join(f"  - {t}\n" for t in tags)
    text = (
        f"---\nid: {mid}\ntype: {type_}\nscope: {scope}\n" + (f"tags:\n{tag_lines}" if tags else "")
        + f"strength: {strength}\ncreated: '{created}T09:00:00+00:00'\nupdated: '{created}T09:00:00+00:00'\n"
        f"source: manual\n{extra}---\n{content}\n"
    )
    return write(root, f"Memory/{type_}/{mid}.md", text)


def recalled(v, mid: str, when: str) -> None:
    """Pretend ``mid`` was last recalled on day ``when``."""
    with write_transaction(v.con):
        v.con.execute("UPDATE traces SET last_access = ? WHERE id = ?", (f"{when}T12:00:00+00:00", mid))
        v.con.execute(
            "INSERT OR REPLACE INTO state.recall (trace_id, retrieval_count, last_access, strength) "
            "SELECT id, 1, last_access, strength FROM traces WHERE id = ?", (mid,))


def files(root: Path) -> dict[str, str]:
    """Every vault file and its sha256 (not memvault's history logs, which
    record each run and its undo)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".memvault" not in p.parts}


def memories(v) -> dict[str, tuple]:
    """Every memory trace: status, type, content, tags, strength, path."""
    return {r[0]: tuple(r[1:]) for r in v.con.execute(
        "SELECT id, status, type, content, tags, round(coalesce(strength, -1), 6), path FROM traces "
        "WHERE kind = 'memory' ORDER BY id")}


def state_rows(v) -> dict[str, list]:
    """The durable rows consolidation may touch (not its own log)."""
    con = v.con
    return {
        "recall": con.execute("SELECT trace_id, strength, decayed_at FROM state.recall ORDER BY 1").fetchall(),
        "forgotten": con.execute("SELECT memory_id, reason FROM state.forgotten ORDER BY 1").fetchall(),
        "versions": con.execute("SELECT id FROM state.memory_versions ORDER BY 1").fetchall(),
        "merges": con.execute("SELECT memory_id FROM state.merges ORDER BY 1").fetchall(),
        "contradictions": con.execute("SELECT older_id, newer_id FROM state.contradictions ORDER BY 1").fetchall(),
        "links": con.execute("SELECT source_id FROM state.memory_links ORDER BY 1").fetchall(),
    }


def sample_vault(root: Path) -> None:
    """One memory for every step of a plan (no vectors: text rules only)."""
    note(root, "m-dup1", "Prefers dark mode in every editor", created="2026-09-01", tags=("ui",), strength=0.4)
    note(root, "m-dup2", "prefers dark mode in every editor!", created="2026-09-03", tags=("editor",), strength=0.6)
    note(root, "m-cats1", "Has 2 cats", created="2026-03-01")
    note(root, "m-cats2", "Has 3 cats", created="2026-09-15")
    note(root, "m-faded", "Used to like the old office coffee", created="2026-01-01", strength=0.1)
    note(root, "m-pinned", "The boiler code is on the fridge door", created="2026-01-01", strength=0.1,
         extra="pinned: true\n")
    note(root, "m-who", "Is called Jo by friends", "identity", created="2026-01-01", strength=0.1)
    for i, day in enumerate(("2026-10-06", "2026-10-13", "2026-10-20")):
        note(root, f"m-ep{i}", ["Thursday climbing session with Ana", "Climbing session with Ana on Thursday",
                                "Thursday climbing with Ana again"][i], "episodic", created=day)
    note(root, "m-task", "[x] Renew the passport", "prospective", created="2026-08-01", extra="due: 2026-10-01\n")
    note(root, "m-open", "[ ] Book the dentist", "prospective", created="2026-08-01", extra="due: 2026-10-01\n")


@pytest.fixture
def sample(vault: Path):
    sample_vault(vault)
    with opened(vault) as v:
        v.sync()
        recalled(v, "m-cats1", "2026-10-20")
        yield v


def test_plan_has_every_step_with_reasons(sample) -> None:
    report = sample.consolidate(dry_run=True, today=TODAY)
    kinds = {a["kind"]: a for a in report.actions}
    assert set(kinds) == {"decay", "archive", "merge", "promote", "contradiction", "task_done"}
    assert [a["ids"] for a in report.actions if a["kind"] == "archive"] == [["m-faded"]]  # not pinned, not identity
    assert kinds["merge"]["ids"] == ["m-dup2", "m-dup1"] or kinds["merge"]["ids"] == ["m-dup1", "m-dup2"]
    assert kinds["merge"]["detail"]["tags"] and set(kinds["merge"]["detail"]["tags"]) == {"ui", "editor"}
    decayed = {c[0]: c[2] for c in kinds["decay"]["detail"]["changes"]}
    assert kinds["merge"]["detail"]["strength"] == max(decayed["m-dup1"], decayed["m-dup2"])  # as this run leaves them
    assert kinds["merge"]["detail"]["created"].startswith("2026-09-01")
    assert sorted(kinds["promote"]["ids"]) == ["m-ep0", "m-ep1", "m-ep2"]
    assert kinds["contradiction"]["detail"] == {"older": "m-cats1", "newer": "m-cats2", "kind": "number"}
    assert kinds["task_done"]["ids"] == ["m-task"]  # the open task stays a task
    assert "m-who" not in decayed and "m-open" not in decayed and "m-dup1" in decayed
    assert all(a["reason"] for a in report.actions)
    assert report.run_id is None and sample.consolidation_runs() == []


def test_run_does_what_the_dry_run_planned_and_a_second_run_does_nothing(sample) -> None:
    plan = sample.consolidate(dry_run=True, today=TODAY).actions
    done = sample.consolidate(today=TODAY)
    assert done.actions == plan and not done.failed
    logged = clog.actions(sample.con, done.run_id)
    assert [(a.kind, a.ids, a.reason, a.detail) for a in logged] == [
        (a["kind"], a["ids"], a["reason"], a["detail"]) for a in plan]
    before = (files(sample.root), memories(sample), state_rows(sample))
    again = sample.consolidate(today=TODAY)
    assert again.actions == [] and (files(sample.root), memories(sample), state_rows(sample)) == before


def test_the_run_changes_the_vault_through_the_mirror(sample) -> None:
    report = sample.consolidate(today=TODAY)
    root = sample.root
    assert (root / ".trash" / "m-faded.md").exists() and not (root / "Memory/semantic/m-faded.md").exists()
    assert (root / "Memory/episodic/m-task.md").exists() and not (root / "Memory/prospective/m-task.md").exists()
    merge = next(a for a in report.actions if a["kind"] == "merge")
    survivor, merged = merge["ids"][0], merge["ids"][1]
    assert (root / ".trash" / f"{merged}.md").exists()
    assert sample.con.execute("SELECT status, json_extract(metadata, '$.merged_into') FROM traces WHERE id = ?",
                              (merged,)).fetchone() == ("superseded", survivor)
    promoted = sample.con.execute("SELECT id, content, path FROM traces WHERE source = 'consolidate'").fetchall()
    assert len(promoted) == 1 and promoted[0][1].startswith("Recurring (3 times, 2026-10-06 to 2026-10-20): ")
    text = (root / promoted[0][2]).read_text()
    assert "derived_from:" in text and "m-ep0" in text
    assert {e[0] for e in sample.con.execute(
        "SELECT target_id FROM edges WHERE source_id = ? AND kind = 'derived_from'", (promoted[0][0],))} == {
        "m-ep0", "m-ep1", "m-ep2"}
    assert sample.con.execute("SELECT source_id, target_id FROM edges WHERE kind = 'contradicts'").fetchall() == [
        ("m-cats2", "m-cats1")]
    assert sample.con.execute("SELECT reason FROM traces WHERE id = 'm-faded'").fetchone() == ("faded",)
    # nothing only the index knows: a rebuild gives every flag and merge back
    kept = (memories(sample), sorted(sample.con.execute(
        "SELECT source_id, kind, target_id FROM edges WHERE kind IN ('contradicts', 'derived_from')")))
    sample.rebuild()
    assert (memories(sample), sorted(sample.con.execute(
        "SELECT source_id, kind, target_id FROM edges WHERE kind IN ('contradicts', 'derived_from')"))) == kept


def test_undo_restores_store_and_files_exactly(sample) -> None:
    before = (files(sample.root), memories(sample), state_rows(sample))
    report = sample.consolidate(today=TODAY)
    assert files(sample.root) != before[0]
    undone = sample.undo_consolidation(report.run_id)
    assert not undone.refused and len(undone.undone) == len(report.actions)
    assert (files(sample.root), memories(sample), state_rows(sample)) == before
    assert sample.consolidation_runs()[0]["status"] == "undone"
    with pytest.raises(Exception, match="already undone"):
        sample.undo_consolidation(report.run_id)


def test_undo_leaves_a_note_a_person_edited_since(sample) -> None:
    report = sample.consolidate(today=TODAY)
    path = sample.root / "Memory/episodic/m-task.md"
    path.write_text(path.read_text() + "\nDone at the post office.\n")
    undone = sample.undo_consolidation(report.run_id)
    assert [r["kind"] for r in undone.refused] == ["task_done"]
    assert "post office" in path.read_text()
    assert sample.consolidation_runs()[0]["status"] == "done"


def test_run_defers_a_note_being_edited(sample) -> None:
    busy = sample.root / "Memory/semantic/m-faded.md"
    report = sample.consolidate(today=TODAY, avoid=lambda p: p == "Memory/semantic/m-faded.md")
    assert [a["ids"] for a in report.deferred] == [["m-faded"]] and busy.exists()
    assert sample.consolidate(today=TODAY).counts() == {"archive": 1}  # the next run does it


def test_cli_consolidate_dry_run_json_log_and_undo(sample, vault: Path) -> None:
    sample.close()
    runner = CliRunner()
    out = runner.invoke(cli, ["--vault", str(vault), "consolidate", "--dry-run", "--today", "2026-11-01"])
    assert out.exit_code == 0, out.output
    assert out.output.startswith("Plan for 2026-11-01: ") and "archive   m-faded: faded: strength" in out.output
    out = runner.invoke(cli, ["--vault", str(vault), "consolidate", "--json", "--today", "2026-11-01"])
    lines = [json.loads(x) for x in out.output.splitlines()]
    assert lines[-1]["counts"]["merge"] == 1 and all("reason" in x for x in lines[:-1])
    run = lines[-1]["run"]
    out = runner.invoke(cli, ["--vault", str(vault), "consolidate", "--log"])
    assert run in out.output and "done" in out.output
    out = runner.invoke(cli, ["--vault", str(vault), "conflicts"])
    assert "newer m-cats2: Has 3 cats" in out.output and "older m-cats1: Has 2 cats" in out.output
    out = runner.invoke(cli, ["--vault", str(vault), "status"])
    assert "1 open contradictions (see `memvault conflicts`)" in out.output
    out = runner.invoke(cli, ["--vault", str(vault), "consolidate", "--undo", run[:12]])
    assert out.exit_code == 0 and "Undid" in out.output, out.output
    out = runner.invoke(cli, ["--vault", str(vault), "conflicts", "--json"])
    assert out.output == ""
    bad = runner.invoke(cli, ["--vault", str(vault), "consolidate", "--undo", "c-nope"])
    assert bad.exit_code == 1 and "no consolidation run" in bad.output


def test_dismissed_contradiction_is_not_flagged_again(sample) -> None:
    sample.consolidate(today=TODAY)
    number = sample.contradictions()[0].id
    sample.set_contradiction(number, "dismissed")
    assert sample.contradictions() == []
    assert sample.con.execute("SELECT count(*) FROM edges WHERE kind = 'contradicts'").fetchone() == (0,)
    assert not [a for a in sample.consolidate(today=TODAY, dry_run=True).actions if a["kind"] == "contradiction"]


def test_context_recalls_the_newer_claim_and_marks_the_older(vault: Path) -> None:
    note(vault, "m-lisbon", "Lives in Lisbon near the river", created="2026-09-01")
    note(vault, "m-porto", "Lives in Porto near the river", created="2026-10-01")
    with opened(vault) as v:
        v.sync()
        v.consolidate(today=TODAY)
        assert v.contradictions()[0].newer.id == "m-porto"
        with write_transaction(v.con):  # make the older one rank first: it is marked all the same
            v.con.execute("DELETE FROM traces_fts WHERE rowid = (SELECT rowid FROM traces WHERE id = 'm-porto')")
        block = v.context(ContextQuery("where does she live, Lisbon?", record=False)).to_json()
        lines = block["text"].splitlines()
        porto = next(i for i, x in enumerate(lines) if "Porto" in x)
        lisbon = next(i for i, x in enumerate(lines) if "Lisbon" in x)
        assert porto < lisbon and "possibly outdated" in lines[lisbon] and "outdated" not in lines[porto]
        assert {i["id"]: i.get("outdated_by") for i in block["items"]} == {"m-porto": None, "m-lisbon": "m-porto"}


def test_decay_fades_by_half_life_once_a_day(vault: Path) -> None:
    note(vault, "m-sem", "Knows the wifi password", created="2026-08-03", strength=0.8)
    note(vault, "m-ever", "Ferns need shade", created="2026-08-03", strength=0.8, tags=("evergreen",))
    with opened(vault) as v:
        v.sync()
        first = v.consolidate(today=date(2026, 11, 1))  # 90 days: one semantic half-life
        assert v.con.execute("SELECT strength FROM traces WHERE id = 'm-sem'").fetchone() == (0.4,)
        assert v.con.execute("SELECT strength FROM traces WHERE id = 'm-ever'").fetchone() == (0.8,)
        assert first.counts() == {"decay": 1}
        assert v.consolidate(today=date(2026, 11, 1)).counts() == {}
        # the note is never rewritten for it
        assert "strength: 0.8" in (vault / "Memory/semantic/m-sem.md").read_text()
        later = v.consolidate(today=date(2027, 1, 30))  # 90 more days: 0.2, and not seen for 180 days
        assert v.con.execute("SELECT strength, decayed_at FROM state.recall WHERE trace_id = 'm-sem'").fetchone() == (
            0.2, "2027-01-30")
        assert later.counts() == {"decay": 1, "archive": 1}


# -- properties -------------------------------------------------------------------

_POOL = [
    ("Prefers dark mode in every editor", "semantic"), ("prefers dark mode in every editor.", "semantic"),
    ("Has 2 cats", "semantic"), ("Has 3 cats", "semantic"), ("Tidewater supports Windows", "semantic"),
    ("Tidewater does not support Windows", "semantic"), ("Friday chess with Euan", "episodic"),
    ("Chess with Euan on Friday", "episodic"), ("Friday evening chess with Euan again", "episodic"),
    ("[x] Water the ferns", "prospective"), ("Backs up the laptop on Sundays", "procedural"),
    ("Is called Jo", "identity"),
]


@st.composite
def stores(draw: st.DrawFn) -> list[dict]:
    chosen = draw(st.lists(st.integers(0, len(_POOL) - 1), min_size=1, max_size=9, unique=True))
    out = []
    for n, i in enumerate(chosen):
        content, type_ = _POOL[i]
        out.append({
            "id": f"m-{n:02d}{i:02d}", "content": content, "type": type_,
            "created": (date(2026, 1, 1) + timedelta(days=draw(st.integers(0, 280)))).isoformat(),
            "strength": draw(st.sampled_from([0.05, 0.15, 0.5, 0.9])),
            "pinned": draw(st.booleans()),
        })
    return out


@settings(max_examples=25, deadline=None)
@given(spec=stores(), offset=st.integers(0, 200))
def test_properties_twice_once_dry_run_and_exact_undo(tmp_path_factory: pytest.TempPathFactory, spec: list[dict],
                                                      offset: int) -> None:
    root = tmp_path_factory.mktemp("vault")
    for m in spec:
        note(root, m["id"], m["content"], m["type"], created=m["created"], strength=m["strength"],
             extra=("pinned: true\n" if m["pinned"] else "") + ("due: 2026-02-01\n" if m["type"] == "prospective" else ""))
    today = date(2026, 10, 10) + timedelta(days=offset)
    with opened(root) as v:
        v.sync()
        before = (files(root), memories(v), state_rows(v))
        planned = v.consolidate(dry_run=True, today=today).actions
        done = v.consolidate(today=today)
        assert done.actions == planned and not done.failed
        after = (files(root), memories(v), state_rows(v))
        assert v.consolidate(today=today).actions == []
        assert (files(root), memories(v), state_rows(v)) == after
        assert not v.undo_consolidation(done.run_id).refused
        assert (files(root), memories(v), state_rows(v)) == before


# -- the daemon's schedule ------------------------------------------------------------


def test_daemon_service_runs_when_quiet_and_defers_edited_notes(vault: Path) -> None:
    from memvault.daemon.consolidate_service import ConsolidateService

    recent = datetime.now(timezone.utc).date()
    note(vault, "m-a", "Has 2 cats", created=(recent - timedelta(days=20)).isoformat())
    note(vault, "m-b", "Has 3 cats", created=(recent - timedelta(days=10)).isoformat())
    quiet = {"for": 0.0}
    ran = threading.Event()
    with opened(vault) as v:
        v.sync()
        service = ConsolidateService(v, quiet_for=lambda: quiet["for"], interval=3600, quiet=60, poll=0.02,
                                     on_run=lambda report: ran.set())
        service.start()
        try:
            time.sleep(0.2)
            assert not ran.is_set() and v.consolidation_runs() == []  # the vault is busy: it waits
            quiet["for"] = 61.0
            wait_for(ran.is_set, 10)
            runs = v.consolidation_runs()
            assert len(runs) == 1 and runs[0]["trigger"] == "daemon" and v.contradictions()
            time.sleep(0.2)
            assert len(v.consolidation_runs()) == 1  # not again before the interval
            assert service.status()["runs"] == 1
        finally:
            service.stop()


def test_daemon_runner_wires_the_schedule(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's first run flags the contradiction (consolidate.auto's
    default) and proposes the merge without doing it: both notes stay, and
    `status` says what the run did and what it proposes (issue 35)."""
    from memvault.daemon.runner import DaemonRunner

    monkeypatch.setenv("MEMVAULT_CONSOLIDATE_QUIET", "0")
    recent = datetime.now(timezone.utc).date()
    note(vault, "m-a", "Has 2 cats", created=(recent - timedelta(days=20)).isoformat())
    note(vault, "m-b", "Has 3 cats", created=(recent - timedelta(days=10)).isoformat())
    note(vault, "m-dup1", "Prefers dark mode in every editor", created=(recent - timedelta(days=30)).isoformat())
    note(vault, "m-dup2", "prefers dark mode in every editor!", created=(recent - timedelta(days=29)).isoformat())
    before = files(vault)
    with opened(vault) as v:
        runner = DaemonRunner(v, debounce_ms=50, rescan_interval=0)
        runner.start()
        try:
            wait_for(runner.ready.is_set, 30)
            with opened(vault) as other:
                wait_for(lambda: other.consolidation_runs(), 30)
                assert other.consolidation_runs()[0]["trigger"] == "daemon"
            wait_for(lambda: runner.state()["consolidate"]["runs"] >= 1, 30)
            assert v.contradictions()[0].newer.id == "m-b"
            assert runner.quiet_for() >= 0
            run = v.consolidation_runs()[0]
            assert run["proposed"] == {"merge": 1} and "merge" not in run["counts"]
            out = CliRunner().invoke(cli, ["--vault", str(vault), "status"]).output
            assert files(vault) == before  # nothing written: the merge waits for a person
            assert f"consolidation {run['run']} by the daemon" in out and "1 contradiction flagged" in out, out
            assert "proposed:    1 merge, not done: `memvault consolidate --dry-run` shows them" in out
            log = CliRunner().invoke(cli, ["--vault", str(vault), "consolidate", "--log"]).output
            assert "proposed: 1 merge" in log
        finally:
            runner.stop()
    r = CliRunner().invoke(cli, ["--vault", str(vault), "consolidate"])
    assert r.exit_code == 0 and "1 merge" in r.output, r.output  # a person applies it
    out = CliRunner().invoke(cli, ["--vault", str(vault), "status", "--json"]).output
    assert json.loads(out)["consolidation"]["proposed"] == {}  # the later run supersedes the proposal


def test_consolidate_auto_opts_the_daemon_into_more(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_CONSOLIDATE_AUTO", "decay, merge")
    recent = datetime.now(timezone.utc).date()
    note(vault, "m-a", "Has 2 cats", created=(recent - timedelta(days=20)).isoformat())
    note(vault, "m-b", "Has 3 cats", created=(recent - timedelta(days=10)).isoformat())
    note(vault, "m-dup1", "Prefers dark mode in every editor", created=(recent - timedelta(days=30)).isoformat())
    note(vault, "m-dup2", "prefers dark mode in every editor!", created=(recent - timedelta(days=29)).isoformat())
    with opened(vault) as v:
        v.sync()
        run_scheduled_consolidation(v)
        run = v.consolidation_runs()[0]
        assert run["counts"].get("merge") == 1 and run["proposed"] == {"contradiction": 1}, run
        assert not v.contradictions()  # not opted into: proposed
    assert sum(1 for p in (vault / "Memory" / "semantic").glob("m-dup*.md")) == 1


def test_consolidate_auto_names_only_actions(vault: Path, memvault_env: Path) -> None:
    (memvault_env / "config.toml").write_text('[consolidate]\nauto = ["decay", "merges"]\n')
    r = CliRunner().invoke(cli, ["--vault", str(vault), "status"])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "Traceback" not in r.output
    assert "consolidate.auto names 'merges', not an action of consolidation" in r.output


def test_runner_says_a_just_saved_or_queued_note_is_being_edited(vault: Path) -> None:
    from memvault.daemon.runner import DaemonRunner

    path = note(vault, "m-a", "Has 2 cats")
    with opened(vault) as v:
        runner = DaemonRunner(v, debounce_ms=50, rescan_interval=0)
        assert runner.editing("Memory/semantic/m-a.md")  # saved within the quiet minute
        old = time.time() - 3600
        import os

        os.utime(path, (old, old))
        assert not runner.editing("Memory/semantic/m-a.md")
        runner.queue.add("Other.md")
        assert runner.editing("Memory/semantic/m-a.md") and runner.quiet_for() == 0.0
        runner.lock.release()


def test_state_survives_a_deleted_index(sample) -> None:
    sample.consolidate(today=TODAY)
    kept = (memories(sample), sample.contradictions(), sample.history("m-dup2" if memories(sample)["m-dup2"][0]
                                                                      == "active" else "m-dup1"))
    index = sample.index_path
    sample.close()
    index.unlink()
    sample.sync()
    assert (memories(sample), sample.contradictions(), sample.history(
        "m-dup2" if memories(sample)["m-dup2"][0] == "active" else "m-dup1")) == kept


def test_runs_are_logged_with_time_and_reasons(sample) -> None:
    report = sample.consolidate(today=TODAY)
    run = clog.get_run(sample.con, report.run_id)
    assert run is not None and run.status == "done" and run.day == "2026-11-01" and run.trigger == "cli"
    assert datetime.fromisoformat(run.started) <= datetime.now(timezone.utc)
    assert run.summary == report.counts()
