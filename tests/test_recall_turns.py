"""A turn of an ingested session note is a unit of search and recall: `search`
returns the turn (``path#^t4``) with its speaker and time, and `context` quotes it
as one plain line (date, speaker's name, text, short source; no callout markup or
block ids), relative times followed by the dates they mean, neighbours beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened

from memvault.cli.main import cli
from memvault.store.embedding.chunk import chunk_trace
from memvault.store.queries.search import SearchQuery
from memvault.store.retrieval.turns import note_turns

TURNS = [
    ("user", "Noor", "Hey Teo! I went to a beekeeping club yesterday and it was so powerful.", "13:56"),
    ("assistant", "Teodor", "Wow, that's cool, Noor! What happened that was so awesome?", "13:57"),
    ("user", "Noor", "The honey harvest stories were so inspiring! I'm going to a folk festival next month.", "13:58"),
    ("assistant", "Teodor", "Nice. I baked a rye loaf last Friday, and I sailed in a harbour regatta two weeks ago.", "13:59"),
    ("user", "Noor", "I'm keen on carpentry as a career.", "14:00"),
]


@pytest.fixture
def session(vault: Path, tmp_path: Path) -> Path:
    """A vault with one ingested conversation whose speakers have names."""
    transcript = tmp_path / "chat.jsonl"
    transcript.write_text("".join(
        json.dumps({"role": role, "name": name, "content": text, "timestamp": f"2023-05-08T{at}:00Z"}) + "\n"
        for role, name, text, at in TURNS
    ))
    r = CliRunner().invoke(cli, ["--vault", str(vault), "ingest", str(transcript), "--session", "conv-1"])
    assert r.exit_code == 0, r.output
    with opened(vault) as store:
        store.sync()
    return vault


def run(vault: Path, *args: str) -> object:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


def test_search_returns_the_turn_with_its_note(session: Path) -> None:
    r = run(session, "search", "harbour regatta", "--mode", "keyword", "--json")
    assert r.exit_code == 0, r.output
    hit = json.loads(r.output.splitlines()[0])
    assert hit["path"].startswith("Memory/episodic/sessions/") and hit["ref"] == f"{hit['path']}#^t4"
    assert (hit["anchor"], hit["turn"], hit["speaker"], hit["at"]) == ("^t4", 4, "Teodor", "2023-05-08 13:59")
    assert hit["uri"].endswith("%23%5Et4")  # the link opens the turn's block
    # The turn alone: its own text, not the note's other turns or markup.
    assert hit["passage"].startswith("2023-05-08 13:59 Teodor: Nice. I baked a rye loaf")
    assert "folk festival" not in hit["passage"] and "[!" not in hit["passage"] and "^t" not in hit["passage"]
    assert "**harbour** **regatta**" in hit["snippet"] and "Noor" not in hit["snippet"]


def test_a_turn_is_found_without_its_passage(session: Path) -> None:
    """The human output asks without passages; its hit is still the turn, linked at its block."""
    r = run(session, "search", "harbour regatta", "--mode", "keyword")
    assert r.exit_code == 0 and "%23%5Et4" in r.output.splitlines()[2]
    with opened(session) as store:
        hit = store.search(SearchQuery("harbour regatta", mode="keyword", passages=False)).hits[0]
    assert hit.passage is None and (hit.anchor, hit.turn, hit.speaker) == ("^t4", 4, "Teodor")


def test_a_speakers_name_is_searchable(session: Path) -> None:
    with opened(session) as store:
        hits = store.search(SearchQuery("Teodor rye", mode="keyword")).to_json()["hits"]
    assert hits and hits[0]["speaker"] == "Teodor" and hits[0]["turn"] == 4


def test_context_quotes_the_turn_on_one_plain_line_with_dates_resolved(session: Path) -> None:
    r = run(session, "context", "when did Teodor sail in a harbour regatta", "--what", "all", "--json")
    assert r.exit_code == 0, r.output
    block = json.loads(r.output)
    lines = block["text"].splitlines()
    assert lines[0] == "## Recalled Memory"
    race = next(line for line in lines if "harbour regatta" in line)
    # The turn and its neighbours (the one it answers, the reply to it) are
    # one exchange: one line, in the order they were said, dated once.
    assert race.startswith("- 2023-05-08 Noor: ")  # the day, not the minute: the line is short
    assert " · Teodor: Nice." in race and " · Noor: " in race.split(" · Teodor: ", 1)[1]
    # At least the turn it answers and the reply; with vectors (a write embeds
    # at once) the earlier turns may be relevant too: still one run, in order.
    turns = [i["anchor"] for i in block["items"]]
    first = int(turns[0].removeprefix("^t"))
    assert first <= 3 and turns == [f"^t{n}" for n in range(first, 6)]
    assert race.count("2023-05-08") == 1 and race.endswith(f"(turns {first}-5)")
    assert "last Friday [2023-05-05]" in race and "two weeks ago [2023-04-24]" in race
    for line in lines[1:]:  # no callout markup, block ids on their own, front-matter or role labels
        assert "[!" not in line and "> " not in line and "session_id" not in line and "User" not in line
    assert {i["text"] for i in block["items"]} == {race}
    said = race.split(" · ")
    assert "folk festival next month [2023-06]" in said[3 - first]  # turn 3, where it was said


def test_a_small_budget_keeps_the_turn_that_matched_not_its_neighbour(session: Path) -> None:
    r = run(session, "context", "when did Teodor sail in a harbour regatta", "--what", "all", "--budget", "70", "--json")
    block = json.loads(r.output)
    assert [i["anchor"] for i in block["items"]][:1] == ["^t4"] and block["tokens"] <= 70


def test_each_turn_of_a_session_note_is_a_chunk_of_its_own(session: Path) -> None:
    path = next((session / "Memory" / "episodic" / "sessions").glob("*.md"))
    with opened(session) as store:
        content = store.con.execute("SELECT content FROM traces WHERE path = ?",
                                    (str(path.relative_to(session)),)).fetchone()[0]
    turns = note_turns(content)
    assert [t.n for t in turns] == [1, 2, 3, 4, 5] and turns[3].speaker == "Teodor"
    chunks = chunk_trace("note", "Chat", content)
    for t in turns:
        inside = [c for c in chunks if t.start <= c.start and c.stop >= t.stop - 1 and not content[t.stop:c.stop].strip()]
        # Embedded as the model should read it: "Teodor: Nice. ...", no callout, time stamp or block id.
        assert len(inside) == 1 and inside[0].text.endswith(f"\n{t.speaker}: {t.text}")
        assert "[!" not in inside[0].text and "^t" not in inside[0].text


def test_a_superseded_turn_is_no_turn_to_recall() -> None:
    content = ("## Transcript\n\n> [!user] Ana · 2023-01-02 10:00\n> first words\n\n^t1\n\n"
               "> [!superseded]- Ana · 2023-01-02 10:01 · superseded\n> old words\n\n^t2\n\n"
               "> [!user] Ana · 2023-01-02 10:02\n> new words\n\n^t3\n")
    assert [(t.n, t.text) for t in note_turns(content)] == [(1, "first words"), (3, "new words")]


def test_reading_path_and_block_id_gives_the_turn(session: Path) -> None:
    from memvault.vault_io.errors import MemvaultError

    with opened(session) as store:
        ref = store.search(SearchQuery("harbour regatta", mode="keyword")).to_json()["hits"][0]["ref"]
        turn = store.read(ref).to_json()
        assert turn["content"].startswith("2023-05-08 13:59 Teodor: Nice.") and turn["anchor"] == "^t4"
        with pytest.raises(MemvaultError, match="no turn"):
            store.read(ref.replace("^t4", "^t99"))


def test_chunks_found_by_similarity_come_down_to_their_turns() -> None:
    from memvault.store.retrieval.passages import Passage
    from memvault.store.retrieval.turns import as_turns

    content = "## Digest\nA chat.\n\n## Transcript\n\n" + "".join(
        f"> [!user] Ana · 2023-01-02 10:0{n}\n> words of turn {n} about {topic}\n\n^t{n}\n\n"
        for n, topic in enumerate(["tea", "kites", "boats", "kites again"], 1))
    turns = note_turns(content)
    # Two chunks, best first: turn 3's, then one over turns 1-2 (chosen among by words); the digest is dropped.
    spans = [Passage(turns[2].start, turns[2].stop, "Transcript", 0.8),
             Passage(turns[0].start, turns[1].stop, "Transcript", 0.78), Passage(0, 18, "Digest", 0.77)]
    picked = as_turns(content, spans, "kites")
    assert [p.turn.n for p in picked] == [3, 2] and picked[0].similarity == 0.8
    # A note without turns keeps its passages as they are.
    plain = [Passage(0, 5, "", 0.5)]
    assert as_turns("Just a note.", plain, "kites") == plain


def test_show_takes_the_turn_by_its_block_id(session: Path) -> None:
    with opened(session) as store:
        ref = store.search(SearchQuery("harbour regatta", mode="keyword")).to_json()["hits"][0]["ref"]
    r = run(session, "show", ref)
    assert r.exit_code == 0, r.output
    assert r.output.rstrip().endswith("2023-05-08 13:59 Teodor: Nice. I baked a rye loaf last Friday [2023-05-05], "
                                      "and I sailed in a harbour regatta two weeks ago [2023-04-24].")
    r = run(session, "show", ref.replace("^t4", "^t99"))
    assert r.exit_code == 1 and "no turn ^t99" in r.output
