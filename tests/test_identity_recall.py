"""Identity means identity: facts of type identity from a memory source ("About me.md")
count as identity for `context --identity always`, the session-start hook and the MCP
identity resource; session start brings identity first, then the lessons and decisions
of the project, newest first; everyday words for memory types are accepted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli
from memvault.store.memories.memtypes import UnknownTypeError, canonical_type

ABOUT_ME = "# About me\n\n- I am a backend engineer in Lisbon.\n- I have two cats named Miso and Tofu.\n"


@pytest.fixture
def about_me(vault: Path) -> Path:
    """A vault whose "About me.md" is a memory source, and no identity memory at all."""
    write(vault, "About me.md", ABOUT_ME)
    with opened(vault) as store:
        store.sync()
        store.source_add(["About me.md"])
    return vault


def run(vault: Path, *args: str, input: str | None = None) -> object:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args], input=input)


def test_identity_facts_make_the_identity_section_of_context(about_me: Path) -> None:
    r = run(about_me, "context", "what is the weather like on Mars", "--identity", "always", "--json")
    assert r.exit_code == 0, r.output
    block = json.loads(r.output)
    assert [i["kind"] for i in block["items"]] == ["fact", "fact"]
    lines = block["text"].splitlines()
    # In the note's order, each labelled identity.
    assert "backend engineer in Lisbon" in lines[1] and "[identity]" in lines[1]
    assert "Miso and Tofu" in lines[2]
    # Relevant mode still says nothing when nothing is relevant.
    r = run(about_me, "context", "what is the weather like on Mars", "--identity", "relevant")
    assert r.exit_code == 0 and r.output == ""


def test_session_start_brings_identity_then_project_lessons_newest_first(about_me: Path, tmp_path: Path) -> None:
    for name, scope, day, text in (("migrations", "billing", "2026-01-02", "Run the migrations before the deploy"),
                                   ("postgres", "billing", "2026-03-04", "Decided to pin the Postgres image to 16.4"),
                                   ("release", "garden", "2026-05-06", "Tag every release")):
        write(about_me, f"Memory/procedural/{name}.md", f"---\ntype: procedural\nscope: {scope}\n"
              f"created: '{day}T10:00:00+00:00'\nupdated: '{day}T10:00:00+00:00'\n---\n{text}\n")
    with opened(about_me) as store:
        store.sync()
    project = tmp_path / "billing"
    project.mkdir()
    r = run(about_me, "hook", "session-start", "--timeout", "120", input=json.dumps({"cwd": str(project)}))
    assert r.exit_code == 0, r.output
    text = r.output
    identity, lessons = text.index("backend engineer in Lisbon"), text.index("## Lessons and decisions")
    assert identity < lessons
    section = text[lessons:].split("\n\n")[0]
    assert section.index("pin the Postgres image") < section.index("Run the migrations")  # newest first
    assert "tag every release" not in section  # another project's lesson


def test_a_running_daemon_answers_session_start_as_the_hook_would_in_process(about_me: Path, tmp_path: Path) -> None:
    from memvault.daemon.serve import QueryServer
    from memvault.store.memory_store import MemoryStore

    project = tmp_path / "billing"
    project.mkdir()
    payload = json.dumps({"cwd": str(project)})
    cold = run(about_me, "hook", "session-start", "--timeout", "120", input=payload)
    server = QueryServer(MemoryStore.open(str(about_me)), warm=False)
    server.start()
    try:
        warm = run(about_me, "hook", "session-start", "--timeout", "120", input=payload)
        assert server.requests == 1  # the daemon answered it
    finally:
        server.stop()
        server.store.close()
    assert warm.exit_code == cold.exit_code == 0
    assert warm.output == cold.output and "backend engineer in Lisbon" in warm.output


def test_session_start_keeps_within_its_budget(about_me: Path, tmp_path: Path) -> None:
    with opened(about_me) as store:
        for n in range(30):
            store.add(f"Lesson {n}: check the staging logs for warning number {n} before shipping", "lesson")
    r = run(about_me, "hook", "session-start", "--timeout", "120", "--budget", "80", input="{}")
    assert r.exit_code == 0, r.output
    from memvault.store.embedding.model import count_tokens

    assert "backend engineer" in r.output  # identity comes first, so a small budget still has it
    assert sum(count_tokens([part])[0] for part in r.output.strip().split("\n")) <= 80


def test_the_mcp_identity_resource_lists_identity_facts(about_me: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from memvault.cli.mcp_server import build_server

    with opened(about_me) as store:
        async def main() -> str:
            async with Client(build_server(store), mode="legacy") as c:
                res = await c.read_resource("memvault://identity")
                return res.contents[0].text

        text = asyncio.run(main())
    assert "backend engineer in Lisbon" in text and "Miso and Tofu" in text


@pytest.mark.parametrize("word, canonical", [
    ("decision", "procedural"), ("choice", "procedural"), ("warning", "procedural"),
    ("commitment", "prospective"), ("insight", "semantic"), ("Decision", "procedural"),
])
def test_everyday_type_words_are_accepted(vault: Path, word: str, canonical: str) -> None:
    assert canonical_type(word) == canonical
    r = run(vault, "add", f"Something to keep as a {word}", "--type", word, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["path"].startswith(f"Memory/{canonical}/")


def test_an_unknown_type_word_is_still_a_usage_error(vault: Path) -> None:
    with pytest.raises(UnknownTypeError):
        canonical_type("whim")
    r = run(vault, "add", "Something", "--type", "whim")
    assert r.exit_code == 2 and "unknown memory type" in r.output


@pytest.fixture
def known(vault: Path) -> Path:
    """Identity memories, one pinned, beside a procedural memory (keyword recall: no vectors)."""
    write(vault, "Memory/identity/pinned-name.md", "---\ntype: identity\npinned: true\n---\nMy name is Sam Okafor.\n")
    with opened(vault) as store:
        store.sync()
        store.add("I live in Lisbon with my partner", "identity")
        store.add("My manager is Ana Costa, head of data engineering", "identity")
        store.add("I speak Portuguese, English and some Yoruba", "identity")
        store.add("Deploys of the billing service need a second reviewer", "procedural")
    return vault


def _lines(vault: Path, message: str) -> list[str]:
    r = run(vault, "context", message, "--no-record")
    assert r.exit_code == 0, r.output
    return r.output.splitlines()


def test_who_am_i_gets_the_identity_lines(known: Path) -> None:
    for message in ("who am I?", "Who am I", "me?"):
        lines = _lines(known, message)
        assert lines and all(line.startswith("- [identity]") for line in lines[1:]), (message, lines)
        assert any("Sam Okafor" in line for line in lines) and any("Lisbon" in line for line in lines)


def test_an_identity_question_gets_its_answer_not_every_identity_line(known: Path) -> None:
    lines = _lines(known, "who is my manager?")
    body = [line for line in lines[1:] if "Sam Okafor" not in line]  # the pinned line may stand first
    assert body and "Ana Costa" in body[0], lines
    assert not any("Lisbon" in line or "Yoruba" in line for line in lines), lines


def test_an_unrelated_message_gets_no_identity_but_the_pinned_line(known: Path) -> None:
    lines = _lines(known, "who reviews deploys of the billing service?")
    assert any("second reviewer" in line for line in lines), lines
    identity = [line for line in lines if line.startswith("- [identity]")]
    assert identity == ["- [identity] My name is Sam Okafor. (pinned-name)"], lines
    # Nothing relevant: nothing at all, the pinned line included.
    assert _lines(known, "what is the capital of Peru") == []
