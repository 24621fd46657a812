"""Time in retrieval: ``--since``/``--until`` bounds, times named in a query, recency.

* :func:`parse_bound` reads a time a person writes as a bound: every
  ``--since``/``--until`` of the command line (``search``, ``context``,
  ``list``, ``recent``) and of the MCP tools, one grammar (:data:`FORMS`,
  documented in docs/search.md): an ISO date or date-time (``2023-05-01``,
  ``2023-05``, ``2023``, ``2023-05-01T10:00``), a span back from now (``7d``,
  ``12h``, ``30 min``, ``2 weeks``, ``last week``, ``3 days ago``, ``1y``),
  ``today`` or ``yesterday``. ``--since`` takes the start of what it names,
  ``--until`` its end (``--until 2023-05`` includes all of May).
  :func:`time_bounds` gives both as filter bounds; ``search``, ``context``
  and ``list`` compare them with a trace's ``happened`` time (its event
  time, else its creation, else its last change: index migration 11),
  ``recent`` with when it last changed.
* :func:`named_periods` finds the times a query names ("in May 2023", "last
  week", "yesterday", "on 12 March"): hybrid ranking lifts memories from
  that period by :data:`TIME_MATCH_BOOST` (a soft signal, never a filter).
* :func:`recency_factor` decays a memory by the age of its event time.
* :func:`with_dates` follows each relative time in a text ("yesterday",
  "last Friday", "next month", "two weeks ago") with the date it means,
  counted from when the text was said: a recalled turn tells an agent
  *when*, not just "yesterday".
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

from memvault.store.index.event_time import iso, parse_stamp
from memvault.vault_io.errors import UsageError
from memvault.vault_io.lazy_pattern import LazyPattern

#: Score factor of a hybrid candidate whose time falls in the period the
#: query names. On the conversational set's dev split, the 5 questions naming
#: a month went from recall@10 0.27 to 0.47 (test: 0.73 to 0.83), the same
#: at 0.2, 0.5 and 1.0: the smallest is kept.
TIME_MATCH_BOOST = 0.2
#: The least a memory's recency factor falls to. Pure exponential decay by
#: event time (a half-life of 14 days for episodic memories) buried every
#: turn but the last session's: recall@10 on the conversational dev split
#: fell from 0.71 to 0.24. Bounded at 0.8 it costs 0.01 on dev and gains 0.01
#: on test: recency orders memories that are about equally relevant, and
#: never hides an older one that matches better.
RECENCY_FLOOR = 0.8


class BadTimeError(UsageError):
    """A ``--since``/``--until`` value that is no date, date-time or span."""


_YEARS = LazyPattern(r"^\s*(\d+)\s*(?:y|yr|yrs|year|years)\s*(?:ago)?\s*$", re.I)
_PARTIAL = LazyPattern(r"^\s*(\d{4})(?:-(\d{1,2}))?\s*$")
_WHOLE_DAY = LazyPattern(r"\d{4}-\d{1,2}-\d{1,2}")
#: A span back from now: a number, a unit of :data:`_UNITS`, an optional "ago".
_SPAN = LazyPattern(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*(?:ago)?\s*$")
_UNITS = {
    "m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
    "w": 604800, "wk": 604800, "week": 604800, "weeks": 604800,
}
#: What a ``--since``/``--until`` (or an MCP ``since``/``until``) accepts, in
#: the words every command's help and the MCP tools use.
FORMS = ("an ISO date or date-time (2023-05-01, 2023-05, 2023, 2023-05-01T10:00) or a span back from now "
         "(7d, 12h, 2 weeks, last week, 1y, today, yesterday)")


def _utc(dt: datetime) -> datetime:
    return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)


def _next_month(year: int, month: int) -> datetime:
    return datetime(year + month // 12, month % 12 + 1, 1, tzinfo=timezone.utc)


def _span_back(value: str, now: datetime) -> datetime | None:
    """``now`` less a span ("7d", "3 h", "2 weeks ago", "last week": one
    week), or None when ``value`` (lower case) is no span."""
    if value.startswith("last "):
        value = "1 " + value[5:]
    m = _SPAN.match(value)
    if m is None or m.group(2) not in _UNITS:
        return None
    return now - timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])


def parse_bound(text: str, now: datetime, *, end: bool = False) -> str:
    """A ``--since`` (``end`` false) or ``--until`` (``end`` true) value as the
    index's time string; raises :class:`BadTimeError`.

    A year, month or day (``today``, ``yesterday``) names all of it:
    ``--since`` takes its start, ``--until`` its end. A span ("7d", "3h",
    "2 weeks", "last week", "1y") counts back from ``now``; a date-time is
    that moment (UTC when it names no zone).
    """
    value = text.strip().lower()
    today = datetime(now.year, now.month, now.day, tzinfo=timezone.utc)
    try:
        years = _YEARS.match(value)
        if years:
            return iso(now - timedelta(days=365 * int(years.group(1))))
        if value in ("today", "yesterday"):
            start = today - timedelta(days=1 if value == "yesterday" else 0)
            return iso(start + timedelta(days=1) if end else start)
        partial = _PARTIAL.match(value)
        if partial:
            year, month = int(partial.group(1)), partial.group(2)
            if month is None:
                return iso(datetime(year + 1 if end else year, 1, 1, tzinfo=timezone.utc))
            m = int(month)
            return iso(_next_month(year, m) if end else datetime(year, m, 1, tzinfo=timezone.utc))
        back = _span_back(value, now)
        if back is not None:
            return iso(back)
        when = _utc(datetime.fromisoformat(text.strip().replace("Z", "+00:00")))
    except (ValueError, OverflowError):
        raise BadTimeError(f"{text!r} is not a date, date-time or span: give {FORMS}") from None
    if end and _WHOLE_DAY.fullmatch(text.strip()):  # a whole day: until its end
        when += timedelta(days=1)
    return iso(when)


def given(since: str | None, until: str | None) -> dict[str, str]:
    """The ``since``/``until`` arguments actually given, to pass on to
    ``search``/``context`` (so a daemon from before they existed still answers
    every request that does not use them)."""
    return {k: v for k, v in (("since", since), ("until", until)) if v}


def time_bounds(since: str | None, until: str | None, now: datetime) -> dict[str, str | None]:
    """``--since``/``--until`` as written by a person, as the ``since`` and
    ``until`` of :class:`~memvault.store.retrieval.keyword.Filters` (what
    ``search``, ``context``, ``list`` and ``recent`` share)."""
    return {"since": parse_bound(since, now) if since else None,
            "until": parse_bound(until, now, end=True) if until else None}


@dataclass(frozen=True)
class Period:
    """A half-open span of time ``[start, end)`` as index time strings, and how the query said it."""

    start: str
    end: str
    said: str


_MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
    "December",
)
_MONTH_RX = "|".join(_MONTH_NAMES)
# "May" is also a verb: a month name counts when it is capitalised and comes
# with a year, a day, or a preposition of time ("in", "during", "since"...).
_MONTH_PHRASE = LazyPattern(
    rf"\b(?:(?P<day1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?)?(?P<month>{_MONTH_RX})\b"
    rf"(?:\s+(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\b)?(?:,?\s+(?P<year>(?:19|20)\d{{2}})\b)?"
)
_TIME_PREP = LazyPattern(r"\b(?:in|during|since|until|by|before|after|of|early|mid|late|last|this|next|from|through)\s+$", re.I)
_YEAR = LazyPattern(r"\b(?:in|during|of|since)\s+((?:19|20)\d{2})\b", re.I)
#: Relative periods: (days back from today to the start, length in days).
#: Generous on purpose: "last week" said on a Monday may mean yesterday.
_RELATIVE = {
    "yesterday": (1, 1),
    "last week": (14, 15),
    "this week": (6, 7),
    "last month": (62, 63),
    "this month": (30, 31),
}


_EVERY = LazyPattern(r"\b(?:every|each)\s+$", re.I)


def named_periods(query: str, now: datetime) -> list[Period]:
    """The periods ``query`` names ("in June than in April": both); a month
    without a year is the last one up to now; "every September" is none."""
    out: list[Period] = []
    low = query.lower()
    today = datetime(now.year, now.month, now.day, tzinfo=timezone.utc)
    for phrase, (back, length) in _RELATIVE.items():
        if re.search(rf"\b{phrase}\b", low):
            start = today - timedelta(days=back)
            out.append(Period(iso(start), iso(start + timedelta(days=length)), phrase))
    for m in _MONTH_PHRASE.finditer(query):
        month = _MONTH_NAMES.index(m.group("month")) + 1
        day, year, before = m.group("day1") or m.group("day2"), m.group("year"), query[: m.start()]
        if _EVERY.search(before) or (m.group("month") == "May" and not (day or year or _TIME_PREP.search(before))):
            continue
        y = int(year) if year else (now.year if month <= now.month else now.year - 1)
        try:
            if day:
                start = datetime(y, month, int(day), tzinfo=timezone.utc)
                out.append(Period(iso(start), iso(start + timedelta(days=1)), m.group(0)))
            else:
                out.append(Period(iso(datetime(y, month, 1, tzinfo=timezone.utc)), iso(_next_month(y, month)), m.group(0)))
        except ValueError:
            continue
    if not any(p.said[-4:].isdigit() for p in out):
        for m in _YEAR.finditer(query):
            y = int(m.group(1))
            out.append(Period(iso(datetime(y, 1, 1, tzinfo=timezone.utc)), iso(datetime(y + 1, 1, 1, tzinfo=timezone.utc)),
                              m.group(0)))
    return out


def recency_factor(
    kind: str, type_: str, tags: list[str], stamp: str, half_lives: Mapping[str, float], evergreen: frozenset[str],
    now: datetime, floor: float = RECENCY_FLOOR,
) -> float:
    """``floor + (1 - floor) x 0.5 ** (age in days / half-life of the type)``,
    age counted from ``stamp`` (event time, else last change); 1 when the
    type does not decay, the trace is evergreen or its time is unknown."""
    half = float(half_lives.get("note" if kind == "note" else type_, 0.0) or 0.0)
    if half <= 0 or any(t.lower() in evergreen for t in tags):
        return 1.0
    when = parse_stamp(stamp)
    if when is None:
        return 1.0
    age = max(0.0, (now - when).total_seconds() / 86400.0)
    return floor + (1.0 - floor) * math.pow(0.5, age / half)


# -- relative dates in a text, resolved against the time it was said -----------------

#: Numbers as words, for "two weeks ago" (a spelled count above twelve is
#: rare in speech; "a few" names no number, so it is not resolved).
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_COUNT = r"(?P<count>\d{1,3}|" + "|".join(sorted((re.escape(w) for w in _NUMBER_WORDS), key=len, reverse=True)) + ")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
#: The grammar, one alternative per form; each names what it needs.
_RELATIVE_TEXT = LazyPattern(
    r"\b(?:"
    r"(?P<dayword>the day before yesterday|the day after tomorrow|yesterday|today|tomorrow|tonight)"
    rf"|{_COUNT}\s+{_UNIT}\s+(?P<ago>ago|later|from now)"
    rf"|in\s+(?P<in_count>\d{{1,3}}|{'|'.join(re.escape(w) for w in _NUMBER_WORDS)})\s+(?P<in_unit>day|week|month|year)s?"
    rf"|(?P<which>last|next|this|coming|past)\s+(?P<what>{'|'.join(_WEEKDAYS)}|weekend|week|month|year)"
    r")\b",
    re.I,
)
_DAY_OFFSETS = {"the day before yesterday": -2, "yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1,
                "the day after tomorrow": 2}


@dataclass(frozen=True)
class Resolved:
    """A relative time in a text: where it is, as written, and the date (or
    month, year, week) it means, as ``2023-05-07``, ``2023-06``, ``2023``,
    ``week of 2023-05-01`` or ``weekend of 2023-05-06``."""

    start: int
    end: int
    said: str
    means: str


def _count(word: str) -> int:
    word = " ".join(word.lower().split())
    return int(word) if word.isdigit() else _NUMBER_WORDS[word]


def _shift_months(day: date, months: int) -> tuple[int, int]:
    """(year, month) ``months`` from ``day``'s month."""
    n = day.year * 12 + day.month - 1 + months
    return n // 12, n % 12 + 1


def _span(day: date, unit: str, n: int) -> str:
    """The date ``n`` units from ``day``, as precise as the unit: a day for
    days and weeks, a month for months, a year for years."""
    unit = unit.lower()
    if unit in ("day", "week"):
        return (day + timedelta(days=n * (7 if unit == "week" else 1))).isoformat()
    if unit == "month":
        y, m = _shift_months(day, n)
        return f"{y:04d}-{m:02d}"
    return f"{day.year + n:04d}"


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _which(day: date, which: str, what: str) -> str:
    """"last Friday", "next week", "this month"... from ``day``."""
    which, what = which.lower(), what.lower()
    step = -1 if which in ("last", "past") else 1 if which in ("next", "coming") else 0
    if what in _WEEKDAYS:
        target = _WEEKDAYS.index(what)
        if step < 0:  # the most recent such day before this one
            back = (day.weekday() - target) % 7 or 7
            return (day - timedelta(days=back)).isoformat()
        if step > 0:  # the first such day after this one
            ahead = (target - day.weekday()) % 7 or 7
            return (day + timedelta(days=ahead)).isoformat()
        return (_monday(day) + timedelta(days=target)).isoformat()  # this Friday: of this week
    if what == "weekend":
        saturday = _monday(day) + timedelta(days=5 + 7 * step)
        return f"weekend of {saturday.isoformat()}"
    if what == "week":
        return f"week of {(_monday(day) + timedelta(days=7 * step)).isoformat()}"
    return _span(day, what, step)


def relative_dates(text: str, said_on: date) -> list[Resolved]:
    """The relative times in ``text`` ("yesterday", "last Friday", "next
    month", "two weeks ago", "in 3 days", "this weekend") with what each
    means when said on ``said_on``. Weeks start on Monday; "last Friday" is
    the latest Friday before the day (a week back when said on a Friday),
    "next Friday" the first after it; "this Friday" is the one of this week."""
    out: list[Resolved] = []
    for m in _RELATIVE_TEXT.finditer(text):
        g = m.groupdict()
        if g["dayword"]:
            means = (said_on + timedelta(days=_DAY_OFFSETS[" ".join(g["dayword"].lower().split())])).isoformat()
        elif g["unit"]:
            n = _count(g["count"])
            means = _span(said_on, g["unit"], -n if g["ago"].lower() == "ago" else n)
        elif g["in_unit"]:
            means = _span(said_on, g["in_unit"], _count(g["in_count"]))
        else:
            means = _which(said_on, g["which"], g["what"])
        out.append(Resolved(m.start(), m.end(), m.group(0), means))
    return out


def with_dates(text: str, said_at: str | None) -> str:
    """``text`` with each relative time followed by the date it means, in
    brackets ("yesterday [2023-05-07]"), counted from ``said_at`` (an ISO
    date or date-time, or "2023-05-08 13:56"); ``text`` as it is when
    ``said_at`` is not a date."""
    day = _said_on(said_at)
    if day is None:
        return text
    found = relative_dates(text, day)
    if not found:
        return text
    parts: list[str] = []
    pos = 0
    for r in found:
        parts += [text[pos : r.end], f" [{r.means}]"]
        pos = r.end
    return "".join(parts) + text[pos:]


def _said_on(said_at: str | None) -> date | None:
    if not said_at:
        return None
    try:
        return datetime.fromisoformat(said_at.strip()[:10]).date()
    except ValueError:
        return None
