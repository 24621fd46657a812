"""One fact per statement per source: a statement said again in one memory
source, or in one ingested session, is one fact that gets stronger (issue 19
item 9: `context` returned 20 identical lines for one fact)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from helpers import opened, write

from memvault.store.memory_store import MemoryStore
from memvault.store.queries.recall import ContextQuery

SOURCE = "---\nmemory: source\n---\n# About me\n" + "- I drink coffee black\n" * 19 + "- i drink coffee  black.\n- I live in Lisbon\n"


@pytest.fixture(autouse=True)
def no_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")


def _facts(store: MemoryStore, like: str) -> list[tuple[str, float | None]]:
    return store.con.execute(
        "SELECT id, strength FROM traces WHERE kind = 'fact' AND status = 'active' AND content LIKE ? ORDER BY id",
        (f"%{like}%",),
    ).fetchall()


def test_a_statement_repeated_in_a_source_is_one_fact_that_gets_stronger(vault: Path) -> None:
    write(vault, "About me.md", SOURCE)
    with opened(vault) as store:
        store.sync()
        [(fact_id, strength)] = _facts(store, "coffee")
        assert strength == pytest.approx(0.5 + 19 * 0.02)  # said 20 times: 19 repetitions
        store.sync()  # nothing changed: not stronger again
        assert _facts(store, "coffee") == [(fact_id, strength)]
        write(vault, "About me.md", SOURCE.replace("- I live", "- I drink coffee black\n- I live"))
        store.sync()
        assert _facts(store, "coffee") == [(fact_id, pytest.approx(strength + 0.02))]
        store.rebuild()  # the strength is durable and not counted twice
        assert _facts(store, "coffee") == [(fact_id, pytest.approx(strength + 0.02))]
        assert len(_facts(store, "Lisbon")) == 1
        assert store.context(ContextQuery("how do I drink coffee?")).to_json()["text"].count("I drink coffee black") == 1


def test_a_statement_repeated_in_one_session_is_one_fact(vault: Path) -> None:
    turns = [("user", "I prefer short answers with the fix first."), ("assistant", "Noted."),
             ("user", "Why does the build fail?"), ("assistant", "A missing import."),
             ("user", "I prefer short answers with the fix first.")]
    lines = [json.dumps({"role": r, "content": c, "timestamp": 1767225600 + i}) for i, (r, c) in enumerate(turns)]
    with opened(vault) as store:
        store.sync()
        store.ingest(io.BytesIO("\n".join(lines).encode()), session="s1")
        facts = [f for f in _facts(store, "short answers") if f[0] != store.con.execute(
            "SELECT trace_id FROM facts WHERE segment = 'digest'").fetchone()[0]]
        assert len(facts) == 1 and facts[0][1] == pytest.approx(0.52)
