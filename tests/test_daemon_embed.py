"""A write that needs vectors asks the running daemon's loaded model.

``add`` (and MCP ``remember``) name the live memories a new one resembles by
cosine; without a daemon the process loads the embedding model for that
(over a second on this machine). With one, the daemon's ``embed`` op puts the
vectors into the shared cache and the writer reads them from there.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.retrieval import support

from memvault.daemon import client
from memvault.daemon.client import daemon_embedder
from memvault.daemon.serve import MAX_EMBED_TEXTS, QueryServer
from memvault.store.embedding import model
from memvault.store.memory_store import MemoryStore


@pytest.fixture
def served(tmp_path: Path, memvault_env: Path) -> Iterator[QueryServer]:
    with support.query_server(tmp_path) as srv:
        srv.retriever().embedder()  # the daemon's model, loaded
        yield srv


def test_add_reads_its_neighbours_vectors_from_the_daemon(served: QueryServer, monkeypatch: pytest.MonkeyPatch) -> None:
    writer = MemoryStore.open(str(served.store.root))
    writer.vectors_elsewhere = daemon_embedder(writer)
    try:
        first = writer.memories.add("Prefers green tea in the morning.", "preference")
        assert first.similar_to == [] or all(s["measure"] == "cosine" for s in first.similar_to)

        def no_model_here(*args: object, **kwargs: object) -> None:
            raise AssertionError("the writer loaded the embedding model itself")

        monkeypatch.setattr(model, "load_embedder", no_model_here)
        before = served.requests
        second = writer.memories.add("Likes green tea each morning.", "preference")
        assert served.requests > before, "the daemon was not asked"
        assert [s["id"] for s in second.similar_to or []] == [first.id]
        assert second.similar_to[0]["measure"] == "cosine"
    finally:
        writer.close()


def test_without_a_daemon_the_writer_embeds_itself(tmp_path: Path, memvault_env: Path) -> None:
    root = tmp_path / "vault"
    shutil.copytree(support.VAULT, root)
    support.build(root)
    writer = MemoryStore.open(str(root))
    writer.vectors_elsewhere = daemon_embedder(writer)  # no socket: answers False at once
    try:
        first = writer.memories.add("Prefers green tea in the morning.", "preference")
        second = writer.memories.add("Likes green tea each morning.", "preference")
        assert [(s["id"], s["measure"]) for s in second.similar_to or []] == [(first.id, "cosine")]
    finally:
        writer.close()


@pytest.mark.parametrize("args", [{"texts": []}, {"texts": ["x"] * (MAX_EMBED_TEXTS + 1)}, {"texts": [1]},
                                  {"texts": ["x"], "evil": 1}, ["x"]])
def test_an_embed_request_that_is_not_one_is_refused(served: QueryServer, args: object) -> None:
    reply = served.answer(json.dumps({"v": client.PROTOCOL, "op": "embed", "args": args}).encode())
    assert reply == {"ok": False, "internal": True, "message": "bad arguments"}
