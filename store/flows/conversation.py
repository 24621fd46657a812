"""A conversation in memvault's neutral form, whatever it was read from.

Readers (:mod:`.transcript` for Claude Code and generic JSONL, the ChatGPT
and Claude.ai importers) build a :class:`ConversationBuilder` turn by turn;
it redacts every text before keeping it (secrets never reach the vault),
turns tool calls and tool output into one line each, and counts what the
digest reports. :func:`digest_lines` writes the digest of a session note.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from memvault.vault_io import json_input
from memvault.vault_io.atomic import truncate_utf8
from memvault.vault_io.secrets import redact
from memvault.vault_io.session_note import Turn, when

#: Characters of a tool call's argument or a tool result shown on its one line.
TOOL_LINE_CHARS = 120
#: Characters of a speaker's name shown on a turn.
SPEAKER_CHARS = 60
#: Characters of a request quoted in the digest.
DIGEST_REQUEST_CHARS = 160
UNTITLED = "Untitled conversation"
#: Argument names that best say what a tool call did, most telling first.
_TELLING_ARGS = ("command", "file_path", "path", "query", "url", "pattern", "prompt", "description", "code", "input")
_SPACE_RE = re.compile(r"\s+")
_CODE_BLOCK_RE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.S | re.M)
# Wrappers clients inject into "user" text that no person typed.
_INJECTED_RE = re.compile(
    r"<(system-reminder|command-[a-z-]+|local-command-[a-z-]+|task-notification|user-prompt-submit-hook)>.*?</\1>",
    re.S,
)


def iso_time(value: Any) -> str | None:
    """An ISO 8601 UTC time (seconds) from epoch seconds or milliseconds or
    an ISO string (``Z`` accepted); None for anything else."""
    if value is None or isinstance(value, bool):
        return None
    try:
        if isinstance(value, (int, float)):
            seconds = float(value) / 1000 if float(value) > 1e12 else float(value)
            moment = datetime.fromtimestamp(seconds, timezone.utc)
        elif isinstance(value, str) and value.strip():
            text = value.strip()
            try:
                return iso_time(float(text))
            except ValueError:
                pass
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
            moment = moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    return moment.replace(microsecond=0).isoformat()


def one_line(text: str, limit: int = TOOL_LINE_CHARS) -> str:
    """``text`` on one line, white space collapsed, cut to ``limit`` characters."""
    flat = _SPACE_RE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def tool_argument(arguments: Any, clean: Callable[[str], str] = str) -> str:
    """The one argument that says most about a tool call, as short text,
    passed through ``clean`` (the redactor) whole before it is cut: a cut
    through a token would leave a prefix no pattern recognises."""
    if isinstance(arguments, str):
        try:
            arguments = json_input.loads(arguments)
        except ValueError:
            return one_line(clean(arguments))
    if isinstance(arguments, dict):
        for name in _TELLING_ARGS:
            value = arguments.get(name)
            if isinstance(value, str) and value.strip():
                return one_line(clean(value))
        for value in arguments.values():
            if isinstance(value, str) and value.strip():
                return one_line(clean(value))
        return ""
    return one_line(clean(str(arguments))) if arguments not in (None, "", [], {}) else ""


def text_of(content: Any) -> str:
    """Plain text of a message content: a string, or a list of parts
    (strings, ``{"text": ...}`` blocks); other parts are left out."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return text_of(content.get("text") if "text" in content else content.get("content"))
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type", "text") in ("text", "input_text", "output_text"):
                value = part.get("text")
                if isinstance(value, str):
                    parts.append(value)
        return "\n".join(p for p in parts if p)
    return ""


def join_parts(parts: list[str]) -> str:
    """Parts of one turn as Markdown: lines of a list (tool calls) stay
    together, and prose after a list gets a blank line (else it would read
    as part of the list's last item)."""
    out = ""
    for part in (p.strip("\n") for p in parts if p and p.strip()):
        if out:
            listed = out.rsplit("\n", 1)[-1].startswith("- ")
            out += "\n" if listed and part.startswith("- ") else "\n\n" if listed else "\n"
        out += part
    return out


def without_code(text: str) -> str:
    """``text`` without fenced code blocks (what a digest quotes)."""
    return _CODE_BLOCK_RE.sub(" ", text)


def strip_injected(text: str) -> str:
    """Text a person typed, without the wrappers a client injects."""
    return _INJECTED_RE.sub("", text).strip() if "<" in text else text.strip()


@dataclass
class Conversation:
    """One conversation, ready to be written as a session note."""

    session_id: str
    client: str
    title: str
    turns: list[Turn]
    started: str | None = None
    ended: str | None = None
    tools: Counter[str] = field(default_factory=Counter)
    redacted: int = 0
    ref: str = ""  # where it came from, for messages ("conversations.json item 17")
    aliases: list[str] = field(default_factory=list)  # ids an earlier memvault gave it (adopted when they match)
    cwd: str | None = None  # the folder the session worked in, when the transcript says (its project's pause applies)

    @property
    def user_turns(self) -> list[Turn]:
        """The turns the person wrote."""
        return [t for t in self.turns if t.role == "user"]


class ConversationBuilder:
    """Collects the turns of one conversation, redacting as it goes."""

    def __init__(self, session_id: str, client: str, *, title: str | None = None, ref: str = "") -> None:
        self.session_id = session_id
        self.client = client
        self.title = title
        self.ref = ref
        self.turns: list[Turn] = []
        self.tools: Counter[str] = Counter()
        self.redacted = 0
        self.started: str | None = None
        self.ended: str | None = None

    def _clean(self, text: str) -> str:
        clean, n = redact(text)
        self.redacted += n
        return clean

    def add(self, role: str, text: str, at: Any = None, name: Any = None) -> None:
        """A turn of ``role`` said by ``name`` (the speaker's own name, when
        the client gives one; the role's label stands for it otherwise).
        Consecutive parts of one turn go through :meth:`extend`; empty text
        adds nothing."""
        text = text.strip("\n")
        if not text.strip():
            return
        self.turns.append(Turn(role, self._clean(text), iso_time(at), self.speaker(name)))

    def speaker(self, name: Any) -> str | None:
        """A speaker's name as a callout label shows it: one short line,
        redacted; None when there is none."""
        if not isinstance(name, str) or not name.strip():
            return None
        return one_line(self._clean(name), SPEAKER_CHARS) or None

    def extend(self, text: str) -> None:
        """Append ``text`` as another paragraph of the last turn."""
        if not text.strip() or not self.turns:
            return
        last = self.turns[-1]
        self.turns[-1] = Turn(last.role, join_parts([last.text, self._clean(text)]), last.at, last.name)

    def tool_call(self, name: str, arguments: Any) -> str:
        """The one line that stands for a tool call (counted for the digest)."""
        name = one_line(str(name or "tool"), 60)
        self.tools[name] += 1
        arg = tool_argument(arguments, self._clean)
        return f"- tool call: {name}" + (f" `{arg.replace('`', chr(39))}`" if arg else "")

    def tool_result(self, name: str | None, output: Any, *, error: bool = False) -> str:
        """The one line that stands for a tool's output."""
        text = text_of(output) if not isinstance(output, str) else output
        lines = [line for line in text.splitlines() if line.strip()]
        head = one_line(self._clean(lines[0])) if lines else "(no output)"
        more = f" ({len(lines)} lines)" if len(lines) > 1 else ""
        label = f"{name}: " if name else ""
        return f"{label}{'error: ' if error else ''}{head}{more}"

    def note_time(self, at: Any) -> None:
        """Widen the conversation's started/ended span by ``at``."""
        moment = iso_time(at)
        if moment is None:
            return
        if self.started is None or moment < self.started:
            self.started = moment
        if self.ended is None or moment > self.ended:
            self.ended = moment

    def build(self) -> Conversation:
        """The conversation, its title given or taken from its first request."""
        times = [t.at for t in self.turns if t.at]  # already ISO 8601 UTC: they compare as strings
        if times:
            self.started = min([*times, *([self.started] if self.started else [])])
            self.ended = max([*times, *([self.ended] if self.ended else [])])
        title = one_line(self._clean(self.title), 120) if self.title and self.title.strip() else title_from(self.turns)
        return Conversation(
            session_id=self.session_id, client=self.client, title=title, turns=list(self.turns),
            started=self.started, ended=self.ended, tools=self.tools, redacted=self.redacted, ref=self.ref,
        )


def title_from(turns: list[Turn]) -> str:
    """A title from the first thing the person asked (its first few words)."""
    for turn in turns:
        if turn.role == "user":
            words = one_line(turn.text, 400).split(" ")
            title = " ".join(words[:10])
            title = truncate_utf8(title, 80).rstrip(" .,:;")
            return title + ("…" if len(words) > 10 else "") if title else UNTITLED
    return UNTITLED


def _span(conv: Conversation) -> str:
    start, end = when(conv.started), when(conv.ended)
    if not start:
        return ""
    if not end or end == start:
        return f"{start[11:]} UTC"
    return f"{start[11:]}–{end[11:] if end[:10] == start[:10] else end} UTC"


def digest_lines(conv: Conversation) -> list[str]:
    """The digest of a session note: when and how it began (one line that
    stays the same as the session grows), then counts, the last request and
    the tools used."""
    day = (conv.started or "")[:10]
    users = conv.user_turns
    first = one_line(without_code(users[0].text), DIGEST_REQUEST_CHARS) if users else "(nothing)"
    lines = [f"On {day} in {conv.client}, the user began with: {first}" if day
             else f"In {conv.client}, the user began with: {first}"]
    counts = Counter(t.role for t in conv.turns)
    parts = [f"{counts[role]} {label if counts[role] == 1 or role != 'tool' else label + 's'}" for role, label in (
        ("user", "by the user"), ("assistant", "by the assistant"), ("tool", "tool result")) if counts[role]]
    span = _span(conv)
    lines.append(f"- {len(conv.turns)} turns ({', '.join(parts)})" + (f", {span}" if span else ""))
    if len(users) > 1:
        last = one_line(without_code(users[-1].text), DIGEST_REQUEST_CHARS)
        if last != first:
            lines.append(f"- Last request: {last}")
    if conv.tools:
        lines.append("- Tools: " + ", ".join(f"{name} ×{n}" for name, n in conv.tools.most_common(8)))
    return lines
