"""Search cost bounded by the note, not its hits: snippets from a bounded window
(not FTS5's snippet(), which walked every hit), bounded passages, a memory size
limit, and an HTTP MCP server that a stop signal ends while a call is stuck.

Times are measured in bench/bench_search.py, not asserted here: these tests
check what bounds the work (the text read, the size of what comes back)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner
from helpers import opened, write
from hypothesis import given
from hypothesis import strategies as st

from memvault.cli.main import cli
from memvault.store.memories.guard import MAX_CONTENT_BYTES
from memvault.store.queries.recall import ContextQuery
from memvault.store.queries.search import SearchQuery
from memvault.store.retrieval.passages import QUOTE_CHARS
from memvault.store.retrieval.snippet import ELLIPSIS, SCAN_CHARS, SNIPPET_TOKENS, TRIES, query_terms, snippet

MEMVAULT = Path(sys.executable).parent / "memvault"


@pytest.fixture(scope="module")
def con() -> apsw.Connection:
    return apsw.Connection(":memory:")


def test_a_snippet_marks_stems_as_fts5_matched_them(con: apsw.Connection) -> None:
    terms = query_terms(con, '"deploying" "servers"')
    text = "Intro. " * 40 + "We deployed the new Servers on Friday, and the servers ran fine. " + "tail " * 60
    found = snippet(con, terms, text)
    assert found is not None and found.startswith(ELLIPSIS) and found.endswith(ELLIPSIS)
    assert "**deployed**" in found and "**Servers**" in found and "**servers**" in found
    assert snippet(con, terms, "Nothing relevant here.") is None
    # A short text is quoted whole, its punctuation kept, no ellipsis.
    assert snippet(con, query_terms(con, '"birthday"'), "My sister's birthday is on 3 May.") == \
        "My sister's **birthday** is on 3 May."


def test_a_snippet_goes_to_where_the_terms_meet(con: apsw.Connection) -> None:
    text = "river " + "filler words here. " * 300 + "the river met the stone at dawn. " + "filler. " * 300
    found = snippet(con, query_terms(con, '"river" "stone"'), text)
    assert found is not None and "**river** met the **stone**" in found


def test_a_raw_query_marks_its_terms_not_its_operators(con: apsw.Connection) -> None:
    found = snippet(con, query_terms(con, 'retry* AND NOT "time out" OR NEAR(x y)'), "Retrying after a time out and more")
    assert found is not None and "**Retrying**" in found and "**time** **out**" in found and "**and**" not in found


def test_a_word_that_only_starts_like_a_term_is_not_it(con: apsw.Connection) -> None:
    text = " ".join(f"w17{n}" for n in range(200)) + " w17 end"
    found = snippet(con, query_terms(con, '"w17"'), text)
    assert found is not None and "**w17** end" in found and "**w170**" not in found
    # Checking look-alikes is bounded too: past TRIES of them the term is not looked for further.
    crowded = " ".join(f"w17{n}" for n in range(TRIES + 1)) + " w17 end"
    assert snippet(con, query_terms(con, '"w17"'), crowded) is None


@given(text=st.text(max_size=300), query=st.text(max_size=40))
def test_any_text_and_query_make_a_short_snippet_or_none(text: str, query: str) -> None:
    con = apsw.Connection(":memory:")
    terms = query_terms(con, query.replace('"', " "))
    found = snippet(con, terms, text)
    if found is not None:
        assert len(found.replace("**", "").split()) <= SNIPPET_TOKENS * 2 and "**" in found


@pytest.fixture
def heavy(vault: Path) -> Path:
    """A note with 30,000 hits of one word, a 2.5 MB note, and small notes."""
    write(vault, "Hits.md", "# Hits\n\n" + "".join(f"zebra stripe {n} river.\n" for n in range(30_000)))
    words = " ".join(f"w{n % 4999} filler" for n in range(200_000))
    write(vault, "Big.md", f"# Big\n\nThe opening line.\n\n{words} needle\n")
    for n in range(5):
        write(vault, f"Note {n}.md", f"# Note {n}\n\nA zebra crossing by the river {n}.\n")
    with opened(vault) as store:
        store.sync()
    return vault


def test_a_word_with_30000_hits_in_one_note_is_searched_boundedly(heavy: Path) -> None:
    with opened(heavy) as store:
        hits = store.search(SearchQuery("zebra river", mode="keyword", limit=10)).to_json()["hits"]
    by_path = {h["path"]: h for h in hits}
    assert "Hits.md" in by_path and len(hits) == 6
    hit = by_path["Hits.md"]
    assert "**zebra**" in hit["snippet"] and len(hit["snippet"].split()) <= SNIPPET_TOKENS + 2
    assert len(hit["passage"]) <= QUOTE_CHARS + 16  # the quote of one section is cut, not the 600 KB note


def test_a_multi_megabyte_note_is_quoted_from_a_bounded_window(heavy: Path) -> None:
    assert (heavy / "Big.md").stat().st_size > 2 * SCAN_CHARS
    with opened(heavy) as store:
        hit = store.search(SearchQuery("w17", mode="keyword", limit=3)).to_json()["hits"][0]
        assert hit["path"] == "Big.md" and "**w17**" in hit["snippet"]
        assert len(hit["passage"]) <= QUOTE_CHARS + 16
        # Past the scanned prefix a word is found by one substring search in C, not by tokenizing megabytes.
        far = store.search(SearchQuery("needle", mode="keyword", limit=3)).to_json()["hits"][0]
        assert far["path"] == "Big.md" and far["snippet"].startswith("…") and "**needle**" in far["snippet"]
        block = store.context(ContextQuery("needle filler", what="all", budget=300, record=False)).to_json()
        assert block["tokens"] <= 300


def test_memory_content_over_the_limit_is_one_line_of_error(vault: Path, tmp_path: Path) -> None:
    too_big = "word " * (MAX_CONTENT_BYTES // 5 + 1)
    runner = CliRunner()
    r = runner.invoke(cli, ["--vault", str(vault), "add", too_big])
    assert r.exit_code == 2
    assert r.output.strip().count("\n") == 0 and "the limit is 64 KiB" in r.output
    assert not (vault / "Memory").exists()
    r = runner.invoke(cli, ["--vault", str(vault), "add", "Just under the limit is fine"])
    assert r.exit_code == 0, r.output
    mid = r.output.split()[1]
    r = runner.invoke(cli, ["--vault", str(vault), "update", mid, "--content", too_big])
    assert r.exit_code == 2 and "the limit is 64 KiB" in r.output
    rows = tmp_path / "rows.csv"
    rows.write_text(f"content\n{too_big}\nFlies kites on windy Sundays\n", encoding="utf-8")
    r = runner.invoke(cli, ["--vault", str(vault), "import", "csv", str(rows)])
    assert r.exit_code == 1 and "1 imported" in r.output and "1 errors" in r.output
    assert "the limit is 64 KiB" in r.output


def test_mcp_remember_over_the_limit_is_a_tool_error(vault: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from memvault.cli.mcp_server import build_server

    with opened(vault) as store:
        store.sync()

        async def main() -> object:
            async with Client(build_server(store), mode="legacy") as c:
                return await c.call_tool("remember", {"content": "x" * (MAX_CONTENT_BYTES + 1)})

        result = asyncio.run(main())
    assert result.is_error and "the limit is 64 KiB" in result.content[0].text  # type: ignore[attr-defined]


# A server whose search blocks as a search stuck in C code would (what a
# 1.4 MB memory did before snippets were bounded): the rest is the real server.
SLOW_SERVER = """
import sys, threading
from pathlib import Path
from memvault.store.memory_store import MemoryStore

def stuck(self, *args, **kwargs):
    Path(sys.argv[1]).write_text("searching")
    threading.Event().wait()

MemoryStore.search = stuck
from memvault.cli.main import cli
cli(sys.argv[2:])
"""


def test_sigterm_ends_the_http_server_while_a_search_runs(vault: Path, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from memvault.cli.clients.mcp_serve import SHUTDOWN_GRACE

    write(vault, "a.md", "# A\n\nsome text\n")
    with opened(vault) as store:
        store.sync()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ)
    token = subprocess.run([str(MEMVAULT), "--vault", str(vault), "mcp", "token"], capture_output=True, text=True,
                           env=env, check=True).stdout.strip()
    script, marker = tmp_path / "slow.py", tmp_path / "searching"
    script.write_text(SLOW_SERVER)
    with open(tmp_path / "http.err", "w") as err:
        server = subprocess.Popen([sys.executable, str(script), str(marker), "--vault", str(vault), "mcp", "--http",
                                   str(port)], stdout=subprocess.DEVNULL, stderr=err, env=env)
    url = f"http://127.0.0.1:{port}/mcp"

    async def call() -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as c:
                await c.call_tool("search", {"query": "text"})

    def client() -> None:
        try:
            asyncio.run(call())
        except BaseException:  # noqa: BLE001 - the server goes away mid-call
            pass

    caller = threading.Thread(target=client, name="slow-search-client", daemon=True)
    try:
        deadline = time.monotonic() + 60
        while True:  # the server listens once it answers a connection
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "http.err").read_text()
                time.sleep(0.1)
        caller.start()
        while not marker.exists():
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "http.err").read_text()
            time.sleep(0.05)
        stopped = time.monotonic()
        server.send_signal(signal.SIGTERM)
        server.wait(SHUTDOWN_GRACE + 10)  # TimeoutExpired fails the test
        assert time.monotonic() - stopped < SHUTDOWN_GRACE + 10
        assert "calls still running" in (tmp_path / "http.err").read_text()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)
        caller.join(10)
    assert json.dumps(server.returncode) == "0"
