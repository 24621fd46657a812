"""The Markdown form of a conversation: the session note.

One conversation (a Claude Code session, a ChatGPT or Claude.ai chat) is one
note under ``<memory folder>/episodic/sessions/``::

    ---
    id: s-5d41402abc4b2a76
    memory: source
    session_id: 00893aaf-19fa-41d2-8238-13269b9b3ca0
    client: claude-code
    title: Fix the deploy script
    started: '2026-11-23T10:02:11+00:00'
    ended: '2026-11-23T10:40:00+00:00'
    turns: 3
    tags:
      - session
    ---
    # Fix the deploy script

    ## Digest
    claude-code session on 2026-11-23, 10:02-10:40 UTC: 3 turns (1 by the user, 1 by the assistant, 1 tool result).
    - First request: the deploy script fails on the staging host

    ## Transcript

    > [!user] User · 2026-11-23 10:02
    > the deploy script fails on the staging host

    ^t1

    > [!assistant] Assistant · 2026-11-23 10:03
    > - tool call: Bash `./deploy.sh staging`

    ^t2
    ...

Each turn is a callout followed by its own block id (``^t12``), which names
the whole callout, so a fact extracted from a turn anchors back to exactly
that turn (``vault://...#^t12``). ``memory: source`` makes the note a memory
source; ``session_id`` makes it a session note, which is an ordinary note
(searchable, never a memory) even under the memory folder.

The note is an append-only record (:func:`revise_session`): re-ingesting a
session that grew keeps every byte of the turns already written and puts the
new ones at the end of the transcript (before any section a person added
after it); a turn that changed at the source (a regenerated answer, an
edited message, another branch) is never deleted but marked superseded in
place (its callout becomes ``> [!superseded]-``, its block id stays, so links
to it still resolve), and the turns that replace it get new block ids. The
front-matter's managed keys (a person's tags kept), the title,
memvault's digest lines and its digest block (:mod:`.session_digest`, a
person's ticks kept) are the only parts rewritten; whatever a person
wrote stays where they wrote it. Block ids
(``^tN``) therefore number turns in the order they were written, not their
place in the conversation. Turn text is written as given: callers redact
secrets and summarise tool calls before it gets here.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from memvault.vault_io.atomic import fit_name, truncate_utf8
from memvault.vault_io.fm_edit import dump_key, edit_frontmatter
from memvault.vault_io.frontmatter import FrontmatterError, load_frontmatter, split_frontmatter
from memvault.vault_io.session_digest import SessionDigest, put_block

#: Front-matter key that makes a note a session note.
SESSION_KEY = "session_id"
#: Front-matter keys memvault writes on a session note, in order.
MANAGED_KEYS: tuple[str, ...] = (
    "id", "memory", "session_id", "client", "title", "started", "ended", "turns", "tags",
)
SESSION_TAG = "session"
ROLES = ("user", "assistant", "tool", "system")
ROLE_LABELS = {"user": "User", "assistant": "Assistant", "tool": "Tool result", "system": "System"}
DIGEST_HEADING = "## Digest"
TRANSCRIPT_HEADING = "## Transcript"

#: The callout type a turn that changed at the source is marked with.
SUPERSEDED = "superseded"

_TURN_START_RE = re.compile(r"^> \[!(user|assistant|tool|system)\]")
_TURN_END_RE = re.compile(r"^\^t(\d+)[ \t]*$")
_HEADING_RE = re.compile(r"^#{1,6}(?:[ \t]|$)")
_FENCE_RE = re.compile(r"^[ \t]*(```|~~~)")
# A line of turn text that ends like a block id would name a block of its own.
_TRAILING_BLOCK_ID_RE = re.compile(r"(\s)\^([A-Za-z0-9-]+)[ \t]*$")
# Characters a file name cannot hold, or that break Obsidian links to it.
_UNSAFE_NAME_RE = re.compile(r'[\\/:*?"<>|#^\[\]`%{}\x00-\x1f\x7f\ud800-\udfff]')
_TITLE_BYTES = 100
# The lines memvault writes under "## Digest" (store/flows/conversation.py's
# digest_lines); any other line there is a person's and stays.
_DIGEST_LINE_RE = re.compile(
    r"^(?:(?:On \S+ in |In ).*, the user began with: |- \d+ turns \(|- Last request: |- Tools: )"
)


#: Values of a session note's ``memory`` key that stop memvault recording it
#: (YAML reads ``off``/``no``/``false`` as False; the same words as a project's
#: ``.memvault`` file, :mod:`memvault.store.project`).
MEMORY_OFF = frozenset({"off", "false", "no", "none", "0", "disabled"})


def says_memory_off(frontmatter: dict[str, Any]) -> bool:
    """Whether a note's front-matter says ``memory: off`` (a session a person
    does not want recorded: ingest appends nothing to it, and it is no
    memory source, so its facts are retired until the key is taken back)."""
    value = frontmatter.get("memory")
    return value is False or (isinstance(value, str) and value.strip().lower() in MEMORY_OFF)


def text_says_memory_off(text: str) -> bool:
    """:func:`says_memory_off` of a note's text (its front-matter read safely; False when unreadable)."""
    yaml_text, _, _ = split_frontmatter(text.lstrip("\ufeff").replace("\r\n", "\n"))
    if yaml_text is None:
        return False
    try:
        return says_memory_off(load_frontmatter(yaml_text))
    except FrontmatterError:
        return False


def is_session_note(frontmatter: dict[str, Any]) -> bool:
    """Whether a note's front-matter makes it a session note."""
    value = frontmatter.get(SESSION_KEY)
    return isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip() != ""


def session_note_id(client: str, session_id: str) -> str:
    """The stable note id of a session: ``s-`` and 16 hex digits of its client and id."""
    seed = f"{client}\x00{session_id}"
    return "s-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]


def readable_stem(text: str, max_bytes: int = _TITLE_BYTES, default: str = "Untitled") -> str:
    """``text`` as a file-name stem a person reads as it was written: the
    characters a name cannot hold or that break Obsidian links become
    spaces, white space collapses, no leading or trailing dots, at most
    ``max_bytes`` bytes (``default`` when nothing is left)."""
    clean = " ".join(_UNSAFE_NAME_RE.sub(" ", unicodedata.normalize("NFC", text)).split()).strip(". ")
    return truncate_utf8(clean, max_bytes).rstrip(" .").replace("..", ".") or default


def session_filename(day: str | None, title: str) -> str:
    """``2026-11-23 Fix the deploy script.md``: a readable, safe file name
    (no separators, link-breaking characters or leading dots; short)."""
    clean = readable_stem(title, default="Untitled conversation")
    stem = f"{day} {clean}" if day else clean
    return fit_name(stem.replace("..", "."), ".md")


@dataclass(frozen=True)
class Turn:
    """One turn of a conversation, ready to be written (redacted, tool calls summarised)."""

    role: str  # user | assistant | tool | system
    text: str
    at: str | None = None  # ISO 8601 UTC, when known
    name: str | None = None  # the speaker's own name, when the client gives one

    @property
    def digest(self) -> str:
        """What identifies the turn's written form: role, time, text (and
        the speaker's name, when given)."""
        seed = f"{self.role}\x00{self.at or ''}\x00{self.text}"
        if self.name:  # only then: digests written before names were kept stay the same
            seed += f"\x00{self.name}"
        return hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]

    @property
    def label(self) -> str:
        """Who speaks, as the turn's callout shows it: the speaker's name, else the role's."""
        return self.name or ROLE_LABELS.get(self.role, self.role.title())


@dataclass
class SessionHead:
    """A session note's front-matter values and digest."""

    id: str
    session_id: str
    client: str
    title: str
    started: str | None = None
    ended: str | None = None
    turns: int = 0
    digest: list[str] = field(default_factory=list)  # lines under "## Digest"
    #: What the session came to (:mod:`.session_digest`'s block); None leaves a note's block as it is.
    summary: SessionDigest | None = None

    def managed_values(self) -> dict[str, object]:
        """The front-matter keys memvault writes (None: left out)."""
        return {
            "id": self.id, "memory": "source", SESSION_KEY: self.session_id, "client": self.client,
            "title": self.title, "started": self.started, "ended": self.ended, "turns": self.turns,
            "tags": [SESSION_TAG],
        }


def when(at: str | None) -> str:
    """``2026-11-23 10:02`` (UTC) from an ISO time; empty when unknown."""
    if not at:
        return ""
    if len(at) == 25 and at.endswith("+00:00") and at[10] == "T":
        return f"{at[:10]} {at[11:16]}"  # memvault's own form (the common case): no parsing
    try:
        moment = datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        return ""
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M")


def _safe_line(line: str) -> str:
    """One line of turn text as it may stand inside the callout: an Obsidian
    comment mark (``%%``) would hide every later turn, and a trailing
    ``^word`` would name a block of its own."""
    line = line.replace("%%", "%\\%")
    return _TRAILING_BLOCK_ID_RE.sub(lambda m: f"{m.group(1)}\\^{m.group(2)}", line)


def render_turn(n: int, turn: Turn) -> str:
    """The Markdown of turn ``n``: a callout, a blank line, its block id, a blank line."""
    stamp = when(turn.at)
    lines = [_safe_line(f"> [!{turn.role}] {turn.label}" + (f" · {stamp}" if stamp else ""))]
    body = turn.text.strip("\n").split("\n") if turn.text.strip() else ["(empty)"]
    fences = sum(1 for line in body if _FENCE_RE.match(line))
    if fences % 2:
        body.append("```")  # an open fence would swallow every later turn
    lines += [f"> {_safe_line(line)}" if line.strip() else ">" for line in body]
    return "\n".join(lines) + f"\n\n^t{n}\n\n"


_PLAIN_RE = re.compile(r"[A-Za-z][A-Za-z0-9 _.,()/+-]*[A-Za-z0-9.)]|[A-Za-z]")
_ISO_RE = re.compile(r"\d{4}-\d\d-\d\dT[0-9:.+-]+Z?")
_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_YAML_WORDS = frozenset("y n yes no on off true false null".split())


def yaml_line(key: str, value: object) -> str:
    """One front-matter line, as :func:`dump_key` would write it for the
    values a session note holds (a string, an int, a list of plain words),
    without the YAML emitter's cost (thousands of notes in an import)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, list)):
        return dump_key(key, value)
    if isinstance(value, int):
        return f"{key}: {value}\n"
    if isinstance(value, list):
        if not all(isinstance(v, str) and _PLAIN_RE.fullmatch(v) and v.lower() not in _YAML_WORDS for v in value):
            return dump_key(key, value)
        return f"{key}:\n" + "".join(f"  - {v}\n" for v in value)
    if _ISO_RE.fullmatch(value):
        return f"{key}: '{value}'\n"
    if (_PLAIN_RE.fullmatch(value) and value.lower() not in _YAML_WORDS and ": " not in value) or _UUID_RE.fullmatch(value):
        return f"{key}: {value}\n"
    return dump_key(key, value)


def render_head(head: SessionHead) -> str:
    """Front-matter, title and digest of a new session note."""
    fm = "".join(yaml_line(k, v) for k, v in head.managed_values().items() if v is not None)
    block = "\n".join(head.summary.lines()) + "\n\n" if head.summary is not None else ""
    return f"---\n{fm}---\n# {head.title}\n\n{render_digest(head.digest)}{block}{TRANSCRIPT_HEADING}\n\n"


def render_digest(lines: Sequence[str]) -> str:
    """The digest section, heading included."""
    return DIGEST_HEADING + "\n" + "".join(f"{line}\n" for line in lines) + "\n"


def render_session(head: SessionHead, turns: Sequence[Turn]) -> str:
    """The whole note for a session written for the first time."""
    return render_head(head) + "".join(render_turn(i, t) for i, t in enumerate(turns, 1))


@dataclass(frozen=True)
class TurnSpan:
    """Where turn ``n`` sits in a session note: its role and file lines (1-based)."""

    n: int
    role: str
    first_line: int
    last_line: int  # the line of its ``^tN``


def turn_spans(body: str, body_line: int = 1) -> list[TurnSpan]:
    """The turns of a session note's body, in order (turns whose block id
    line a person removed are left out)."""
    spans = []
    start: tuple[int, str] | None = None
    for i, line in enumerate(body.split("\n")):
        m = _TURN_START_RE.match(line)
        if m:
            start = (i, m.group(1))
            continue
        end = _TURN_END_RE.match(line)
        if end and start is not None:
            spans.append(TurnSpan(int(end.group(1)), start[1], body_line + start[0], body_line + i))
            start = None
    return spans


def superseded_lines(body: str, body_line: int = 1) -> set[int]:
    """The lines (numbered from ``body_line``) of the callouts of superseded
    turns: kept in the note as a record, no longer part of the conversation."""
    out: set[int] = set()
    inside = False
    for i, line in enumerate(body.split("\n")):
        inside = line.startswith(f"> [!{SUPERSEDED}]") or (inside and line.startswith(">"))
        if inside:
            out.add(body_line + i)
    return out


def written_ids(text: str) -> list[int]:
    """The numbers of every turn block id (``^tN``) in a session note,
    superseded turns' too, in file order."""
    return [int(m.group(1)) for m in map(_TURN_END_RE.match, text.split("\n")) if m]


def live_turns(text: str) -> list[tuple[int, str]]:
    """(number, exact Markdown from callout to block id line) of each turn of
    a session note that is not superseded, in file order: what lets a note
    be matched against its conversation when the state that remembered it
    is gone."""
    lines = text.split("\n")
    return [(s.n, "\n".join(lines[s.first_line : s.last_line + 1])) for s in turn_spans(text, 0)]


def revise_session(
    existing: str, head: SessionHead, superseded: Collection[int], new: Sequence[tuple[int, Turn]]
) -> str:
    """``existing`` note text with its managed front-matter keys, title and
    digest updated, the turns numbered ``superseded`` marked superseded in
    place, and the ``new`` (number, turn) pairs written at the end of the
    transcript.

    Nothing is removed: a person's sections and lines stay where they are.
    The end of the transcript is the line after the last turn block id and
    the plain lines that follow it, up to the first heading: new turns go
    before a section a person added after the transcript, never under it.
    """
    values = {k: v for k, v in head.managed_values().items() if v is not None}
    values["tags"] = _kept_tags(existing)
    text = edit_frontmatter(existing, values)
    text = _replace_digest(_replace_title(text, head.title), head.digest)
    if head.summary is not None:
        text = put_block(text, head.summary, TRANSCRIPT_HEADING)
    lines = text.split("\n")
    if superseded:
        _mark_superseded(lines, set(superseded))
    if not new:
        return "\n".join(lines)
    at = _transcript_end(lines)
    before, after = "\n".join(lines[:at]), "\n".join(lines[at:])
    if before and not before.endswith("\n"):
        before += "\n"
    if before and not before.endswith("\n\n"):
        before += "\n"
    return before + "".join(render_turn(n, t) for n, t in new) + after


def _kept_tags(existing: str) -> list[object]:
    """The note's tags as they are, ``session`` added if a person removed it:
    a tag a person gave the note stays."""
    yaml_text, _, _ = split_frontmatter(existing.replace("\r\n", "\n"))
    try:
        tags = load_frontmatter(yaml_text).get("tags") if yaml_text is not None else None
    except FrontmatterError:
        tags = None
    if isinstance(tags, str):
        tags = [t for t in re.split(r"[,\s]+", tags) if t]
    if not isinstance(tags, list):
        return [SESSION_TAG]
    return tags if SESSION_TAG in tags else [SESSION_TAG, *tags]


def _mark_superseded(lines: list[str], numbers: set[int]) -> None:
    """Mark, in place, the callouts of the turns ``numbers`` as superseded:
    ``> [!user] User · ...`` becomes ``> [!superseded]- User · ... ·
    superseded``, folded; every other byte of the turn stays."""
    start: int | None = None
    for i, line in enumerate(lines):
        if _TURN_START_RE.match(line):
            start = i
            continue
        end = _TURN_END_RE.match(line)
        if end is None:
            continue
        if start is not None and int(end.group(1)) in numbers:
            header = lines[start]
            rest = header[header.index("]") + 1 :]
            fold = "" if rest[:1] in ("-", "+") else "-"
            lines[start] = f"> [!{SUPERSEDED}]{fold}{rest.rstrip()} · superseded"
        start = None


def _transcript_end(lines: Sequence[str]) -> int:
    """The line index where new turns go (module docstring of :func:`revise_session`)."""
    last = max((i for i, line in enumerate(lines) if _TURN_END_RE.match(line)), default=None)
    if last is None:
        last = next((i for i, line in enumerate(lines) if line.strip() == TRANSCRIPT_HEADING), None)
        if last is None:
            return len(lines)
    fenced = False
    for i in range(last + 1, len(lines)):
        if _FENCE_RE.match(lines[i]):
            fenced = not fenced
        elif not fenced and _HEADING_RE.match(lines[i]):
            return i
    return len(lines)


def _replace_title(text: str, title: str) -> str:
    """``text`` with its title heading (the first ``# `` line before the
    digest) saying ``title``."""
    lines = text.split("\n")
    start = 0
    if lines and lines[0].lstrip("\ufeff").rstrip() == "---":
        start = next((i + 1 for i in range(1, len(lines)) if lines[i].rstrip() == "---"), 0)
    for i, line in enumerate(lines[start:], start):
        if line.strip() == DIGEST_HEADING or _TURN_START_RE.match(line):
            break
        if line.startswith("# "):
            lines[i] = f"# {title}"
            return "\n".join(lines)
    return text


def _replace_digest(text: str, digest: Sequence[str]) -> str:
    """``text`` with its digest replaced: memvault's lines under ``## Digest``
    up to the first blank line; a line a person wrote among them stays (after
    the new digest), and so does all after that blank line. Kept as it is when a person removed the
    heading."""
    lines = text.split("\n")
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == DIGEST_HEADING)
    except StopIteration:
        return text
    end = start + 1
    while (end < len(lines) and lines[end].strip() and not lines[end].startswith("## ")
           and not _TURN_START_RE.match(lines[end])):
        end += 1
    section = render_digest(digest).rstrip("\n").split("\n")
    section += [line for line in lines[start + 1 : end] if not _DIGEST_LINE_RE.match(line)]  # a person's
    if end >= len(lines) or lines[end].strip():
        section.append("")  # a blank line before what follows
    return "\n".join(lines[:start] + section + lines[end:])
