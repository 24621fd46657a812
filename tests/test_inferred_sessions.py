"""Sessions inferred where no ``session`` key says so (issue 37): a
conversation id another tool wrote, else the folder and day of something said
(an episodic note, a note with a ``speaker``); decided from each note alone,
so whichever order the notes were indexed in they make the same sessions, in
the same order (natural order of names: ``turn-9`` before ``turn-10``).
``recall.infer_sessions = false`` leaves them out of ranking. Also score-level
fusion's arithmetic (``rank.FUSION = "score"``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import opened, write

from memvault.store.index.event_time import INFERRED_PREFIX, inferred_session, time_metadata
from memvault.store.queries.search import SearchQuery
from memvault.store.retrieval import rank
from memvault.store.retrieval.candidate import Candidate
from memvault.store.retrieval.neighbours import natural_key, turn_neighbours
from memvault.store.retrieval.retriever import Retriever

#: Two keyless chats in one folder, a day apart; names whose text order is not their turn order.
DAY1 = [("Ana", "Is your Portuguese exam still in June?"),
        ("Ben", "Moved it to July, I can't move house in the same month."),
        ("Ana", "Sensible. Good luck with the boxes.")]
DAY2 = [("Ben", "The removal van is booked for the twelfth."), ("Ana", "Do you need help carrying the piano?")]


def turn_note(date: str, speaker: str, text: str, kind: str = "episodic") -> str:
    return f"---\ntype: {kind}\nsession_date: {date}\nspeaker: {speaker}\n---\n{text}\n"


def write_chats(vault: Path, order: list[int] | None = None) -> None:
    """The two chats as keyless turn notes (``chat/turn-N.md``, N running on
    across both days, so turn-9 and turn-10 sort wrongly as text)."""
    notes = [(f"chat/turn-{8 + n}.md", turn_note("2023-05-02T18:00:00", *t)) for n, t in enumerate(DAY1)]
    notes += [(f"chat/turn-{11 + n}.md", turn_note("2023-06-20T09:00:00", *t)) for n, t in enumerate(DAY2)]
    for i in order or range(len(notes)):
        write(vault, *notes[i])


def sessions(vault: Path) -> tuple[dict[str, str | None], dict[str, tuple[str | None, str | None]]]:
    """(path -> session, path -> (turn before, turn after) by path) of the synced vault."""
    with opened(vault) as v:
        v.sync()
        path = dict(v.con.execute("SELECT rowid, path FROM traces"))
        session = {p: s for p, s in v.con.execute("SELECT path, session FROM traces")}
        nb = turn_neighbours(v.con, list(path))
    return session, {path[r]: (path.get(a), path.get(b)) for r, (a, b) in nb.items()}


def test_the_rule_reads_the_note_alone() -> None:
    said = {"type": "episodic", "session_date": "2023-05-02T18:00:00"}
    assert inferred_session({"conversation_id": "c-42"}, "x/y.md", None, False) == f"{INFERRED_PREFIX}conversation_id:c-42"
    assert inferred_session({"thread": ["a", "b"]}, "x/y.md", None, False) is None  # a list names nothing
    assert time_metadata(said, "Chats/a.md", episodic=True)["session"] == f"{INFERRED_PREFIX}Chats@2023-05-02"
    assert "session" not in time_metadata(said, "Chats/a.md", episodic=False)  # nothing said: no session
    spoken = {"speaker": "Ana", "date": "2023-05-02", "turn": 4}
    assert time_metadata(spoken, "a.md") == {"event_time": "2023-05-02T00:00:00+00:00",
                                             "session": f"{INFERRED_PREFIX}@2023-05-02", "seq": 4.0}
    keyed = {**said, "session": "s1", "conversation_id": "c-42"}
    assert time_metadata(keyed, "Chats/a.md", episodic=True)["session"] == "s1"  # a key always wins
    assert "session" not in time_metadata({"type": "episodic"}, "Chats/a.md", episodic=True)  # no day, no id


def test_names_sort_as_obsidian_lists_them() -> None:
    assert sorted(["chat/turn-10.md", "chat/turn-9.md", "chat/Turn-11.md"], key=natural_key) == [
        "chat/turn-9.md", "chat/turn-10.md", "chat/Turn-11.md"]


def test_keyless_turns_of_a_day_are_one_session_in_turn_order_whatever_the_indexing_order(
    vault: Path, tmp_path: Path
) -> None:
    write_chats(vault)
    session, nb = sessions(vault)
    day1 = {session[f"chat/turn-{n}.md"] for n in (8, 9, 10)}
    assert len(day1) == 1 and session["chat/turn-11.md"] == session["chat/turn-12.md"] not in day1
    assert nb["chat/turn-9.md"] == ("chat/turn-8.md", "chat/turn-10.md")
    assert nb["chat/turn-10.md"] == ("chat/turn-9.md", None)  # the next day is another session
    # Indexed the other way round, and in two syncs: the same sessions, the same neighbours.
    other = tmp_path / "other"
    other.mkdir()
    write_chats(other, [4, 3])
    sessions(other)
    write_chats(other, [2, 1, 0])
    assert sessions(other) == (session, nb)


def test_an_index_from_before_infers_them_on_the_next_sync(vault: Path) -> None:
    write_chats(vault)
    with opened(vault) as v:
        v.sync()
        with v.con:
            v.con.execute("UPDATE traces SET metadata = json_remove(metadata, '$.session')")
            v.con.execute("PRAGMA user_version = 15")
    session, nb = sessions(vault)
    assert session["chat/turn-9.md"] and nb["chat/turn-9.md"] == ("chat/turn-8.md", "chat/turn-10.md")


@pytest.mark.parametrize("infer", [True, False], ids=["inferred", "switched-off"])
def test_a_reply_is_found_by_the_words_of_the_turn_before_it_unless_switched_off(
    vault: Path, memvault_env: Path, infer: bool
) -> None:
    """"Moved it to July" says nothing about an exam: the question before it
    does, when the two are known to be one conversation."""
    if not infer:
        (memvault_env / "config.toml").write_text("[recall]\ninfer_sessions = false\n", encoding="utf-8")
    write_chats(vault)
    with opened(vault) as v:
        v.sync()
        r = Retriever(v.ctx, v.read_con())
        hits = r.search(SearchQuery("Portuguese exam date", mode="keyword", explain=True)).to_json()["hits"]
        r.close()
    paths = [h["path"] for h in hits]
    assert paths[0] == "chat/turn-8.md"
    assert ("chat/turn-9.md" in paths) is infer


def test_score_fusion_averages_similarity_and_the_keyword_score_relative_to_the_best(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rank, "FUSION", "score")
    def cand(rowid: int, **signals: float | int) -> Candidate:
        return Candidate(rowid, f"m-{rowid}", "t", "semantic", "memory", None, "active", [], None, "", **signals)

    best = cand(1, keyword_rank=1, bm25=8.0, similarity=0.6)
    weak = cand(2, keyword_rank=2, bm25=4.0, keyword_weight=0.5, similarity=-0.1)
    meaning = cand(3, similarity=0.5)
    rank._fuse([best, weak, meaning])
    assert (best.fused, weak.fused, meaning.fused) == pytest.approx(((0.6 + 1.0) / 2, (0 + 0.5 * 0.5) / 2, 0.25))
