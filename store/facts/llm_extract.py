"""The optional llm fact extractor: any OpenAI-compatible chat endpoint.

With ``extractor = "llm"`` in the config, each changed source note is sent,
in one ``POST {llm.base_url}/chat/completions`` call, to a model (Ollama,
llama.cpp server, vLLM, OpenAI...) that answers with JSON facts. The answer
is validated against :data:`SCHEMA_DOC` by :func:`validate_facts`, then each
fact is anchored to the note segment it best matches, so its heading path,
block id, line range and ``vault://`` URI stay meaningful.

Failure is always bounded and never loses facts: every attempt has a
deadline of ``llm.timeout`` seconds for the whole exchange (connect, send,
the status line, headers and every read of the body: a server trickling one
byte at a time is cut off at the deadline, not merely when one read stalls),
and all attempts of one note together stay within ``llm.timeout x (llm.retries
+ 1)`` seconds, backoff included. Transient failures (connection errors,
timeouts, HTTP 429 and 5xx, malformed or schema-invalid answers) are retried
``llm.retries`` times with a short backoff, and then :class:`LLMError` tells
the caller to use the default extractor for that note. An extractor given a
``cancel`` event (the daemon's background worker) gives up within
:data:`~.http_deadline.CANCEL_CHECK` seconds once it is set, with :class:`LLMCancelled`. After :data:`BREAKER_FAILURES` notes in a row
failed, the endpoint is not asked again for :data:`BREAKER_SECONDS` seconds,
so a dead server cannot stall a sync of many notes.

The note is redacted (:func:`vault_io.secrets.redact`; private key blocks
line for line, then the whole message once more) before it is sent:
credentials never leave the machine.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, TypeVar

from memvault.store.facts.http_deadline import CancelledIO, Deadline, deadline_opener
from memvault.store.memories.memtypes import MEMORY_TYPES, maybe_type
from memvault.store.settings import Settings
from memvault.vault_io import json_input
from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.facts import (
    PROSPECTIVE,
    DraftBuilder,
    Extraction,
    due_date,
    property_segments,
    segments_of,
)
from memvault.vault_io.note import ParsedNote
from memvault.vault_io.secrets import REDACTED, private_key_lines, redact
from memvault.vault_io.segment import collapse

T = TypeVar("T")

#: Consecutive failed notes after which the endpoint is left alone for a while.
BREAKER_FAILURES = 3
BREAKER_SECONDS = 60.0
#: Largest answer body read from the endpoint.
MAX_RESPONSE_BYTES = 4 * 1024 * 1024
MAX_FACTS = 1000
MAX_TEXT = 2000
MAX_TOPICS = 20
#: Wait before the first retry (doubling for each further one, at most 4 s).
BACKOFF = 0.5
#: An attempt is not started with less time than this left in the budget.
MIN_ATTEMPT = 0.05

SCHEMA_DOC = """{"facts": [{"text": "one atomic fact, a full sentence",
  "type": "identity|semantic|episodic|procedural|prospective",
  "topics": ["short topic", ...], "importance": 0.0-1.0, "line": 12, "due": "2026-01-31"}]}
text and type are required; topics, importance, line (the note line the fact comes
from) and due (for prospective facts) are optional."""

SYSTEM_PROMPT = f"""You turn one personal note into atomic memory facts.
Each fact states one thing, is self-contained and faithful to the note; do not invent anything.
Types: identity (about the person themself), semantic (general knowledge, preferences, decisions),
episodic (events, things that happened), procedural (how to do something, lessons),
prospective (open tasks, plans, intentions; give "due" when the note has a date).
Answer with JSON only, no prose, in exactly this shape:
{SCHEMA_DOC}"""

_FENCE_RE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?\s*```\s*$", re.S | re.I)
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_WORDS_RE = re.compile(r"[^\W_]+")
_TOPIC_RE = re.compile(r"[^\w/-]+")


class LLMError(MemvaultError):
    """The llm extractor could not produce facts for a note (the caller falls back)."""


class SchemaError(LLMError):
    """The model's answer is JSON but not in the required shape."""


class LLMCancelled(LLMError):
    """The call was abandoned because the extractor's ``cancel`` event was set."""


@dataclass(frozen=True)
class LLMEndpoint:
    """Connection settings for the endpoint (from the ``llm.*`` config keys)."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 30.0
    retries: int = 2
    max_chars: int = 40000
    backoff: float = 0.5  # first retry waits this long, then twice as long, at most 4 s


def validate_facts(data: Any) -> list[dict[str, Any]]:
    """Check a parsed answer against the schema; return the facts, normalised.

    Accepts ``{"facts": [...]}`` or a bare list. Raises :class:`SchemaError`
    naming the first offending path (``facts[2].type``). Type aliases
    (``todo``, ``preference``...) are mapped to the canonical type.
    """
    if isinstance(data, dict):
        if "facts" not in data:
            raise SchemaError("answer has no 'facts' key")
        items = data["facts"]
    else:
        items = data
    if not isinstance(items, list):
        raise SchemaError("'facts' is not a list")
    if len(items) > MAX_FACTS:
        raise SchemaError(f"'facts' has {len(items)} entries, more than {MAX_FACTS}")
    out: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        where = f"facts[{i}]"
        if not isinstance(item, dict):
            raise SchemaError(f"{where} is not an object")
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            raise SchemaError(f"{where}.text must be a non-empty string")
        if len(text) > MAX_TEXT:
            raise SchemaError(f"{where}.text is longer than {MAX_TEXT} characters")
        type_ = maybe_type(item.get("type"))
        if type_ is None:
            raise SchemaError(f"{where}.type must be one of {', '.join(MEMORY_TYPES)}, not {item.get('type')!r}")
        topics = item.get("topics", [])
        if topics is None:
            topics = []
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics) or len(topics) > MAX_TOPICS:
            raise SchemaError(f"{where}.topics must be a list of at most {MAX_TOPICS} strings")
        importance = item.get("importance")
        if importance is not None:
            if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0 <= importance <= 1:
                raise SchemaError(f"{where}.importance must be a number from 0 to 1")
            importance = float(importance)
        line = item.get("line")
        if line is not None and (isinstance(line, bool) or not isinstance(line, int) or line < 1):
            raise SchemaError(f"{where}.line must be a positive integer")
        due = item.get("due")
        if due is not None and (not isinstance(due, str) or not _DATE_RE.fullmatch(due)):
            raise SchemaError(f"{where}.due must be a YYYY-MM-DD date")
        out.append({
            "text": collapse(text), "type": type_, "topics": topics, "importance": importance,
            "line": line, "due": due,
        })
    return out


def parse_answer(body: bytes) -> list[dict[str, Any]]:
    """The validated facts in a chat-completions response body."""
    return validate_facts(answer_json(body))


def answer_json(body: bytes) -> Any:
    """The JSON the model answered with, from a chat-completions response body
    (a code fence around it is fine); :class:`LLMError` if there is none."""
    try:
        envelope = json_input.loads(body)
        content = envelope["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise LLMError(f"not a chat completion response ({type(exc).__name__})") from None
    if not isinstance(content, str):
        raise LLMError("the completion has no text content")
    fenced = _FENCE_RE.match(content)
    if fenced:
        content = fenced.group(1)  # local models like to wrap JSON in a code fence
    try:
        data = json_input.loads(content)
    except json.JSONDecodeError as exc:  # what json.loads raises for a str
        raise SchemaError(f"the model's answer is not valid JSON ({exc.msg} at char {exc.pos})") from None
    return data


def _topic(value: str) -> str:
    return _TOPIC_RE.sub("-", value.strip().lower()).strip("-/")[:60]


class LLMExtractor:
    """Extract facts through an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(self, settings: LLMEndpoint, cancel: threading.Event | None = None) -> None:
        self.settings = settings
        #: Set from another thread to abandon a call in flight (daemon shutdown).
        self.cancel = cancel
        self._failures = 0
        self._closed_until = 0.0

    @classmethod
    def from_settings(cls, settings: Settings) -> "LLMExtractor":
        """The endpoint of the ``[llm]`` settings; the API key is read from the
        environment variable ``llm.api_key_env`` names (may be unset)."""
        llm = settings.llm
        return cls(LLMEndpoint(
            base_url=llm.base_url, model=llm.model,
            api_key=os.environ.get(llm.api_key_env) if llm.api_key_env else None, timeout=llm.timeout,
            retries=llm.retries, max_chars=llm.max_chars, backoff=BACKOFF,
        ))

    # -- the call ------------------------------------------------------------

    def prompt(self, note: ParsedNote) -> str:
        """The user message: title, properties and numbered, redacted lines.

        Redaction sees whole blocks, not single lines: every line of a PEM
        private key block (BEGIN, the base64 lines, END) becomes
        ``[redacted]`` one for one, so the line numbers the model is asked to
        cite still match the note. The finished message is redacted once more
        as a whole, so nothing that spans lines can slip through a per-line
        pass (that last pass errs on hiding over keeping numbers).
        """
        lines = [f"Note: {note.title}", f"Path: {note.path}", ""]
        for key, value in note.frontmatter.items():
            lines.append(redact(f"Property {key}: {value}")[0])
        lines.append("")
        body = note.body.split("\n")
        in_key = private_key_lines(body)
        for i, text in enumerate(body):
            lines.append(f"{note.body_line + i}: {REDACTED if i in in_key else redact(text)[0]}")
        return redact("\n".join(lines))[0]

    def request(
        self, note: ParsedNote, *, system_prompt: str = SYSTEM_PROMPT, user_prompt: str | None = None
    ) -> list[dict[str, Any]]:
        """Ask the endpoint (with retries); the validated facts, or :class:`LLMError`.
        ``user_prompt`` replaces the note's own (:meth:`prompt`), e.g. a conversation's."""
        return self.ask(system_prompt, self.prompt(note) if user_prompt is None else user_prompt, parse_answer)

    def ask(self, system_prompt: str, user_prompt: str, parse: Callable[[bytes], T]) -> T:
        """One question to the endpoint, within the same bounded budget and
        retries as an extraction; ``parse`` turns the response body into the
        answer (raising :class:`LLMError` for a bad one, which is retried)."""
        s = self.settings
        payload = {
            "model": s.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": system_prompt},
                {"role": "user", "content": user_prompt},
            ],
        }
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        url = s.base_url.rstrip("/") + "/chat/completions"
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if s.api_key:
            headers["Authorization"] = f"Bearer {s.api_key}"
        # One budget for every attempt and the backoff between them, so the
        # worst case is known up front: timeout x attempts.
        attempts = s.retries + 1
        budget_end = time.monotonic() + s.timeout * attempts
        last: Exception | None = None
        tried = 0
        for attempt in range(attempts):
            if attempt:
                pause = min(s.backoff * 2 ** (attempt - 1), 4.0, budget_end - time.monotonic() - MIN_ATTEMPT)
                if pause > 0 and self.cancel is not None and self.cancel.wait(pause):
                    raise LLMCancelled("cancelled")
                if pause > 0 and self.cancel is None:
                    time.sleep(pause)
            left = budget_end - time.monotonic()
            if left < MIN_ATTEMPT:
                break
            tried += 1
            try:
                return parse(self._post(url, body, headers, min(s.timeout, left)))
            except _Permanent as exc:
                raise LLMError(str(exc)) from None
            except LLMCancelled:
                raise
            except LLMError as exc:
                last = exc
        raise LLMError(f"{last} (after {tried} attempts)")

    def _post(self, url: str, body: bytes, headers: dict[str, str], timeout: float | None = None) -> bytes:
        """One POST whose whole exchange ends within ``timeout`` seconds."""
        limit = self.settings.timeout if timeout is None else timeout
        shown = self.settings.timeout  # messages name the configured timeout
        deadline = Deadline(time.monotonic() + limit, self.cancel)
        opener = deadline_opener(deadline)
        req = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with opener.open(req, timeout=limit) as resp:
                chunks: list[bytes] = []
                size = 0
                while True:
                    chunk = resp.read1(65536)  # what has arrived; the deadline bounds each wait
                    if not chunk:
                        break
                    size += len(chunk)
                    if size > MAX_RESPONSE_BYTES:
                        raise _Permanent(f"answer larger than {MAX_RESPONSE_BYTES} bytes")
                    chunks.append(chunk)
                return b"".join(chunks)
        except urllib.error.HTTPError as exc:
            exc.close()
            if exc.code == 429 or exc.code >= 500:
                raise LLMError(f"HTTP {exc.code} from {url}") from None
            raise _Permanent(f"HTTP {exc.code} from {url}") from None
        except CancelledIO:
            raise LLMCancelled(f"request to {url} cancelled") from None
        except (TimeoutError, socket.timeout):
            raise LLMError(f"no answer within {shown:g}s from {url}") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, CancelledIO):
                raise LLMCancelled(f"request to {url} cancelled") from None
            if isinstance(reason, (TimeoutError, socket.timeout)):
                raise LLMError(f"no answer within {shown:g}s from {url}") from None
            raise LLMError(f"cannot reach {url}: {reason}") from None
        except http.client.HTTPException as exc:  # a malformed status line or headers
            raise LLMError(f"bad answer from {url}: {type(exc).__name__}") from None
        except (OSError, ValueError) as exc:  # connection reset, bad URL...
            raise LLMError(f"request to {url} failed: {exc}") from None

    # -- extraction ------------------------------------------------------------

    def extract(
        self,
        note: ParsedNote,
        source_id: str,
        *,
        key_lines: dict[str, int] | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        user_prompt: str | None = None,
    ) -> Extraction:
        """The facts of one note from the model, anchored to the note
        (``system_prompt``/``user_prompt``: another kind of note's, e.g. a
        conversation's; the length limit then applies to ``user_prompt``).

        Raises :class:`LLMError` (note too long, endpoint failing, breaker
        open); the caller then uses the default extractor.
        """
        if len(note.body if user_prompt is None else user_prompt) > self.settings.max_chars:
            raise LLMError(f"note is longer than llm.max_chars ({self.settings.max_chars})")
        now = time.monotonic()
        if now < self._closed_until:
            raise LLMError(
                f"endpoint failed {self._failures} notes in a row; not asked again for "
                f"{self._closed_until - now:.0f}s"
            )
        try:
            items = self.request(note, system_prompt=system_prompt, user_prompt=user_prompt)
        except LLMCancelled:
            raise  # not the endpoint's fault: the breaker does not count it
        except LLMError:
            self._failures += 1
            if self._failures >= BREAKER_FAILURES:
                self._closed_until = time.monotonic() + BREAKER_SECONDS
            raise
        self._failures = 0
        return self.anchor(note, source_id, items, key_lines or {})

    def anchor(
        self, note: ParsedNote, source_id: str, items: list[dict[str, Any]], key_lines: dict[str, int]
    ) -> Extraction:
        """Map each model fact to the best-matching segment of the note."""
        candidates: list[tuple[str, int, int, tuple[str, ...], tuple[str, ...]]] = [
            (seg.text, seg.line_start, seg.line_end, seg.headings, seg.context) for seg in segments_of(note)
        ]
        if note.frontmatter and note.body_line > 1:
            for text, start, stop, _ in property_segments(note.frontmatter, key_lines, (1, note.body_line - 1)):
                candidates.append((text, start, stop, (), ()))
        words = [set(_WORDS_RE.findall(c[0].lower())) for c in candidates]
        result = Extraction(extractor="llm")
        builder = DraftBuilder(note, source_id)
        for item in items:
            text, n = redact(item["text"])
            result.redacted += n
            best = self._best(text, item["line"], candidates, words)
            first = last = None
            headings: tuple[str, ...] = ()
            context: tuple[str, ...] = ()
            if best is not None:
                _, first, last, headings, context = candidates[best]
            due = item["due"] or (due_date(text) if item["type"] == PROSPECTIVE else None)
            builder.add(
                "llm", text, first, last, headings, context, item["type"], due if item["type"] == PROSPECTIVE else None,
                n, tuple(t for t in (_topic(x) for x in item["topics"]) if t), item["importance"],
            )
        result.facts = builder.facts
        if not items and note.body.strip():
            result.warnings.append("the llm extractor found no facts")
        return result

    @staticmethod
    def _best(
        text: str, line: int | None, candidates: list[tuple[str, int, int, tuple[str, ...], tuple[str, ...]]],
        words: list[set[str]],
    ) -> int | None:
        """Index of the candidate most similar to ``text``: word overlap picks
        ten, difflib decides; a candidate on the model's ``line`` gets a bonus."""
        if not candidates:
            return None
        mine = set(_WORDS_RE.findall(text.lower()))
        overlap = [
            (len(mine & w) / len(mine | w) if (mine or w) else 0.0, i) for i, w in enumerate(words)
        ]
        overlap.sort(reverse=True)
        shortlist = [i for _, i in overlap[:10]]
        if line is not None:
            shortlist += [i for i, c in enumerate(candidates) if c[1] <= line <= c[2] and i not in shortlist][:3]
        low = text.lower()[:400]
        best, best_score = None, 0.0
        for i in shortlist:
            c = candidates[i]
            score = SequenceMatcher(None, low, c[0].lower()[:400], autojunk=False).ratio()
            score = max(score, overlap_score(mine, words[i]))
            if line is not None and c[1] <= line <= c[2]:
                score += 0.15
            if score > best_score:
                best, best_score = i, score
        return best if best_score >= 0.2 else None


def overlap_score(a: set[str], b: set[str]) -> float:
    """Jaccard overlap of two word sets."""
    return len(a & b) / len(a | b) if (a or b) else 0.0


class _Permanent(Exception):
    """A failure retrying will not fix (HTTP 4xx other than 429, huge answer)."""
