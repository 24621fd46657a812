"""One fact per statement per source: a statement said again in one memory
source, or in one ingested session, is one fact that gets stronger (issue 19
item 9: `context` returned 20 identical lines for one fact)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
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
        # The fact once (the default block may also quote the person's note, which repeats it as written).
        facts = ContextQuery("how do I drink coffee?", what="memories")
        assert store.context(facts).to_json()["text"].count("I drink coffee black") == 1


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


# -- which session holds a fact several sessions state -----------------------------------------

SAID = "I decided to use sqlite for all new projects."
#: Session notes stating SAID: (file name, note id, started). The earliest
#: session has neither the smallest path nor the smallest id.
SESSIONS = [(f"S{i}.md", f"s-{(7 - i):016x}", f"2025-03-{10 + (i * 5) % 8:02d}T09:00:00+00:00") for i in range(8)]
EARLIEST = min(SESSIONS, key=lambda s: s[2])


def _session_note(note_id: str, started: str, n: int) -> str:
    return (f"---\nid: {note_id}\nmemory: source\nsession_id: conv-{n}\nclient: chatgpt\ntitle: Chat {n}\n"
            f"started: '{started}'\nturns: 2\ntags:\n  - session\n---\n# Chat {n}\n\n## Transcript\n\n"
            f"> [!user] User · {started[:10]} 09:00\n> Topic {n} first. {SAID}\n\n^t1\n\n"
            f"> [!assistant] Assistant · {started[:10]} 09:01\n> Noted.\n\n^t2\n")


def _write_sessions(root: Path) -> list[str]:
    for n, (name, note_id, started) in enumerate(SESSIONS):
        write(root, name, _session_note(note_id, started, n))
    return [name for name, _, _ in SESSIONS]


def _holders(store: MemoryStore) -> list[tuple[str, str]]:
    """(fact id, source note path) of every live fact saying SAID."""
    return store.con.execute(
        "SELECT id, path FROM traces WHERE kind = 'fact' AND status = 'active' AND content = ? ORDER BY id", (SAID,)
    ).fetchall()


def test_sessions_indexed_together_give_a_repeated_fact_to_the_earliest(vault: Path) -> None:
    with opened(vault) as store:
        store.sync()
        paths = _write_sessions(vault)
        store.sync_paths(list(reversed(paths)))
        [(_, path)] = _holders(store)
        assert path == EARLIEST[0]


def test_session_rank_is_the_time_then_the_id_then_the_path() -> None:
    from memvault.store.facts.conversation import session_rank
    from memvault.vault_io.parser import parse_note

    def rank(name: str, note_id: str, started: str | None) -> tuple[int, str, str, str]:
        text = _session_note(note_id, started or "x", 1)
        if started is None:
            text = text.replace("started: 'x'\n", "")
        return session_rank(parse_note(name, text.encode()), note_id)

    ranked = sorted([rank("b.md", "s-2", None), rank("a.md", "s-1", "2025-03-11T00:00:00+00:00"),
                     rank("c.md", "s-1", "2025-03-10T00:00:00+00:00"), rank("a.md", "s-0", "2025-03-11T00:00:00+00:00")])
    assert [(r[2], r[3]) for r in ranked] == [("s-1", "c.md"), ("s-0", "a.md"), ("s-1", "a.md"), ("s-2", "b.md")]


_SYNC_IN_A_PROCESS = """
import json, shutil, sys
from pathlib import Path
from memvault.store.memory_store import MemoryStore
vault, notes = Path(sys.argv[1]), Path(sys.argv[2])
store = MemoryStore.open(str(vault))
store.sync()
paths = sorted(p.name for p in notes.iterdir())
for name in paths:
    shutil.copy(notes / name, vault / name)
store.sync_paths(paths)
rows = store.con.execute(
    "SELECT t.id, t.path, f.source_id, f.source_uri, t.content FROM facts f JOIN traces t ON t.id = f.trace_id "
    "WHERE t.status = 'active' ORDER BY t.id").fetchall()
store.close()
print(json.dumps([list(r) for r in rows]))
"""


def test_which_session_holds_a_repeated_fact_does_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    """Two processes (two devices, two runs) index the same session notes:
    each fact lands on the same note, whatever order a set of paths
    iterates in (Python's string hashing differs per process)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    _write_sessions(notes)
    outcomes = []
    for seed in ("1", "2", "3"):
        home, vault = tmp_path / f"home{seed}", tmp_path / f"vault{seed}"
        vault.mkdir()
        env = {**os.environ, "PYTHONHASHSEED": seed, "MEMVAULT_HOME": str(home),
               "MEMVAULT_CONFIG": str(home / "config.toml"), "MEMVAULT_EMBEDDING_MODEL": "none"}
        done = subprocess.run([sys.executable, "-c", _SYNC_IN_A_PROCESS, str(vault), str(notes)], env=env,
                              capture_output=True, text=True, check=True, timeout=120)
        outcomes.append(json.loads(done.stdout))
    assert outcomes[0] == outcomes[1] == outcomes[2]
    assert [(path, uri.rsplit("#", 1)[1]) for _, path, _, uri, text in outcomes[0] if text == SAID] == [
        (EARLIEST[0], "^t1")]


def test_an_earlier_session_indexed_later_takes_the_fact_over(vault: Path) -> None:
    """Sessions arriving one by one (a device that receives the notes from a
    sync tool) end where indexing them together ends: on the earliest."""
    with opened(vault) as store:
        store.sync()
        paths = _write_sessions(vault)
        latest_first = [p for p, _, _ in sorted(SESSIONS, key=lambda s: s[2], reverse=True)]
        for path in latest_first:
            store.sync_paths([path])
            assert [p for _, p in _holders(store)] == [path]
        retired = store.con.execute(
            "SELECT path, reason FROM traces WHERE kind = 'fact' AND status = 'superseded' AND content = ?", (SAID,)
        ).fetchall()
        assert sorted(retired) == sorted((p, "said in an earlier session") for p in paths if p != EARLIEST[0])
        write(vault, paths[-1], (vault / paths[-1]).read_text() + "\nedited\n")  # a later session, again
        store.sync_paths([paths[-1]])
        assert [p for _, p in _holders(store)] == [EARLIEST[0]]
