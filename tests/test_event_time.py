"""Event time: when a memory, note or fact happened, ``--since``/``--until``,
times named in a query, decay by event time; conversation sessions and
neighbouring turns; the full-text index over derived titles."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli
from memvault.store.db.connection import write_transaction
from memvault.store.index.event_time import (
    date_in_text,
    fact_event_time,
    note_event_time,
    parse_event_time,
    parse_stamp,
    session_of,
)
from memvault.store.queries.search import SearchQuery
from memvault.store.retrieval.keyword import keyword_search
from memvault.store.retrieval.neighbours import turn_neighbours, with_turn_context
from memvault.store.retrieval.retriever import Retriever
from memvault.store.retrieval.when import BadTimeError, named_periods, parse_bound

NOW = datetime(2024, 6, 12, 9, 30, tzinfo=timezone.utc)


# -- reading event times -------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2023-03-04T10:15:00", "2023-03-04T10:15:00+00:00"),
        ("2023-03-04", "2023-03-04T00:00:00+00:00"),
        ("2023-03-04 10:15", "2023-03-04T10:15:00+00:00"),
        ("2023-03-04T10:15:00+02:00", "2023-03-04T08:15:00+00:00"),
        ("2023-03-04T10:15:00Z", "2023-03-04T10:15:00+00:00"),
        ("2023/3/4", "2023-03-04T00:00:00+00:00"),
        ("4 March 2023", "2023-03-04T00:00:00+00:00"),
        ("March 4, 2023", "2023-03-04T00:00:00+00:00"),
        ("4th of Mar 2023", "2023-03-04T00:00:00+00:00"),
        ("2023-02-30", None),
        ("2023-03-04 trip notes", None),
        ("{{date}}", None),
        (20230304, None),
        (None, None),
    ],
)
def test_front_matter_dates_parse_to_utc(value: object, expected: str | None) -> None:
    assert parse_event_time(value) == expected


def test_stamps_read_back_as_utc_datetimes() -> None:
    """parse_stamp reads what iso() writes (and dates, datetimes); None for anything else."""
    from datetime import date

    assert parse_stamp("2023-03-04T10:15:00+00:00") == datetime(2023, 3, 4, 10, 15, tzinfo=timezone.utc)
    assert parse_stamp("2023-03-04T10:15:00Z") == datetime(2023, 3, 4, 10, 15, tzinfo=timezone.utc)
    assert parse_stamp(" 2023-03-04 ") == datetime(2023, 3, 4, tzinfo=timezone.utc)
    assert parse_stamp(date(2023, 3, 4)) == datetime(2023, 3, 4, tzinfo=timezone.utc)
    assert parse_stamp(datetime(2023, 3, 4, 1)) == datetime(2023, 3, 4, 1, tzinfo=timezone.utc)
    assert parse_stamp("") is None and parse_stamp("soon") is None and parse_stamp(None) is None


def test_event_keys_in_order_then_daily_note_names() -> None:
    fm = {"date": "2024-01-02", "session_date": "2023-12-30T20:00:00", "occurred": "not a date"}
    assert note_event_time(fm, "Memory/a.md") == "2023-12-30T20:00:00+00:00"  # occurred unparseable, session_date next
    assert note_event_time({"Date": "2024-01-02"}, "x.md") == "2024-01-02T00:00:00+00:00"  # keys are case-insensitive
    assert note_event_time({}, "Daily/2024-05-06.md") == "2024-05-06T00:00:00+00:00"
    assert note_event_time({}, "Journal/2024/05/07 Tuesday.md") == "2024-05-07T00:00:00+00:00"
    assert note_event_time({"created": "2020-01-01"}, "Notes/Idea.md") is None  # creation is no event
    assert fact_event_time(("Log", "## 12 March 2024 standup"), "2024-01-01T00:00:00+00:00") == "2024-03-12T00:00:00+00:00"
    assert fact_event_time(("Log", "March 12"), "2024-01-01T00:00:00+00:00") == "2024-01-01T00:00:00+00:00"
    assert date_in_text("Retro 2024-02-09 (late)") == "2024-02-09T00:00:00+00:00"
    assert session_of({"session": "s1", "turn": 3}) == ("s1", 3.0)
    assert session_of({"session": "s1", "turn": "x"}) == ("s1", None)
    assert session_of({"session": ["a"]}) == (None, None)


@pytest.mark.parametrize(
    ("text", "end", "expected"),
    [
        ("7d", False, "2024-06-05T09:30:00+00:00"),
        ("12h", False, "2024-06-11T21:30:00+00:00"),
        ("2w", True, "2024-05-29T09:30:00+00:00"),
        ("2023-05-01", False, "2023-05-01T00:00:00+00:00"),
        ("2023-05-01", True, "2023-05-02T00:00:00+00:00"),
        ("2023-05", False, "2023-05-01T00:00:00+00:00"),
        ("2023-12", True, "2024-01-01T00:00:00+00:00"),
        ("2023", True, "2024-01-01T00:00:00+00:00"),
        ("2023-05-01T10:00", True, "2023-05-01T10:00:00+00:00"),
        ("yesterday", False, "2024-06-11T00:00:00+00:00"),
        ("today", True, "2024-06-13T00:00:00+00:00"),
        # the spellings list and recent read before they shared this grammar
        ("2 days", False, "2024-06-10T09:30:00+00:00"),
        ("3 hours ago", False, "2024-06-12T06:30:00+00:00"),
        ("30 min", False, "2024-06-12T09:00:00+00:00"),
        ("last week", False, "2024-06-05T09:30:00+00:00"),
        ("1.5d", False, "2024-06-10T21:30:00+00:00"),
        ("2023-05-01T10:00:00Z", False, "2023-05-01T10:00:00+00:00"),
        ("2023-05-01T12:00:00+02:00", False, "2023-05-01T10:00:00+00:00"),
        ("1y", False, "2023-06-13T09:30:00+00:00"),
    ],
)
def test_since_and_until_bounds(text: str, end: bool, expected: str) -> None:
    assert parse_bound(text, NOW, end=end) == expected


def test_a_bad_bound_is_a_usage_error() -> None:
    with pytest.raises(BadTimeError, match="not a date"):
        parse_bound("last tuesday-ish", NOW)
    for text in ("", "2023-13", "99999999999 weeks", "99999y"):
        with pytest.raises(BadTimeError):
            parse_bound(text, NOW)
    assert BadTimeError("x").exit_code == 2


def test_times_named_in_a_query() -> None:
    said = lambda q: [(p.start[:10], p.end[:10]) for p in named_periods(q, NOW)]  # noqa: E731
    assert said("what happened in May 2023?") == [("2023-05-01", "2023-06-01")]
    assert said("what did we plan in September?") == [("2023-09-01", "2023-10-01")]  # the last September
    assert said("the dentist on 3 June") == [("2024-06-03", "2024-06-04")]
    assert said("happier in June than in April?") == [("2024-06-01", "2024-07-01"), ("2024-04-01", "2024-05-01")]
    assert said("May I ask what you did?") == []  # the verb
    assert said("what breaks every September?") == []  # no one period
    assert said("what did I say yesterday") == [("2024-06-11", "2024-06-12")]
    assert said("last week") and said("in 2022") == [("2022-01-01", "2023-01-01")]


# -- the index ---------------------------------------------------------------------


def turn(session: str, n: int, date: str, speaker: str, text: str) -> str:
    return f"---\ntype: episodic\nsession_date: {date}\nspeaker: {speaker}\nsession: {session}\nturn: {n}\n---\n{text}\n"


@pytest.fixture
def chat(vault: Path) -> Path:
    """Two sessions of a chat as episodic memory notes, a note with a date and a daily note."""
    s1 = [("Ana", "Is your Portuguese exam still in June?"), ("Ben", "Moved it to July, I can't move house in the same month."),
          ("Ana", "Sensible. Good luck with the boxes.")]
    s2 = [("Ben", "The removal van is booked for the twelfth."), ("Ana", "Do you need help carrying the piano?")]
    for n, (who, text) in enumerate(s1, 1):
        write(vault, f"Memory/episodic/s1-{n}.md", turn("s1", n, "2023-05-02T18:00:00", who, text))
    for n, (who, text) in enumerate(s2, 1):
        write(vault, f"Memory/episodic/s2-{n}.md", turn("s2", n, "2023-06-20T09:00:00", who, text))
    write(vault, "Trips/Lisbon.md", "---\ndate: 2022-10-01\n---\nWe flew to Lisbon for the conference.\n")
    write(vault, "Daily/2024-01-15.md", "Called the removal company about a quote.\n")
    write(vault, "Ideas.md", "---\ncreated: 2021-03-03\n---\nA piano app that teaches by ear.\n")
    with opened(vault) as v:
        v.sync()
    return vault


def test_sync_records_event_time_session_and_turn(chat: Path) -> None:
    with opened(chat) as v:
        rows = dict(((p, (e, h, s, q)) for p, e, h, s, q in v.con.execute(
            "SELECT path, event_time, happened, session, seq FROM traces")))
    assert rows["Memory/episodic/s1-2.md"] == ("2023-05-02T18:00:00+00:00", "2023-05-02T18:00:00+00:00", "s1", 2.0)
    assert rows["Trips/Lisbon.md"][:2] == ("2022-10-01T00:00:00+00:00", "2022-10-01T00:00:00+00:00")
    assert rows["Daily/2024-01-15.md"][0] == "2024-01-15T00:00:00+00:00"
    # no event time: placed at its creation
    assert rows["Ideas.md"][:2] == (None, "2021-03-03")


def test_search_and_context_filter_by_when_things_happened(chat: Path) -> None:
    runner = CliRunner()

    def paths(*args: str) -> list[str]:
        r = runner.invoke(cli, ["--vault", str(chat), "search", *args, "--mode", "keyword", "--json"])
        assert r.exit_code == 0, r.output
        return [json.loads(line)["path"] for line in r.output.splitlines()]

    s2 = {"Memory/episodic/s2-1.md", "Memory/episodic/s2-2.md"}
    assert set(paths("removal van piano Lisbon")) == s2 | {"Trips/Lisbon.md", "Daily/2024-01-15.md", "Ideas.md"}
    assert set(paths("removal van piano Lisbon", "--since", "2023-06")) == s2 | {"Daily/2024-01-15.md"}
    # Ideas.md has no event time: it is placed at its creation
    assert set(paths("removal van piano Lisbon", "--until", "2022-12-31")) == {"Trips/Lisbon.md", "Ideas.md"}
    assert set(paths("removal van piano Lisbon", "--since", "2023-06-01", "--until", "2023-06")) == s2
    r = runner.invoke(cli, ["--vault", str(chat), "search", "piano", "--since", "soon"])
    assert r.exit_code == 2 and "--since" in r.output
    r = runner.invoke(cli, ["--vault", str(chat), "context", "piano", "--until", "2023-13"])
    assert r.exit_code == 2


def test_a_time_filter_narrows_the_search_first_when_few_traces_pass(chat: Path) -> None:
    """The same hits whether the time range is applied before ranking (an
    index range, few traces) or after (most traces pass)."""
    with opened(chat) as v:
        r = Retriever(v.ctx, v.read_con())
        r.clock = lambda: NOW  # type: ignore[method-assign]
        narrow = r.search(SearchQuery("removal piano", mode="keyword", since="2023-06-01", until="2023-06-30")).to_json()["hits"]
        wide = r.search(SearchQuery("removal piano", mode="keyword", since="2000")).to_json()["hits"]
        r.close()
    assert {h["path"] for h in narrow} == {"Memory/episodic/s2-1.md", "Memory/episodic/s2-2.md"}
    assert {h["path"] for h in narrow} < {h["path"] for h in wide}


def test_the_fts_index_stays_consistent_through_edits(chat: Path) -> None:
    """The FTS table reads a view (derived titles left out): every insert,
    update, delete and the bulk loader's rebuild must agree with it."""
    write(chat, "Memory/episodic/s1-3.md", turn("s1", 3, "2023-05-02T18:00:00", "Ana", "Sensible. Good luck packing."))
    (chat / "Memory/episodic/s2-2.md").unlink()
    write(chat, "Memory/semantic/Titled.md", "---\ntitle: Piano tuning\n---\nEvery spring.\n")
    with opened(chat) as v:
        v.sync()
        v.con.execute("INSERT INTO traces_fts(traces_fts, rank) VALUES ('integrity-check', 1)")
        with write_transaction(v.con):
            v.con.execute("INSERT INTO traces_fts(traces_fts) VALUES ('rebuild')")
        v.con.execute("INSERT INTO traces_fts(traces_fts, rank) VALUES ('integrity-check', 1)")
        # a memory's first line is no title; a front-matter title is
        titles = dict(v.con.execute("SELECT t.path, s.title FROM traces t JOIN traces_fts_source s ON s.rowid = t.rowid"))
        assert titles["Memory/episodic/s1-1.md"] == "" and titles["Memory/semantic/Titled.md"] == "Piano tuning"
        context = dict(v.con.execute("SELECT t.path, s.context FROM traces t JOIN traces_fts_source s ON s.rowid = t.rowid"))
        assert context["Memory/episodic/s1-1.md"] == "Ana"
        assert keyword_search(v.con, "packing")[0].path == "Memory/episodic/s1-3.md"
        assert keyword_search(v.con, "boxes") == []  # the old text left the index


# -- neighbours --------------------------------------------------------------------


def test_turns_have_their_session_neighbours(chat: Path) -> None:
    with opened(chat) as v:
        rowid = dict(v.con.execute("SELECT path, rowid FROM traces"))
        nb = turn_neighbours(v.con, [rowid["Memory/episodic/s1-2.md"], rowid["Memory/episodic/s2-1.md"], rowid["Ideas.md"]])
        assert nb[rowid["Memory/episodic/s1-2.md"]] == (rowid["Memory/episodic/s1-1.md"], rowid["Memory/episodic/s1-3.md"])
        assert nb[rowid["Memory/episodic/s2-1.md"]] == (None, rowid["Memory/episodic/s2-2.md"])
        assert rowid["Ideas.md"] not in nb
        ids = dict(v.con.execute("SELECT path, id FROM traces"))
        recalled = [SimpleNamespace(id=ids["Memory/episodic/s1-2.md"], score=1.0), SimpleNamespace(id=ids["Ideas.md"], score=0.5)]
        around = with_turn_context(v.con, recalled, lambda i, item: SimpleNamespace(id=i, score=item.score))
        # A neighbour joins at its share of its turn's score: the turn before
        # at 0.5 (ties go to the neighbour), the turn after at 0.3, after Ideas.
        assert [a.id for a in around] == [ids["Memory/episodic/s1-2.md"], ids["Memory/episodic/s1-1.md"],
                                          ids["Ideas.md"], ids["Memory/episodic/s1-3.md"]]
        weaker = [SimpleNamespace(id=ids["Memory/episodic/s1-2.md"], score=1.0), SimpleNamespace(id=ids["Ideas.md"], score=0.6)]
        around = with_turn_context(v.con, weaker, lambda i, item: SimpleNamespace(id=i, score=item.score))
        assert [a.id for a in around][:2] == [ids["Memory/episodic/s1-2.md"], ids["Ideas.md"]]


def test_a_reply_is_found_by_the_words_of_the_turn_before_it(chat: Path) -> None:
    """"Moved it to July" says nothing about an exam: the question before it does."""
    with opened(chat) as v:
        r = Retriever(v.ctx, v.read_con())
        hits = r.search(SearchQuery("Portuguese exam date", mode="keyword", explain=True)).to_json()["hits"]
        r.close()
    paths = [h["path"] for h in hits]
    assert paths[0] == "Memory/episodic/s1-1.md" and "Memory/episodic/s1-2.md" in paths
    reply = hits[paths.index("Memory/episodic/s1-2.md")]
    assert reply["explain"]["keyword_neighbours"] > 0 and reply["snippet"].startswith("Moved it to July")


def embed(root: Path) -> None:
    """Embed the vault's texts with the bundled model."""
    from memvault.store.embedding.pipeline import EmbeddingPipeline

    with opened(root) as v:
        p = EmbeddingPipeline.for_ctx(v.ctx, v.con)
        p.run()
        p.close()


@pytest.fixture
def vectors(chat: Path) -> tuple:
    """(matrix, context vectors, matrix row of each path, a query vector) of the embedded chat."""
    embed(chat)
    with opened(chat) as v:
        r = Retriever(v.ctx, v.read_con())
        m, ctx = r.matrix(), r.context_vectors()
        rowid = dict(v.con.execute("SELECT path, rowid FROM traces"))
        q = r.embedder().embed_query("when is the exam now")
        r.close()
    return m, ctx, {path: int(m.rows_of_trace(rowid[path])[0]) for path in rowid}, q


def test_hybrid_explains_context_similarity_event_time_and_time_match(chat: Path) -> None:
    embed(chat)
    with opened(chat) as v:
        r = Retriever(v.ctx, v.read_con())
        r.clock = lambda: NOW  # type: ignore[method-assign]
        hits = r.search(SearchQuery("moving the exam to July in May 2023", mode="hybrid", explain=True)).to_json()["hits"]
        r.close()
    e = {h["path"]: h["explain"] for h in hits}["Memory/episodic/s1-2.md"]
    assert e["event_time"] == "2023-05-02T18:00:00+00:00"
    assert e["similarity_alone"] is not None and e["similarity_alone"] != e["vector_similarity"]
    assert e["time_match"] > 1.0
    # a year old: recency at its floor, not zero
    from memvault.store.retrieval.when import RECENCY_FLOOR

    assert e["recency"] == pytest.approx(RECENCY_FLOOR, abs=1e-3)
    runner = CliRunner()
    out = runner.invoke(cli, ["--vault", str(chat), "search", "moving the exam to July", "--explain"]).output
    assert "in context (" in out and "happened 2023-05-02" in out


def test_facts_happen_under_their_dated_heading_else_when_their_note_did(vault: Path) -> None:
    write(vault, "Log.md", "---\nmemory: source\ndate: 2024-01-01\n---\n# Standups\n\n## 2024-02-09\n\n- Shipped the"
          " booking page to staging.\n\n## Notes\n\n- The staging database is shared with QA.\n")
    with opened(vault) as v:
        v.sync()
        rows = dict(v.con.execute("SELECT content, event_time FROM traces WHERE kind = 'fact'"))
    assert rows["Shipped the booking page to staging."] == "2024-02-09T00:00:00+00:00"
    assert rows["The staging database is shared with QA."] == "2024-01-01T00:00:00+00:00"


def test_similarity_in_context_is_the_mixed_vectors_similarity(vectors: tuple) -> None:
    """ContextVectors.apply gives exactly the cosine of the normalised
    ``v + 0.5 v_prev + 0.3 v_next``, without a second matrix product."""
    import numpy as np

    from memvault.store.retrieval.neighbours import NEXT_WEIGHT, PREV_WEIGHT

    m, ctx, row, q = vectors
    own, sims = ctx.apply(m.similarities(q), m, q)
    mid, before, after = (row[f"Memory/episodic/s1-{n}.md"] for n in (2, 1, 3))
    mixed = m.matrix[mid] + PREV_WEIGHT * m.matrix[before] + NEXT_WEIGHT * m.matrix[after]
    assert sims[mid] == pytest.approx(float(mixed @ q / np.linalg.norm(mixed)), abs=1e-5)
    first = m.matrix[before] + NEXT_WEIGHT * m.matrix[mid]  # the first turn has no previous one
    assert sims[before] == pytest.approx(float(first @ q / np.linalg.norm(first)), abs=1e-5)
    assert sims[row["Ideas.md"]] == pytest.approx(float(m.matrix[row["Ideas.md"]] @ q), abs=1e-6)  # no session: alone
    assert len(ctx) == 5  # the five turns; notes are no turns
    assert np.allclose(own, m.matrix @ q)  # a small matrix scores every row exactly
    exact_own, exact_ctx = ctx.exact(m, np.array([mid, row["Ideas.md"]]), q)
    assert exact_ctx[0] == pytest.approx(float(sims[mid]), abs=1e-5) and exact_ctx[1] == pytest.approx(float(exact_own[1]))


def test_turns_the_first_pass_skipped_are_scored_next_to_those_it_kept(vectors: tuple) -> None:
    """Above its exact size the matrix scores only rows its first pass kept
    (the rest get NOT_SCORED): a turn next to a kept one, and the kept turn's
    own neighbours, are scored exactly before they are mixed."""
    import numpy as np

    from memvault.store.embedding.vectors import NOT_SCORED

    m, ctx, row, q = vectors
    _, full = ctx.apply(m.matrix @ q, m, q)
    partial = np.full(len(m), NOT_SCORED, dtype=np.float32)
    kept = row["Memory/episodic/s1-1.md"]
    partial[kept] = m.matrix[kept] @ q
    own, sims = ctx.apply(partial, m, q)
    for n in (1, 2):  # the kept turn and the reply next to it: as if all were scored
        assert sims[row[f"Memory/episodic/s1-{n}.md"]] == pytest.approx(float(full[row[f"Memory/episodic/s1-{n}.md"]]), abs=1e-5)
    assert sims[row["Memory/episodic/s2-1.md"]] == NOT_SCORED  # far from anything kept: left alone


def test_time_bounds_go_through_the_query_server(chat: Path) -> None:
    """``--since``/``--until`` reach a running daemon and answer as in-process."""
    from memvault.daemon.serve import QueryServer
    from memvault.store.memory_store import MemoryStore

    embed(chat)
    runner = CliRunner()

    def ask(*args: str) -> list[dict]:
        r = runner.invoke(cli, ["--vault", str(chat), *args, "--json"])
        assert r.exit_code == 0, r.output
        return [json.loads(line) for line in r.stdout.splitlines()]

    search = ("search", "moving house and the piano", "--since", "2023-06", "--until", "2023-12")
    context = ("context", "moving house and the piano", "--since", "2023-06", "--no-record")
    cold, cold_ctx = ask(*search), ask(*context)
    srv = QueryServer(MemoryStore.open(str(chat)))
    srv.start()
    try:
        warm, warm_ctx = ask(*search), ask(*context)
        assert srv.requests == 2
    finally:
        srv.stop()
        srv.store.close()
    assert warm == cold and warm_ctx == cold_ctx
    assert cold and {h["path"] for h in cold} <= {"Memory/episodic/s2-1.md", "Memory/episodic/s2-2.md"}
    assert all(i["path"].startswith("Memory/episodic/s2-") for i in cold_ctx[0]["items"])


def test_the_mcp_search_and_context_tools_take_since_and_until(chat: Path) -> None:
    pytest.importorskip("mcp")
    import asyncio

    from mcp import Client

    from memvault.cli.mcp_server import build_server
    from memvault.store.memory_store import MemoryStore

    async def main(store: MemoryStore) -> tuple:
        async with Client(build_server(store), mode="legacy") as c:
            tools = {t.name: t.input_schema["properties"] for t in (await c.list_tools()).tools}
            found = await c.call_tool("search", {"query": "removal van piano Lisbon", "mode": "keyword", "after": "2023-06"})
            bad = await c.call_tool("search", {"query": "piano", "since": "soon"})
            recalled = await c.call_tool("context", {"message": "the piano and the removal van", "until": "2022-12"})
            return tools, found, bad, recalled

    store = MemoryStore.open(str(chat))
    try:
        tools, found, bad, recalled = asyncio.run(main(store))
    finally:
        store.close()
    assert {"since", "until"} <= set(tools["search"]) and {"since", "until"} <= set(tools["context"])
    assert {h["path"] for h in found.structured_content["hits"]} == {
        "Memory/episodic/s2-1.md", "Memory/episodic/s2-2.md", "Daily/2024-01-15.md"}
    assert bad.is_error and "not a date" in bad.content[0].text
    assert recalled.structured_content["items"] == []  # the chat happened after 2022


def test_an_ingested_session_note_happens_when_it_started_and_its_chunks_are_neighbours(vault: Path) -> None:
    from memvault.vault_io.session_note import SessionHead, Turn, render_session

    head = SessionHead(id="s-1", session_id="abc-123", client="claude-code", title="Deploy", started="2026-11-20T10:02:11+00:00")
    turns = [Turn(role="user" if n % 2 else "assistant", text=f"Step {n}: " + "the deploy script and its staging host " * 25)
             for n in range(1, 7)]
    write(vault, "Memory/episodic/sessions/deploy.md", render_session(head, turns))
    with opened(vault) as v:
        v.sync()
        row = v.con.execute("SELECT kind, event_time, session FROM traces WHERE path LIKE '%deploy.md'").fetchone()
    assert row == ("note", "2026-11-20T10:02:11+00:00", "session_id:abc-123")
    embed(vault)
    with opened(vault) as v:
        r = Retriever(v.ctx, v.read_con())
        m, ctx = r.matrix(), r.context_vectors()
        r.close()
    assert len(m) >= 2 and len(ctx) == len(m)  # every chunk of the transcript has a neighbour


def test_list_bounds_by_when_memories_happened_and_recent_by_when_they_changed(vault: Path) -> None:
    write(vault, "Memory/episodic/may.md", "---\ntype: episodic\nsession_date: 2023-05-08\n---\nHiked the ridge trail.\n")
    write(vault, "Memory/episodic/june.md", "---\ntype: episodic\nsession_date: 2023-06-20\n---\nSwam in the lake.\n")
    assert CliRunner().invoke(cli, ["--vault", str(vault), "sync", "--no-embed"]).exit_code == 0

    def titles(*args: str) -> set[str]:
        r = CliRunner().invoke(cli, ["--vault", str(vault), *args, "--json"])
        assert r.exit_code == 0, r.output
        return {json.loads(line)["title"] for line in r.stdout.splitlines() if '"title"' in line}

    assert titles("list", "--since", "2023-05", "--until", "2023-05") == {"Hiked the ridge trail."}
    assert titles("list", "--since", "2023-06-01") == {"Swam in the lake."}
    assert titles("list", "--sort", "happened") == {"Hiked the ridge trail.", "Swam in the lake."}
    # recent means what changed lately: both notes were written just now
    assert titles("recent", "--since", "1d") >= {"Hiked the ridge trail.", "Swam in the lake."}
    r = CliRunner().invoke(cli, ["--vault", str(vault), "list", "--since", "the other day"])
    assert r.exit_code == 2 and "Traceback" not in r.output
