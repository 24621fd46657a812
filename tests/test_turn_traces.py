"""A turn of an ingested session is a unit of search and recall (store/index/turn_traces.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import apsw
from helpers import opened
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memvault.store.index.turn_traces import TURN_KIND, session_key, turn_trace_id
from memvault.store.queries.recall import ContextQuery
from memvault.store.queries.search import SearchQuery
from memvault.store.retrieval.turns import note_turns

TURNS = [
    ("user", "Noor", "I went to a beekeeping club yesterday and it was so powerful."),
    ("assistant", "Teodor", "Wow, that's cool! What happened there?"),
    ("user", "Noor", "People shared their honey harvest stories; I felt accepted."),
    ("assistant", "Teodor", "I painted a lake sunrise last year, it hangs in my kitchen."),
]


def _session(turns: list[tuple[str, str, str]] = TURNS, session: str = "chat-7") -> io.BytesIO:
    lines = [
        {"role": role, "name": name, "content": text, "session_id": session, "timestamp": f"2023-05-08T13:5{i}:00+00:00"}
        for i, (role, name, text) in enumerate(turns)
    ]
    return io.BytesIO("".join(json.dumps(x) + "\n" for x in lines).encode())


def _turn_traces(con: apsw.Connection) -> dict[str, tuple[str, str, str | None]]:
    return {
        tid: (title, content, path)
        for tid, title, content, path in con.execute(
            "SELECT id, title, content, path FROM traces WHERE kind = ? AND status = 'active'", (TURN_KIND,)
        )
    }


def test_a_turn_is_found_alone_by_search_with_its_speaker_and_time(vault: Path) -> None:
    with opened(vault) as store:
        report = store.ingest(_session(), client="generic")
        hits = store.search(SearchQuery("honey harvest", mode="keyword", what="all")).to_json()["hits"]
        # The turn that says it, first; the turns around it may follow (a
        # turn's words count for its neighbours), never the whole note.
        assert all(h["kind"] == "turn" for h in hits)
        hit = hits[0]
        assert hit["title"].startswith("I went to a beekeeping club")  # the session note's title
        assert (hit["kind"], hit["path"], hit["anchor"], hit["speaker"]) == ("turn", report.path, "^t3", "Noor")
        assert hit["ref"] == f"{report.path}#^t3" and hit["uri"].endswith("%5Et3")
        assert hit["at"] == "2023-05-08 13:52"
        # The transcript's names are searchable: Teodor's turns, not the note.
        named = store.search(SearchQuery("Teodor", mode="keyword", what="all")).to_json()["hits"]
        assert {h["anchor"] for h in named} == {"^t2", "^t4"}


def test_a_recalled_turn_is_one_plain_line_with_its_date_resolved(vault: Path) -> None:
    with opened(vault) as store:
        report = store.ingest(_session(), client="generic")
        block = store.context(ContextQuery("When did Noor go to the beekeeping club?", what="all", record=False)).to_json()
        line = next(x for x in block["text"].splitlines() if "beekeeping club" in x)
        assert line.startswith("- 2023-05-08 Noor: I went to a beekeeping club yesterday [2023-05-07]")
        # With the reply beside it, one exchange: the line says when and who
        # once, and the items' refs find the note.
        assert " · Teodor: " in line and line.endswith("(turns 1-2)")
        assert "[!" not in block["text"] and "\n^t" not in block["text"] and "---" not in block["text"]
        item = next(i for i in block["items"] if i.get("anchor") == "^t1")
        assert (item["kind"], item["speaker"]) == (TURN_KIND, "Noor")
        assert item["ref"] == f"{report.path}#^t1"
        assert not any(i["kind"] == "note" for i in block["items"])  # the note's turns stand for it


def test_turn_traces_follow_the_note_through_edits_moves_and_deletion(vault: Path) -> None:
    with opened(vault) as store:
        report = store.ingest(_session(), client="generic")
        path = vault / report.path
        note_id = store.con.execute("SELECT id FROM traces WHERE path = ? AND kind = 'note'", (report.path,)).fetchone()[0]
        before = _turn_traces(store.con)
        assert sorted(before) == sorted(turn_trace_id(note_id, n) for n in (1, 2, 3, 4))
        assert {p for _, _, p in before.values()} == {report.path}
        sessions = {s for (s,) in store.con.execute("SELECT DISTINCT session FROM traces WHERE kind = 'turn'")}
        assert sessions == {session_key(note_id)}
        # A person corrects one turn: that turn's trace changes, the others are not rewritten.
        rowids = dict(store.con.execute("SELECT id, rowid FROM traces WHERE kind = 'turn'"))
        path.write_text(path.read_text("utf-8").replace("lake sunrise", "lake sunset"), "utf-8")
        store.sync()
        after = _turn_traces(store.con)
        assert "lake sunset" in after[turn_trace_id(note_id, 4)][1]
        assert {k: v for k, v in after.items() if not k.endswith("^t4")} == {
            k: v for k, v in before.items() if not k.endswith("^t4")}
        assert dict(store.con.execute("SELECT id, rowid FROM traces WHERE kind = 'turn'")) == rowids
        # Moved in Obsidian: the turns move with it.
        moved = vault / "Archive" / path.name
        moved.parent.mkdir()
        path.rename(moved)
        store.sync()
        assert {p for _, _, p in _turn_traces(store.con).values()} == {f"Archive/{path.name}"}
        # Deleted: no turn is left behind.
        moved.unlink()
        store.sync()
        assert _turn_traces(store.con) == {}


def _as_of(con: apsw.Connection, version: int) -> None:
    """Make the index look as a release at ``version`` left it: the version
    number, and without the columns later migrations add."""
    con.execute(f"PRAGMA user_version = {version}")
    con.execute("ALTER TABLE files DROP COLUMN inode")  # m015


def test_an_index_from_before_turn_traces_derives_them_on_the_next_sync(vault: Path) -> None:
    with opened(vault) as store:
        store.ingest(_session(), client="generic")
        with store.con:
            store.con.execute("DELETE FROM traces WHERE kind = 'turn'")
            _as_of(store.con, 12)
    with opened(vault) as store:
        store.sync()
        assert len(_turn_traces(store.con)) == 4
        assert store.search(SearchQuery("honey", mode="keyword", what="all")).to_json()["hits"][0]["kind"] == TURN_KIND


_WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "kiwi", "mango", "sunrise", "harbour"])
_TEXT = st.lists(_WORDS, min_size=1, max_size=6).map(" ".join)
_EDIT = st.one_of(
    st.tuples(st.just("append"), _TEXT),
    st.tuples(st.just("change"), _TEXT),
    st.tuples(st.just("drop"), st.just("")),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(_EDIT, min_size=1, max_size=6), pick=st.integers(min_value=0, max_value=50))
def test_turn_traces_equal_the_note_s_turns_after_any_edit_sequence(
    tmp_path_factory: object, edits: list[tuple[str, str]], pick: int
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        vault.mkdir()
        with opened(vault) as store:
            report = store.ingest(_session(), client="generic")
            path = vault / report.path
            for op, text in edits:
                content = path.read_text("utf-8")
                turns = note_turns(content)
                if op == "append":
                    n = max((t.n for t in turns), default=0) + 1
                    content = content.rstrip("\n") + f"\n\n> [!user] Noor · 2023-05-09 10:00\n> {text}\n\n^t{n}\n"
                elif turns:
                    t = turns[pick % len(turns)]
                    if op == "change":
                        content = content[: t.start] + f"> [!user] Noor · 2023-05-09 10:00\n> {text}\n\n^t{t.n}\n" + content[t.stop:]
                    else:
                        content = content[: t.start] + content[t.stop:]
                path.write_text(content, "utf-8")
                store.sync()
                note_id = store.con.execute("SELECT id FROM traces WHERE kind = 'note'").fetchone()[0]
                want = {turn_trace_id(note_id, t.n): (t.speaker, t.text) for t in note_turns(content) if t.text}
                have = {k: (v[0], v[1]) for k, v in _turn_traces(store.con).items()}
                assert have == want


def test_doctor_finds_and_prunes_turns_whose_note_left_the_index(vault: Path) -> None:
    with opened(vault) as store:
        report = store.ingest(_session(), client="generic")
        assert not [f for f in store.doctor().findings if f.check == "orphans"]
        # A note trace lost without its turns (a crash between two writes, an old bug).
        with store.con:
            store.con.execute("DELETE FROM traces WHERE kind = 'note' AND path = ?", (report.path,))
        found = [f for f in store.doctor().findings if f.check == "orphans"]
        assert [f.detail for f in found] == ["4 turn traces have no session note"]
        store.doctor(repair=True)
        assert _turn_traces(store.con) == {}


def _chunk_texts(con: apsw.Connection) -> dict[str, str]:
    from memvault.store.embedding import vectors

    vectors.rechunk(con, [r for (r,) in con.execute("SELECT rowid FROM traces")])
    texts = vectors.chunk_texts(con, [r for (r,) in con.execute("SELECT id FROM chunks")])
    path_of = dict(con.execute("SELECT c.id, t.id FROM chunks c JOIN traces t ON t.rowid = c.trace_rowid"))
    return {path_of[cid]: text for cid, (_, text) in texts.items()}


def test_a_turn_is_embedded_with_its_speaker_however_it_was_written(vault: Path) -> None:
    from helpers import write

    write(vault, "Memory/episodic/s1-2.md",
          "---\ntype: episodic\nspeaker: Ana\nsession: s1\nturn: 2\n---\nI moved the exam to July.\n")
    write(vault, "Memory/semantic/tea.md", "---\ntype: semantic\n---\nPrefers tea over coffee.\n")
    with opened(vault) as store:
        report = store.ingest(_session(), client="generic")
        store.sync()
        texts = _chunk_texts(store.con)
        ids = dict(store.con.execute("SELECT path, id FROM traces WHERE kind IN ('memory', 'note')"))
        assert texts[ids["Memory/episodic/s1-2.md"]] == "Ana: I moved the exam to July."
        assert texts[ids["Memory/semantic/tea.md"]] == "Prefers tea over coffee."
        assert texts[turn_trace_id(ids[report.path], 3)] == (
            "Noor: People shared their honey harvest stories; I felt accepted.")
        # An index from before: the turn memory is chunked again on the next embedding run.
        with store.con:
            store.con.execute("DELETE FROM embed_queue")
            _as_of(store.con, 13)
    with opened(vault) as store:
        queued = {r for (r,) in store.con.execute(
            "SELECT t.id FROM embed_queue q JOIN traces t ON t.rowid = q.trace_rowid")}
        assert queued == {ids["Memory/episodic/s1-2.md"]}
