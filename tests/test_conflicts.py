"""Contradictions read from frames (store/consolidation/frames.py, conflicts.py):
changes, denials with their scope, feelings, namings, residences, a thing's
value, tenure, opposite states; and what never contradicts (two dated
events, an addition, a narrower denial, another person). Sentences written
for these tests, none taken from a labelled set."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memvault.store.consolidation import frames, rules
from memvault.store.consolidation.text import features


def _con(older: str, newer: str, sim: float | None = None) -> tuple[str, str] | None:
    when = datetime(2026, 1, 1, tzinfo=timezone.utc)
    a = rules.Memo("a", "semantic", "user", older, when, features(older))
    b = rules.Memo("b", "semantic", "user", newer, when + timedelta(days=1), features(newer))
    return rules.contradiction(a, b, sim, 0.45, rules.NameBook.of([a.f, b.f]))


@pytest.mark.parametrize(("older", "newer", "kind"), [
    ("Plays the oboe in a brass band", "Gave up the oboe last spring", "change"),
    ("Uses Thunderbird for email", "Switched from Thunderbird to Mutt", "change"),
    ("Smokes a pipe after dinner", "Stopped smoking in March", "change"),
    ("Works for Initech", "Left Initech and now works for Globex", "change"),
    ("Has a tattoo of a swallow on her wrist", "Has no tattoos at all", "negation"),
    ("Drinks whisky on Fridays", "Doesn't drink alcohol", "negation"),  # whisky is a kind of alcohol
    ("Isn't a member of any club", "Is a member of the chess club", "negation"),
    ("Is scared of spiders", "Loves spiders and keeps two tarantulas", "habit"),
    ("Her son is called Tiago", "Her son's name is Duarte", "value"),
    ("Her aunt lives in Faro", "Her aunt is based in Braga", "place"),
    ("The tablet runs Android", "The tablet runs iPadOS", "value"),
    ("Rents the garage", "Owns the garage", "status"),
    ("The bike is green", "The bike is yellow", "value"),
    ("Has green eyes", "Her eyes are grey", "exclusive"),
])
def test_a_frame_says_why_two_claims_cannot_both_hold(older: str, newer: str, kind: str) -> None:
    found = _con(older, newer)
    assert found is not None and found[0] == kind, found


@pytest.mark.parametrize(("older", "newer"), [
    ("Went to a jazz festival in 2021", "Went to a jazz festival in 2023"),  # two dated events
    ("Flew to Oslo in May", "Flew to Oslo again in June"),
    ("Volunteers at the library", "Also volunteers at the hospital"),  # an addition
    ("Likes swimming", "Never swims in the sea"),  # a narrower denial
    ("Her aunt lives in Faro", "Her uncle lives in Braga"),  # another person
    ("Her phone runs Android", "Her work phone runs iOS"),  # another thing
    ("Stopped going to the gym", "Goes to bed at eleven"),  # "going" alone says nothing of what ended
    ("Doesn't like cats", "Prefers dogs over cats"),  # what a comparison sets aside is no object
    ("Is afraid of flying", "Prefers an aisle seat when flying"),  # a clause of time is no object
    ("Has a sister who lives in Oslo", "Lives in Bergen"),  # the sister lives there
])
def test_what_never_contradicts(older: str, newer: str) -> None:
    assert _con(older, newer) is None


def test_a_claim_is_parsed_into_subject_clauses_and_what_ended() -> None:
    claim = frames.parse("Her partner's name is Joana; she left Initech and now works at Globex.")
    first, *rest = claim.clauses
    assert first.copula and first.subject.nouns == ("partner",) and first.subject.attribute == ("name",)
    left = [c for c in rest if c.ended]
    assert len(left) == 1 and [w.raw for w in left[0].ended] == ["Initech"]
    assert any(c.verb == "work" and c.update for c in rest)
    event = frames.parse("Visited Oslo in 2019").clauses[0]
    assert event.past_event and not frames.parse("Lives in Oslo").clauses[0].past_event
