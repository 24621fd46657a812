"""Relative times in a recalled text resolved against when it was said (when.with_dates)."""

from __future__ import annotations

import re
from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memvault.store.retrieval.when import relative_dates, with_dates

DAYS = st.dates(min_value=date(1990, 1, 1), max_value=date(2090, 12, 31))
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def means(text: str, day: date) -> list[str]:
    return [r.means for r in relative_dates(text, day)]


@pytest.mark.parametrize("text, expected", [
    ("I went there yesterday.", ["2023-05-07"]),
    ("Today is fine, tomorrow too", ["2023-05-08", "2023-05-09"]),
    ("the day before yesterday", ["2023-05-06"]),
    ("We met last Friday", ["2023-05-05"]),           # 2023-05-08 is a Monday
    ("see you next Monday", ["2023-05-15"]),          # a week on, not today
    ("this Sunday", ["2023-05-14"]),
    ("two weeks ago", ["2023-04-24"]),
    ("3 days ago and in 10 days", ["2023-05-05", "2023-05-18"]),
    ("next month", ["2023-06"]), ("last month", ["2023-04"]), ("last year", ["2022"]),
    ("a year ago", ["2022"]), ("last week", ["week of 2023-05-01"]), ("this weekend", ["weekend of 2023-05-13"]),
    ("a few days ago", []), ("every Friday", []), ("the yesterdays of old", []),
])
def test_each_form_means_one_date(text: str, expected: list[str]) -> None:
    assert means(text, date(2023, 5, 8)) == expected


def test_the_month_of_december_rolls_over_the_year() -> None:
    assert means("next month", date(2023, 12, 31)) == ["2024-01"]
    assert means("2 months ago", date(2024, 1, 15)) == ["2023-11"]


def test_with_dates_follows_each_relative_time_with_its_date() -> None:
    said = "I went to a support group yesterday and I'll go again next month."
    assert with_dates(said, "2023-05-08 13:56") == \
        "I went to a support group yesterday [2023-05-07] and I'll go again next month [2023-06]."
    assert with_dates(said, "2023-05-08T13:56:00+00:00").count("[") == 2
    assert with_dates(said, None) == said and with_dates(said, "not a date") == said


@given(day=DAYS, n=st.integers(min_value=0, max_value=400))
def test_days_and_weeks_ago_and_ahead_are_exact(day: date, n: int) -> None:
    assert means(f"{n} days ago", day) == [(day - timedelta(days=n)).isoformat()]
    assert means(f"in {n} days", day) == [(day + timedelta(days=n)).isoformat()]
    assert means(f"{n} weeks ago", day) == [(day - timedelta(weeks=n)).isoformat()]


@given(day=DAYS, weekday=st.sampled_from(WEEKDAYS))
def test_last_and_next_weekday_are_the_nearest_such_day_before_and_after(day: date, weekday: str) -> None:
    (last,), (nxt,) = means(f"last {weekday}", day), means(f"next {weekday}", day)
    last_day, next_day = date.fromisoformat(last), date.fromisoformat(nxt)
    assert WEEKDAYS[last_day.weekday()] == weekday == WEEKDAYS[next_day.weekday()]
    assert 1 <= (day - last_day).days <= 7 and 1 <= (next_day - day).days <= 7


@given(day=DAYS, n=st.integers(min_value=1, max_value=240))
def test_months_ago_keep_the_count_of_months(day: date, n: int) -> None:
    (m,) = means(f"{n} months ago", day)
    year, month = map(int, m.split("-"))
    assert (day.year * 12 + day.month) - (year * 12 + month) == n


@given(text=st.text(max_size=200), day=DAYS)
def test_with_dates_only_inserts_bracketed_dates(text: str, day: date) -> None:
    out = with_dates(text, day.isoformat())
    inserted = len(relative_dates(text, day))
    assert out.count(" [") - text.count(" [") == inserted
    # Taking the insertions out gives the text back, byte for byte.
    assert re.sub(r" \[(?:week of |weekend of )?\d{4}(?:-\d\d){0,2}\]", "", out) == \
        re.sub(r" \[(?:week of |weekend of )?\d{4}(?:-\d\d){0,2}\]", "", text)
