"""The typed questions of the store API (:mod:`memvault.store.queries`):
JSON both ways, refusals that name the option, and every option reaching the
daemon (an option the socket did not know used to make the daemon refuse and
the caller answer in-process, silently and slowly)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.retrieval import support
from hypothesis import given
from hypothesis import strategies as st

from memvault.daemon import client
from memvault.daemon.serve import QueryServer
from memvault.store.answers import AnswerError
from memvault.store.answers.recall import RecallBlock, RecallLine, SessionStartText
from memvault.store.answers.search import SearchHit, SearchResult
from memvault.store.queries import QUERY_OPS, QueryError, query_type
from memvault.store.queries.recall import ContextQuery, SessionStartQuery
from memvault.store.queries.search import SearchQuery

words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
names = st.lists(st.text("abcdefgh", min_size=1, max_size=6), max_size=3)
maybe = st.none() | words

searches = st.builds(
    SearchQuery, words, mode=st.sampled_from([None, "keyword", "semantic", "hybrid"]), limit=st.integers(1, 50),
    types=names, tags=names, path_glob=maybe, raw=st.booleans(), what=st.sampled_from(["all", "notes", "memories"]),
    memory_scope=names, include_deleted=st.booleans(), include_superseded=st.booleans(), explain=st.booleans(),
    record=st.booleans(), since=maybe, until=maybe)
contexts = st.builds(ContextQuery, words, budget=st.none() | st.integers(50, 2000), what=st.sampled_from(["memories", "all"]),
                     memory_scope=names, identity=st.sampled_from([None, "always", "relevant"]), record=st.booleans(),
                     since=maybe, until=maybe, pinned=st.booleans())
starts = st.builds(SessionStartQuery, project=maybe, budget=st.none() | st.integers(50, 2000))


@given(st.one_of(searches, contexts, starts))
def test_a_query_survives_json(q: Any) -> None:
    wire = json.loads(json.dumps(q.to_json()))
    assert type(q).from_json(wire) == q


def test_lists_and_a_lone_string_become_tuples() -> None:
    q = SearchQuery("x", types=["semantic"], memory_scope="user", tags=[" a ", ""])
    assert (q.types, q.memory_scope, q.tags) == (("semantic",), ("user",), ("a",))


@pytest.mark.parametrize(("cls", "data", "why"), [
    (SearchQuery, {"query": "x", "scope": "facts"}, "unknown option 'scope'"),
    (SearchQuery, {"query": "x", "limit": "10"}, "option 'limit' has the wrong type"),
    (SearchQuery, {"query": "x", "limit": True}, "option 'limit' has the wrong type"),
    (SearchQuery, {"query": "x", "tags": [1]}, "option 'tags' has the wrong type"),
    (ContextQuery, {"message": "x", "what": None}, "option 'what' has the wrong type"),
    (SessionStartQuery, ["project"], "a session_start query is a JSON object"),
])
def test_a_query_that_is_not_one_is_refused_by_name(cls: type, data: object, why: str) -> None:
    with pytest.raises(QueryError, match=why):
        cls.from_json(data)


def test_keyword_and_raw_searches_do_not_ask_the_daemon() -> None:
    assert SearchQuery("x").warm_helps
    assert not SearchQuery("x", mode="keyword").warm_helps
    assert not SearchQuery("x", raw=True).warm_helps
    assert ContextQuery("x").warm_helps and SessionStartQuery().warm_helps


@pytest.fixture
def server(tmp_path: Path, memvault_env: Path) -> Iterator[QueryServer]:
    with support.query_server(tmp_path) as srv:
        yield srv


#: A value other than the default for each option (what the server must accept).
SET = {"mode": "keyword", "limit": 3, "types": ["note"], "tags": ["x"], "path_glob": "*", "raw": True, "what": "notes",
       "memory_scope": ["user"], "since": "2020-01-01", "until": "2030-01-01", "budget": 300, "identity": "always", "project": "memvault",
       "prefer_scope": "memvault"}


@pytest.mark.parametrize("op", QUERY_OPS)
def test_every_option_of_every_query_reaches_the_daemon(server: QueryServer, op: str) -> None:
    cls = query_type(op)
    required = {"query": "billing", "message": "billing"}
    for f in dataclasses.fields(cls):
        if f.name in required:
            continue
        args = {k: v for k, v in required.items() if k in {g.name for g in dataclasses.fields(cls)}}
        # A flag's other value needs no entry in SET; any other option does (a KeyError says which).
        args[f.name] = (not f.default) if isinstance(f.default, bool) else SET[f.name]
        before = server.requests
        reply = server.answer(json.dumps({"v": client.PROTOCOL, "op": op, "args": args}).encode())
        assert reply.get("ok") is True, (f.name, reply)
        assert server.requests == before + 1, f"{op} {f.name} was answered without the retriever"


def test_the_daemon_answers_what_the_store_answers(server: QueryServer) -> None:
    q = ContextQuery("how do I ship the billing service", record=False)
    warm = client.answer(server.store, q)
    assert server.requests == 1
    assert isinstance(warm, RecallBlock) and warm.items
    assert warm == server.store.context(q)


hits = st.builds(SearchHit, st.text(min_size=1, max_size=8), title=maybe, type=maybe, path=maybe, uri=maybe,
                 score=st.floats(-1e6, 1e6), snippet=maybe, passage=maybe, kind=st.none() | st.just("turn"),
                 lines=st.none() | st.tuples(st.integers(0, 9), st.integers(0, 9)), turn=st.none() | st.integers(0, 99),
                 status=st.none() | st.just("deleted"), version=st.none() | st.integers(1, 9))
lines_ = st.builds(RecallLine, st.text(min_size=1, max_size=8), st.just("memory"), maybe, maybe, maybe,
                   st.none() | st.floats(0, 1), st.integers(0, 99), words, when=maybe, outdated_by=maybe)
answers = st.one_of(
    st.builds(SearchResult, st.sampled_from(["keyword", "hybrid"]), st.lists(hits, max_size=3).map(tuple),
              st.lists(words, max_size=2).map(tuple)),
    st.builds(RecallBlock, words, st.integers(0, 900), st.integers(50, 900), st.lists(lines_, max_size=3).map(tuple)),
    st.builds(SessionStartText, words, st.integers(0, 900), st.integers(50, 900)))


@given(answers)
def test_an_answer_survives_json(a: Any) -> None:
    wire = json.loads(json.dumps(a.to_json()))
    assert type(a).from_json(wire) == a


def test_a_hit_has_its_main_keys_always_and_the_others_when_set() -> None:
    data = SearchHit("n-1", "Title", None, None, None, 0.5, None).to_json()
    assert data == {"id": "n-1", "title": "Title", "type": None, "path": None, "uri": None, "score": 0.5,
                    "snippet": None, "passage": None}
    assert SearchHit("n-1", "T", None, None, None, 0.5, None, speaker="Ana").to_json()["speaker"] == "Ana"


def test_an_answer_of_another_shape_is_refused() -> None:
    with pytest.raises(AnswerError, match="unknown keys"):
        SearchResult.from_json({"mode": "keyword", "hits": [], "extra": 1})
    with pytest.raises(AnswerError):
        RecallBlock.from_json({"text": ""})


def test_each_query_op_has_its_query_and_answer_type() -> None:
    """The daemon reads a query by its op and the client its answer: each op names both."""
    from memvault.store.answers import answer_type

    assert [query_type(op).OP for op in QUERY_OPS] == list(QUERY_OPS)
    assert [answer_type(op).__name__ for op in QUERY_OPS] == ["SearchResult", "RecallBlock", "SessionStartText"]
    with pytest.raises(KeyError):
        query_type("add")  # a write, not a query
