"""Which chat facts are kept (issue 36 item 7): ``ingest.min_importance`` and
``ingest.max_per_turn`` read a rule score (store/facts/importance.py); the
turns stay in the session note whatever is dropped. Flags beat the
environment, which beats the file; a bad value is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault.cli.main import cli
from memvault.store.facts.importance import importance, select, stands_alone
from memvault.vault_io.facts import IDENTITY, PROSPECTIVE, SEMANTIC, FactDraft

TURNS = [
    # One turn, two facts: a preference and a plan (the plan scores lower).
    "I prefer short answers with the fix first. I'm going to migrate the billing service next week.",
    "Sounds good.",
    "I'm a data engineer based in Lisbon.",
    "Noted.",
    "I love it.",  # names nothing but its verb: chit-chat as a memory
    "Great.",
    "Remember that the staging database is called db2.",
]


def _transcript(tmp_path: Path) -> Path:
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": text}) + "\n"
                            for i, text in enumerate(TURNS)), encoding="utf-8")
    return path


def _ingest(vault: Path, tmp_path: Path, *flags: str, env: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """Ingest the transcript through the CLI: (the session note's path, its facts' texts but the digest's)."""
    runner = CliRunner()
    result = runner.invoke(cli, ["--vault", str(vault), "ingest", str(_transcript(tmp_path)), "--json", *flags],
                           env=env)
    assert result.exit_code == 0, result.output
    path = json.loads(result.output.splitlines()[-1])["path"]
    listed = runner.invoke(cli, ["--vault", str(vault), "facts", path, "--json"])
    assert listed.exit_code == 0, listed.output
    facts = [json.loads(line) for line in listed.output.splitlines()]
    return path, [f["text"] for f in facts if f["segment"] != "digest"]


ALL = ["I prefer short answers with the fix first.", "I'm going to migrate the billing service next week.",
       "I'm a data engineer based in Lisbon.", "I love it.", "The staging database is called db2."]


def test_by_default_every_fact_the_rules_find_is_kept(vault: Path, tmp_path: Path) -> None:
    _, facts = _ingest(vault, tmp_path)
    assert sorted(facts) == sorted(ALL)


def test_min_importance_drops_plans_and_chit_chat_and_the_turns_stay_in_the_note(vault: Path,
                                                                                   tmp_path: Path) -> None:
    path, facts = _ingest(vault, tmp_path, "--min-importance", "0.75")
    assert sorted(facts) == sorted(["I prefer short answers with the fix first.",
                                    "I'm a data engineer based in Lisbon.", "The staging database is called db2."])
    note = (vault / path).read_text(encoding="utf-8")
    assert "migrate the billing service next week" in note and "> I love it." in note


def test_max_per_turn_keeps_the_highest_scoring_fact_of_a_turn(vault: Path, tmp_path: Path) -> None:
    _, facts = _ingest(vault, tmp_path, env={"MEMVAULT_INGEST_MAX_PER_TURN": "1"})
    assert sorted(facts) == sorted(a for a in ALL if "billing" not in a)


def test_the_flag_beats_the_environment_which_beats_the_file(vault: Path, tmp_path: Path,
                                                             memvault_env: Path) -> None:
    (memvault_env / "config.toml").write_text("[ingest]\nmin_importance = 1.0\n", encoding="utf-8")
    _, from_env = _ingest(vault, tmp_path, env={"MEMVAULT_INGEST_MIN_IMPORTANCE": "0.5"})
    assert "I love it." not in from_env and "I'm going to migrate the billing service next week." in from_env
    other = tmp_path / "other"
    other.mkdir()
    _, from_flag = _ingest(other, tmp_path, "--min-importance", "0", env={"MEMVAULT_INGEST_MIN_IMPORTANCE": "0.5"})
    assert sorted(from_flag) == sorted(ALL)
    third = tmp_path / "third"
    third.mkdir()
    _, from_file = _ingest(third, tmp_path)
    assert sorted(from_file) == sorted(["I'm a data engineer based in Lisbon.", "The staging database is called db2."])


@pytest.mark.parametrize(("args", "env", "config", "names"), [
    (["--min-importance", "2"], {}, "", "--min-importance"),
    (["--max-per-turn", "-1"], {}, "", "--max-per-turn"),
    ([], {"MEMVAULT_INGEST_MIN_IMPORTANCE": "high"}, "", "MEMVAULT_INGEST_MIN_IMPORTANCE"),
    ([], {"MEMVAULT_INGEST_MIN_IMPORTANCE": "1.5"}, "", "MEMVAULT_INGEST_MIN_IMPORTANCE"),
    ([], {}, "[ingest]\nmax_per_turn = -2\n", "config.toml"),
    ([], {}, "[ingest]\nmin_importance = \"all\"\n", "config.toml"),
])
def test_a_bad_setting_is_one_line_exit_2_and_nothing_is_written(
        vault: Path, tmp_path: Path, memvault_env: Path, args: list[str], env: dict[str, str], config: str,
        names: str) -> None:
    if config:
        (memvault_env / "config.toml").write_text(config, encoding="utf-8")
    result = CliRunner().invoke(cli, ["--vault", str(vault), "ingest", str(_transcript(tmp_path)), *args], env=env)
    assert result.exit_code == 2, result.output
    assert names in result.output and "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if line.startswith("Error")]) == 1
    assert not list(vault.rglob("*.md"))


def _draft(text: str, type_: str = SEMANTIC, topics: tuple[str, ...] = (), segment: str = "turn",
           block: str = "t1") -> FactDraft:
    return FactDraft(id=text, text=text, type=type_, segment=segment, block_id=block, topics=topics)


def test_the_score_is_how_long_the_kind_stays_true_halved_when_it_names_nothing() -> None:
    assert importance(_draft("I'm a nurse in Leeds.", IDENTITY, ("identity",))) == 1.0
    assert importance(_draft("I prefer tabs over spaces.", topics=("preference",))) == 0.75
    assert importance(_draft("We decided to use Postgres.", topics=("decision",))) == 0.75
    assert importance(_draft("I'll renew the certificate tomorrow.", PROSPECTIVE, ("plan",))) == 0.5
    assert importance(_draft("I love that!", topics=("preference",))) == 0.375
    assert importance(_draft("I really love it so much.", topics=("preference",))) == 0.375
    assert importance(_draft("It is this.", topics=("remembered",))) == 1.0  # asked to be remembered
    assert importance(_draft("The user plans a trip to Oslo.", PROSPECTIVE)) == 0.5  # the llm's: by its type
    assert stands_alone("I love this series.") and not stands_alone("We don't like them at all")


def test_select_keeps_the_digest_and_breaks_ties_by_order() -> None:
    digest = _draft("On Monday the user began with a question.", segment="digest", block=None)  # type: ignore[arg-type]
    a = _draft("I prefer tea to coffee.", topics=("preference",))
    b = _draft("I prefer vim to emacs.", topics=("preference",))
    c = _draft("I love it.", topics=("preference",), block="t3")
    assert select([digest, a, b, c], 1.0, 0) == [digest]
    assert select([digest, a, b, c], 0.0, 1) == [digest, a, c]
    assert select([digest, a, b, c], 0.0, 0) == [digest, a, b, c]


def test_a_session_read_again_gets_the_setting_then_in_force(vault: Path, tmp_path: Path) -> None:
    _, before = _ingest(vault, tmp_path)
    assert sorted(before) == sorted(ALL)
    grown = [*TURNS, "Thanks.", "I'm a keen cyclist."]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps({"role": "user" if i % 2 == 0 else "assistant", "content": text}) + "\n"
                            for i, text in enumerate(grown)), encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(cli, ["--vault", str(vault), "ingest", str(path), "--json", "--min-importance", "1"])
    assert result.exit_code == 0, result.output
    note = json.loads(result.output.splitlines()[-1])["path"]
    listed = runner.invoke(cli, ["--vault", str(vault), "facts", note, "--json"])
    facts = [json.loads(line) for line in listed.output.splitlines()]
    assert sorted(f["text"] for f in facts if f["segment"] != "digest") == sorted(
        ["I'm a data engineer based in Lisbon.", "The staging database is called db2.", "I'm a keen cyclist."])
