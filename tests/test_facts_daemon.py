"""The daemon with the llm extractor: the model is asked off the hot path.

A real :class:`DaemonRunner` (watchdog observer, debounce) and a real local
HTTP server playing the model (``FakeLLM`` of test_llm_extract), whose
answers the tests hold back with an event: while a call is pending, other
notes still become searchable at once, the source keeps usable facts, a
stale answer is dropped, and stopping the daemon abandons the call.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from helpers import opened, wait_for, write
from test_daemon_support import running
from test_llm_extract import GOOD, NOTE, FakeLLM, Reply, configure, llm, quick_backoff  # noqa: F401

from memvault.store.answers.browse.facts import SourceFact
from memvault.store.facts import rows as sf
from memvault.store.memory_store import MemoryStore
from memvault.store.retrieval.keyword import Filters, keyword_search

OTHER = {"facts": [{"text": "The person writes everything in plain text files.", "type": "identity"}]}




def searchable(root: Path, word: str, kinds: tuple[str, ...] = ("note",)) -> bool:
    with opened(root) as v:
        if not v.has_index():
            return False
        return bool(keyword_search(v.con, word, filters=Filters(kinds=kinds)))


def fact_rows(root: Path, path: str = "About me.md") -> list[SourceFact]:
    with opened(root) as v:
        return list(v.sources.facts(path).facts) if v.has_index() else []


def source_state(root: Path) -> list[tuple[str, str | None]]:
    with opened(root) as v:
        return [(s.extractor, s.hash) for s in sf.all_sources(v.con)]


def test_a_slow_model_does_not_hold_up_other_notes(vault: Path, llm: FakeLLM, memvault_env: Path) -> None:
    gate = threading.Event()
    llm.script(Reply(GOOD, gate=gate))
    configure(memvault_env, llm.base_url, timeout=30, retries=0)
    write(vault, "About me.md", NOTE)
    with running(vault) as (runner, _):
        # Ready without waiting for the model; the new source has the default
        # extractor's facts meanwhile, searchable at once.
        wait_for(lambda: llm.requests, timeout=5)
        assert "Prefers dark mode in every editor" in {f.text for f in fact_rows(vault)}
        assert [e for e, _ in source_state(vault)] == ["default"]
        start = time.monotonic()
        write(vault, "Plain.md", "A plain note about zebrafinch migration.\n")
        # The model is held until the gate opens: a note searchable before
        # then was not queued behind it (how fast is bench_facts' business).
        wait_for(lambda: searchable(vault, "zebrafinch"), timeout=20)
        took = time.monotonic() - start
        assert not gate.is_set() and len(llm.requests) == 1, f"after {took:.2f}s"  # the model has still not answered
        gate.set()
        wait_for(lambda: [e for e, _ in source_state(vault)] == ["llm"], timeout=5)
        rows = fact_rows(vault)
        assert {r.segment for r in rows} == {"llm"}
        assert "The person prefers dark mode in every editor." in {r.text for r in rows}
        # the worker counts the job after its transaction commits: wait for the count too
        wait_for(lambda: runner.state()["llm_facts"].get("written") == 1, timeout=5)


def save(p: Path, text: str) -> None:
    """Save a note the way editors that write a temp file and rename it do."""
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(text, "utf-8")
    os.replace(tmp, p)


def test_an_edit_keeps_the_facts_until_the_model_answers_and_stale_answers_are_dropped(
    vault: Path, llm: FakeLLM, memvault_env: Path
) -> None:
    first, second, third = threading.Event(), threading.Event(), threading.Event()
    stale = {"facts": [{"text": "This answer belongs to an old version of the note.", "type": "semantic"}]}
    llm.script(Reply(GOOD, gate=first), Reply(stale, gate=second), Reply(OTHER, gate=third))
    configure(memvault_env, llm.base_url, timeout=30, retries=0)
    p = write(vault, "About me.md", NOTE)
    with running(vault) as (runner, _):
        first.set()
        wait_for(lambda: [e for e, _ in source_state(vault)] == ["llm"], timeout=5)
        before = {r.id for r in fact_rows(vault)}
        # An edit: the llm facts stay as they are while the model thinks.
        # Saved whole (write and rename): a daemon on a loaded machine must not
        # catch a half-written file and ask about it as a version of its own.
        save(p, NOTE + "- Writes in plain text\n")
        wait_for(lambda: len(llm.requests) == 2, timeout=5)
        assert {r.id for r in fact_rows(vault)} == before
        # A second edit while that call is pending: its answer is stale.
        save(p, NOTE + "- Writes everything in plain text files\n")
        wait_for(lambda: searchable(vault, "files"), timeout=5)
        second.set()
        wait_for(lambda: len(llm.requests) == 3, timeout=5)
        third.set()
        wait_for(lambda: {r.text for r in fact_rows(vault)} == {OTHER["facts"][0]["text"]}, timeout=5)
        wait_for(lambda: runner.background.llm_worker is not None and runner.background.llm_worker.idle.is_set(), timeout=5)
        # At least the one answer for the replaced version was dropped; a
        # loaded machine may drop one more (a job that found the file already
        # saved again before asking), which is as correct.
        assert runner.state()["llm_facts"]["stale"] >= 1
        with opened(vault) as v:
            assert not keyword_search(v.con, "old version", filters=Filters(kinds=("fact",), statuses=("active", "superseded")))
            (state,) = sf.all_sources(v.con)
            assert state.hash == v.con.execute("SELECT hash FROM files WHERE path = 'About me.md'").fetchone()[0]


def test_stopping_the_daemon_abandons_a_pending_call(vault: Path, llm: FakeLLM, memvault_env: Path) -> None:
    gate = threading.Event()  # never set: the model never answers
    llm.script(Reply(GOOD, gate=gate))
    configure(memvault_env, llm.base_url, timeout=60, retries=2)
    write(vault, "About me.md", NOTE)
    with running(vault) as (runner, _):
        wait_for(lambda: llm.requests, timeout=5)
        start = time.monotonic()
        runner.stop()
        assert time.monotonic() - start < 3
    assert source_state(vault)[0][0] == "default"  # the stand-in facts stay


def test_a_job_lost_at_stop_is_picked_up_at_the_next_start(vault: Path, llm: FakeLLM, memvault_env: Path) -> None:
    gate = threading.Event()
    llm.script(Reply(GOOD, gate=gate))
    configure(memvault_env, llm.base_url, timeout=60, retries=0)
    write(vault, "About me.md", NOTE)
    with running(vault):
        wait_for(lambda: llm.requests, timeout=5)
    gate.set()
    with running(vault):
        wait_for(lambda: [e for e, _ in source_state(vault)] == ["llm"], timeout=10)


def test_one_shot_sync_stays_synchronous(vault: Path, llm: FakeLLM, memvault_env: Path) -> None:
    llm.script(Reply(GOOD))
    configure(memvault_env, llm.base_url)
    write(vault, "About me.md", NOTE)
    with opened(vault) as v:
        v.sync()
        assert [s.extractor for s in sf.all_sources(v.con)] == ["llm"]


def test_the_queue_coalesces_changes_of_one_note_and_is_bounded(vault: Path, llm: FakeLLM, memvault_env: Path) -> None:
    from memvault.daemon.llm_worker import LLMFactWorker

    write(vault, "About me.md", NOTE)
    with opened(vault) as v:  # default facts first: the worker then has something to ask about
        v.sync()
        (source_id,) = [s.source_id for s in sf.all_sources(v.con)]
    gate = threading.Event()
    llm.script(Reply(GOOD, gate=gate))
    configure(memvault_env, llm.base_url, timeout=30, retries=0)
    worker = LLMFactWorker(MemoryStore.open(str(vault)), max_pending=2)
    worker.start()
    try:
        assert worker.submit(source_id, "About me.md")
        wait_for(lambda: llm.requests, timeout=5)  # that job is in flight now
        assert all(worker.submit(source_id, "About me.md") for _ in range(3))
        assert worker.status()["queued"] == 1  # three changes, one job
        assert worker.submit("n-gone", "Gone.md")
        assert not worker.submit("n-other", "Other.md")  # full
        gate.set()
        wait_for(worker.idle.is_set, timeout=5)
        status = worker.status()
        assert (status["written"], status["current"], status["gone"], status["dropped"]) == (1, 1, 1, 1)
        assert len(llm.requests) == 1
    finally:
        worker.stop()
        worker.store.close()


def test_a_sources_glob_added_while_stopped_does_not_hold_up_the_start(vault: Path, llm: FakeLLM, memvault_env: Path) -> None:
    """The notes a changed `sources` glob makes sources are queued for the
    background worker at start, not asked inline before the daemon is ready."""
    gate = threading.Event()
    llm.script(Reply(GOOD, gate=gate))
    write(vault, "Profile/Me.md", NOTE.replace("memory: source\n", "title: Me\n"))
    configure(memvault_env, llm.base_url, timeout=30, retries=0)
    with running(vault):
        pass  # indexed once, with no glob: not a source
    config = memvault_env / "config.toml"
    config.write_text(config.read_text("utf-8").replace("[llm]", 'sources = ["Profile/**"]\n[llm]'), "utf-8")
    start = time.monotonic()
    with running(vault):
        assert time.monotonic() - start < 10 and not gate.is_set()  # ready while the model holds back
        wait_for(lambda: llm.requests, timeout=5)
        gate.set()
        wait_for(lambda: [e for e, _ in source_state(vault)] == ["llm"], timeout=10)


def test_a_dead_llm_worker_takes_no_jobs(vault: Path, llm: FakeLLM, memvault_env: Path, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    """A worker whose thread died would leave every deferred source's facts
    stale for the rest of the run: it must refuse jobs, so the observer
    extracts with the default rules instead."""
    from memvault.daemon.llm_worker import LLMFactWorker
    from memvault.daemon.services import Supervisor

    configure(memvault_env, llm.base_url)
    with opened(vault) as v:
        def broken_connect() -> None:
            raise OSError("index unreadable")

        monkeypatch.setattr(v, "connect", broken_connect)
        worker = LLMFactWorker(v)
        services = Supervisor(backoff_start=30)
        services.add(worker)
        services.start()
        try:
            wait_for(lambda: services.status()["llm_facts"]["restarts"] >= 1)
            assert services.status()["llm_facts"]["state"] == "restarting after OSError (1st time)"
            assert worker.submit("n-1", "About me.md") is False
        finally:
            services.stop()


def test_every_indexer_of_the_daemons_vault_defers_to_the_worker(vault: Path, llm: FakeLLM, memvault_env: Path) -> None:
    """The memory writer builds its own indexer: its fact observer must send
    llm work to the daemon's worker too, never ask the model inline."""
    from memvault.store.facts.observer import FactObserver

    configure(memvault_env, llm.base_url)
    with running(vault) as (runner, _):
        worker = runner.background.llm_worker
        assert worker is not None
        other = runner.store.reconciler  # as vault.memories does on every flush
        (observer,) = [o for o in other.observers if isinstance(o, FactObserver)]
        assert observer.defer == worker.submit


def test_an_index_deleted_under_a_daemon_with_the_llm_worker_is_rebuilt(
    vault: Path, llm: FakeLLM, memvault_env: Path
) -> None:
    """After reopening its databases the daemon queues the llm backlog through
    the store's new reconciler: the worker once kept the first one's fact
    observer, whose connection the reopen had closed, and the daemon died."""
    from memvault.store.location import index_path

    llm.script(Reply(GOOD))
    configure(memvault_env, llm.base_url, timeout=30, retries=0)
    write(vault, "About me.md", NOTE)
    with running(vault) as (runner, _):
        wait_for(lambda: [e for e, _ in source_state(vault)] == ["llm"], timeout=10)
        index_path(vault).unlink()  # a person deletes index.db while the daemon runs
        wait_for(lambda: runner.reopens == 1, timeout=30)
        write(vault, "Plain.md", "A plain note about zebrafinch migration.\n")
        wait_for(lambda: searchable(vault, "zebrafinch"), timeout=10)
        wait_for(lambda: [e for e, _ in source_state(vault)] == ["llm"], timeout=10)
        assert runner.error is None and runner.failures == 0
