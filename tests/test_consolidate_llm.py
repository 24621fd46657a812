"""With ``extractor = "llm"`` the configured model confirms contradiction
candidates (memvault.store.consolidation.confirm), against a real local HTTP
server playing the endpoint (tests/fake_llm.py)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_llm import FakeLLM, Reply
from helpers import opened, wait_for
from test_consolidate import TODAY, note
from test_llm_extract import llm, quick_backoff  # noqa: F401 - the endpoint fixture, quick retries

from memvault.cli.main import cli
from memvault.store.consolidation import confirm
from memvault.store.facts import llm_extract
from memvault.store.facts.llm_extract import LLMCancelled


def configure(home: Path, base_url: str, extractor: str = "llm", timeout: float = 2.0) -> None:
    (home / "config.toml").write_text(
        f'extractor = "{extractor}"\n[llm]\nbase_url = "{base_url}"\nmodel = "judge-model"\n'
        f"timeout = {timeout}\nretries = 1\n", "utf-8")


def judge(payload: dict[str, Any]) -> Reply:
    """The model: two cats or three is no contradiction to it (say, two
    households); a move from Lisbon to Porto is one."""
    question = payload["messages"][1]["content"]
    if "cats" in question:
        return Reply({"contradicts": False, "why": "could be two different households"})
    return Reply({"contradicts": True, "why": "she cannot live in both cities"})


@pytest.fixture
def claims(vault: Path) -> Path:
    note(vault, "m-cats1", "Has 2 cats", created="2026-08-01")  # young enough not to be archived
    note(vault, "m-cats2", "Has 3 cats", created="2026-09-15")
    note(vault, "m-lisbon", "Lives in Lisbon near the river", created="2026-09-01")
    note(vault, "m-porto", "Lives in Porto near the river", created="2026-10-01")
    with opened(vault) as v:
        v.sync()
    return vault


def flagged(actions: list[dict[str, Any]]) -> list[list[str]]:
    return [a["ids"] for a in actions if a["kind"] == "contradiction"]


def run(vault: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--vault", str(vault), "consolidate", "--today", TODAY.isoformat(), *args])


def test_the_model_removes_a_flag_it_disagrees_with_and_confirms_the_other(
        claims: Path, llm: FakeLLM, memvault_env: Path) -> None:
    configure(memvault_env, llm.base_url)
    llm.answer = judge
    out = run(claims, "--dry-run", "--json")
    assert out.exit_code == 0, out.output
    lines = [json.loads(line) for line in out.output.splitlines()]
    assert flagged(lines[:-1]) == [["m-porto", "m-lisbon"]]
    porto = next(a for a in lines if a.get("kind") == "contradiction")
    assert porto["reason"].endswith("confirmed by judge-model") and porto["detail"]["confirmed_by"] == "judge-model"
    stats = lines[-1]["stats"]["llm"]
    assert stats["asked"] == 2 and stats["confirmed"] == 1
    assert stats["rejected"] == [{"ids": ["m-cats2", "m-cats1"], "why": "could be two different households"}]
    # what was sent: the two texts, older first, with the model of the settings
    sent = [r["json"] for r in llm.requests]
    assert {s["model"] for s in sent} == {"judge-model"} and all(r["path"] == "/v1/chat/completions" for r in llm.requests)
    assert any(s["messages"][1]["content"] == "Older: Has 2 cats\nNewer: Has 3 cats" for s in sent)

    # The answers are remembered: a second plan asks nothing and is the same; the run does what it planned.
    again = run(claims, "--dry-run", "--json").output.splitlines()
    assert again[:-1] == out.output.splitlines()[:-1] and len(llm.requests) == 2
    assert json.loads(again[-1])["stats"]["llm"] | {"rejected": []} == {
        "model": "judge-model", "asked": 0, "remembered": 2, "confirmed": 1, "rejected": [], "unconfirmed": 0}
    done = run(claims, "--json")
    assert done.exit_code == 0 and len(llm.requests) == 2
    assert flagged([json.loads(line) for line in done.output.splitlines()][:-1]) == [["m-porto", "m-lisbon"]]
    conflicts = CliRunner().invoke(cli, ["--vault", str(claims), "conflicts", "--json"])
    assert [(c["older"]["id"], c["newer"]["id"]) for c in map(json.loads, conflicts.output.splitlines())] == [
        ("m-lisbon", "m-porto")]


def test_human_output_names_what_the_model_set_aside(claims: Path, llm: FakeLLM, memvault_env: Path) -> None:
    configure(memvault_env, llm.base_url)
    llm.answer = judge
    out = run(claims, "--dry-run")
    assert out.exit_code == 0
    assert "not flagged, judge-model sees no contradiction: m-cats2, m-cats1 (could be two different households)" in out.output


def test_an_edited_text_is_asked_again(claims: Path, llm: FakeLLM, memvault_env: Path) -> None:
    configure(memvault_env, llm.base_url)
    llm.answer = judge
    assert run(claims, "--dry-run").exit_code == 0 and len(llm.requests) == 2
    note(claims, "m-cats2", "Has 4 cats", created="2026-09-15")
    with opened(claims) as v:
        v.sync()
    assert run(claims, "--dry-run").exit_code == 0
    assert len(llm.requests) == 3 and "Newer: Has 4 cats" in llm.requests[-1]["json"]["messages"][1]["content"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("endpoint", ["refused", "http 500", "bad answer"])
def test_without_an_answer_the_rule_decides_alone(claims: Path, llm: FakeLLM, memvault_env: Path,
                                                  endpoint: str) -> None:
    base = f"http://127.0.0.1:{_closed_port()}/v1" if endpoint == "refused" else llm.base_url
    llm.script(Reply({"error": "overloaded"}, status=500) if endpoint == "http 500" else Reply({"verdict": "maybe"}))
    configure(memvault_env, base, timeout=1.0)
    started = time.monotonic()
    out = run(claims, "--dry-run")
    assert out.exit_code == 0, out.output
    assert time.monotonic() - started < 1.0 * 2 + 3  # one bounded question (two attempts), not one per pair
    assert "2 flag" in out.output  # both kept, as the rule decided
    assert "warning: judge-model did not answer" in out.stderr and "the rule decided alone" in out.stderr
    assert len(llm.requests) == (0 if endpoint == "refused" else 2)  # one question, its retry, then no more


def test_the_default_extractor_never_asks(claims: Path, llm: FakeLLM, memvault_env: Path) -> None:
    configure(memvault_env, llm.base_url, extractor="default")
    out = run(claims, "--dry-run", "--json")
    assert len(flagged([json.loads(line) for line in out.output.splitlines()][:-1])) == 2
    assert llm.requests == [] and "llm" not in json.loads(out.output.splitlines()[-1])["stats"]


def test_a_stop_abandons_the_question_and_the_run(claims: Path, llm: FakeLLM, memvault_env: Path) -> None:
    """The daemon's stop: the question in flight is dropped and nothing is written."""
    configure(memvault_env, llm.base_url, timeout=30.0)
    gate = threading.Event()
    llm.script(Reply({"contradicts": True}, gate=gate))
    stop = threading.Event()
    errors: list[BaseException] = []

    def consolidate() -> None:
        with opened(claims) as v:
            try:
                v.consolidate(today=TODAY, cancel=stop)
            except BaseException as exc:  # noqa: BLE001 - the thread reports what ended it
                errors.append(exc)

    worker = threading.Thread(target=consolidate)
    worker.start()
    wait_for(lambda: len(llm.requests) == 1)
    started = time.monotonic()
    stop.set()
    worker.join(10)
    assert not worker.is_alive() and time.monotonic() - started < 5
    assert len(errors) == 1 and isinstance(errors[0], LLMCancelled)
    gate.set()
    with opened(claims) as v:
        assert v.consolidation_runs() == [] and v.contradictions() == []


def test_verdicts_parse_strictly() -> None:
    def body(content: Any) -> bytes:
        return json.dumps({"choices": [{"message": {"content": json.dumps(content)}}]}).encode()

    assert confirm.parse_verdict(body({"contradicts": False, "why": "x" * 400})) == (False, "x" * 300)
    assert confirm.parse_verdict(body({"contradicts": True})) == (True, "")
    for bad in ({"contradicts": "yes"}, [], {"why": "no verdict"}):
        with pytest.raises(llm_extract.SchemaError):
            confirm.parse_verdict(body(bad))
    assert confirm.pair_key("a", "b") != confirm.pair_key("b", "a") != confirm.pair_key("a", "bb")


def test_the_daemon_stops_mid_question_without_a_run_or_an_error(
        claims: Path, llm: FakeLLM, memvault_env: Path, caplog: pytest.LogCaptureFixture) -> None:
    from memvault.daemon.consolidate_service import ConsolidateService

    configure(memvault_env, llm.base_url, timeout=30.0)
    gate = threading.Event()
    llm.script(Reply({"contradicts": True}, gate=gate))
    stop = threading.Event()
    errors: list[BaseException] = []
    with opened(claims) as v:
        service = ConsolidateService(v, quiet_for=lambda: 1e9, interval=3600, quiet=0)

        def work() -> None:
            try:
                service.run(stop)
            except BaseException as exc:  # noqa: BLE001 - the supervisor would report it
                errors.append(exc)

        caplog.set_level("INFO", logger="memvault.consolidate")
        thread = threading.Thread(target=work)
        thread.start()
        wait_for(lambda: len(llm.requests) == 1)
        stop.set()
        service.interrupt()
        thread.join(10)
        gate.set()
        assert not thread.is_alive() and errors == [] and service.runs == 0
        assert "stopped while the llm was asked" in caplog.text
        assert v.consolidation_runs() == []


def test_past_the_cap_the_rule_decides_alone_in_the_dry_run_and_the_run(
        claims: Path, llm: FakeLLM, memvault_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the first MAX_QUESTIONS contradictions of a plan go to the model,
    in plan order, so a dry run and the run after it agree."""
    monkeypatch.setattr(confirm, "MAX_QUESTIONS", 1)
    configure(memvault_env, llm.base_url)
    llm.script(Reply({"contradicts": False, "why": "no"}))  # it would reject everything
    plan = run(claims, "--dry-run", "--json")
    lines = [json.loads(line) for line in plan.output.splitlines()]
    assert lines[-1]["stats"]["llm"]["unconfirmed"] == 1 and len(llm.requests) == 1
    assert len(flagged(lines[:-1])) == 1  # the first rejected, the second kept by the rule
    done = run(claims, "--json")
    assert flagged([json.loads(line) for line in done.output.splitlines()][:-1]) == flagged(lines[:-1])
    assert len(llm.requests) == 1
    human = run(claims, "--dry-run")  # the kept pair is flagged now; the rejected one is remembered as such
    assert human.exit_code == 0 and "nothing to do" in human.output and "not flagged, judge-model" in human.output
    assert len(llm.requests) == 1


def test_a_state_that_cannot_be_written_costs_the_memory_not_the_plan(
        claims: Path, llm: FakeLLM, memvault_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from contextlib import contextmanager

    from memvault.store.db.connection import StoreWriteError

    @contextmanager
    def full_disk(con: Any) -> Iterator[Any]:
        raise StoreWriteError("cannot write to state.db: database or disk is full; nothing was changed")
        yield con

    monkeypatch.setattr(confirm, "write_transaction", full_disk)
    configure(memvault_env, llm.base_url)
    llm.answer = judge
    out = run(claims, "--dry-run", "--json")
    assert out.exit_code == 0 and flagged([json.loads(x) for x in out.output.splitlines()][:-1]) == [
        ["m-porto", "m-lisbon"]]
    assert run(claims, "--dry-run").exit_code == 0 and len(llm.requests) == 4  # nothing kept: asked again


def test_the_model_confirms_merges_and_sets_aside_the_ones_it_calls_different(
        vault: Path, llm: FakeLLM, memvault_env: Path) -> None:
    """Issue 22: with extractor = llm every proposed merge is put to the model;
    a group it does not call the same claim is not merged (the rule only ever
    proposes: the model removes)."""
    note(vault, "m-tea1", "Drinks green tea every morning", created="2026-08-01")
    note(vault, "m-tea2", "drinks green tea, every morning!", created="2026-09-01")
    note(vault, "m-run1", "Runs by the river on Sundays", created="2026-08-02")
    note(vault, "m-run2", "runs by the river on sundays.", created="2026-09-02")
    with opened(vault) as v:
        v.sync()
    merges = lambda out: [a["ids"] for a in map(json.loads, out.output.splitlines()[:-1]) if a["kind"] == "merge"]  # noqa: E731
    plain = run(vault, "--dry-run", "--json")
    assert sorted(map(sorted, merges(plain))) == [["m-run1", "m-run2"], ["m-tea1", "m-tea2"]]

    def same_unless_tea(payload: dict[str, Any]) -> Reply:
        assert "duplicates" in payload["messages"][0]["content"]  # the merge question, not the contradiction one
        question = payload["messages"][1]["content"]
        assert question.startswith("1. ") and "\n2. " in question
        return Reply({"same": "tea" not in question, "why": "the model's reason"})

    configure(memvault_env, llm.base_url)
    llm.answer = same_unless_tea
    out = run(vault, "--dry-run", "--json")
    assert out.exit_code == 0, out.output
    assert [sorted(ids) for ids in merges(out)] == [["m-run1", "m-run2"]]
    stats = json.loads(out.output.splitlines()[-1])["stats"]["llm_merges"]
    assert stats["asked"] == 2 and stats["confirmed"] == 1 and len(stats["rejected"]) == 1
    kept = next(a for a in map(json.loads, out.output.splitlines()[:-1]) if a["kind"] == "merge")
    assert kept["reason"].endswith("confirmed by judge-model")
    # remembered: the run asks nothing more and does what the dry run showed
    done = run(vault, "--json")
    assert done.exit_code == 0 and len(llm.requests) == 2
    assert [sorted(ids) for ids in merges(done)] == [["m-run1", "m-run2"]]


def test_merge_verdicts_parse_strictly() -> None:
    body = lambda d: json.dumps({"choices": [{"message": {"content": json.dumps(d)}}]}).encode()  # noqa: E731
    assert confirm.parse_merge_verdict(body({"same": True, "why": "w"})) == (True, "w")
    with pytest.raises(llm_extract.SchemaError):
        confirm.parse_merge_verdict(body({"contradicts": True}))


def test_where_the_rules_are_unsure_the_model_decides(vault: Path, llm: FakeLLM, memvault_env: Path) -> None:
    """Issue 22: two very similar claims that no rule merges or flags (day /
    night shift: no single-value frame the rule knows) are asked; a pair the
    model says contradicts is flagged "found by" it, newer over older."""
    note(vault, "m-day", "Works the day shift at the hospital", created="2026-08-01")
    note(vault, "m-night", "Works the night shift at the hospital", created="2026-09-01")
    with opened(vault) as v:
        v.sync()
        v.embed()
    plain = run(vault, "--dry-run", "--json")
    assert flagged([json.loads(x) for x in plain.output.splitlines()][:-1]) == []  # the rule says nothing

    def shifts(payload: dict[str, Any]) -> Reply:
        assert payload["messages"][1]["content"].startswith("Older: Works the day shift")
        return Reply({"contradicts": True, "why": "one shift at a time"})

    configure(memvault_env, llm.base_url)
    llm.answer = shifts
    out = run(vault, "--dry-run", "--json")
    lines = [json.loads(x) for x in out.output.splitlines()]
    assert flagged(lines[:-1]) == [["m-night", "m-day"]]
    found = next(a for a in lines[:-1] if a["kind"] == "contradiction")
    assert found["detail"]["found_by"] == "judge-model" and "one shift at a time" in found["reason"]
    assert lines[-1]["stats"]["llm_unsure"]["found"] == 1 and len(llm.requests) == 1
    done = run(vault, "--json")  # remembered: the run flags the same without asking again
    assert flagged([json.loads(x) for x in done.output.splitlines()][:-1]) == [["m-night", "m-day"]]
    assert len(llm.requests) == 1
