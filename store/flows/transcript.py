"""Reading a session transcript: Claude Code's JSONL, a Codex rollout
(:mod:`.codex`), or generic JSONL.

Claude Code (a hook's ``transcript_path``) writes one JSON object per line:
``user`` and ``assistant`` lines carry an Anthropic Messages API ``message``;
one API response is split over several lines sharing ``message.id`` (merged
here into one turn); ``summary``/``custom-title`` lines name the session.
Side chains (sub-agents), injected meta text, compaction summaries,
thinking blocks and system lines are left out; tool calls and tool results
become one line each. The format is internal to Claude Code and changes
between versions: unknown line types are ignored, a torn last line (the
file is appended live) is skipped.

Only the branch Claude Code shows is read: each line names its parent
(``parentUuid``; a compaction boundary its ``logicalParentUuid``), and a
rewind leaves the abandoned messages in the file, so the conversation is
the chain from the last message back to the root (:func:`shown_branch`).

Generic JSONL: ``{"role": "user"|"assistant"|"tool"|"system", "content":
str | [parts], "timestamp"?: ISO or epoch, "name"?: the speaker}`` per line
(also ``tool_calls`` in the OpenAI style, and a ``session_id`` on any
line). A speaker's ``name`` labels their turns (the role's label
otherwise); on a tool line it names the tool.

A transcript that names no session gets an id from where it was read and how
it begins (:func:`_fallback_session`): a file's resolved path and its first
turn, so the same file keeps its note as it grows while another file that
begins the same way gets its own; from a stream, the first turn alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from memvault.store.flows.codex import CODEX, is_codex, read_codex
from memvault.store.flows.conversation import (
    Conversation,
    ConversationBuilder,
    join_parts,
    strip_injected,
    text_of,
)
from memvault.store.index.classify import content_key
from memvault.vault_io import json_input
from memvault.vault_io.errors import MemvaultError, UsageError

CLAUDE_CODE = "claude-code"
GENERIC = "generic"
_USER_ROLES = {"user", "human"}
_ASSISTANT_ROLES = {"assistant", "ai", "bot", "model", "gpt"}
_TOOL_ROLES = {"tool", "function", "tool_result"}
_INTERRUPTED = "[Request interrupted"


class TranscriptError(MemvaultError):
    """A transcript that cannot be read at all (no JSON lines in it)."""


def read_lines(source: str | Path | IO[str] | IO[bytes]) -> tuple[list[dict[str, Any]], str, list[str]]:
    """The JSON objects of a JSONL transcript (a path or an open stream),
    where it came from, and warnings for lines that are not JSON (a torn
    last line is skipped silently: the file is being appended to)."""
    if isinstance(source, (str, Path)):
        path = Path(source).expanduser()
        if not path.is_file():
            raise UsageError(f"transcript {path} does not exist or is not a file")
        ref = str(path)
        with path.open("rb") as fh:
            return _parse(fh, ref)
    ref = getattr(source, "name", "<stdin>")
    return _parse(source, str(ref))


def _parse(stream: IO[Any], ref: str) -> tuple[list[dict[str, Any]], str, list[str]]:
    objects: list[dict[str, Any]] = []
    warnings: list[str] = []
    raw = stream.read()
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json_input.loads(line)
        except ValueError:
            if n < len(lines) - 1 or text.endswith("\n"):
                warnings.append(f"{ref}: line {n} is not JSON; skipped")
            continue
        if isinstance(obj, dict):
            objects.append(obj)
    if not objects and text.strip():
        raise TranscriptError(f"{ref}: no JSON lines in it (expected a JSONL transcript)")
    return objects, ref, warnings


def is_claude_code(objects: Iterable[dict[str, Any]]) -> bool:
    """Whether these lines come from Claude Code (typed lines carrying a message)."""
    return any(o.get("type") in ("user", "assistant") and isinstance(o.get("message"), dict) for o in objects)


def read_transcript(
    source: str | Path | IO[str] | IO[bytes],
    *,
    session: str | None = None,
    title: str | None = None,
    client: str | None = None,
) -> tuple[Conversation, list[str]]:
    """The conversation a transcript holds, and warnings about skipped lines."""
    objects, ref, warnings = read_lines(source)
    if is_claude_code(objects):
        conv = _claude_code(shown_branch(objects), ref, session, title, client or CLAUDE_CODE)
    elif is_codex(objects):
        conv = read_codex(objects, ref, session, title, client or CODEX)
    else:
        conv = _generic(objects, ref, session, title, client or GENERIC)
    if not conv.session_id:
        origin = str(Path(source).expanduser().resolve()) if isinstance(source, (str, Path)) else None
        conv.session_id = _fallback_session(conv, origin)
        if origin is not None:
            # The id a file got before its path was part of it: a note written then is adopted
            # when its turns are where this conversation begins (SessionWriter.plan).
            conv.aliases.append(_fallback_session(conv, None))
    return conv, warnings


def shown_branch(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lines of a Claude Code transcript on the branch it shows: the
    chain from the last message (not a side chain's nor injected meta text)
    back through ``parentUuid`` (``logicalParentUuid`` across a compaction
    boundary) to the root. Lines without a ``uuid`` are kept; when a parent
    is not in the file (a torn or partial copy), the lines before the chain
    are read the same way, so nothing is dropped for want of a link."""
    by_uuid = {o["uuid"]: i for i, o in enumerate(objects) if isinstance(o.get("uuid"), str)}
    keep: set[int] = set()
    end = len(objects)
    while True:
        leaf = next((i for i in range(end - 1, -1, -1) if _is_message(objects[i])), None)
        if leaf is None:
            break
        chain, node = {leaf}, objects[leaf]
        while True:
            parent = node.get("parentUuid") or node.get("logicalParentUuid")
            if not isinstance(parent, str) or parent not in by_uuid or by_uuid[parent] in keep:
                break
            if by_uuid[parent] in chain:  # a cycle: the file is damaged; stop here
                parent = None
                break
            chain.add(by_uuid[parent])
            node = objects[by_uuid[parent]]
        keep |= chain
        if not isinstance(parent, str) or parent in by_uuid:
            break  # reached the root
        end = min(chain)  # a broken link: what came before is read on its own
    if not keep:
        return objects
    return [o for i, o in enumerate(objects) if i in keep or not isinstance(o.get("uuid"), str)]


def _is_message(o: dict[str, Any]) -> bool:
    """Whether a line is a message of the main conversation that has a uuid."""
    return (o.get("type") in ("user", "assistant") and isinstance(o.get("uuid"), str)
            and not o.get("isSidechain") and not o.get("isMeta"))


def _session_of(objects: list[dict[str, Any]], *names: str) -> str | None:
    for o in objects:
        for name in names:
            value = o.get(name)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
                return str(value).strip()
    return None


def _fallback_session(conv: Conversation, origin: str | None) -> str:
    """An id for a transcript that names none: the resolved path of its
    file (``origin``; None for a stream) and its first turn, which both stay
    the same as the conversation grows."""
    first = conv.turns[0] if conv.turns else None
    parts = [first.role if first else "", first.at if first else "", first.text if first else ""]
    return content_key(*([origin] if origin else []), *parts)[7:23]


def _claude_code(
    objects: list[dict[str, Any]], ref: str, session: str | None, title: str | None, client: str
) -> Conversation:
    found_title = title
    if found_title is None:
        for o in objects:  # the newest name wins
            if o.get("type") == "custom-title" and isinstance(o.get("customTitle") or o.get("title"), str):
                found_title = o.get("customTitle") or o.get("title")
            elif o.get("type") == "summary" and isinstance(o.get("summary"), str) and found_title is None:
                found_title = o["summary"]
    b = ConversationBuilder(session or _session_of(objects, "sessionId", "session_id") or "", client,
                            title=found_title, ref=ref)
    tool_names: dict[str, str] = {}
    last_message: str | None = None
    for o in objects:
        kind = o.get("type")
        if kind not in ("user", "assistant") or o.get("isSidechain") or o.get("isMeta") or o.get("isCompactSummary"):
            continue
        message = o.get("message")
        if not isinstance(message, dict):
            continue
        at = o.get("timestamp")
        b.note_time(at)
        if kind == "assistant":
            last_message = _assistant_line(b, message, at, tool_names, last_message)
        else:
            last_message = None
            _user_line(b, message.get("content"), at, tool_names)
    conv = b.build()
    conv.cwd = next((o["cwd"] for o in objects if isinstance(o.get("cwd"), str) and o["cwd"]), None)
    return conv


def _assistant_line(
    b: ConversationBuilder, message: dict[str, Any], at: Any, tool_names: dict[str, str], last: str | None
) -> str | None:
    """One assistant line: its text and tool calls, merged into the previous
    turn when they are parts of the same API message."""
    parts = []
    content = message.get("content")
    blocks = content if isinstance(content, list) else [content]
    for block in blocks:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif isinstance(block, dict) and block.get("type") == "tool_use":
            tool_names[str(block.get("id"))] = str(block.get("name") or "tool")
            parts.append(b.tool_call(str(block.get("name") or "tool"), block.get("input")))
    text = join_parts(parts)
    message_id = message.get("id") if isinstance(message.get("id"), str) else None
    if not text:
        return message_id or last
    if message_id is not None and message_id == last and b.turns and b.turns[-1].role == "assistant":
        b.extend(text)
    else:
        b.add("assistant", text, at)
    return message_id


def _user_line(b: ConversationBuilder, content: Any, at: Any, tool_names: dict[str, str]) -> None:
    """One user line: what the person typed, or tool results (one line each)."""
    if isinstance(content, str):
        text = strip_injected(content)
        if text and not text.startswith(_INTERRUPTED):
            b.add("user", text, at)
        return
    if not isinstance(content, list):
        return
    typed = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            name = tool_names.get(str(block.get("tool_use_id")))
            b.add("tool", b.tool_result(name, block.get("content") or "", error=bool(block.get("is_error"))), at)
        elif isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            typed.append(block["text"])
        elif isinstance(block, dict) and block.get("type") == "image":
            typed.append("[image]")
    text = strip_injected("\n".join(typed))
    if text and not text.startswith(_INTERRUPTED):
        b.add("user", text, at)


def _generic(objects: list[dict[str, Any]], ref: str, session: str | None, title: str | None, client: str) -> Conversation:
    b = ConversationBuilder(
        session or _session_of(objects, "session_id", "sessionId", "conversation_id") or "", client,
        title=title or _session_of(objects, "title"), ref=ref,
    )
    for o in objects:
        role = str(o.get("role") or o.get("sender") or "").lower()
        at = o.get("timestamp", o.get("created_at", o.get("time")))
        content = text_of(o.get("content", o.get("text")))
        if role in _USER_ROLES:
            b.add("user", strip_injected(content), at, o.get("name"))
        elif role in _ASSISTANT_ROLES:
            calls = [b.tool_call((c.get("function") or c).get("name", "tool"), (c.get("function") or c).get("arguments"))
                     for c in o.get("tool_calls") or [] if isinstance(c, dict)]
            b.add("assistant", "\n".join([content.strip("\n")] + calls).strip("\n"), at, o.get("name"))
        elif role in _TOOL_ROLES:
            b.add("tool", b.tool_result(o.get("name"), content), at)
        # system messages and unknown roles are not part of the conversation
    return b.build()
