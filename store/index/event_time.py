"""When a note, memory or fact happened, apart from when its file changed.

A trace's **event time** comes from, in this order:

1. a front-matter date of the event: ``occurred``, ``occurred_at``,
   ``session_date``, ``session_start``, ``started``, ``date``, ``event_date``
   (the first that parses);
2. a daily note's name or date folders (``2025-01-10.md``,
   ``Journal/2025/01/10.md``);
3. for a fact, the innermost enclosing heading that spells a whole date
   (``## 2025-01-31``, ``## 12 March 2025``), else its source note's event time.

Values are normalised to ISO 8601 in UTC with seconds
(``2023-03-04T10:15:00+00:00``); a date or a time without a zone is read as
UTC, so string order is time order. A trace without an event time is placed
at its creation time, else its last change (see the ``happened`` column of
index migration 11).

Conversation structure is read here too: a memory or note with a front-matter
``session`` belongs to that session, at position ``turn`` (a number); turns
of one session are neighbours in ranking (:mod:`memvault.store.retrieval.neighbours`).
An ingested session note (``session_id``) is a session of its own: its
consecutive chunks are neighbours.

Most conversations in a vault carry no ``session`` key (turn-per-note exports,
chats written by other tools, episodic notes of a day), so a session is also
**inferred** from the note alone (:func:`inferred_session`), by a rule that
does not depend on which notes were indexed first: a conversation id another
tool wrote (``conversation_id``, ``conversation``, ``thread_id``, ``thread``,
``chat_id``), else the note's folder and the day of its event time (a
``session_date``, a daily note's date). Only what is said or happened is
grouped so: episodic memories and notes with a ``speaker`` (a turn written
as a note); a semantic memory of the same day is no neighbour of a chat.
Inferred sessions start with :data:`INFERRED_PREFIX`; ``recall.infer_sessions =
false`` leaves them out of ranking (:mod:`memvault.store.retrieval.neighbours`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timezone
from typing import Any

from memvault.vault_io.lazy_pattern import LazyPattern

#: Front-matter keys that say when the thing a note records happened, in order.
EVENT_KEYS = ("occurred", "occurred_at", "session_date", "session_start", "started", "date", "event_date")
#: Front-matter key naming the conversation session a note belongs to.
SESSION_KEY = "session"
#: The key of an ingested session note (vault_io/session_note.py): the whole
#: conversation in one note, whose consecutive chunks are neighbours.
SESSION_NOTE_KEY = "session_id"
#: Front-matter key of a note's position in its session.
TURN_KEY = "turn"
#: Front-matter keys another tool names a conversation by (a note without a
#: ``session`` that has one of them is a turn of that conversation).
CONVERSATION_KEYS = ("conversation_id", "conversation", "thread_id", "thread", "chat_id")
#: The start of an inferred session's name (:func:`inferred_session`).
INFERRED_PREFIX = "inferred:"

_MONTHS = {
    m: n
    for n, names in enumerate(
        (("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",), ("jun", "june"),
         ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"), ("oct", "october"),
         ("nov", "november"), ("dec", "december")),
        1,
    )
    for m in names
}
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_ISO = LazyPattern(
    r"(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?\s*(Z|[+-]\d{2}:?\d{2})?)?",
    re.I,
)
_DAY_MONTH_YEAR = LazyPattern(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?(?: of)? {_MONTH},? (\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = LazyPattern(rf"\b{_MONTH} (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b", re.I)
_DAILY_NAME = LazyPattern(r"^(\d{4})-(\d{2})-(\d{2})\b")
_DATE_PATH = LazyPattern(r"(?:^|/)((?:19|20)\d{2})/(0[1-9]|1[0-2])/(0[1-9]|[12]\d|3[01])(?:[ ._-][^/]*)?\.md$", re.I)


def iso(dt: datetime) -> str:
    """``dt`` as the index's event-time string (UTC, seconds)."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).replace(microsecond=0).isoformat()


def parse_stamp(value: object) -> datetime | None:
    """A time memvault wrote (an index or state time string, ISO 8601; a date
    counts as its midnight) as a datetime in UTC when it names no zone, or
    None: the inverse of :func:`iso`. A time a person writes is read by
    :func:`memvault.store.retrieval.when.parse_bound`, a note's event time by
    :func:`parse_event_time`."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def _make(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0, zone: str | None = None) -> str | None:
    try:
        dt = datetime(y, mo, d, h, mi, s)
    except ValueError:
        return None
    if zone:
        if zone.upper() == "Z":
            dt = dt.replace(tzinfo=timezone.utc)
        else:
            z = zone.replace(":", "")
            dt = datetime.fromisoformat(dt.isoformat() + z[:3] + ":" + z[3:])
    return iso(dt)


def parse_event_time(value: Any) -> str | None:
    """A front-matter value as an event time, or None when it is no date.

    Accepts dates and date-times (YAML timestamps arrive as ISO strings),
    ``2023/03/04``, ``2023-03-04 10:15``, ``4 March 2023``, ``March 4, 2023``.
    A value with more than a date in it ("2023-03-04 trip notes") is no date.
    """
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, date):
        return iso(datetime(value.year, value.month, value.day))
    if not isinstance(value, str):
        return None
    text = value.strip()
    m = _ISO.fullmatch(text)
    if m:
        y, mo, d, h, mi, s, zone = m.groups()
        return _make(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), zone)
    m = _DAY_MONTH_YEAR.fullmatch(text)
    if m:
        return _make(int(m.group(3)), _MONTHS[m.group(2).lower().rstrip(".")], int(m.group(1)))
    m = _MONTH_DAY_YEAR.fullmatch(text)
    if m:
        return _make(int(m.group(3)), _MONTHS[m.group(1).lower().rstrip(".")], int(m.group(2)))
    return None


def date_in_text(text: str) -> str | None:
    """The first whole date (with a year) written in ``text``, e.g. a heading."""
    m = _ISO.search(text)
    if m and not m.group(4):
        found = _make(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if found:
            return found
    for rx, order in ((_DAY_MONTH_YEAR, (3, 2, 1)), (_MONTH_DAY_YEAR, (3, 1, 2))):
        m = rx.search(text)
        if m:
            y, mo, d = (m.group(i) for i in order)
            found = _make(int(y), _MONTHS[mo.lower().rstrip(".")], int(d))
            if found:
                return found
    return None


def path_date(path: str) -> str | None:
    """The date a daily note's name or folders spell, if any."""
    name = path.rsplit("/", 1)[-1]
    m = _DAILY_NAME.match(name) or _DATE_PATH.search(path)
    return _make(int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def note_event_time(frontmatter: Mapping[str, Any], path: str) -> str | None:
    """When what a note records happened: its first parseable event key, else
    the date its daily-note name or folders spell."""
    lowered = {str(k).lower(): v for k, v in frontmatter.items()}
    for key in EVENT_KEYS:
        found = parse_event_time(lowered.get(key))
        if found:
            return found
    return path_date(path)


def fact_event_time(headings: Sequence[str], note_time: str | None) -> str | None:
    """A fact's event time: the innermost heading with a whole date, else its note's."""
    for heading in reversed(headings):
        found = date_in_text(heading)
        if found:
            return found
    return note_time


def session_of(frontmatter: Mapping[str, Any]) -> tuple[str | None, float | None]:
    """The conversation session a note belongs to and its position in it
    (an ingested session note is a session of its own)."""
    session = frontmatter.get(SESSION_KEY)
    if session is None and frontmatter.get(SESSION_NOTE_KEY) not in (None, ""):
        session = f"{SESSION_NOTE_KEY}:{frontmatter[SESSION_NOTE_KEY]}"
    if isinstance(session, bool) or session is None or isinstance(session, (list, dict)):
        return None, None
    name = str(session).strip()
    if not name:
        return None, None
    turn = frontmatter.get(TURN_KEY)
    if isinstance(turn, bool) or not isinstance(turn, (int, float, str)):
        return name, None
    try:
        return name, float(turn)
    except ValueError:
        return name, None


def _scalar(value: Any) -> str | None:
    """A front-matter value as a name (None for a list, a mapping, a boolean or nothing)."""
    if value is None or isinstance(value, (bool, list, dict)):
        return None
    return str(value).strip() or None


def inferred_session(frontmatter: Mapping[str, Any], path: str, when: str | None, said: bool) -> str | None:
    """The session a note without a ``session`` key is part of, from the note
    alone: the conversation id another tool gave it, else (for something
    ``said``: an episodic memory, a note with a ``speaker``) its folder and
    the day it happened. None when neither says."""
    lowered = {str(k).lower(): v for k, v in frontmatter.items()}
    for key in CONVERSATION_KEYS:
        name = _scalar(lowered.get(key))
        if name:
            return f"{INFERRED_PREFIX}{key}:{name}"
    if not said or not when:
        return None
    folder = path.rsplit("/", 1)[0] if "/" in path else ""
    return f"{INFERRED_PREFIX}{folder}@{when[:10]}"


def time_metadata(frontmatter: Mapping[str, Any], path: str, episodic: bool = False) -> dict[str, Any]:
    """The metadata keys the index reads event time and session from (only
    those that are set); ``episodic``: the note is an episodic memory (its
    session may be inferred, :func:`inferred_session`)."""
    out: dict[str, Any] = {}
    when = note_event_time(frontmatter, path)
    if when:
        out["event_time"] = when
    session, seq = session_of(frontmatter)
    if session is None:
        said = episodic or _scalar(frontmatter.get("speaker")) is not None
        session = inferred_session(frontmatter, path, when, said)
        turn = frontmatter.get(TURN_KEY)
        if session and isinstance(turn, (int, float)) and not isinstance(turn, bool):
            seq = float(turn)
    if session:
        out["session"] = session
        if seq is not None:
            out["seq"] = seq
    return out
