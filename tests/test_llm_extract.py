"""The llm extractor against a real HTTP server started by each test.

The server (``http.server`` in a thread, on 127.0.0.1 port 0) plays an
OpenAI-compatible ``/v1/chat/completions`` endpoint from a script of canned
answers: good JSON, malformed JSON, schema-invalid JSON, slow answers,
HTTP 500/429/400. It is shut down and joined in teardown.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_llm import FakeLLM, Reply, serve
from helpers import write

from memvault.store.facts import llm_extract
from memvault.store.facts import rows as sf
from memvault.store.facts.llm_extract import (
    LLMEndpoint,
    LLMError,
    LLMExtractor,
    SchemaError,
    parse_answer,
    validate_facts,
)
from memvault.store.memory_store import MemoryStore
from memvault.vault_io.parser import parse_note

NOTE = """---
memory: source
---
# About me

## Preferences
- Prefers dark mode in every editor
- Drinks coffee black, no sugar ^coffee

## Plans
- [ ] Renew the passport before the trip
- My API key is sk-proj-abcdefghijklmnopqrstuvwxyz123456 for scripts
"""

GOOD = {
    "facts": [
        {"text": "The person prefers dark mode in every editor.", "type": "preference", "topics": ["Dark Mode", "editors"],
         "importance": 0.7, "line": 7},
        {"text": "They drink their coffee black without sugar.", "type": "identity", "topics": [], "importance": 0.4},
        {"text": "Renew the passport before the trip.", "type": "todo", "due": "2026-01-31"},
    ]
}


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with serve() as fake:
        yield fake


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm_extract, "BACKOFF", 0.01)


def extractor(base_url: str, **kw: Any) -> LLMExtractor:
    settings = dict(base_url=base_url, model="test-model", api_key="k-test", timeout=2.0, retries=1, backoff=0.01)
    settings.update(kw)
    return LLMExtractor(LLMEndpoint(**settings))


def note(text: str = NOTE, path: str = "About me.md"):
    return parse_note(path, text.encode())


def configure(memvault_env: Path, base_url: str, timeout: float = 2.0, retries: int = 1) -> None:
    (memvault_env / "config.toml").write_text(
        f'extractor = "llm"\n[llm]\nbase_url = "{base_url}"\nmodel = "test-model"\n'
        f'api_key_env = "MEMVAULT_TEST_LLM_KEY"\ntimeout = {timeout}\nretries = {retries}\n',
        "utf-8",
    )


# -- the extractor on its own ------------------------------------------------------------


def test_canned_answer_is_validated_and_anchored(llm: FakeLLM) -> None:
    llm.script(Reply(GOOD))
    result = extractor(llm.base_url).extract(note(), "n-1")
    assert result.extractor == "llm"
    got = [(f.text, f.type, f.heading_path, f.line_start, f.block_id) for f in result.facts]
    assert got == [
        ("The person prefers dark mode in every editor.", "semantic", "About me > Preferences", 7, None),
        ("They drink their coffee black without sugar.", "identity", "About me > Preferences", 8, "coffee"),
        ("Renew the passport before the trip.", "prospective", "About me > Plans", 11, None),
    ]
    assert result.facts[0].topics == ("dark-mode", "editors") and result.facts[0].importance == 0.7
    assert result.facts[2].due == "2026-01-31" and result.facts[0].segment == "llm"
    (req,) = llm.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer k-test"
    body = req["json"]
    assert body["model"] == "test-model" and body["messages"][0]["role"] == "system"
    user = body["messages"][1]["content"]
    assert "7: - Prefers dark mode in every editor" in user
    # Secrets never leave the machine.
    assert "sk-proj" not in json.dumps(body) and "[redacted]" in user


def test_fenced_json_and_bare_list_answers(llm: FakeLLM) -> None:
    llm.script(Reply("```json\n" + json.dumps(GOOD["facts"][:1]) + "\n```"))
    result = extractor(llm.base_url).extract(note(), "n-1")
    assert [f.text for f in result.facts] == ["The person prefers dark mode in every editor."]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply("this is not json at all"), "not valid JSON"),
        (Reply({"facts": [{"text": "x", "type": "feeling"}]}), "facts[0].type must be one of"),
        (Reply({"facts": [{"text": "", "type": "semantic"}]}), "facts[0].text must be a non-empty string"),
        (Reply({"facts": [{"text": "ok text", "type": "semantic", "importance": 7}]}), "importance must be a number from 0 to 1"),
        (Reply({"items": []}), "no 'facts' key"),
        (Reply(raw=b"<html>gateway</html>"), "not a chat completion response"),
        (Reply(raw=b'{"choices": []}'), "not a chat completion response"),
    ],
)
def test_bad_answers_fail_after_bounded_retries(llm: FakeLLM, reply: Reply, message: str) -> None:
    llm.script(reply)
    with pytest.raises(LLMError, match=re.escape(message)):
        extractor(llm.base_url, retries=2).extract(note(), "n-1")
    assert len(llm.requests) == 3


def test_http_500_then_success_is_retried(llm: FakeLLM) -> None:
    llm.script(Reply(status=500, raw=b"{}"), Reply(GOOD))
    result = extractor(llm.base_url).extract(note(), "n-1")
    assert len(result.facts) == 3 and len(llm.requests) == 2


def test_http_429_retried_then_given_up(llm: FakeLLM) -> None:
    llm.script(Reply(status=429, raw=b"{}", headers={"Retry-After": "1"}))
    with pytest.raises(LLMError, match="HTTP 429"):
        extractor(llm.base_url, retries=2).extract(note(), "n-1")
    assert len(llm.requests) == 3


def test_http_400_is_not_retried(llm: FakeLLM) -> None:
    llm.script(Reply(status=400, raw=b'{"error": "bad model"}'))
    with pytest.raises(LLMError, match="HTTP 400"):
        extractor(llm.base_url, retries=3).extract(note(), "n-1")
    assert len(llm.requests) == 1


def test_slow_answer_times_out_within_the_bound(llm: FakeLLM) -> None:
    # Two attempts that waited for the answer would take 6 s; two cut at the
    # timeout 0.6 s, and the rest of the bound is room for a loaded runner.
    llm.script(Reply(GOOD, delay=3.0))
    start = time.monotonic()
    with pytest.raises(LLMError, match="within 0.3s"):
        extractor(llm.base_url, timeout=0.3, retries=1).extract(note(), "n-1")
    assert time.monotonic() - start < 4.0
    assert len(llm.requests) == 2


def test_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again at once: nothing listens there
    with pytest.raises(LLMError, match="cannot reach"):
        extractor(f"http://127.0.0.1:{port}/v1").extract(note(), "n-1")


def test_breaker_stops_asking_a_failing_endpoint(llm: FakeLLM) -> None:
    llm.script(Reply(status=503, raw=b"{}"))
    x = extractor(llm.base_url, retries=0)
    for _ in range(llm_extract.BREAKER_FAILURES):
        with pytest.raises(LLMError, match="HTTP 503"):
            x.extract(note(), "n-1")
    with pytest.raises(LLMError, match="not asked again"):
        x.extract(note(), "n-1")
    assert len(llm.requests) == llm_extract.BREAKER_FAILURES


def test_too_long_notes_are_not_sent(llm: FakeLLM) -> None:
    llm.script(Reply(GOOD))
    with pytest.raises(LLMError, match="max_chars"):
        extractor(llm.base_url, max_chars=50).extract(note(), "n-1")
    assert llm.requests == []


def test_validate_facts_normalises() -> None:
    facts = validate_facts([{"text": "  spaced   out  text ", "type": "Lesson", "topics": None, "line": 3}])
    assert facts == [{"text": "spaced out text", "type": "procedural", "topics": [], "importance": None, "line": 3, "due": None}]
    for bad in ({"facts": "x"}, {"facts": [1]}, {"facts": [{"text": "x", "type": "semantic", "line": 0}]},
                {"facts": [{"text": "x", "type": "semantic", "due": "soon"}]},
                {"facts": [{"text": "x", "type": "semantic", "topics": ["a", 1]}]}):
        with pytest.raises(SchemaError):
            validate_facts(bad)
    with pytest.raises(SchemaError, match="not valid JSON"):
        parse_answer(json.dumps({"choices": [{"message": {"content": "{"}}]}).encode())


# -- through the observer (sync) ------------------------------------------------------------


def test_sync_uses_the_llm_and_stores_its_facts(vault: Path, llm: FakeLLM, memvault_env: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMVAULT_TEST_LLM_KEY", "secret-key-1")
    configure(memvault_env, llm.base_url)
    llm.script(Reply(GOOD))
    write(vault, "About me.md", NOTE)
    v = MemoryStore.open(str(vault))
    try:
        summary = v.sync()
        assert summary.warnings == []
        rows = v.sources.facts("About me.md").facts
        assert [(r.type, r.segment, r.heading_path) for r in rows] == [
            ("semantic", "llm", "About me > Preferences"), ("identity", "llm", "About me > Preferences"),
            ("prospective", "llm", "About me > Plans"),
        ]
        assert "topic/dark-mode" in rows[0].tags
        assert [s.extractor for s in sf.all_sources(v.con)] == ["llm"]
        assert llm.requests[0]["headers"]["Authorization"] == "Bearer secret-key-1"
        # A rename with the same bytes does not ask the model again.
        (vault / "About me.md").rename(vault / "Me.md")
        v.sync()
        assert len(llm.requests) == 1
        assert [r.id for r in v.sources.facts("Me.md").facts] == [r.id for r in rows]
        assert sf.fact_anchor(v.con, rows[0].id).source_uri == "vault://Me.md#Preferences"
    finally:
        v.close()


@pytest.mark.parametrize(
    "reply",
    [Reply("not json"), Reply({"facts": [{"text": "x"}]}), Reply(status=500, raw=b"oops"), Reply(GOOD, delay=0.8),
     Reply(GOOD, trickle=0.05)],
    ids=["malformed", "schema-invalid", "http-500", "slow", "trickle"],
)
def test_failures_fall_back_to_the_default_extractor_with_a_warning(
    vault: Path, llm: FakeLLM, memvault_env: Path, reply: Reply
) -> None:
    configure(memvault_env, llm.base_url, timeout=0.3, retries=1)
    llm.script(reply)
    write(vault, "About me.md", NOTE)
    v = MemoryStore.open(str(vault))
    try:
        start = time.monotonic()
        summary = v.sync()
        assert time.monotonic() - start < 3
        assert len(summary.warnings) == 1
        assert summary.warnings[0].startswith("About me.md: llm extractor failed (")
        assert summary.warnings[0].endswith("used the default extractor")
        texts = [r.text for r in v.sources.facts("About me.md").facts]
        assert "Prefers dark mode in every editor" in texts  # the default extractor's facts
        assert [s.extractor for s in sf.all_sources(v.con)] == ["default"]
    finally:
        v.close()


def test_connection_refused_during_sync_falls_back(vault: Path, memvault_env: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    configure(memvault_env, f"http://127.0.0.1:{port}/v1")
    write(vault, "About me.md", NOTE)
    v = MemoryStore.open(str(vault))
    try:
        summary = v.sync()
        assert "cannot reach" in summary.warnings[0]
        assert len(v.sources.facts("About me.md").facts) == 4
    finally:
        v.close()


# -- audit fixes ---------------------------------------------------------------------------

KEY_BODY = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKB",
            "wQNRkFqg1pTb3JfbWF0ZXJpYWxfdGhhdF9tdXN0X25ldmVyX2xlYXZlX3RoZQ==",
            "bWFjaGluZV9ldmVyX2V2ZXJfZXZlcl9ldmVyX2V2ZXJfZXZlcl9ldmVyX2V2ZXI="]
KEY_NOTE = NOTE + "\n## Keys\nThe deploy key follows.\n-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(KEY_BODY) + \
    "\n-----END RSA PRIVATE KEY-----\n- A fact after the key block stays\n"


def test_private_key_blocks_never_reach_the_endpoint(llm: FakeLLM) -> None:
    llm.script(Reply(GOOD))
    n = note(KEY_NOTE)
    extractor(llm.base_url).extract(n, "n-1")
    (req,) = llm.requests
    sent = json.dumps(req["json"])
    for secret in [*KEY_BODY, "PRIVATE KEY", "BEGIN RSA", "END RSA"]:
        assert secret not in sent
    user = req["json"]["messages"][1]["content"]
    # Line numbers still match the note: the block's lines are blanked one by one.
    lines = KEY_NOTE.split("\n")
    after = lines.index("- A fact after the key block stays") + 1
    assert f"{after}: - A fact after the key block stays" in user
    assert user.count("[redacted]") >= 5  # the key's five lines and the sk-proj key


def test_a_private_key_in_a_property_is_not_sent(llm: FakeLLM) -> None:
    llm.script(Reply(GOOD))
    text = "---\nmemory: source\nssh_key: |\n  -----BEGIN OPENSSH PRIVATE KEY-----\n  " + KEY_BODY[0] + \
        "\n  -----END OPENSSH PRIVATE KEY-----\n---\n- Prefers dark mode in every editor\n"
    extractor(llm.base_url).extract(note(text), "n-1")
    sent = json.dumps(llm.requests[0]["json"])
    assert KEY_BODY[0] not in sent and "PRIVATE KEY" not in sent


@pytest.mark.parametrize("headers", [False, True], ids=["body", "headers"])
def test_a_trickling_answer_is_cut_at_the_timeout(llm: FakeLLM, headers: bool) -> None:
    # One byte every 50 ms: each socket read succeeds, so only a deadline over
    # the whole call (connect, send, every read) stops it; the answer would
    # take ~25 s per attempt to arrive.
    llm.script(Reply(GOOD, trickle=0.05, trickle_headers=headers))
    x = extractor(llm.base_url, timeout=1.0, retries=1)
    start = time.monotonic()
    with pytest.raises(LLMError, match="within 1s"):
        x.extract(note(), "n-1")
    elapsed = time.monotonic() - start
    assert elapsed < 1.0 * (1 + 1) + 8  # the trickle would take ~50 s; room for a loaded 2-core runner
    assert len(llm.requests) == 2


def test_retries_stay_within_the_total_budget(llm: FakeLLM) -> None:
    # Every attempt times out: attempts plus backoff never exceed timeout x attempts.
    llm.script(Reply(GOOD, trickle=0.05))
    x = extractor(llm.base_url, timeout=0.5, retries=3, backoff=0.3)
    start = time.monotonic()
    with pytest.raises(LLMError):
        x.extract(note(), "n-1")
    assert time.monotonic() - start < 0.5 * 4 + 0.5


def test_a_cancelled_call_stops_promptly(llm: FakeLLM) -> None:
    from helpers import wait_for

    llm.script(Reply(GOOD, trickle=0.05))
    x = extractor(llm.base_url, timeout=30.0, retries=2)
    x.cancel = threading.Event()
    errors: list[BaseException] = []

    def call() -> None:
        try:
            x.extract(note(), "n-1")
        except BaseException as exc:  # handed to the test
            errors.append(exc)

    t = threading.Thread(target=call, name="llm-call")
    t.start()
    try:
        wait_for(lambda: llm.requests)
        start = time.monotonic()
        x.cancel.set()
        t.join(5)
        assert not t.is_alive() and time.monotonic() - start < 2
    finally:
        x.cancel.set()
        t.join(5)
    assert len(errors) == 1 and isinstance(errors[0], llm_extract.LLMCancelled)
    assert len(llm.requests) == 1  # no retry after a cancel
    assert x._failures == 0  # a cancel is not the endpoint's fault


def test_a_slow_tls_handshake_gets_the_whole_deadline_not_a_cancel_slice() -> None:
    """With a cancel event (as in the daemon) reads wait in short slices, but
    the TLS handshake cannot be sliced: it must get the remaining deadline."""
    import socket
    import ssl
    import time

    from memvault.store.facts.http_deadline import CANCEL_CHECK, Deadline, _connect

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    hold = 3 * CANCEL_CHECK

    def silent_peer() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(4096)  # the ClientHello
            time.sleep(hold)  # the scenario itself: a peer slow to answer
    t = threading.Thread(target=silent_peer)
    t.start()
    try:
        sock = _connect(Deadline(time.monotonic() + 10, threading.Event()), listener.getsockname())
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        start = time.monotonic()
        with pytest.raises(OSError):
            ctx.wrap_socket(sock, server_hostname="localhost")  # the peer closes without answering
        assert time.monotonic() - start >= hold * 0.9  # waited for the peer, not cut at one slice
    finally:
        t.join()
        listener.close()
