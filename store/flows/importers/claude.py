"""Claude.ai's data export: conversations, projects and memories.

Accepts the export zip, its folder, or one of its files:

- ``conversations.json`` (streamed): each conversation becomes a session
  note, read along the branch the person last saw (from
  ``current_leaf_message_uuid`` up through ``parent_message_uuid``; the last
  message when the leaf is missing), so an edited message's abandoned
  branch is never imported; a message's text comes from its ``content`` blocks (``text``;
  ``tool_use``/``tool_result`` one line each; ``thinking`` left out), else
  from ``text``; attachments' extracted text is kept (fenced), other files
  are named;
- ``projects.json`` or ``projects/*.json``: each project's documents become
  ordinary notes under the import folder (``Claude/<project>/<file>.md``),
  its prompt template a procedural memory; Anthropic's starter project is
  skipped;
- ``memories.json``: what Claude remembered about the person, as memories.

A file is recognised by its name, else by its keys (``chat_messages``,
``docs``/``prompt_template``, ``conversations_memory``); ``users.json`` is
skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memvault.store.flows.conversation import ConversationBuilder, iso_time, join_parts
from memvault.store.flows.importers import Entry, Item, MemoryItem, NoteItem, Progress, short
from memvault.store.flows.importers.stream import ImportFormatError, Member, iter_array, members, read_json
from memvault.store.index.classify import content_key
from memvault.vault_io.fm_edit import dump_key
from memvault.vault_io.session_note import readable_stem

CLIENT = "claude.ai"
#: The parent Claude.ai gives the first message of a conversation.
_ROOT = "00000000-0000-4000-8000-000000000000"


def _kind(rel: str) -> str | None:
    name = rel.rsplit("/", 1)[-1]
    if re.fullmatch(r"conversations(?:-\d+)?\.json", name):
        return "conversations"
    if name == "projects.json" or (rel.startswith("projects/") or "/projects/" in rel) and name.endswith(".json"):
        return "projects"
    if name == "memories.json":
        return "memories"
    return None


def read(path: Path, progress: Progress | None = None) -> Iterator[Entry]:
    """Entries for every conversation, project document and prompt, and memory."""
    given = path.is_file() and not _is_zip(path)
    found = members(path, lambda rel: given or _kind(rel) is not None)
    if not found:
        raise ImportFormatError(f"{path}: no conversations.json, projects.json or memories.json in it")
    total = sum(m.size for m in found)
    base = 0
    for member in found:
        kind = _kind(member.name.rsplit(":", 1)[-1]) or _sniff_kind(member)
        try:
            if kind == "conversations":
                yield from _conversations(member, progress, base, total)
            elif kind == "projects":
                yield from _projects(member)
            elif kind == "memories":
                yield from _memories(member)
            elif kind is None:
                raise ImportFormatError(
                    f"{member.name}: not a Claude export file (no chat_messages, docs or conversations_memory)")
        except ImportFormatError as exc:
            yield Entry.of(member.name, _raise, exc)
        base += member.size
        if progress is not None:
            progress(base, total)


def _is_zip(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(4) == b"PK\x03\x04"


def _raise(exc: Exception) -> list[Item]:
    raise exc


def _sniff_kind(member: Member) -> str | None:
    with member.opener() as fh:
        head = fh.read(4096).decode("utf-8", "replace")
    if '"chat_messages"' in head:
        return "conversations"
    if '"prompt_template"' in head or '"docs"' in head:
        return "projects"
    if '"conversations_memory"' in head:
        return "memories"
    if '"email_address"' in head:
        return "users"
    return None


# -- conversations -----------------------------------------------------------------------


def _conversations(member: Member, progress: Progress | None, base: int, total: int) -> Iterator[Entry]:
    def seen(n: int) -> None:
        if progress is not None:
            progress(base + n, total)

    with member.opener() as fh:
        for index, raw in enumerate(iter_array(fh, member.name, seen)):
            name = raw.get("name") if isinstance(raw, dict) else None
            uuid = raw.get("uuid") if isinstance(raw, dict) else None
            ref = f"{member.name} item {index}" + (f" ({str(uuid)[:13]}, \"{short(name)}\")" if uuid or name else "")
            yield Entry.of(ref, _conversation, raw, ref)


def _conversation(raw: Any, ref: str) -> list[Item]:
    if not isinstance(raw, dict) or not isinstance(raw.get("chat_messages"), list):
        raise ImportFormatError("not a conversation (no chat_messages list)")
    cid = raw.get("uuid") or content_key(raw.get("name"), raw.get("created_at"))[7:39]
    title = raw.get("name") if isinstance(raw.get("name"), str) and raw["name"].strip() else None
    b = ConversationBuilder(str(cid), CLIENT, title=title, ref=ref)
    for message in shown_messages(raw["chat_messages"], raw.get("current_leaf_message_uuid")):
        sender = str(message.get("sender") or "").lower()
        role = "user" if sender in ("human", "user") else "assistant" if sender == "assistant" else None
        if role is None:
            continue
        b.add(role, _message_text(b, message), message.get("created_at"))
    conv = b.build()
    conv.started = conv.started or iso_time(raw.get("created_at"))
    conv.ended = conv.ended or iso_time(raw.get("updated_at")) or conv.started
    return [conv]


def shown_messages(messages: list[Any], leaf: Any) -> list[dict[str, Any]]:
    """The messages on the branch ending at ``leaf`` (else the last message),
    root first. An export without parent links is read in order; when a
    parent is not in the export, the messages listed before the branch are
    kept, so nothing is dropped for want of a link."""
    listed = [m for m in messages if isinstance(m, dict)]
    if not any(isinstance(m.get("parent_message_uuid"), str) for m in listed):
        return listed
    at = {m["uuid"]: i for i, m in enumerate(listed) if isinstance(m.get("uuid"), str)}
    index = at.get(leaf) if isinstance(leaf, str) else None
    if index is None:
        index = max(at.values(), default=None)
    if index is None:
        return listed
    chain, seen = [index], {index}
    while True:
        parent = listed[chain[-1]].get("parent_message_uuid")
        if not isinstance(parent, str) or parent not in at or at[parent] in seen:
            break
        chain.append(at[parent])
        seen.add(at[parent])
    broken = isinstance(parent, str) and parent != _ROOT and parent not in at
    before = listed[: min(chain)] if broken else []
    return before + [listed[i] for i in reversed(chain)]


def _message_text(b: ConversationBuilder, message: dict[str, Any]) -> str:
    parts: list[str] = []
    blocks = message.get("content")
    if isinstance(blocks, list) and any(isinstance(x, dict) for x in blocks):
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif kind == "tool_use":
                parts.append(b.tool_call(str(block.get("name") or "tool"), block.get("input")))
            elif kind == "tool_result":
                content = block.get("content")
                texts = [str(c.get("title") or c.get("text") or "") for c in content if isinstance(c, dict)] \
                    if isinstance(content, list) else [str(content or "")]
                parts.append("- tool result: " + b.tool_result(block.get("name"), "\n".join(t for t in texts if t),
                                                               error=bool(block.get("is_error"))))
    elif isinstance(message.get("text"), str):
        parts.append(message["text"])
    for attachment in message.get("attachments") or []:
        if not isinstance(attachment, dict):
            continue
        name = attachment.get("file_name") or "attachment"
        extracted = attachment.get("extracted_content")
        if isinstance(extracted, str) and extracted.strip():
            parts.append(f"[attachment: {name}]\n```\n{extracted.strip().replace('```', '` ` `')}\n```")
        else:
            parts.append(f"[attachment: {name}]")
    for file in message.get("files") or []:
        if isinstance(file, dict) and file.get("file_name"):
            parts.append(f"[file: {file['file_name']}]")
    return join_parts(parts)


# -- projects ----------------------------------------------------------------------------


def _projects(member: Member) -> Iterator[Entry]:
    data = read_json(member)
    projects = data if isinstance(data, list) else [data]
    for index, project in enumerate(projects):
        if not isinstance(project, dict):
            yield Entry(f"{member.name} item {index}", lambda: _raise(ImportFormatError("not a project object")))
            continue
        if project.get("is_starter_project"):
            continue
        name = str(project.get("name") or project.get("uuid") or f"Project {index}")
        ref = f"{member.name} project \"{short(name)}\""
        for n, doc in enumerate(project.get("docs") or []):
            doc_name = doc.get("filename") if isinstance(doc, dict) else None
            yield Entry.one(f"{ref} document {doc_name or n}", _document, project, name, doc)
        template = project.get("prompt_template")
        if isinstance(template, str) and template.strip():
            yield Entry.one(f"{ref} prompt template", _prompt, project, name, template)


def _document(project: dict[str, Any], name: str, doc: Any) -> Item:
    if not isinstance(doc, dict) or not isinstance(doc.get("content"), str):
        raise ImportFormatError("a project document without text content")
    filename = str(doc.get("filename") or doc.get("uuid") or "document")
    stem = filename[:-3] if filename.lower().endswith(".md") else filename
    created = iso_time(doc.get("created_at")) or iso_time(project.get("created_at"))
    head = "".join(dump_key(k, v) for k, v in (
        ("title", filename), ("source", "claude.ai project"), ("project", name), ("created", created)) if v)
    text = f"---\n{head}---\n{doc['content'].rstrip()}\n"
    key = str(doc.get("uuid") or content_key(name, filename))
    path = f"Claude/{readable_stem(name, 80, 'Project')}/{readable_stem(stem, default='document')}.md"
    return NoteItem(source="claude-project-doc", key=key, path=path, text=text)


def _prompt(project: dict[str, Any], name: str, template: str) -> Item:
    return MemoryItem(
        source="claude-project-prompt", key=str(project.get("uuid") or content_key(name)),
        content=f'Instructions for the Claude project "{name}": {template.strip()}', type="procedural",
        tags=["claude", "project-instructions"], created=iso_time(project.get("created_at")),
        updated=iso_time(project.get("updated_at")), origin="import:claude",
    )


# -- memories ----------------------------------------------------------------------------


def _memories(member: Member) -> Iterator[Entry]:
    data = read_json(member)
    for index, item in enumerate(data if isinstance(data, list) else [data]):
        if not isinstance(item, dict):
            continue
        text = item.get("conversations_memory")
        if isinstance(text, str) and text.strip():
            yield Entry.one(f"{member.name} item {index} conversations_memory", MemoryItem,
                            source="claude-memory", key="conversations_memory",
                            content=f"What Claude remembered about me: {text.strip()}", tags=["claude"],
                            origin="import:claude")
        for project, memo in (item.get("project_memories") or {}).items():
            if isinstance(memo, str) and memo.strip():
                yield Entry.one(f"{member.name} item {index} project {project}", MemoryItem,
                                source="claude-memory", key=f"project:{project}",
                                content=f"What Claude remembered in a project: {memo.strip()}", tags=["claude"],
                                origin="import:claude")
