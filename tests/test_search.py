"""Keyword search: natural queries never fail, raw queries report syntax errors."""

from __future__ import annotations

import apsw
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault.store.db import records as rec
from memvault.store.db.connection import connect, write_transaction
from memvault.store.retrieval.keyword import (
    Filters,
    QuerySyntaxError,
    keyword_search,
    natural_match_expressions,
)

DOCS = [
    ("a", "Retry policy", "How the client retries failed requests with backoff.", ["eng/http"], "Eng/Retry policy.md"),
    ("b", "Status page", "The status: done column tracks finished work.", ["ops"], "Ops/Status page.md"),
    ("c", "Café notes", "We met at the café and talked about résumé writing.", ["life"], "Life/Cafe.md"),
    ("d", "Backoff", "Exponential backoff doubles the wait on every retry.", ["eng"], "Eng/Backoff.md"),
    ("e", "Gardening", "Tomatoes need sun. retry is mentioned once here.", ["home"], "Home/Garden.md"),
]


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> apsw.Connection:
    c = connect(tmp_path_factory.mktemp("idx") / "index.db")
    with write_transaction(c):
        for i, title, content, tags, path in DOCS:
            rec.put_trace(c, rec.TraceRow(id=i, kind="note", type="note", title=title, content=content,
                                          tags=tags, path=path))
    yield c
    c.close()


def ids(hits: list) -> list[str]:
    return [h.id for h in hits]


def test_title_match_ranks_above_body_match(con: apsw.Connection) -> None:
    hits = keyword_search(con, "backoff")
    assert ids(hits)[0] == "d"  # title match beats the body mention in "a"
    assert set(ids(hits)) == {"a", "d"}


def test_tag_match_ranks_above_body_match(con: apsw.Connection) -> None:
    hits = keyword_search(con, "ops")
    assert ids(hits) == ["b"]


FILLER = " ".join(f"filler{i}" for i in range(20))


@pytest.mark.parametrize("field", ["title", "tags"])
def test_title_and_tag_weights_beat_a_body_full_of_the_word(tmp_path, field: str) -> None:
    # Without the column weights the short body would win: BM25 favours
    # short documents, and "marked" carries 20 words of filler.
    c = connect(tmp_path / "index.db")
    with write_transaction(c):
        rec.put_trace(c, rec.TraceRow(
            id="marked", kind="note", type="note", content=FILLER, path="marked.md",
            title="Jitter" if field == "title" else "Marked", tags=["jitter"] if field == "tags" else []))
        rec.put_trace(c, rec.TraceRow(id="body", kind="note", type="note", title="Body", path="body.md",
                                      content="jitter retry backoff"))
    try:
        assert ids(keyword_search(c, "jitter")) == ["marked", "body"]
    finally:
        c.close()


def test_porter_stemming_and_diacritics(con: apsw.Connection) -> None:
    assert "a" in ids(keyword_search(con, "retrying"))
    assert ids(keyword_search(con, "cafe resume")) == ["c"]


def test_all_words_first_then_any_word(con: apsw.Connection) -> None:
    # the note with every word first; notes with some of them fill the page
    found = ids(keyword_search(con, "retry backoff exponential"))
    assert found[0] == "d" and set(found) == {"a", "d", "e"}
    hits = keyword_search(con, "retry backoff exponential")
    assert [h.extra["match"] for h in hits] == ["all", "any", "any"]
    # no note has both words: fall back to any word
    assert set(ids(keyword_search(con, "tomatoes backoff"))) == {"a", "d", "e"}


def test_snippet_marks_terms(con: apsw.Connection) -> None:
    hit = keyword_search(con, "tomatoes")[0]
    assert "**Tomatoes**" in hit.snippet


@pytest.mark.parametrize(
    "query",
    ["status: done", "retry OR", '"unbalanced', "NEAR(", "*", "🙂", "", "   ", "AND", "NOT retry", "(((", "-", "^x",
     "col:umn", "a\x00b", "retry*", "'", "\\"],
)
def test_odd_plain_queries_never_fail(con: apsw.Connection, query: str) -> None:
    keyword_search(con, query)


def test_status_done_is_plain_words(con: apsw.Connection) -> None:
    assert ids(keyword_search(con, "status: done")) == ["b"]


def test_empty_and_symbol_only_queries_return_nothing(con: apsw.Connection) -> None:
    assert keyword_search(con, "") == []
    assert keyword_search(con, "*") == []
    assert natural_match_expressions("🙂 ??") == []


@given(st.text(max_size=80))
def test_any_plain_query_is_safe(query: str) -> None:
    # a fresh connection per example would be slow; reuse a module-level one
    keyword_search(_SHARED, query, limit=5)


@given(st.text(alphabet=st.sampled_from(list('abc"*():^-+ ORANDNOTNEAR{}[]\\')), max_size=30))
def test_syntax_heavy_plain_query_is_safe(query: str) -> None:
    keyword_search(_SHARED, query, limit=5)


def test_raw_queries(con: apsw.Connection) -> None:
    assert ids(keyword_search(con, '"exponential backoff"', raw=True)) == ["d"]
    assert set(ids(keyword_search(con, "retr*", raw=True))) == {"a", "d", "e"}
    assert ids(keyword_search(con, "retry NOT tomatoes", raw=True)) != []
    with pytest.raises(QuerySyntaxError, match="invalid FTS5 query"):
        keyword_search(con, '"unbalanced', raw=True)
    with pytest.raises(QuerySyntaxError):
        keyword_search(con, "NEAR(", raw=True)


def test_filters(con: apsw.Connection) -> None:
    assert ids(keyword_search(con, "retry", filters=Filters(tags=["eng"]))) in (["d", "a"], ["a", "d"])
    assert ids(keyword_search(con, "retry", filters=Filters(tags=["#ENG/http"]))) == ["a"]
    assert ids(keyword_search(con, "retry", filters=Filters(path_glob="Home/*"))) == ["e"]
    assert keyword_search(con, "retry", filters=Filters(types=["semantic"])) == []


_SHARED: apsw.Connection


@pytest.fixture(scope="module", autouse=True)
def _shared(con: apsw.Connection) -> None:
    global _SHARED
    _SHARED = con


def test_very_common_words_rank_only_where_they_stand_out(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memvault.store.retrieval.keyword.COMMON_DOCS", 5)
    c = connect(tmp_path / "common.db")
    with write_transaction(c):
        for i in range(20):
            rec.put_trace(c, rec.TraceRow(id=f"n{i}", kind="note", type="note", title=f"Note {i}",
                                          content=f"the usual text number{i}", path=f"{i}.md"))
        rec.put_trace(c, rec.TraceRow(id="z", kind="note", type="note", title="The zebra", content="stripes",
                                      path="z.md"))
    # "the" is everywhere: its title match comes first, the rest fill the limit
    assert ids(keyword_search(c, "the", limit=1)) == ["z"]
    assert ids(keyword_search(c, "the"))[0] == "z" and len(keyword_search(c, "the")) == 10
    # with a rarer word beside it, the common word is dropped, not required
    assert ids(keyword_search(c, "the number7")) == ["n7"]
    assert natural_match_expressions("the number7", c) == ['"number7"']
    c.close()


def test_filters_give_the_same_hits_whichever_way_they_are_applied(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tag used by few traces is listed from its index first; one used by
    most is checked after ranking. Both ways must agree with a plain filter."""
    import memvault.store.retrieval.keyword as search

    c = connect(tmp_path / "index.db")
    with write_transaction(c):
        for i in range(60):
            tags = ["common"] + (["rare", "rare/nested"] if i % 10 == 0 else []) + (["rarer"] if i == 30 else [])
            rec.put_trace(c, rec.TraceRow(id=f"n{i}", kind="note", type="note", title=f"Note {i}", path=f"D{i % 3}/n{i}.md",
                                          content=("widget " * (1 + i % 7)) + f"filler {i}", tags=tags))
        rec.set_status(c, "n20", "deleted")
    try:
        def hits(**f: object) -> list[str]:
            return ids(keyword_search(c, "widget", limit=100, filters=Filters(**f)))

        everything = hits()
        assert "n20" not in everything and len(everything) == 59
        for tag, expected in [("rare", {"n0", "n10", "n30", "n40", "n50"}), ("rarer", {"n30"}), ("common", set(everything)), ("rare/nested", {"n0", "n10", "n30", "n40", "n50"})]:
            for share in (0.0, 1.0):  # never / always list the tag from its index first
                monkeypatch.setattr(search, "TAG_SHARE_MAX", share)
                got = hits(tags=(tag,))
                assert set(got) == expected and got == [i for i in everything if i in expected], (tag, share)
        got = hits(path_glob="D1/*", tags=("rare",))
        assert got == [i for i in everything if i in {"n10", "n40"}]
        assert hits(types=("semantic",)) == [] and hits(kinds=("memory",)) == []
    finally:
        c.close()
