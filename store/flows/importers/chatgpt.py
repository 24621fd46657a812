"""ChatGPT's data export: ``conversations.json``, the export zip, or split files.

Accepts the zip as downloaded, the extracted folder, ``conversations.json``
itself, or the newer split ``conversations-000.json ...`` files (each a JSON
array; all are read, in name order), streamed element by element.

Each conversation is rebuilt along the branch the person last saw: from
``current_node`` up through ``parent`` to the root, reversed (abandoned
edits and regenerations are other children and are never reached). When
``current_node`` is missing or unknown, the newest leaf is used. Hidden,
system and zero-weight messages, reasoning (``thoughts``,
``reasoning_recap``) and ChatGPT's memory snapshots are left out; code sent
to a tool and the tool's output become one line each; images and files are
named, never embedded. Custom instructions (``user_editable_context``)
become two memories (about the person: identity; how to answer: a
preference), taken from the newest conversation that carries them. A
missing ``create_time`` or ``title`` never fails anything: times fall back
to the other field, then to the messages' own times.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memvault.store.flows.conversation import ConversationBuilder, iso_time, one_line
from memvault.store.flows.importers import Entry, Item, MemoryItem, Progress, json_object, short
from memvault.store.flows.importers.stream import ImportFormatError, iter_array, members
from memvault.store.index.classify import content_key

CLIENT = "chatgpt"
INSTRUCTIONS = "chatgpt-instructions"
_SKIPPED_TYPES = {"thoughts", "reasoning_recap", "model_editable_context", "user_editable_context"}
_CITATION_RE = re.compile(r"\ue200.*?\ue201|【\d+†[^】]*】")
_FENCE_RE = re.compile(r"^\s*(?:```|\u0060\u0060\u0060)|(?:```)\s*$")
_WRAPPER_RE = re.compile(
    r"^The user provided the (?:following information about themselves|additional info about how they would like"
    r" you to respond)[^\n]*\n?",
    re.I,
)


def _wanted(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name == "conversations.json" or bool(re.fullmatch(r"conversations-\d+\.json", name))


def read(path: Path, progress: Progress | None = None) -> Iterator[Entry]:
    """Entries for every conversation of the export (and its custom instructions)."""
    found = members(path, _wanted)
    if not found:
        raise ImportFormatError(f"{path}: no conversations.json or conversations-NNN.json in it")
    total = sum(m.size for m in found)
    done_before = 0
    instructions: dict[str, tuple[str, str, str]] = {}  # kind -> (time, text, ref)
    for member in found:
        def seen(n: int, base: int = done_before) -> None:
            if progress is not None:
                progress(base + n, total)

        try:
            with member.opener() as fh:
                for index, raw in enumerate(iter_array(fh, member.name, seen)):
                    ref = _ref(member.name, index, raw)
                    _note_instructions(raw, instructions, ref)
                    yield Entry.of(ref, _convert, raw, ref)
        except ImportFormatError as exc:
            yield Entry.of(member.name, _raise, exc)
        done_before += member.size
    for kind, (at, text, ref) in sorted(instructions.items()):
        yield Entry.one(f"custom instructions ({kind}, from {ref})", _instruction, kind, text, at)


def _raise(exc: Exception) -> list[Item]:
    raise exc


def _ref(name: str, index: int, raw: Any) -> str:
    if not isinstance(raw, dict):
        return f"{name} item {index}"
    cid = raw.get("conversation_id") or raw.get("id")
    title = raw.get("title")
    bits = [str(cid)[:13] if cid else None, f'"{short(title)}"' if title else None]
    return f"{name} item {index}" + (f" ({', '.join(b for b in bits if b)})" if any(bits) else "")


# -- one conversation --------------------------------------------------------------


def _convert(raw: Any, ref: str) -> list[Item]:
    if not isinstance(raw, dict):
        raise ImportFormatError(f"not a conversation object (a {type(raw).__name__})")
    mapping = raw.get("mapping")
    if not isinstance(mapping, dict):
        if "conversation_id" in raw and "mapping" not in raw:
            raise ImportFormatError("has no 'mapping' (shared_conversations.json holds links, not conversations)")
        raise ImportFormatError("has no 'mapping' of messages")
    cid = raw.get("conversation_id") or raw.get("id") or content_key(sorted(mapping))[7:39]
    b = ConversationBuilder(str(cid), CLIENT, title=raw.get("title") if isinstance(raw.get("title"), str) else None,
                            ref=ref)
    last_role = None
    for message in _branch(mapping, raw.get("current_node")):
        role, text, at = _message(b, message)
        if role is None or not text:
            continue
        if role == "assistant" and last_role == "assistant":
            b.extend(text)  # consecutive assistant messages are one visible turn
        else:
            b.add(role, text, at, _speaker(message, role))
        last_role = role
    conv = b.build()
    conv.started = conv.started or iso_time(raw.get("create_time")) or iso_time(raw.get("update_time"))
    conv.ended = conv.ended or iso_time(raw.get("update_time")) or conv.started
    return [conv]


def _branch(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The messages on the branch ending at ``current`` (else the newest
    leaf), root first; cycle-safe."""
    if not isinstance(current, str) or current not in mapping:
        current = _newest_leaf(mapping)
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    node_id = current
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            break
        message = node.get("message")
        if isinstance(message, dict):
            chain.append(message)
        node_id = node.get("parent")
    chain.reverse()
    return chain


def _newest_leaf(mapping: dict[str, Any]) -> str | None:
    parents = {n.get("parent") for n in mapping.values() if isinstance(n, dict)}
    best: tuple[float, str] | None = None
    for node_id, node in mapping.items():
        if not isinstance(node, dict) or node_id in parents or node.get("children"):
            continue
        message = node.get("message")
        if not isinstance(message, dict):
            continue
        at = message.get("create_time")
        key = (float(at) if isinstance(at, (int, float)) else 0.0, node_id)
        if best is None or key > best:
            best = key
    return best[1] if best else None


def _message(b: ConversationBuilder, message: dict[str, Any]) -> tuple[str | None, str, Any]:
    """(role, text, time) of one message as a turn; role None: not shown."""
    author = json_object(message.get("author"))
    role = author.get("role")
    metadata = json_object(message.get("metadata"))
    content = json_object(message.get("content"))
    kind = content.get("content_type")
    at = message.get("create_time")
    weight = message.get("weight")
    if (metadata.get("is_visually_hidden_from_conversation") or role == "system" or kind in _SKIPPED_TYPES
            or (isinstance(weight, (int, float)) and weight == 0)):
        return None, "", at
    recipient = message.get("recipient")
    if role == "tool":
        name = author.get("name") or kind or "tool"
        return "tool", b.tool_result(str(name), _content_text(content, metadata)), at
    text = _content_text(content, metadata)
    if role == "assistant" and isinstance(recipient, str) and recipient not in ("all", ""):
        return "assistant", b.tool_call(recipient, content.get("text") if kind == "code" else text), at
    if role not in ("user", "assistant"):
        return None, "", at
    return role, _CITATION_RE.sub("", text).strip(), at


def _speaker(message: dict[str, Any], role: str) -> str | None:
    """The name ChatGPT gives a person or an assistant (``author.name``,
    set in group chats and for custom GPTs), None when it gives none; a
    tool's name is already on its result line."""
    author = json_object(message.get("author"))
    name = author.get("name")
    return name if role in ("user", "assistant") and isinstance(name, str) and name.strip() else None


def _content_text(content: dict[str, Any], metadata: dict[str, Any]) -> str:
    """The text of a message's content, whatever its type."""
    kind = content.get("content_type")
    parts: list[str] = []
    if kind == "code":
        code = content.get("text") or ""
        lang = content.get("language") if content.get("language") not in (None, "unknown") else ""
        return f"```{lang}\n{code}\n```" if code else ""
    if kind in ("execution_output", "system_error"):
        return str(content.get("text") or "")
    if kind == "tether_browsing_display":
        return str(content.get("result") or content.get("summary") or "")
    if kind in ("tether_quote", "sonic_webpage"):
        return " ".join(str(content.get(k) or "") for k in ("title", "url", "text")).strip()
    for part in content.get("parts") or []:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict):
            parts.append(_part_text(part))
    for attachment in metadata.get("attachments") or []:
        if isinstance(attachment, dict) and attachment.get("name"):
            parts.append(f"[attachment: {attachment['name']}]")
    if not parts and isinstance(content.get("text"), str):
        parts.append(content["text"])
    return "\n".join(p for p in parts if p and p.strip())


def _part_text(part: dict[str, Any]) -> str:
    kind = part.get("content_type")
    if kind == "image_asset_pointer":
        meta = json_object(part.get("metadata"))
        dalle = json_object(meta.get("dalle"))
        if dalle and dalle.get("prompt"):
            return f"[generated image: {one_line(str(dalle['prompt']))}]"
        pointer = str(part.get("asset_pointer") or "").rsplit("/", 1)[-1]
        return f"[image: {pointer}]" if pointer else "[image]"
    if kind == "audio_transcription":
        return str(part.get("text") or "")
    if isinstance(part.get("text"), str):
        return str(part["text"])
    return f"[{kind or 'attachment'}]"


# -- custom instructions ---------------------------------------------------------------


def _note_instructions(raw: Any, found: dict[str, tuple[str, str, str]], ref: str) -> None:
    """Remember the newest custom instructions seen (about the user, how to answer)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("mapping"), dict):
        return
    at = iso_time(raw.get("update_time")) or iso_time(raw.get("create_time")) or ""
    for node in raw["mapping"].values():
        message = json_object(node.get("message") if isinstance(node, dict) else None)
        content = message.get("content")
        if not isinstance(content, dict) or content.get("content_type") != "user_editable_context":
            continue
        data = json_object(json_object(message.get("metadata")).get("user_context_message_data"))
        for kind, meta_key, content_key_ in (("about_user", "about_user_message", "user_profile"),
                                             ("how_to_respond", "about_model_message", "user_instructions")):
            text = data.get(meta_key) or _unwrap(content.get(content_key_))
            if isinstance(text, str) and text.strip() and (kind not in found or at >= found[kind][0]):
                found[kind] = (at, text.strip(), ref)


def _unwrap(value: Any) -> str:
    """Custom instructions without ChatGPT's wrapper sentence and fences."""
    if not isinstance(value, str):
        return ""
    text = _WRAPPER_RE.sub("", value.strip())
    return "\n".join(line for line in text.splitlines() if not _FENCE_RE.fullmatch(line.strip())).replace("```", "").strip()


def _instruction(kind: str, text: str, at: str) -> MemoryItem:
    if kind == "about_user":
        content, type_ = f"About me (ChatGPT custom instructions): {text}", "identity"
    else:
        content, type_ = f"How I want answers (ChatGPT custom instructions): {text}", "semantic"
    return MemoryItem(
        source=INSTRUCTIONS, key=kind, content=content, type=type_, tags=["chatgpt", "custom-instructions"],
        created=at or None, origin="import:chatgpt",
    )
