"""Reading a Codex CLI session (a rollout file) as a conversation.

Codex writes each session to ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``,
one ``{"timestamp", "type", "payload"}`` object per line:

* ``session_meta``: the session's ``id`` (and its working folder, model...);
* ``response_item``: what the model saw and said: ``message`` (``role``
  user, assistant, or developer/system for instructions, ``content`` a list
  of ``input_text``/``output_text`` parts), ``function_call`` /
  ``custom_tool_call`` / ``local_shell_call`` (a tool call, its ``call_id``)
  and ``*_output`` (its result), ``reasoning`` (left out);
* ``event_msg`` and ``turn_context``: the UI's events and per-turn settings,
  which repeat the messages; left out.

A user message that is only context Codex injects (the environment, the
``AGENTS.md`` instructions, a user's shell command) is no turn of the
conversation. As with Claude Code, the format is internal to the client and
changes between versions: unknown lines and parts are ignored, a torn last
line is skipped (:func:`~memvault.store.flows.transcript.read_lines`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from memvault.store.flows.conversation import Conversation, ConversationBuilder, strip_injected, text_of
from memvault.vault_io import json_input

CODEX = "codex"
#: Context Codex wraps in tags inside a "user" message (not what a person typed).
_INJECTED = re.compile(r"<(environment_context|user_instructions|user_shell_command|turn_aborted)>.*?</\1>", re.S)
#: How Codex opens a user message that carries a project's AGENTS.md.
_AGENTS_MD = "# AGENTS.md instructions for "
_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def is_codex(objects: Iterable[dict[str, Any]]) -> bool:
    """Whether these lines come from a Codex rollout (typed lines carrying a payload)."""
    return any(o.get("type") in ("session_meta", "response_item") and isinstance(o.get("payload"), dict)
               for o in objects)


def read_codex(objects: list[dict[str, Any]], ref: str, session: str | None, title: str | None,
               client: str) -> Conversation:
    """The conversation of a Codex rollout's lines."""
    meta: dict[str, Any] = next((o["payload"] for o in objects
                 if o.get("type") == "session_meta" and isinstance(o.get("payload"), dict)), {})
    found = meta.get("id")
    b = ConversationBuilder(session or (str(found) if isinstance(found, str) and found.strip() else ""), client,
                            title=title, ref=ref)
    tool_names: dict[str, str] = {}
    for o in objects:
        item = o.get("payload")
        if o.get("type") != "response_item" or not isinstance(item, dict):
            continue
        at = o.get("timestamp")
        b.note_time(at)
        kind = item.get("type")
        if kind == "message":
            _message(b, item, at)
        elif kind in _CALLS:
            name = str(item.get("name") or ("shell" if kind == "local_shell_call" else "tool"))
            tool_names[str(item.get("call_id"))] = name
            call = b.tool_call(name, _arguments(item.get("arguments", item.get("input", item.get("action")))))
            if b.turns and b.turns[-1].role == "assistant":
                b.extend(call)
            else:
                b.add("assistant", call, at)
        elif kind in _OUTPUTS:
            output = _arguments(item.get("output"))  # a shell's output comes as JSON: {"output": ..., "metadata": ...}
            if isinstance(output, dict):
                output = output.get("content", output.get("output", ""))
            b.add("tool", b.tool_result(tool_names.get(str(item.get("call_id"))),
                                        output if isinstance(output, str) else text_of(output)), at)
    conv = b.build()
    conv.cwd = meta["cwd"] if isinstance(meta.get("cwd"), str) and meta["cwd"] else None
    return conv


def _message(b: ConversationBuilder, item: dict[str, Any], at: Any) -> None:
    """A user's or the assistant's message (instructions to the model are not the conversation)."""
    role = item.get("role")
    text = text_of(item.get("content"))
    if role == "user":
        text = strip_injected(_INJECTED.sub("", text)) if "<" in text else text.strip()
        if text and not text.startswith(_AGENTS_MD):
            b.add("user", text, at)
    elif role == "assistant" and text.strip():
        b.add("assistant", text.strip(), at)


def _arguments(value: Any) -> Any:
    """A call's arguments (or a shell's output): Codex gives them as a JSON string."""
    if isinstance(value, str):
        try:
            return json_input.loads(value)
        except ValueError:
            return value
    return value
