"""`memvault ingest`: transcripts become session notes, facts and searchable text."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import FIXTURES, opened, write
from test_llm_extract import FakeLLM, Reply, configure, llm, quick_backoff  # noqa: F401

from memvault.cli.main import cli
from memvault.store.flows.digest import DIGEST_PROMPT
from memvault.store.flows.keys import get_key
from memvault.store.queries.recall import ContextQuery
from memvault.store.queries.search import SearchQuery
from memvault.vault_io.parser import parse_note
from memvault.vault_io.session_note import turn_spans

CLAUDE_CODE = FIXTURES / "imports" / "claude-code-session.jsonl"
SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


def _lines(n: int) -> list[str]:
    return CLAUDE_CODE.read_text("utf-8").splitlines(keepends=True)[:n]


def _transcript(tmp_path: Path, lines: list[str], name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(lines), "utf-8")
    return path


def test_a_claude_code_session_becomes_one_session_note(vault: Path) -> None:
    with opened(vault) as store:
        report = store.ingest(CLAUDE_CODE)
        assert report.action == "imported"
        assert report.path == "Memory/episodic/sessions/2026-07-06 Fix APSW threading bug.md"
        text = (vault / report.path).read_text("utf-8")
        note = parse_note(report.path, text.encode())
        fm = note.frontmatter
        assert fm["session_id"] == "00893aaf-19fa-41d2-8238-13269b9b3ca0"
        assert (fm["client"], fm["turns"], fm["memory"]) == ("claude-code", 5, "source")
        assert fm["id"] == report.plan.note_id and fm["id"].startswith("s-")
        assert fm["started"] == "2026-07-06T23:23:31+00:00" and fm["ended"] == "2026-07-06T23:24:01+00:00"
        # The digest sits on top; every turn is a callout with its own block id.
        assert text.index("## Digest") < text.index("## Transcript")
        spans = turn_spans(note.body, note.body_line)
        assert [(s.n, s.role) for s in spans] == [(1, "user"), (2, "assistant"), (3, "tool"), (4, "assistant"), (5, "user")]
        # Thinking, side chains and injected meta text are left out; the tool
        # call and its output are one line each, not copied.
        for absent in ("Check the log first", "sub-agent prompt", "injected meta text", "Traceback line 2"):
            assert absent not in text
        assert "- tool call: Bash `tail -n 50 daemon.log`" in text
        assert "Bash: apsw.ThreadingViolation: ... (3 lines)" in text
        # The secret never reaches the vault nor the index.
        assert SECRET not in text and "[redacted]" in text
        assert store.search(SearchQuery(SECRET[:20], mode="keyword")).to_json()["hits"] == []
        # It is an ordinary note that is a memory source, never a memory.
        shown = store.show(report.path)
        assert shown.kind == "note"


def test_facts_are_the_users_statements_anchored_to_their_turns(vault: Path) -> None:
    with opened(vault) as store:
        report = store.ingest(CLAUDE_CODE)
        facts = store.facts(report.path).facts
        by_text = {f.text: f for f in facts}
        assert set(by_text) == {
            "On 2026-07-06 in claude-code, the user began with: why does the daemon crash on startup?",
            "I prefer short answers with the fix first.",
            "The staging database is called db2.",
        }
        assert by_text["I prefer short answers with the fix first."].anchor == "^t1"
        assert by_text["The staging database is called db2."].anchor == "^t5"
        assert by_text["The staging database is called db2."].source_uri.endswith("#^t5")
        assert by_text["On 2026-07-06 in claude-code, the user began with: why does the daemon crash on startup?"
                       ].type == "episodic"
        assert report.facts == 3


def test_the_transcript_is_searchable_at_once_and_its_turns_and_facts_reach_context(vault: Path) -> None:
    with opened(vault) as store:
        report = store.ingest(CLAUDE_CODE)
        hits = store.search(SearchQuery("ThreadingViolation", mode="keyword")).to_json()["hits"]
        # The turn that says it, a trace of its own, addressed in its note.
        assert [(h["kind"], h["path"]) for h in hits] == [("turn", report.path)]
        assert hits[0]["ref"] == f"{hits[0]['path']}#{hits[0]['anchor']}"
        assert "ThreadingViolation" in hits[0]["passage"]
        block = store.context(ContextQuery("what is the staging database called?")).to_json()
        assert "db2" in block["text"]
        assert {item["kind"] for item in block["items"]} <= {"fact", "turn"}
        # By default what was said is recalled (issue 35); memories and facts alone leave the turns out.
        said = store.context(ContextQuery("ThreadingViolation daemon crash")).to_json()
        assert "User: why does the daemon crash on startup?" in said["text"]
        assert "turn" in {item["kind"] for item in said["items"]}
        only = store.context(ContextQuery("ThreadingViolation daemon crash", what="memories")).to_json()
        assert "turn" not in {item["kind"] for item in only["items"]}


def test_ingesting_the_same_transcript_twice_changes_nothing(vault: Path) -> None:
    with opened(vault) as store:
        first = store.ingest(CLAUDE_CODE)
        path = vault / first.path
        before = (path.read_bytes(), path.stat().st_mtime_ns)
        again = store.ingest(CLAUDE_CODE)
        assert (again.action, again.path) == ("skipped", first.path)
        assert (path.read_bytes(), path.stat().st_mtime_ns) == before
        assert len(list((vault / "Memory/episodic/sessions").iterdir())) == 1


def test_a_grown_session_appends_only_its_new_turns(vault: Path, tmp_path: Path) -> None:
    transcript = _transcript(tmp_path, _lines(5))
    with opened(vault) as store:
        first = store.ingest(transcript)
        assert (first.action, first.plan.new_turns) == ("imported", 3)
        old = (vault / first.path).read_text("utf-8")
        old_facts = store.facts(first.path).facts
        transcript.write_text("".join(_lines(100)), "utf-8")
        grown = store.ingest(transcript)
        assert (grown.action, grown.path, grown.plan.new_turns) == ("updated", first.path, 2)
        new = (vault / grown.path).read_text("utf-8")
        # Every byte of the turns written before is still there, in place.
        old_turns = old[old.index("## Transcript"):]
        assert new[new.index("## Transcript"):].startswith(old_turns)
        assert new.count("^t") == 5 and "turns: 5" in new
        # Facts of the earlier turns keep their ids.
        facts = store.facts(grown.path).facts
        assert {f.id for f in old_facts} <= {f.id for f in facts}
        assert len(list((vault / "Memory/episodic/sessions").iterdir())) == 1


def test_a_person_s_own_lines_in_the_session_note_survive_a_regrowth(vault: Path, tmp_path: Path) -> None:
    transcript = _transcript(tmp_path, _lines(5))
    with opened(vault) as store:
        first = store.ingest(transcript)
        path = vault / first.path
        path.write_text(path.read_text("utf-8").replace("tags:\n", "rating: 5\ntags:\n") + "My own remark.\n", "utf-8")
        transcript.write_text("".join(_lines(100)), "utf-8")
        store.ingest(transcript)
        text = path.read_text("utf-8")
        assert "rating: 5" in text and "My own remark.\n\n> [!assistant]" in text


def test_a_torn_last_line_is_skipped_and_read_next_time(vault: Path, tmp_path: Path) -> None:
    lines = _lines(100)
    torn = "".join(lines[:-2]) + lines[-2][:40]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(torn, "utf-8")
    with opened(vault) as store:
        report = store.ingest(transcript)
        assert report.warnings == [] and report.plan.conv.turns[-1].role == "assistant"
        transcript.write_text("".join(lines), "utf-8")
        assert store.ingest(transcript).plan.new_turns == 1


def test_a_rebuilt_index_keeps_the_import_keys(vault: Path, tmp_path: Path) -> None:
    transcript = _transcript(tmp_path, _lines(5))
    with opened(vault) as store:
        first = store.ingest(transcript)
        store.rebuild()
        assert get_key(store.con, "session", first.plan.note_id) is not None
        assert store.ingest(transcript).action == "skipped"
        transcript.write_text("".join(_lines(100)), "utf-8")
        assert store.ingest(transcript).plan.new_turns == 2


def test_a_lost_state_finds_the_note_again_by_its_id(vault: Path, tmp_path: Path) -> None:
    with opened(vault) as store:
        first = store.ingest(CLAUDE_CODE)
        data_dir = store.data_dir
    shutil.rmtree(data_dir)
    with opened(vault) as store:
        again = store.ingest(CLAUDE_CODE)
        assert (again.action, again.path) == ("skipped", first.path)
        assert len(list((vault / "Memory/episodic/sessions").iterdir())) == 1


def test_generic_jsonl_from_a_stream(vault: Path) -> None:
    lines = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "I'm a data engineer based in Lisbon. How do I rotate logs?", "timestamp": 1767225600},
        {"role": "assistant", "content": [{"type": "text", "text": "Use logrotate."}],
         "tool_calls": [{"function": {"name": "search", "arguments": "{\"query\": \"logrotate\"}"}}]},
        {"role": "tool", "name": "search", "content": "logrotate(8) manual\nmore"},
        {"role": "user", "content": "I'm going to set it up tomorrow. The password: hunter2hunter2"},
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    with opened(vault) as store:
        report = store.ingest(io.BytesIO(data), session="chat-42", title="Log rotation", client="my-agent")
        text = (vault / report.path).read_text("utf-8")
        assert report.path == "Memory/episodic/sessions/2026-01-01 Log rotation.md"
        assert "client: my-agent" in text and "session_id: chat-42" in text
        assert "You are helpful" not in text and "hunter2" not in text
        assert "- tool call: search `logrotate`" in text and "search: logrotate(8) manual (2 lines)" in text
        facts = store.facts(report.path).facts
        types = {f.text: f.type for f in facts}
        assert types["I'm going to set it up tomorrow."] == "prospective"
        # The same stream without a session id is the same session (its first turn names it).
        unnamed = store.ingest(io.BytesIO(data))
        assert unnamed.action == "imported"
        assert store.ingest(io.BytesIO(data)).action == "skipped"


@pytest.mark.parametrize(
    ("said", "kind"),
    [
        ("I'm a data engineer based in Lisbon.", "identity"),
        ("I am an avid reader.", "identity"),
        ("I'm a senior backend developer.", "identity"),
        # A state, not a kind of person: not who the person is.
        ("I'm a mix of nervous and hopeful about the move.", None),
        ("I'm a bit tired today.", None),
        ("I'm a lot better now.", None),
    ],
)
def test_i_am_a_is_identity_only_for_a_kind_of_person(said: str, kind: str | None) -> None:
    from memvault.store.facts.conversation import classify

    found = classify(said)
    assert (found[0] if found else None) == kind


def test_a_statement_already_known_is_not_added_twice(vault: Path, tmp_path: Path) -> None:
    with opened(vault) as store:
        store.add("I prefer short answers with the fix first", "semantic")
        report = store.ingest(CLAUDE_CODE)
        facts = store.facts(report.path).facts
        assert "I prefer short answers with the fix first." not in {f.text for f in facts}
        # A later session saying what the first one said adds nothing either
        # (an earlier one would take the fact over: test_fact_repeats).
        other = [json.loads(line) for line in _lines(100)]
        for obj in other:
            if "sessionId" in obj:
                obj["sessionId"] = "another-session"
            if "timestamp" in obj:
                obj["timestamp"] = obj["timestamp"].replace("2026-07-", "2026-08-")
        second = store.ingest(_transcript(tmp_path, [json.dumps(o) + "\n" for o in other]))
        facts2 = store.facts(second.path).facts
        assert "The staging database is called db2." not in {f.text for f in facts2}
        assert sum(1 for h in store.search(SearchQuery("staging database db2", mode="keyword", what="facts")).to_json()["hits"]) == 1


def test_the_llm_extractor_reads_a_session_in_one_call(vault: Path, llm: FakeLLM, memvault_env: Path) -> None:  # noqa: F811
    configure(memvault_env, llm.base_url)
    llm.script(Reply({"facts": [
        {"text": "The user's staging database is db2.", "type": "semantic", "line": 44},
        {"text": "The user prefers short answers.", "type": "preference", "line": 24},
    ]}))
    with opened(vault) as store:
        report = store.ingest(CLAUDE_CODE)
        facts = store.facts(report.path).facts
    asked = [r for r in llm.requests if r["json"]["messages"][0]["content"] != DIGEST_PROMPT]  # the digest's own call
    assert len(asked) == 1
    sent = asked[0]["json"]["messages"]
    assert "conversation between a person" in sent[0]["content"]
    assert SECRET not in sent[1]["content"] and "apsw.ThreadingViolation" not in sent[1]["content"]
    anchors = {f.text: f.anchor for f in facts}
    assert anchors == {"The user's staging database is db2.": "^t5", "The user prefers short answers.": "^t1"}


def test_cli_ingest_from_a_path_and_stdin(vault: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(cli, ["--vault", str(vault), "ingest", str(CLAUDE_CODE), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert (data["action"], data["turns"], data["facts"], data["redacted"]) == ("imported", 5, 3, 1)
    r = runner.invoke(cli, ["--vault", str(vault), "ingest", "-"], input=CLAUDE_CODE.read_bytes())
    assert r.exit_code == 0 and r.output.startswith("Unchanged: Memory/episodic/sessions/")
    r = runner.invoke(cli, ["--vault", str(vault), "ingest", str(tmp_path / "missing.jsonl")])
    assert r.exit_code == 2 and "does not exist" in r.output
    write(tmp_path, "bad.jsonl", "this is not json\n")
    r = runner.invoke(cli, ["--vault", str(vault), "ingest", str(tmp_path / "bad.jsonl")])
    assert r.exit_code == 1 and "no JSON lines" in r.output
