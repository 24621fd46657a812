"""What a command writes without a daemon is searchable by meaning when it
answers (issue 35): ``add``, ``update``, ``source add`` and ``ingest`` embed
what they wrote (a few texts; more are left to ``sync`` and said so), and
``model status`` / ``doctor`` count what is really not embedded yet and say
how to finish."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import write

from memvault.cli.main import cli


def run(vault: Path, *args: str):
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


def test_context_right_after_add_finds_the_memory_by_meaning(vault: Path) -> None:
    write(vault, "Garden.md", "# Garden\n\nThe tomatoes need staking before June.\n")
    assert run(vault, "sync", "--no-embed").exit_code == 0  # no daemon, nothing embedded
    r = run(vault, "add", "Cannot eat peanuts: my throat swells up")
    assert r.exit_code == 0 and "not yet searchable" not in r.output, r.output
    question = "do I have any food allergies?"
    # No word in common: keyword search alone cannot find it...
    assert "peanuts" not in run(vault, "search", question, "--mode", "keyword").output
    # ...the memory's vector, made by the add, does.
    r = run(vault, "context", question)
    assert r.exit_code == 0 and "Cannot eat peanuts" in r.output, r.output
    r = run(vault, "update", json.loads(run(vault, "list", "--json").stdout.splitlines()[0])["id"],
            "--content", "Cannot eat shellfish: my throat swells up")
    assert r.exit_code == 0 and "not yet searchable" not in r.output
    assert "Cannot eat shellfish" in run(vault, "context", question).output


def test_model_status_and_doctor_count_what_is_not_embedded_and_say_how_to_finish(vault: Path) -> None:
    write(vault, "a.md", "A note about sourdough bread and its starter.\n")
    write(vault, "b.md", "A note about the train timetable to Porto.\n")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    # An interrupted first sync: every note cut into texts, none embedded.
    from memvault.store.embedding.pipeline import EmbeddingPipeline
    from memvault.store.memory_store import MemoryStore

    store = MemoryStore.open(str(vault))
    try:
        EmbeddingPipeline.for_ctx(store.ctx, store.con).chunk_queued()
    finally:
        store.close()
    data = json.loads(run(vault, "model", "status", "--json").stdout)
    assert (data["queued"], data["unembedded"], data["embedded"]) == (0, 2, 0)
    r = run(vault, "model", "status")
    assert "to finish:   2 texts without a vector: `memvault sync` embeds them" in r.output, r.output
    r = run(vault, "doctor")
    assert r.exit_code == 0, r.output  # nothing is wrong: search is only less than it will be
    assert "warning: embedding: 2 texts have no vector of the model" in r.output
    assert "`memvault sync` embeds them" in r.output and "Everything else is in order" in r.output
    r = run(vault, "doctor", "--repair", "--json")
    assert json.loads(r.stdout)["repaired"] == ["embed"]
    assert json.loads(run(vault, "model", "status", "--json").stdout)["unembedded"] == 0
    assert "to finish" not in run(vault, "model", "status").output
    assert run(vault, "doctor").output.startswith("Everything is in order")


def test_a_write_of_many_texts_says_what_is_left_and_how_to_finish(vault: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from memvault.store.embedding import pipeline

    monkeypatch.setattr(pipeline, "EMBED_NOW_LIMIT", 2)
    write(vault, "Me.md", "# Me\n\n- Lives in Lisbon\n- Works as a nurse\n- Plays the cello\n")
    r = run(vault, "source", "add", "Me.md")
    assert r.exit_code == 0, r.output
    # The note and its three facts.
    assert "4 texts are not yet searchable by meaning" in r.output and "`memvault sync` embeds them" in r.output
    monkeypatch.setattr(pipeline, "EMBED_NOW_LIMIT", 256)
    write(vault, "You.md", "# You\n\n- Lives in Porto\n- Works as a baker\n")
    r = run(vault, "source", "add", "You.md")
    assert r.exit_code == 0 and "not yet searchable" not in r.output, r.output
    r = run(vault, "search", "which instrument do I play?", "--mode", "semantic", "--what", "facts", "--json")
    assert r.exit_code == 0
    assert "Plays the cello" not in r.output  # left for sync
    r = run(vault, "search", "someone who bakes bread for a living", "--mode", "semantic", "--what", "facts",
            "--json")
    assert "Works as a baker" in json.loads(r.stdout.splitlines()[0])["passage"]


def test_a_model_that_cannot_be_loaded_is_said_and_the_write_kept(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "no-such/model-xyz")
    r = run(vault, "add", "Prefers window seats on trains")
    assert r.exit_code == 0 and "Added m-" in r.output
    assert "not yet searchable by meaning (keyword search finds it)" in r.output
    assert "Prefers window seats" in run(vault, "search", "window seats", "--mode", "keyword").output


def test_an_ingested_session_is_embedded_turns_and_facts(vault: Path, tmp_path: Path) -> None:
    lines = [
        {"role": "user", "content": "Our reporting service is owned by Priya from now on."},
        {"role": "assistant", "content": "Noted: Priya owns the reporting service."},
        {"role": "user", "content": "The new database listens on port 6543."},
    ]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    r = run(vault, "ingest", str(transcript))
    assert r.exit_code == 0 and "not yet searchable" not in r.output, r.output
    data = json.loads(run(vault, "model", "status", "--json").stdout)
    assert data["chunks"] >= 4 and (data["unembedded"], data["queued"]) == (0, 0), data
