"""A session note is an append-only record of the conversation its client shows.

Turns that changed at the source are kept, marked superseded; what a person
wrote in the note stays where they wrote it; only the branch a client shows
is read (Claude Code rewinds, Claude.ai edits); generic transcripts without
an id do not collide; a speaker's name labels their turns.
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import opened
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_llm_extract import FakeLLM, Reply, configure, llm, quick_backoff  # noqa: F401

from memvault.cli.main import cli
from memvault.store.flows.digest import DIGEST_PROMPT
from memvault.store.memory_store import MemoryStore
from memvault.vault_io.parser import parse_note
from memvault.vault_io.session_note import turn_spans

SESSIONS = "Memory/episodic/sessions"


def _jsonl(path: Path, turns: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), "utf-8")
    return path


def _chat(*texts: str) -> list[dict[str, Any]]:
    """Generic turns, user and assistant by turns, a minute apart."""
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": text, "timestamp": 1767225600 + 60 * i}
            for i, text in enumerate(texts)]


def _live(text: str) -> list[tuple[int, str, str]]:
    """(block number, role, text) of each turn of a session note that is not superseded."""
    note = parse_note("x.md", text.encode())
    lines = note.body.split("\n")
    out = []
    for s in turn_spans(note.body, note.body_line):
        body = lines[s.first_line - note.body_line + 1 : s.last_line - note.body_line - 1]
        out.append((s.n, s.role, "\n".join(line[2:] for line in body if line.startswith("> "))))
    return out


def _turn_facts(store: MemoryStore, path: str) -> set[str]:
    facts = store.facts(path).facts
    return {f.text for f in facts if str(f.anchor).startswith("^t")}


# -- item 5: a changed conversation never deletes anything ------------------------------------


def test_a_regenerated_answer_and_an_edit_keep_every_turn_and_the_persons_text(vault: Path, tmp_path: Path) -> None:
    transcript = _jsonl(tmp_path / "chat.jsonl", _chat("How should I indent? I prefer tabs.", "Tabs it is.",
                                                       "And line length?", "Use 100."))
    runner = CliRunner()
    args = ["--vault", str(vault), "ingest", str(transcript), "--session", "c-1", "--title", "Indenting"]
    assert runner.invoke(cli, args).exit_code == 0
    path = vault / SESSIONS / "2026-01-01 Indenting.md"
    text = path.read_text("utf-8")
    # A person writes a line inside the transcript and a section of their own after it.
    text = text.replace("^t2\n\n", "^t2\n\nMy remark between the turns.\n\n")
    path.write_text(text + "## My notes\n\nKeep this section.\n", "utf-8")

    # The answer is regenerated at the source.
    _jsonl(transcript, _chat("How should I indent? I prefer tabs.", "Tabs it is.", "And line length?", "Use 88."))
    r = runner.invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert "appended 1 turn, 1 superseded" in r.output
    text = path.read_text("utf-8")
    assert "> Use 100." in text and "> Use 88." in text  # the old answer is kept
    assert "> [!superseded]- Assistant · 2026-01-01 00:03 · superseded\n> Use 100.\n\n^t4" in text
    assert "My remark between the turns.\n\n> [!user]" in text  # where the person wrote it
    # The new turn goes into the transcript, not under the person's section.
    assert text.index("> Use 88.") < text.index("## My notes") and text.endswith("## My notes\n\nKeep this section.\n")
    assert [(n, role) for n, role, _ in _live(text)] == [(1, "user"), (2, "assistant"), (3, "user"), (5, "assistant")]

    # An earlier user turn is edited at the source: the rest of the old branch is superseded.
    _jsonl(transcript, _chat("How should I indent? I prefer 4 spaces.", "Spaces it is."))
    r = runner.invoke(cli, args)
    assert "appended 2 turns, 4 superseded" in r.output
    text = path.read_text("utf-8")
    for kept in ("I prefer tabs.", "Tabs it is.", "And line length?", "Use 100.", "Use 88.", "My remark between",
                 "## My notes\n\nKeep this section.\n", "I prefer 4 spaces."):
        assert kept in text, kept
    assert [(n, text_) for n, _, text_ in _live(text)] == [
        (6, "How should I indent? I prefer 4 spaces."), (7, "Spaces it is.")]
    with opened(vault) as store:
        # Facts come only from the turns the client shows.
        assert _turn_facts(store, f"{SESSIONS}/2026-01-01 Indenting.md") == {"I prefer 4 spaces."}
        # The same transcript again changes nothing.
        before = path.read_bytes()
        assert store.ingest(transcript, session="c-1", title="Indenting").action == "skipped"
        assert path.read_bytes() == before


def test_a_persons_tag_and_digest_line_stay_when_the_session_grows(vault: Path, tmp_path: Path) -> None:
    transcript = _jsonl(tmp_path / "chat.jsonl", _chat("Which editor? I use Vim daily.", "Vim is fine."))
    runner = CliRunner()
    args = ["--vault", str(vault), "ingest", str(transcript), "--session", "c-tags", "--title", "Editors"]
    assert runner.invoke(cli, args).exit_code == 0
    path = vault / SESSIONS / "2026-01-01 Editors.md"
    text = path.read_text("utf-8")
    assert "tags:\n  - session\n" in text and "\n- 2 turns (" in text
    # A person tags the note in Obsidian and writes a line right under the digest.
    text = text.replace("tags:\n  - session\n", "tags:\n  - session\n  - editors\n")
    text = text.replace("\n\n%% memvault digest: begin", "\nMy line under the digest.\n\n%% memvault digest: begin")
    path.write_text(text, "utf-8")
    _jsonl(transcript, _chat("Which editor? I use Vim daily.", "Vim is fine.", "And the theme?", "Gruvbox."))
    r = runner.invoke(cli, args)
    assert r.exit_code == 0 and "appended 2 turns" in r.output, r.output
    text = path.read_text("utf-8")
    assert "tags:\n  - session\n  - editors\n" in text
    assert "- Last request: And the theme?\nMy line under the digest.\n\n%% memvault digest: begin" in text
    assert "- 4 turns (" in text and "- 2 turns (" not in text  # memvault's own lines are replaced


def test_a_turn_another_redactor_version_wrote_is_not_superseded(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memvault.store.flows.conversation as conversation

    said = ["My db password: Pa55w0rd-xyz. The release branch is rel/2026.", "Noted.",
            "I set the wifi password to Xk9#mPq2 today.", "Noted too."]
    transcript = _jsonl(tmp_path / "chat.jsonl", _chat(*said))
    real = conversation.redact

    def older(text: str) -> tuple[str, int]:  # cut a password's whole line, missed "set ... to"
        if "db password: " in text:
            return text.split("db password: ")[0] + "db password: [redacted]", 1
        return text, 0

    monkeypatch.setattr(conversation, "redact", older)
    with opened(vault) as store:
        first = store.ingest(transcript, session="redactor")
        path = vault / first.path
        before = path.read_text("utf-8")
        monkeypatch.setattr(conversation, "redact", real)
        _jsonl(transcript, _chat(*said, "Thanks."))
        again = store.ingest(transcript, session="redactor")
        assert (again.action, again.plan.new_turns, again.plan.superseded) == ("updated", 1, 0)
        text = path.read_text("utf-8")
        assert text[text.index("## Transcript"):].startswith(before[before.index("## Transcript"):].rstrip("\n"))
        assert "superseded" not in text and text.count("Noted too.") == 1
    # A turn that was only a redacted token and is regenerated is another turn, not the same one.
    monkeypatch.setattr(conversation, "redact", lambda text: ("[redacted]", 1) if text == "OLD" else real(text))
    with opened(vault) as store:
        one = store.ingest(_jsonl(tmp_path / "b.jsonl", _chat("Hello there.", "OLD")), session="tok")
        regenerated = store.ingest(_jsonl(tmp_path / "b.jsonl", _chat("Hello there.", "A new answer.")), session="tok")
        assert regenerated.plan.superseded == 1 and "A new answer." in (vault / one.path).read_text("utf-8")


def test_a_session_note_moved_while_nothing_watched_grows_where_it_is(vault: Path, tmp_path: Path) -> None:
    transcript = _jsonl(tmp_path / "chat.jsonl", _chat("Which editor? I use Vim daily.", "Vim is fine."))
    with opened(vault) as store:
        first = store.ingest(transcript, session="moved")
    moved = vault / "Chats" / "Editors.md"
    moved.parent.mkdir()
    (vault / first.path).rename(moved)  # no sync, no daemon: the index still has the old path
    moved.write_text(moved.read_text("utf-8") + "A person's line.\n", "utf-8")
    _jsonl(transcript, _chat("Which editor? I use Vim daily.", "Vim is fine.", "And the theme?", "Gruvbox."))
    with opened(vault) as store:
        again = store.ingest(transcript, session="moved")
    assert (again.action, again.path, again.plan.new_turns) == ("updated", "Chats/Editors.md", 2)
    assert [p.relative_to(vault).as_posix() for p in vault.rglob("*.md")] == ["Chats/Editors.md"]
    text = moved.read_text("utf-8")
    assert "A person's line." in text and "> Gruvbox." in text


def test_a_persons_byte_that_is_not_utf8_is_written_back_as_it_was(vault: Path, tmp_path: Path) -> None:
    transcript = _jsonl(tmp_path / "chat.jsonl", _chat("Which editor? I use Vim daily.", "Vim is fine."))
    with opened(vault) as store:
        first = store.ingest(transcript, session="latin")
        path = vault / first.path
        path.write_bytes(path.read_bytes() + "Caf\u00e9 notes.\n".encode("latin-1"))  # another editor's byte
        _jsonl(transcript, _chat("Which editor? I use Vim daily.", "Vim is fine.", "And the theme?", "Gruvbox."))
        assert store.ingest(transcript, session="latin").plan.new_turns == 2
    data = path.read_bytes()
    assert b"Caf\xe9 notes.\n" in data and "\ufffd".encode() not in data and b"> Gruvbox." in data


def test_a_claude_code_message_ingested_halfway_is_superseded_not_cut(vault: Path, tmp_path: Path) -> None:
    def line(uuid: str, parent: str | None, kind: str, content: Any, mid: str | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"role": kind, "content": content}
        if mid:
            message["id"] = mid
        return {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "cc-half",
                "timestamp": "2026-07-06T10:00:00Z", "message": message}

    lines = [
        line("u1", None, "user", "Deploy the app please."),
        line("a1", "u1", "assistant", [{"type": "text", "text": "Deploying now."}], "msg_1"),
        line("a2", "a1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make deploy"}}],
             "msg_1"),
        line("u2", "a2", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),
    ]
    transcript = _jsonl(tmp_path / "cc.jsonl", lines[:2])  # the hook ran while the answer was being written
    with opened(vault) as store:
        first = store.ingest(transcript)
        path = vault / first.path
        path.write_text(path.read_text("utf-8") + "A person's closing line.\n", "utf-8")
        _jsonl(transcript, lines)
        again = store.ingest(transcript)
        assert (again.action, again.plan.new_turns, again.plan.superseded) == ("updated", 2, 1)
        text = path.read_text("utf-8")
    assert "> [!superseded]- Assistant · 2026-07-06 10:00 · superseded\n> Deploying now.\n\n^t2" in text
    assert "A person's closing line." in text
    assert [(n, role, body) for n, role, body in _live(text)] == [
        (1, "user", "Deploy the app please."),
        (3, "assistant", "Deploying now.\n- tool call: Bash `make deploy`"),
        (4, "tool", "Bash: ok"),
    ]


def test_a_lost_state_recognises_the_written_turns_and_supersedes_the_changed_one(vault: Path, tmp_path: Path) -> None:
    transcript = _jsonl(tmp_path / "chat.jsonl", _chat("Hello there.", "Hi.", "Pick a colour.", "Blue."))
    with opened(vault) as store:
        first = store.ingest(transcript, session="c-2")
        data_dir = store.data_dir
    path = vault / first.path
    path.write_text(path.read_text("utf-8") + "\n## Mine\n\nStill here.\n", "utf-8")
    shutil.rmtree(data_dir)
    _jsonl(transcript, _chat("Hello there.", "Hi.", "Pick a colour.", "Green."))
    with opened(vault) as store:
        again = store.ingest(transcript, session="c-2")
    assert (again.action, again.plan.new_turns, again.plan.superseded) == ("updated", 1, 1)
    text = path.read_text("utf-8")
    assert "> Blue." in text and "Still here." in text and text.index("> Green.") < text.index("## Mine")


def test_a_chatgpt_branch_switch_at_the_source_supersedes_on_reimport(vault: Path, tmp_path: Path) -> None:
    def node(nid: str, parent: str | None, role: str | None, text: str, children: list[str]) -> dict[str, Any]:
        message = None if role is None else {
            "id": nid, "author": {"role": role}, "create_time": 1712300000 + len(nid),
            "content": {"content_type": "text", "parts": [text]}}
        return {"id": nid, "message": message, "parent": parent, "children": children}

    mapping = {
        "root": node("root", None, None, "", ["u1"]),
        "u1": node("u1", "root", "user", "Which editor? I use Vim daily.", ["a1", "a1b"]),
        "a1": node("a1", "u1", "assistant", "FIRST-ANSWER", []),
        "a1b": node("a1b", "u1", "assistant", "SECOND-ANSWER", []),
    }
    conv = {"id": "conv-1", "title": "Editors", "create_time": 1712300000, "mapping": mapping, "current_node": "a1"}
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([conv]), "utf-8")
    with opened(vault) as store:
        store.import_("chatgpt", export)
        path = next((vault / SESSIONS).glob("*Editors.md"))
        path.write_text(path.read_text("utf-8") + "## Review\n\nA person's review.\n", "utf-8")
        conv["current_node"] = "a1b"
        export.write_text(json.dumps([conv]), "utf-8")
        report = store.import_("chatgpt", export)
    assert report.updated == 1
    text = path.read_text("utf-8")
    assert "FIRST-ANSWER" in text and "SECOND-ANSWER" in text and "A person's review." in text
    assert [body for _, _, body in _live(text)] == ["Which editor? I use Vim daily.", "SECOND-ANSWER"]
    assert text.index("SECOND-ANSWER") < text.index("## Review")


def test_the_llm_extractor_is_not_shown_superseded_turns(
    vault: Path, tmp_path: Path, llm: FakeLLM, memvault_env: Path  # noqa: F811
) -> None:
    configure(memvault_env, llm.base_url)
    llm.script(Reply({"facts": []}), Reply({"facts": []}))
    transcript = _jsonl(tmp_path / "chat.jsonl", _chat("Hello. I prefer tabs.", "Noted."))
    with opened(vault) as store:
        store.ingest(transcript, session="llm-1")
        _jsonl(transcript, _chat("Hello. I prefer 4 spaces.", "Noted."))
        assert store.ingest(transcript, session="llm-1").plan.superseded == 2
    asked = [r for r in llm.requests if r["json"]["messages"][0]["content"] != DIGEST_PROMPT]  # the digest's own calls
    assert len(asked) == 2
    shown = asked[1]["json"]["messages"][1]["content"]
    assert "I prefer 4 spaces." in shown and "I prefer tabs." not in shown


# -- item 6: only the branch the client shows ---------------------------------------------------


def test_a_claude_code_rewind_ingests_only_the_shown_branch(vault: Path, tmp_path: Path) -> None:
    def line(uuid: str, parent: str | None, kind: str, text: str, **extra: Any) -> dict[str, Any]:
        return {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "cc-rewind",
                "timestamp": "2026-07-06T10:00:00Z", "message": {"role": kind, "content": text}, **extra}

    lines = [
        line("u0", None, "user", "Let's set up my editor."),
        line("a0", "u0", "assistant", "Sure."),
        line("u1", "a0", "user", "I prefer tabs."),  # abandoned: the person rewound to a0
        line("a1", "u1", "assistant", "Tabs noted."),
        line("u2", "a0", "user", "I prefer 4 spaces."),
        line("a2", "u2", "assistant", "Spaces noted."),
        {"type": "system", "subtype": "compact_boundary", "uuid": "c1", "parentUuid": None, "logicalParentUuid": "a2"},
        line("u3", "c1", "user", "Remember that the build server is called ci3."),
    ]
    with opened(vault) as store:
        report = store.ingest(_jsonl(tmp_path / "cc.jsonl", lines))
        text = (vault / report.path).read_text("utf-8")
        facts = _turn_facts(store, report.path)
    assert "I prefer tabs" not in text and "Tabs noted" not in text
    assert [body for _, _, body in _live(text)] == [
        "Let's set up my editor.", "Sure.", "I prefer 4 spaces.", "Spaces noted.",
        "Remember that the build server is called ci3."]
    assert facts == {"I prefer 4 spaces.", "The build server is called ci3."}


def test_a_claude_code_chain_with_a_missing_parent_loses_nothing(tmp_path: Path) -> None:
    from memvault.store.flows.transcript import read_transcript

    def line(uuid: str, parent: str | None, kind: str, text: str) -> dict[str, Any]:
        return {"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "cc-torn",
                "message": {"role": kind, "content": text}}

    lines = [  # a copy whose first message's parent is not in the file, and a break in the middle
        line("u1", "elsewhere", "user", "First."), line("a1", "u1", "assistant", "One."),
        line("u2", "gone", "user", "Second."), line("a2", "u2", "assistant", "Two."),
    ]
    conv, _ = read_transcript(_jsonl(tmp_path / "torn.jsonl", lines))
    assert [t.text for t in conv.turns] == ["First.", "One.", "Second.", "Two."]
    long = [line("u0", None, "user", "Start.")] + [
        line(f"m{i}", f"m{i - 1}" if i else "u0", "assistant" if i % 2 == 0 else "user", f"Turn {i}.")
        for i in range(6000)]
    conv, _ = read_transcript(_jsonl(tmp_path / "long.jsonl", long))  # a long session is read in linear time
    assert len(conv.turns) == 6001


def test_a_claude_ai_edit_imports_only_the_current_branch(vault: Path, tmp_path: Path) -> None:
    root = "00000000-0000-4000-8000-000000000000"

    def msg(uuid: str, parent: str, sender: str, text: str) -> dict[str, Any]:
        return {"uuid": uuid, "parent_message_uuid": parent, "sender": sender, "text": text,
                "created_at": "2026-04-12T15:21:03Z"}

    conv = {"uuid": "conv-edit", "name": "Indentation", "created_at": "2026-04-12T15:21:03Z",
            "current_leaf_message_uuid": "a2", "chat_messages": [
                msg("u1", root, "human", "I prefer tabs."),
                msg("a1", "u1", "assistant", "Tabs noted."),
                msg("u2", root, "human", "I prefer 4 spaces."),  # the person edited their first message
                msg("a2", "u2", "assistant", "Spaces noted."),
            ]}
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps([conv]), "utf-8")
    with opened(vault) as store:
        store.import_("claude", export)
        path = next((vault / SESSIONS).glob("*Indentation.md"))
        text = path.read_text("utf-8")
        facts = _turn_facts(store, str(path.relative_to(vault)))
    assert "tabs" not in text.lower()
    assert [body for _, _, body in _live(text)] == ["I prefer 4 spaces.", "Spaces noted."]
    assert facts == {"I prefer 4 spaces."}


# -- item 7: generic transcripts without ids --------------------------------------------------


def test_two_generic_files_that_begin_alike_are_two_sessions(vault: Path, tmp_path: Path) -> None:
    one = _jsonl(tmp_path / "a" / "chat.jsonl", [{"role": "user", "content": "Hello."},
                                                 {"role": "assistant", "content": "ANSWER-ONE"}])
    two = _jsonl(tmp_path / "b" / "chat.jsonl", [{"role": "user", "content": "Hello."},
                                                 {"role": "assistant", "content": "ANSWER-TWO"}])
    with opened(vault) as store:
        first, second = store.ingest(one), store.ingest(two)
        assert first.plan.note_id != second.plan.note_id
        assert first.action == second.action == "imported"
        # The same file, grown, keeps its note.
        _jsonl(one, [{"role": "user", "content": "Hello."}, {"role": "assistant", "content": "ANSWER-ONE"},
                     {"role": "user", "content": "More."}])
        grown = store.ingest(one)
        assert (grown.action, grown.plan.note_id, grown.plan.new_turns) == ("updated", first.plan.note_id, 1)
    texts = [p.read_text("utf-8") for p in (vault / SESSIONS).glob("*.md")]
    assert len(texts) == 2 and sum("ANSWER-ONE" in t for t in texts) == sum("ANSWER-TWO" in t for t in texts) == 1


def test_a_file_ingested_under_the_old_id_keeps_its_note(vault: Path, tmp_path: Path) -> None:
    turns = [{"role": "user", "content": "Hello from a stream."}, {"role": "assistant", "content": "Hi."}]
    data = "".join(json.dumps(t) + "\n" for t in turns).encode()
    with opened(vault) as store:
        # A stream gets the id every file got before paths were part of it.
        old = store.ingest(io.BytesIO(data))
        grown = store.ingest(_jsonl(tmp_path / "chat.jsonl", [*turns, {"role": "user", "content": "And more."}]))
        assert (grown.action, grown.plan.note_id, grown.plan.new_turns) == ("updated", old.plan.note_id, 1)
    assert len(list((vault / SESSIONS).glob("*.md"))) == 1


# -- item 8: the speaker's name ----------------------------------------------------------------


def test_a_generic_speaker_name_labels_the_turn(vault: Path, tmp_path: Path) -> None:
    turns = [
        {"role": "user", "name": "Ada", "content": "I prefer short answers.", "timestamp": 1767225600},
        {"role": "assistant", "name": "Helper Bot", "content": "Noted.", "tool_calls": [
            {"function": {"name": "save", "arguments": "{\"query\": \"pref\"}"}}]},
        {"role": "tool", "name": "save", "content": "saved"},
        {"role": "user", "content": "Thanks."},
    ]
    with opened(vault) as store:
        report = store.ingest(_jsonl(tmp_path / "named.jsonl", turns), session="named")
        text = (vault / report.path).read_text("utf-8")
        assert _turn_facts(store, report.path) == {"I prefer short answers."}
    assert "> [!user] Ada · 2026-01-01 00:00\n> I prefer short answers." in text
    assert "> [!assistant] Helper Bot\n> Noted." in text
    assert "> [!tool] Tool result\n> save: saved" in text
    assert "> [!user] User\n> Thanks." in text


def test_names_read_from_a_session_written_without_them_supersede_nothing(vault: Path, tmp_path: Path) -> None:
    turns = [{"role": "user", "content": "I prefer short answers."}, {"role": "assistant", "content": "Noted."}]
    transcript = _jsonl(tmp_path / "chat.jsonl", turns)
    with opened(vault) as store:
        first = store.ingest(transcript, session="named-later")  # as an earlier memvault wrote it: no names
        path = vault / first.path
        before = path.read_bytes()
        named = [{**t, "name": n} for t, n in zip(turns, ("Ada", "Bot"))]
        _jsonl(transcript, [*named, {"role": "user", "name": "Ada", "content": "Thanks."}])
        again = store.ingest(transcript, session="named-later")
    assert (again.action, again.plan.new_turns, again.plan.superseded) == ("updated", 1, 0)
    text = path.read_text("utf-8")
    old = before.decode("utf-8")
    assert text[text.index("## Transcript"):].startswith(old[old.index("## Transcript"):])  # written as it was
    assert "> [!user] Ada\n> Thanks.\n\n^t3" in text


# -- a person and the source changing the note in any order --------------------------------------

_OPS = st.lists(st.one_of(
    st.tuples(st.just("grow"), st.integers(1, 2)),
    st.tuples(st.just("regenerate"), st.just(0)),
    st.tuples(st.just("edit"), st.integers(0, 5)),
    st.tuples(st.just("switch"), st.integers(0, 5)),
    st.tuples(st.just("line"), st.integers(0, 400)),
    st.tuples(st.just("section"), st.integers(0, 400)),
), min_size=1, max_size=8)
_CI = settings.default.max_examples <= 200  # the ci profile: keep this (real ingest per step) quick


@settings(max_examples=12 if _CI else 150, deadline=None, derandomize=_CI,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_no_turn_once_written_and_no_line_a_person_wrote_is_ever_lost(ops: list[tuple[str, int]]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="memvault-record-"))
    try:
        (tmp / "vault").mkdir()
        with opened(tmp / "vault") as store:
            _run(store, tmp, ops)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(store: MemoryStore, tmp: Path, ops: list[tuple[str, int]]) -> None:
    counter = iter(range(1, 10_000))
    branch: list[tuple[str, str]] = [("user", "I prefer style 0."), ("assistant", "Answer 0.")]
    seen: list[list[tuple[str, str]]] = [list(branch)]
    must_stay: set[str] = set()  # every turn line and every person's line written so far
    transcript = tmp / "chat.jsonl"
    path: Path | None = None

    def ingest() -> None:
        nonlocal path
        _jsonl(transcript, [{"role": r, "content": t} for r, t in branch])
        report = store.ingest(transcript, session="prop", title="Property")
        path = store.root / report.path
        text = path.read_text("utf-8")
        lines = set(text.split("\n"))
        lost = [line for line in must_stay if line not in lines]
        assert not lost, f"lost {lost} after {report.as_dict()}\n{text}"
        assert [(role, body) for _, role, body in _live(text)] == branch, text
        assert _turn_facts(store, report.path) == {t for r, t in branch if r == "user"}  # the shown branch's only
        must_stay.update(f"> {t}" for _, t in branch)
        if branch not in seen:
            seen.append(list(branch))

    ingest()
    for op, arg in ops:
        k = next(counter)
        if op == "grow":
            for _ in range(arg):
                k = next(counter)
                branch += [("user", f"I prefer style {k}."), ("assistant", f"Answer {k}.")]
        elif op == "regenerate":
            branch = branch[:-1] + [("assistant", f"Answer {k}, regenerated.")]
        elif op == "edit":
            users = [i for i, (role, _) in enumerate(branch) if role == "user"]
            at = users[arg % len(users)]
            branch = branch[:at] + [("user", f"I prefer edit {k}."), ("assistant", f"Answer {k}.")]
        elif op == "switch":
            branch = list(seen[arg % len(seen)])
        else:
            assert path is not None
            text = path.read_text("utf-8")
            lines = text.split("\n")
            fm_end = lines.index("---", 1)
            places = [i for i in range(fm_end + 1, len(lines)) if lines[i] == ""] + [len(lines)]
            at = places[arg % len(places)]
            added = [f"Person line {k}."] if op == "line" else [f"## Person section {k}", "", f"Person text {k}."]
            lines[at:at] = ["", *added]
            path.write_text("\n".join(lines), "utf-8")
            must_stay.update(line for line in added if line)
            continue
        ingest()
