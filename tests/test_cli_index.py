"""CLI: sync, search, show, links, backlinks, stats; errors and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli
from memvault.store.queries.search import SearchQuery


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def indexed(vault: Path, runner: CliRunner) -> Path:
    write(vault, "Projects/Alpha.md", "---\ntags: [project]\naliases: [A]\n---\n# Alpha\nAlpha retries with backoff. See [[Beta]] and [[Missing]].\n")
    write(vault, "Beta.md", "Beta is linked from [[Alpha|the alpha]].\n#ops\n")
    r = runner.invoke(cli, ["--vault", str(vault), "sync"])
    assert r.exit_code == 0, r.output
    return vault


def run(runner: CliRunner, vault: Path, *args: str):
    return runner.invoke(cli, ["--vault", str(vault), *args])


def test_sync_summary_and_second_run(indexed: Path, runner: CliRunner) -> None:
    r = run(runner, indexed, "sync")
    assert r.exit_code == 0 and "nothing changed" in r.output
    r = run(runner, indexed, "sync", "--json")
    data = json.loads(r.output)
    assert data["added"] == 0 and data["updated"] == 0 and "seconds" in data


def test_sync_first_run_summary_line(vault: Path, runner: CliRunner) -> None:
    write(vault, "x.md", "x")
    r = run(runner, vault, "sync")
    assert r.exit_code == 0
    assert "added 1, updated 0, moved 0, deleted 0, skipped 0, errors 0" in r.output


def test_search_human_and_json(indexed: Path, runner: CliRunner) -> None:
    r = run(runner, indexed, "search", "backoff")
    assert r.exit_code == 0 and "Alpha" in r.output and "**backoff**" in r.output
    r = run(runner, indexed, "search", "backoff", "--json")
    lines = [json.loads(line) for line in r.output.splitlines()]
    assert len(lines) == 1
    hit = lines[0]
    assert set(hit) == {"id", "title", "type", "path", "uri", "score", "snippet", "passage"}
    assert "Alpha retries with backoff." in hit["passage"]  # the plain text of the matching passage
    assert hit["path"] == "Projects/Alpha.md" and hit["type"] == "note"
    assert hit["uri"] == "obsidian://open?vault=vault&file=Projects%2FAlpha.md"


def test_search_passages_only_when_asked(indexed: Path) -> None:
    """People read the snippet: the human output asks without the passage, JSON with it."""
    with opened(indexed) as store:
        asked = store.search(SearchQuery("backoff", mode="keyword")).hits
        bare = store.search(SearchQuery("backoff", mode="keyword", passages=False)).hits
    assert asked[0].passage and "Alpha retries with backoff." in asked[0].passage
    assert [h.passage for h in bare] == [None]
    assert [(h.id, h.snippet, h.uri) for h in bare] == [(h.id, h.snippet, h.uri) for h in asked]


def test_search_filters_and_limit(indexed: Path, runner: CliRunner) -> None:
    r = run(runner, indexed, "search", "alpha", "--json", "--tag", "ops")
    assert [json.loads(x)["path"] for x in r.output.splitlines()] == ["Beta.md"]
    r = run(runner, indexed, "search", "alpha", "--json", "--path", "Projects/*")
    assert [json.loads(x)["path"] for x in r.output.splitlines()] == ["Projects/Alpha.md"]
    r = run(runner, indexed, "search", "alpha", "--json", "-n", "1")
    assert len(r.output.splitlines()) == 1


@pytest.mark.parametrize("query", ["status: done", "retry OR", '"unbalanced', "NEAR(", "*", "🙂", "!!!"])
def test_search_odd_queries_exit_zero(indexed: Path, runner: CliRunner, query: str) -> None:
    r = run(runner, indexed, "search", query)
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("query", [[""], ["  ", "\t"]])
def test_an_empty_query_is_a_usage_error(indexed: Path, runner: CliRunner, query: list[str]) -> None:
    r = run(runner, indexed, "search", *query)
    assert r.exit_code == 2 and "QUERY is empty" in r.output and "Traceback" not in r.output


def test_raw_syntax_error_is_usage_error(indexed: Path, runner: CliRunner) -> None:
    r = run(runner, indexed, "search", "--raw", '"unbalanced')
    assert r.exit_code == 2
    assert "invalid FTS5 query" in r.output and "Traceback" not in r.output
    r = run(runner, indexed, "search", "--raw", "alph*", "--json")
    assert r.exit_code == 0 and len(r.output.splitlines()) == 2


def test_show_by_path_and_id(indexed: Path, runner: CliRunner) -> None:
    r = run(runner, indexed, "show", "Projects/Alpha", "--json")
    data = json.loads(r.output)
    assert data["title"] == "Alpha" and data["tags"] == ["project"]
    assert data["metadata"]["aliases"] == ["A"]
    r2 = run(runner, indexed, "show", data["id"])
    assert r2.exit_code == 0 and "Alpha retries" in r2.output


def test_show_unknown_is_runtime_error(indexed: Path, runner: CliRunner) -> None:
    r = run(runner, indexed, "show", "nope")
    assert r.exit_code == 1 and "no note or trace matches 'nope'" in r.output


def test_links_and_backlinks(indexed: Path, runner: CliRunner) -> None:
    r = run(runner, indexed, "links", "Projects/Alpha.md", "--json")
    out = [json.loads(x) for x in r.output.splitlines()]
    assert [(e["target"], e["status"]) for e in out] == [("Beta", "resolved"), ("Missing", "unresolved")]
    r = run(runner, indexed, "backlinks", "Beta.md", "--json")
    out = [json.loads(x) for x in r.output.splitlines()]
    assert [e["source_path"] for e in out] == ["Projects/Alpha.md"]
    r = run(runner, indexed, "backlinks", "Projects/Alpha.md")
    assert "Beta.md" in r.output


def test_refs_by_absolute_and_working_dir_paths(indexed: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    r = run(runner, indexed, "show", str(indexed / "Beta.md"), "--json")
    assert r.exit_code == 0 and json.loads(r.output)["path"] == "Beta.md"
    monkeypatch.chdir(indexed.parent)
    r = run(runner, indexed, "links", f"{indexed.name}/Projects/Alpha.md", "--json")
    assert r.exit_code == 0 and len(r.output.splitlines()) == 2
    outside = indexed.parent / "Beta.md"
    outside.write_text("not in the vault", encoding="utf-8")
    r = run(runner, indexed, "show", str(outside))
    assert r.exit_code == 1 and "no note or trace matches" in r.output


def test_backlinks_of_an_attachment(vault: Path, runner: CliRunner) -> None:
    write(vault, "img/Pic.png", b"\x89PNG")
    write(vault, "A.md", "![[Pic.png|200]] and [[pic.png]]")
    write(vault, "B.md", "no image here")
    assert run(runner, vault, "sync").exit_code == 0
    r = run(runner, vault, "backlinks", "img/Pic.png", "--json")
    assert r.exit_code == 0, r.output
    assert sorted((e["source_path"], e["kind"]) for e in map(json.loads, r.output.splitlines())) == [("A.md", "embed"), ("A.md", "link")]
    r = run(runner, vault, "backlinks", "img/missing.png")
    assert r.exit_code == 1


def test_progress_bar_on_a_terminal_only(vault: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(60):
        write(vault, f"n{i}.md", f"note {i}")
    r = run(runner, vault, "sync", "--no-embed")
    assert r.exit_code == 0 and "Indexing" not in r.stderr  # a pipe: quiet
    import memvault.cli.index_cmds as cmds

    monkeypatch.setattr(cmds, "stderr_is_tty", lambda: True)
    for i in range(60):
        write(vault, f"n{i}.md", f"note {i} edited")
    r = run(runner, vault, "sync", "--no-embed")
    assert r.exit_code == 0 and "Indexing" in r.stderr and "updated 60" in r.stdout


def test_explain_in_keyword_mode_prints_rank_and_bm25(indexed: Path, runner: CliRunner) -> None:
    r = run(runner, indexed, "search", "backoff", "--mode", "keyword", "--explain")
    assert r.exit_code == 0, r.output
    assert "keyword #1 (all) bm25 " in r.output and "keyword mode: BM25 order; graph, recency, strength not applied" in r.output
    assert "fused" not in r.output


def test_search_words_need_no_quotes(indexed: Path, runner: CliRunner) -> None:
    quoted = run(runner, indexed, "search", "retries backoff", "--json")
    unquoted = run(runner, indexed, "search", "retries", "backoff", "--json")
    assert unquoted.exit_code == 0 and unquoted.output == quoted.output and quoted.output


@pytest.mark.parametrize("tag", ["", "#", "  ", "/"])
def test_empty_tag_filter_is_usage_error(indexed: Path, runner: CliRunner, tag: str) -> None:
    r = run(runner, indexed, "search", "alpha", "--tag", tag)
    assert r.exit_code == 2 and "--tag" in r.output and "is not a tag" in r.output


def test_unknown_type_filter_names_note_too(indexed: Path, runner: CliRunner) -> None:
    r = run(runner, indexed, "search", "alpha", "--type", "bogus")
    assert r.exit_code == 2 and "'bogus'" in r.output and "'note'" in r.output and "Traceback" not in r.output
    assert run(runner, indexed, "search", "alpha", "--type", "note").exit_code == 0
    assert run(runner, indexed, "search", "alpha", "--type", "preference").exit_code == 0


def test_stats(indexed: Path, runner: CliRunner) -> None:
    r = run(runner, indexed, "stats", "--json")
    data = json.loads(r.output)
    assert data["notes"] == 2 and data["links_unresolved"] == 1 and data["parse_errors"] == 0
    assert data["index_bytes"] > 0
    r = run(runner, indexed, "stats")
    assert "links unresolved:" in r.output


def test_missing_vault_is_usage_error(tmp_path: Path, runner: CliRunner) -> None:
    r = runner.invoke(cli, ["--vault", str(tmp_path / "nope"), "search", "x"])
    assert r.exit_code == 2 and "does not exist" in r.output and "Traceback" not in r.output


def test_no_vault_given_is_usage_error(runner: CliRunner) -> None:
    r = runner.invoke(cli, ["search", "x"])
    assert r.exit_code == 2 and "no vault given" in r.output


def test_vault_from_environment(indexed: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_VAULT", str(indexed))
    r = runner.invoke(cli, ["search", "backoff", "--json"])
    assert r.exit_code == 0 and len(r.output.splitlines()) == 1


def test_vault_from_config_file_and_flag_beats_env(
    indexed: Path, tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch, memvault_env: Path
) -> None:
    (memvault_env / "config.toml").write_text(f'vault = "{indexed}"\n', encoding="utf-8")
    assert runner.invoke(cli, ["search", "backoff"]).exit_code == 0
    monkeypatch.setenv("MEMVAULT_VAULT", str(tmp_path / "missing"))
    assert runner.invoke(cli, ["search", "backoff"]).exit_code == 2
    assert runner.invoke(cli, ["--vault", str(indexed), "search", "backoff"]).exit_code == 0


def test_bad_config_is_usage_error(vault: Path, runner: CliRunner, memvault_env: Path) -> None:
    (memvault_env / "config.toml").write_text("debounce_ms = 'soon'\n", encoding="utf-8")
    r = run(runner, vault, "sync")
    assert r.exit_code == 2 and "debounce_ms must be an integer" in r.output and "config.toml" in r.output
    (memvault_env / "config.toml").write_text("nonsense = 1\n", encoding="utf-8")
    r = run(runner, vault, "sync")
    assert r.exit_code == 2 and "unknown key 'nonsense'" in r.output
    (memvault_env / "config.toml").write_text("[[[", encoding="utf-8")
    r = run(runner, vault, "sync")
    assert r.exit_code == 2 and "not valid TOML" in r.output


def test_vault_path_that_is_a_file_or_unreadable_is_usage_error(tmp_path: Path, runner: CliRunner) -> None:
    f = tmp_path / "notes.md"
    f.write_text("x", encoding="utf-8")
    r = runner.invoke(cli, ["--vault", str(f), "sync"])
    assert r.exit_code == 2 and str(f) in r.output and "is a file" in r.output and "Traceback" not in r.output
    import os

    if os.geteuid() != 0:  # root reads any folder
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o000)
        r = runner.invoke(cli, ["--vault", str(locked), "sync"])
        assert r.exit_code == 2 and "is not readable" in r.output


def test_data_dir_inside_the_vault_is_refused(vault: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    write(vault, "a.md", "alpha")
    monkeypatch.setenv("MEMVAULT_HOME", str(vault / "mvhome"))
    r = run(runner, vault, "sync")
    assert r.exit_code == 2 and "is inside the vault" in r.output and "MEMVAULT_HOME" in r.output
    assert not (vault / "mvhome").exists()


def test_data_dirs_memvault_creates_are_owner_only(vault: Path, runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "fresh" / "home"
    monkeypatch.setenv("MEMVAULT_HOME", str(home))
    write(vault, "a.md", "alpha")
    assert run(runner, vault, "sync").exit_code == 0
    (index,) = home.glob("vaults/*/index.db")
    for folder in (home.parent, home, home / "vaults", index.parent):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    assert index.stat().st_mode & 0o777 == 0o600


def test_search_before_sync_is_runtime_error(vault: Path, runner: CliRunner) -> None:
    r = run(runner, vault, "search", "x")
    assert r.exit_code == 1 and "no index yet" in r.output and "sync" in r.output


def test_reading_never_writes_the_vault(indexed: Path, runner: CliRunner) -> None:
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in indexed.rglob("*") if p.is_file()}
    for args in (["sync"], ["search", "alpha"], ["show", "Beta.md"], ["links", "Beta.md"], ["stats"]):
        assert run(runner, indexed, *args).exit_code == 0
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in indexed.rglob("*") if p.is_file()}
    assert before == after


def test_every_command_is_registered_for_lazy_loading() -> None:
    import importlib

    from memvault.cli.main import COMMAND_MODULES

    for module in set(COMMAND_MODULES.values()):
        importlib.import_module(f"memvault.cli.{module}")
    assert set(cli.commands) == set(COMMAND_MODULES)
    r = CliRunner().invoke(cli, ["--help"])
    assert r.exit_code == 0 and all(name in r.output for name in COMMAND_MODULES)


def test_config_lists_keys_with_origin(memvault_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (memvault_env / "config.toml").write_text('debounce_ms = 500\n[llm]\nmodel = "qwen"\n', encoding="utf-8")
    monkeypatch.setenv("MEMVAULT_RESCAN_INTERVAL", "60")
    r = CliRunner().invoke(cli, ["config", "--json"])
    assert r.exit_code == 0, r.output
    rows = {row["key"]: row for row in map(json.loads, r.stdout.splitlines())}
    assert rows["debounce_ms"]["value"] == 500 and rows["debounce_ms"]["origin"] == "file"
    assert rows["llm.model"]["value"] == "qwen"
    assert rows["rescan_interval"]["value"] == 60 and rows["rescan_interval"]["origin"] == "env"
    assert rows["memory_folder"]["origin"] == "default" and rows["memory_folder"]["doc"]
    r = CliRunner().invoke(cli, ["--vault", "/some/where", "config"])
    assert "vault = '/some/where'   [flag]" in r.output and "config file:" in r.output
