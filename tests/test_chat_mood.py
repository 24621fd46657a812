"""Facts of chat turns are statements (issue 35): the mood of a sentence, read
from its grammar (store/facts/mood.py), keeps requests and questions out of a
session note's facts, whatever words they hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import opened
from hypothesis import given
from hypothesis import strategies as st

from memvault.store.facts.conversation import classify
from memvault.store.facts.mood import DECLARATIVE, HORTATIVE, IMPERATIVE, INTERROGATIVE, mood


@pytest.mark.parametrize(("sentence", "expected"), [
    # Requests: a base-form verb opens the clause, nothing before it is its subject.
    ("Write a short summary of what we decided.", IMPERATIVE),
    ("Summarize the thread for the team.", IMPERATIVE),
    ("Tell me which database we picked.", IMPERATIVE),
    ("Help me plan the migration.", IMPERATIVE),
    ("Please go over the notes again.", IMPERATIVE),
    ("Claude, draft the release email.", IMPERATIVE),  # a vocative set off by a comma
    ("Don't push anything on Fridays.", IMPERATIVE),
    ("Do not rename the column yet.", IMPERATIVE),
    ("Let me know what you find.", IMPERATIVE),
    ("Have a look at the failing test.", IMPERATIVE),  # "have" taking an object, not inverted
    # Questions: a question mark, inversion, or a wh-word and an auxiliary.
    ("Which port does the new database use?", INTERROGATIVE),
    ("Can you remind me what we chose", INTERROGATIVE),
    ("Did we settle the cutover date", INTERROGATIVE),
    ("What did we decide about the cache", INTERROGATIVE),
    ("Is the staging cluster still up", INTERROGATIVE),
    # Statements, also those that open on a word that can be a verb.
    ("We decided to move the reporting service to Postgres.", DECLARATIVE),
    ("I prefer short answers.", DECLARATIVE),
    ("Last week, I switched the team to trunk-based development.", DECLARATIVE),
    ("Work is busy this month.", DECLARATIVE),
    ("Rain on the coast still beats snow in the hills.", DECLARATIVE),
    ("Mark says the build is green.", DECLARATIVE),
    ("Still waiting for the vendor to reply.", DECLARATIVE),
    ("Did ten kilometres this morning.", DECLARATIVE),  # the subject left out, not a question
    ("Perfect.", DECLARATIVE),
    ("Let's go with Redis for the session cache.", HORTATIVE),
])
def test_the_mood_of_a_sentence_is_read_from_its_grammar(sentence: str, expected: str) -> None:
    assert mood(sentence) == expected


@pytest.mark.parametrize(("sentence", "kept"), [
    ("Write a short summary of what we decided.", None),
    ("Tell me what we settled on for the launch.", None),
    ("Summarize what we agreed with the vendor.", None),
    ("Can you recap what we chose for hosting", None),
    ("I forgot what we decided about the cache.", None),  # a decision reported, not stated
    ("We decided to move the reporting service to Postgres.", ("semantic", "decision")),
    ("Let's go with Redis for the session cache.", ("semantic", "decision")),
    ("Perfect, we agreed on Friday for the release.", ("semantic", "decision")),
    ("Last week, I decided to switch to Neovim.", ("semantic", "decision")),
    ("Always run the linter before pushing.", ("semantic", "preference")),  # a standing rule is kept
    ("Remember that my staging database is db2.", ("semantic", "remembered")),
    ("I'm going to renew the certificate tomorrow.", ("prospective", "plan")),
])
def test_requests_and_questions_are_not_facts_whatever_words_they_hold(sentence: str,
                                                                        kept: tuple[str, str] | None) -> None:
    assert classify(sentence) == kept


@given(st.text(max_size=200))
def test_every_text_has_one_mood_and_a_question_mark_makes_a_question(text: str) -> None:
    assert mood(text) in (DECLARATIVE, INTERROGATIVE, IMPERATIVE, HORTATIVE)
    assert mood(text + "?") == INTERROGATIVE


def test_an_ingested_session_keeps_the_statement_and_not_the_request(vault: Path, tmp_path: Path) -> None:
    lines = [
        {"role": "user", "content": "We decided to move the reporting service to Postgres."},
        {"role": "assistant", "content": "Noted. Anything else?"},
        {"role": "user", "content": "Write a short summary of what we decided. Then tell me what we chose for "
                                    "the cache."},
    ]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    with opened(vault) as store:
        report = store.ingest(transcript)
        facts = [f.text for f in store.facts(report.path).facts if f.segment != "digest"]
    assert facts == ["We decided to move the reporting service to Postgres."]
