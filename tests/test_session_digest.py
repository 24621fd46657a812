"""Session digests (issue 36 item 4): what a session came to, in a block of its note memvault owns.

Ingest writes it (rules, or the llm in one call per session); its action items
are tasks with due dates, facts of the note, open until a person ticks them in
Obsidian, and listed at session start.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened
from hypothesis import given
from hypothesis import strategies as st
from test_hooks import CC_END, CC_START, hook
from test_llm_extract import FakeLLM, Reply, configure, llm, quick_backoff  # noqa: F401

from memvault.cli.main import cli
from memvault.store.facts.actions import open_action_items
from memvault.store.flows.digest import DIGEST_PROMPT, due_of, rules_digest
from memvault.store.flows.transcript import read_transcript
from memvault.vault_io.session_digest import END, ActionItem, SessionDigest, find_block, put_block

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


def _turn(role: str, text: str, at: str) -> str:
    return json.dumps({"role": role, "content": text, "timestamp": at}) + "\n"


def transcript(tmp_path: Path, extra: int = 0, name: str = "t.jsonl") -> Path:
    """A conversation on Monday 2026-11-23: a decision, a plan with a relative due day, a request."""
    turns = [
        _turn("user", "The deploy of the billing service to the staging host fails with a timeout.",
              "2026-11-23T10:02:11Z"),
        _turn("assistant", "The Postgres pool is exhausted; PgBouncer in front of it would help.", "2026-11-23T10:03:00Z"),
        _turn("user", "We decided to run PgBouncer in Lisbon. I'll rotate the staging keys next Friday. "
                      f"Can you write the config? The token is {SECRET}", "2026-11-23T10:05:00Z"),
    ]
    turns += [_turn("user", f"Another thought number {i}.", f"2026-11-23T11:0{i}:00Z") for i in range(extra)]
    path = tmp_path / name
    path.write_text("".join(turns), "utf-8")
    return path


def test_rules_read_decisions_action_items_due_days_and_names(tmp_path: Path) -> None:
    conv, _ = read_transcript(transcript(tmp_path))
    digest = rules_digest(conv)
    assert digest.decisions == ("We decided to run PgBouncer in Lisbon.",)
    # "next Friday" said on Monday 2026-11-23 is 2026-11-27; the request is no action item
    assert digest.actions == (ActionItem("I'll rotate the staging keys next Friday.", "2026-11-27"),)
    assert "Lisbon" in digest.named and "PgBouncer" in digest.named
    assert not {"We", "I'll", "The", "Can"} & set(digest.named)  # a sentence's first word, "I": no names
    assert 1 <= len(digest.summary) <= 3 and "1 decision was stated and 1 action item was set." in digest.summary
    assert SECRET not in json.dumps([digest.summary, digest.decisions, digest.named])


def test_due_days_from_the_projects_date_reading() -> None:
    from datetime import date

    monday = date(2026, 11, 23)
    assert due_of("renew the certificate 📅 2026-12-01", monday) == "2026-12-01"
    assert due_of("I'll send it by 4 March 2027", monday) == "2027-03-04"
    assert due_of("I'll call them tomorrow", monday) == "2026-11-24"
    assert due_of("I'll fix it next month", monday) is None  # a month is no day
    assert due_of("I'll fix it soon", None) is None


def test_ingest_writes_the_block_and_its_action_items_become_tasks(vault: Path, tmp_path: Path) -> None:
    with opened(vault) as store:
        report = store.ingest(transcript(tmp_path))
        note = vault / report.path
        text = note.read_text("utf-8")
        assert text.index("## Digest") < text.index("%% memvault digest: begin (rules;") < text.index("## Transcript")
        assert "- [ ] I'll rotate the staging keys next Friday. 📅 2026-11-27\n" in text
        assert "Decisions:\n- We decided to run PgBouncer in Lisbon.\n" in text
        assert SECRET not in text
        facts = store.facts(report.path).facts
        # the item is the plan the turn stated in its words (anchored to that turn), with its due day: not twice
        rotate = [f for f in facts if "rotate the staging keys" in f.text]
        assert [(f.text, f.type, f.due, f.anchor) for f in rotate] == [
            ("I'll rotate the staging keys next Friday.", "prospective", "2026-11-27", "^t3")]
        assert [(a.id, a.due) for a in open_action_items(store.con)] == [(rotate[0].id, "2026-11-27")]


def test_a_persons_text_and_tick_survive_and_an_unchanged_session_is_not_rewritten(vault: Path, tmp_path: Path) -> None:
    with opened(vault) as store:
        path = transcript(tmp_path)
        report = store.ingest(path)
        note = vault / report.path
        # a person ticks the item and writes around the block
        text = note.read_text("utf-8").replace("- [ ] I'll rotate", "- [x] I'll rotate")
        text = text.replace(END, END + "\nMy own line after the block.")
        text = text.replace("%% memvault digest: begin", "My line before.\n%% memvault digest: begin")
        note.write_text(text, "utf-8")
        store.sync()
        assert open_action_items(store.con) == []  # ticked: closed, no longer shown
        before = note.read_bytes()
        assert store.ingest(path).action == "skipped"
        assert note.read_bytes() == before  # unchanged: not rewritten
        # the session grows: the block is rewritten, the tick and the person's lines kept
        grown = store.ingest(transcript(tmp_path, extra=2))
        assert grown.action == "updated"
        after = note.read_text("utf-8")
        assert "- [x] I'll rotate the staging keys next Friday. 📅 2026-11-27" in after
        assert "My line before.\n%% memvault digest: begin" in after
        assert END + "\nMy own line after the block." in after
        assert after.count("%% memvault digest: begin") == 1
        assert open_action_items(store.con) == []


def test_an_older_note_without_a_block_gets_one_when_ingested_again(vault: Path, tmp_path: Path) -> None:
    with opened(vault) as store:
        path = transcript(tmp_path)
        report = store.ingest(path)
        note = vault / report.path
        lines = note.read_text("utf-8").split("\n")
        found = find_block(lines)
        assert found is not None
        note.write_text("\n".join(lines[: found.start] + lines[found.end + 2 :]), "utf-8")  # as written before digests
        store.sync()
        assert open_action_items(store.con) == []
        assert store.ingest(path).action == "updated"
        assert "%% memvault digest: begin" in note.read_text("utf-8")
        assert len(open_action_items(store.con)) == 1


def test_session_start_lists_open_action_items_until_ticked(vault: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))  # the client's own folder: the hook reads there
    folder = tmp_path / "claude" / "projects" / "-work-billing"
    folder.mkdir(parents=True)
    r = hook(vault, "session-end", dict(CC_END, transcript_path=str(transcript(folder))))
    assert r.exit_code == 0, r.output
    r = hook(vault, "session-start", dict(CC_START, cwd=str(tmp_path)))
    assert r.exit_code == 0 and "## Open action items" in r.output
    assert "- [ ] I'll rotate the staging keys next Friday. (due 2026-11-27) ([[2026-11-23 " in r.output
    note = next((vault / "Memory/episodic/sessions").glob("*.md"))
    note.write_text(note.read_text("utf-8").replace("- [ ] I'll", "- [x] I'll"), "utf-8")
    CliRunner().invoke(cli, ["--vault", str(vault), "sync", "--no-embed"])
    r = hook(vault, "session-start", dict(CC_START, cwd=str(tmp_path)))
    assert r.exit_code == 0 and "rotate the staging keys" not in r.output


def test_the_llm_writes_the_digest_in_one_call(vault: Path, tmp_path: Path, llm: FakeLLM, memvault_env: Path) -> None:  # noqa: F811
    configure(memvault_env, llm.base_url)

    def answer(request: dict) -> Reply:
        if request["messages"][0]["content"] == DIGEST_PROMPT:
            return Reply({"summary": ["They fixed the staging deploy."], "decisions": ["Run PgBouncer."],
                          "action_items": [{"text": "Rotate the staging keys", "due": "2026-11-27"},
                                           {"text": f"Store {SECRET} somewhere", "due": "not a day"}],
                          "entities": ["PgBouncer", "Lisbon"]})
        return Reply({"facts": []})

    llm.answer = answer
    with opened(vault) as store:
        report = store.ingest(transcript(tmp_path))
        text = (vault / report.path).read_text("utf-8")
        asked = [r for r in llm.requests if r["json"]["messages"][0]["content"] == DIGEST_PROMPT]
        assert len(asked) == 1
        assert SECRET not in asked[0]["json"]["messages"][1]["content"]
        assert "%% memvault digest: begin (llm;" in text and "They fixed the staging deploy." in text
        assert "- [ ] Rotate the staging keys 📅 2026-11-27" in text and SECRET not in text
        assert store.ingest(transcript(tmp_path)).action == "skipped"  # the same session: not asked again
        assert len([r for r in llm.requests if r["json"]["messages"][0]["content"] == DIGEST_PROMPT]) == 1
        # a per-turn ingest (the daemon's) writes the rules' digest, no call
        grown = store.ingest(transcript(tmp_path, extra=1), llm_digest=False)
        assert "(rules;" in (vault / grown.path).read_text("utf-8")
        assert len([r for r in llm.requests if r["json"]["messages"][0]["content"] == DIGEST_PROMPT]) == 1


def test_a_failing_llm_leaves_the_rules_digest_and_says_so(vault: Path, tmp_path: Path, llm: FakeLLM,  # noqa: F811
                                                          memvault_env: Path) -> None:
    configure(memvault_env, llm.base_url, retries=0)
    llm.script(Reply("not json at all"))
    with opened(vault) as store:
        report = store.ingest(transcript(tmp_path))
        assert any("llm digest failed" in w for w in report.warnings)
        assert "(rules;" in (vault / report.path).read_text("utf-8")


_LINE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                max_size=30).filter(lambda s: "memvault digest" not in s)


@given(before=st.lists(_LINE, max_size=5), after=st.lists(_LINE, max_size=5),
       items=st.lists(st.text(st.characters(categories=("L", "N", "Zs")), min_size=1, max_size=20), max_size=4))
def test_put_block_touches_nothing_outside_it(before: list[str], after: list[str], items: list[str]) -> None:
    first = SessionDigest(("One.",), (), tuple(ActionItem(t) for t in items if t.strip()))
    text = put_block("\n".join([*before, "## Transcript", *after]), first, "## Transcript")
    again = put_block(text, SessionDigest(("Two.",), ("A decision.",)), "## Transcript")
    assert again.startswith("\n".join(before)) and again.endswith("\n".join(["## Transcript", *after]))
    assert put_block(again, SessionDigest(("Two.",), ("A decision.",)), "## Transcript") == again
    assert again.count("%% memvault digest: begin") == 1


def test_session_start_with_every_section_and_action_items_stays_within_its_budget(vault: Path, tmp_path: Path) -> None:
    from memvault.store.queries.recall import SessionStartQuery
    from memvault.store.retrieval.recall import block_tokens
    from memvault.store.retrieval.session_start import ACTION_ITEMS_SHARE

    long = " ".join(["with its reasons, its owners and what it waits for"] * 4)
    plans = " ".join(f"I'll finish migration step {n} of the ledger tomorrow {long}." for n in range(12))
    chat = tmp_path / "plans.jsonl"
    chat.write_text(_turn("user", plans, "2026-11-23T10:00:00Z") + _turn("assistant", "Noted.", "2026-11-23T10:01:00Z"),
                    "utf-8")
    with opened(vault) as store:
        store.ingest(chat)
        assert len(open_action_items(store.con)) == 12
        for n in range(5):
            store.add(f"Identity detail {n}: works on payments in Lisbon {long}", "identity")
            store.add(f"Lesson {n} for ledger deploys: run the smoke tests first {long}", "procedural")
            store.add(f"Ongoing {n}: the ledger migration step {n} is under way {long}", "ongoing")
        for budget in (120, 300, 800, 2000):
            text = store.session_start(SessionStartQuery(budget=budget)).text
            assert text and block_tokens(text) <= budget
            section = text.split("## Open action items", 1)[1].split("\n\n## ", 1)[0] if "## Open action" in text else ""
            assert block_tokens(section) <= int(budget * ACTION_ITEMS_SHARE) + block_tokens("## Open action items")
        # with room for every section, each is there
        assert "## Open action items" in text and "## Ongoing work" in text and "## Who the person is" in text


def test_a_marker_a_person_deleted_never_pairs_with_another_blocks() -> None:
    digest = SessionDigest(("One.",), ("A decision.",))
    note = put_block("# S\n\n## Transcript\n", digest, "## Transcript")
    # the end marker deleted, a line of the person's after what is left of the block
    damaged = note.replace(END + "\n", "").replace("## Transcript", "My own line.\n\n## Transcript")
    again = put_block(damaged, SessionDigest(("Two.",)), "## Transcript")
    assert "My own line." in again and "One." in again  # nothing of what was there is taken
    assert put_block(again, SessionDigest(("Three.",)), "## Transcript").count("My own line.") == 1
    assert "Three." in put_block(again, SessionDigest(("Three.",)), "## Transcript")


def test_a_block_a_person_edited_is_kept_as_they_wrote_it(vault: Path, tmp_path: Path) -> None:
    # memvault owns the block's lines only while they are what it wrote (its
    # begin marker's fingerprint): an edit inside makes them the person's.
    with opened(vault) as store:
        report = store.ingest(transcript(tmp_path))
        note = vault / report.path
        mine = "- We decided to run PgBouncer in Porto, not Lisbon (corrected by me)."
        text = note.read_text("utf-8").replace("- We decided to run PgBouncer in Lisbon.", mine)
        note.write_text(text.replace("- [ ] I'll rotate", "- [x] I'll rotate"), "utf-8")
        store.sync()
        grown = store.ingest(transcript(tmp_path, extra=2))
        assert grown.action == "updated"  # the transcript grew: turns appended
        after = note.read_text("utf-8")
        assert mine in after and "- [x] I'll rotate" in after and after.count("%% memvault digest: begin") == 1
        assert "Another thought number 1." in after
        # Deleting the block hands it back: the next change writes a fresh one.
        lines = after.split("\n")
        found = find_block(lines)
        assert found is not None and found.edited
        note.write_text("\n".join(lines[: found.start] + lines[found.end + 1 :]), "utf-8")
        store.sync()
        store.ingest(transcript(tmp_path, extra=3))
        fresh = note.read_text("utf-8")
        assert mine not in fresh and "- We decided to run PgBouncer in Lisbon." in fresh
        assert find_block(fresh.split("\n")) is not None and not find_block(fresh.split("\n")).edited


def test_a_tick_is_no_edit_of_the_block() -> None:
    digest = SessionDigest(("One.",), ("A decision.",), (ActionItem("Do it."),))
    text = put_block("# S\n\n## Transcript\n", digest, "## Transcript")
    ticked = text.replace("- [ ] Do it.", "- [x] Do it.")
    found = find_block(ticked.split("\n"))
    assert found is not None and not found.edited
    again = put_block(ticked, SessionDigest(("Two.",), ("A decision.",), (ActionItem("Do it."),)), "## Transcript")
    assert "Two." in again and "- [x] Do it." in again
    edited = ticked.replace("A decision.", "A decision, as I recall it.")
    assert put_block(edited, SessionDigest(("Three.",)), "## Transcript") == edited
