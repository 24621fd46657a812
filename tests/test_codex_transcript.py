"""A Codex CLI rollout file is read as a conversation (store/flows/codex.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers import FIXTURES, opened

from memvault.store.flows.transcript import read_transcript
from memvault.store.queries.search import SearchQuery
from memvault.vault_io.parser import parse_note

ROLLOUT = FIXTURES / "imports" / "codex-rollout.jsonl"


def test_a_rollout_is_read_as_the_conversation_a_person_had() -> None:
    conv, warnings = read_transcript(str(ROLLOUT))
    assert warnings == []
    assert (conv.session_id, conv.client) == ("0198a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "codex")
    roles = [t.role for t in conv.turns]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    text = "\n".join(t.text for t in conv.turns)
    # Injected context, instructions and reasoning are not what was said; the
    # UI's event lines repeat the messages and are not read twice.
    for absent in ("AGENTS.md", "environment_context", "permissions", "Looking at the worker", "gAAAA"):
        assert absent not in text
    assert text.count("Why does the sync worker stall") == 1
    assert conv.turns[1].text.startswith("- tool call: shell")
    assert "reconnect(backoff=None)" in conv.turns[2].text and "exit_code" not in conv.turns[2].text
    assert conv.turns[0].at.startswith("2026-07-08T09:00:05")


def test_ingest_writes_a_codex_session_note_and_its_facts(vault: Path) -> None:
    with opened(vault) as store:
        report = store.ingest(str(ROLLOUT))
        assert report.action == "imported"
        note = parse_note(report.path, (vault / report.path).read_bytes())
        assert (note.frontmatter["client"], note.frontmatter["session_id"]) == (
            "codex", "0198a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b")
        assert note.frontmatter["turns"] == 6
        facts = store.facts(report.path).facts
        said = {f.text for f in facts}
        assert "I prefer fixes without new dependencies." in said
        assert any("tide-2" in s for s in said)
        hit = store.search(SearchQuery("staging worker host", mode="keyword", what="all")).to_json()["hits"][0]
        assert (hit["kind"], hit["speaker"]) == ("turn", "User")


def test_a_rollout_that_grew_appends_only_its_new_turns(vault: Path, tmp_path: Path) -> None:
    live = tmp_path / "rollout-2026-07-08T09-00-00-0198a1b2.jsonl"
    lines = ROLLOUT.read_text("utf-8").splitlines(keepends=True)
    live.write_text("".join(lines[:-2]), "utf-8")
    with opened(vault) as store:
        first = store.ingest(str(live))
        before = (vault / first.path).read_text("utf-8")
        assert "tide-2" not in before
        shutil.copyfile(ROLLOUT, live)
        again = store.ingest(str(live))
        after = (vault / again.path).read_text("utf-8")
        assert again.path == first.path
        # The turns written before stay as they were; the new ones follow them.
        old_turns = before.split("## Transcript", 1)[1].rstrip("\n")
        new_turns = after.split("## Transcript", 1)[1]
        assert new_turns.startswith(old_turns) and "tide-2" in new_turns[len(old_turns):]
        assert new_turns.count("Why does the sync worker stall") == 1
        # A torn last line (Codex is still writing) is skipped and read next time.
        live.write_text(ROLLOUT.read_text("utf-8") + json.dumps({"type": "response_item"})[:20], "utf-8")
        assert store.ingest(str(live)).action == "skipped"
