"""CLI: source add/remove/list, facts, and facts in stats, history and search.

The byte-exact golden files for ``source add`` / ``source remove`` are in
``tests/golden/facts/sources/<case>/``: ``before.md`` is written into a vault,
``added.md`` must be the note after ``source add``, ``removed.md`` after
``source remove``. Regenerate (then review every byte, e.g. with ``od -c``)
with ``MEMVAULT_UPDATE_GOLDEN=1 pytest tests/test_sources_cli.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import write

from memvault.cli.main import cli

GOLDEN = Path(__file__).parent / "golden" / "facts" / "sources"
UPDATE = os.environ.get("MEMVAULT_UPDATE_GOLDEN") == "1"

BOM = b"\xef\xbb\xbf"
#: case name -> the note before ``source add``.
MARK_CASES: dict[str, bytes] = {
    "lf": b"---\ntitle: Road map\ntags: [project]\n---\n# Road map\n- Ship memory sources in February\n",
    "crlf": b"---\r\ntitle: Road map\r\ntags: [project]\r\n---\r\n# Road map\r\n- Ship memory sources in February\r\n",
    "bom": BOM + b"---\nstatus: active\n---\n- Ship memory sources in February\n",
    "bom_crlf_no_frontmatter": BOM + b"# Road map\r\n- Ship memory sources in February\r\n",
    "no_frontmatter": b"# Road map\n\n- Ship memory sources in February\n",
    "no_final_newline": b"---\nstatus: active\n---\n- Ship memory sources in February",
    "comments": (
        b"---\n# how this note is organised\ntitle: Road map   # shown in lists\n\naliases:\n  - Plan\n"
        b"  - Roadmap\n# trailing comment\n---\n- Ship memory sources in February\n"
    ),
    "empty_file": b"",
    "memory_source_key": b"---\nmemory_source: true\nowner: me\n---\n- Ship memory sources in February\n",
    # A person's "memory_source: false" is no mark: remove leaves it.
    "memory_source_false": b"---\nmemory_source: false\nowner: me\n---\n- Ship memory sources in February\n",
    # A template's empty "memory:" stays as written; the mark is memory_source.
    "empty_memory_key": b"---\nmemory:\nowner: me\n---\n- Ship memory sources in February\n",
    "empty_memory_key_crlf": b"---\r\nmemory: ''\r\n---\r\n- Ship memory sources in February\r\n",
}
#: The marker key ``source add`` writes, when it is not ``memory: source``.
MARKER_WRITTEN = {"empty_memory_key": b"memory_source: true", "empty_memory_key_crlf": b"memory_source: true"}


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    # Embedding (another part of `sync`) is not what these tests are about.
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")
    return CliRunner()


def run(runner: CliRunner, vault: Path, *args: str):
    return runner.invoke(cli, ["--vault", str(vault), *args])


def lines_json(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


@pytest.mark.parametrize("case", sorted(MARK_CASES))
def test_source_add_and_remove_are_byte_exact(case: str, vault: Path, runner: CliRunner) -> None:
    before = MARK_CASES[case]
    note = write(vault, "Road map.md", before)
    added = run(runner, vault, "source", "add", "Road map.md")
    assert added.exit_code == 0, added.output
    after_add = note.read_bytes()
    removed = run(runner, vault, "source", "remove", "Road map.md")
    assert removed.exit_code == 0, removed.output
    after_remove = note.read_bytes()
    folder = GOLDEN / case
    if UPDATE:
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in (("before.md", before), ("added.md", after_add), ("removed.md", after_remove)):
            (folder / name).write_bytes(data)
    assert (folder / "before.md").read_bytes() == before
    assert after_add == (folder / "added.md").read_bytes()
    assert after_remove == (folder / "removed.md").read_bytes()
    if case != "memory_source_key":
        assert after_remove == before  # add then remove gives back every byte
        assert MARKER_WRITTEN.get(case, b"memory: source") in after_add
    else:
        assert after_add == before  # already marked: not rewritten
    assert after_add.startswith(BOM) == before.startswith(BOM)
    if b"\r\n" in before:
        assert after_add.count(b"\n") == after_add.count(b"\r\n")


def test_source_add_extracts_at_once_and_is_idempotent(vault: Path, runner: CliRunner) -> None:
    write(vault, "Road map.md", "- Ship memory sources in February\n- Write the benchmark for facts\n")
    write(vault, "About me.md", "- Prefers dark mode in every editor\n")
    r = run(runner, vault, "source", "add", "Road map.md", str(vault / "About me.md"))
    assert r.exit_code == 0, r.output
    assert "Marked Road map.md as a memory source: 2 facts" in r.output
    assert "Marked About me.md as a memory source: 1 facts" in r.output
    r = run(runner, vault, "source", "add", "Road map", "--json")  # ".md" may be left out
    assert lines_json(r.output) == [
        {"path": "Road map.md", "action": "already", "marks": ["frontmatter"], "facts": 2, "message": ""}
    ]
    r = run(runner, vault, "search", "benchmark", "--what", "facts", "--json")
    assert [h["title"] for h in lines_json(r.output)] == ["Road map"]


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("/etc/hosts.md", "outside the vault"),
        ("../elsewhere.md", "outside the vault"),
        ("Missing.md", "no such note"),
        ("image.png", "not a Markdown note"),
        (".obsidian/x.md", "hidden folder"),
    ],
)
def test_source_add_rejects_bad_paths_with_exit_2(vault: Path, runner: CliRunner, arg: str, message: str) -> None:
    write(vault, "image.png", b"\x89PNG")
    write(vault, ".obsidian/x.md", "x")
    r = run(runner, vault, "source", "add", arg)
    assert r.exit_code == 2, r.output
    assert message in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_source_add_refuses_memory_notes_and_broken_front_matter(vault: Path, runner: CliRunner) -> None:
    write(vault, "Mem.md", "---\nmemory: semantic\n---\nA memory.\n")
    write(vault, "Broken.md", "---\ntitle: [unclosed\n---\nBody.\n")
    r = run(runner, vault, "source", "add", "Mem.md")
    assert r.exit_code == 1 and "memory notes are not memory sources" in r.output
    r = run(runner, vault, "source", "add", "Broken.md")
    assert r.exit_code == 1 and "fix the front-matter first" in r.output
    assert (vault / "Broken.md").read_text() == "---\ntitle: [unclosed\n---\nBody.\n"


def test_source_remove_cases(vault: Path, runner: CliRunner, memvault_env: Path) -> None:
    (memvault_env / "config.toml").write_text('sources = ["Projects/**"]\n', "utf-8")
    write(vault, "Tagged.md", "#memory/source\n- A fact in a tagged note\n")
    write(vault, "Projects/Globbed.md", "- A fact in a globbed note\n")
    write(vault, "Both.md", "---\nmemory: source\n---\n#memory/source\n- A fact in a note marked twice\n")
    write(vault, "Plain.md", "- Not a source at all here\n")
    assert run(runner, vault, "sync").exit_code == 0
    before = {p: (vault / p).read_bytes() for p in ("Tagged.md", "Projects/Globbed.md")}
    r = run(runner, vault, "source", "remove", "Tagged.md", "Projects/Globbed.md", "Plain.md")
    assert r.exit_code == 1
    assert "by its tag #memory/source, not by its front-matter; remove the #memory/source tag" in r.output
    assert "by its config glob 'Projects/**'" in r.output
    assert "Plain.md is not a memory source; nothing to do" in r.output
    assert {p: (vault / p).read_bytes() for p in before} == before
    r = run(runner, vault, "source", "remove", "Both.md", "--json")
    assert r.exit_code == 0
    (row,) = lines_json(r.output.split("warning:")[0])
    assert (row["action"], row["marks"], row["facts"]) == ("still-marked", ["tag"], 1)
    assert b"memory: source" not in (vault / "Both.md").read_bytes()


def test_source_remove_deletes_only_marking_keys(vault: Path, runner: CliRunner) -> None:
    both = b"---\nmemory: source\nmemory_source: false\nowner: me\n---\n- A fact in a marked note\n"
    note = write(vault, "Both.md", both)
    r = run(runner, vault, "source", "remove", "Both.md")
    assert r.exit_code == 0, r.output
    assert note.read_bytes() == b"---\nmemory_source: false\nowner: me\n---\n- A fact in a marked note\n"
    yes = write(vault, "Yes.md", b"---\nmemory_source: yes\nmemory: semantic-ish\n---\n- A fact in a marked note\n")
    r = run(runner, vault, "source", "remove", "Yes.md")
    assert r.exit_code == 0, r.output
    assert yes.read_bytes() == b"---\nmemory: semantic-ish\n---\n- A fact in a marked note\n"


def test_source_add_and_remove_refuse_a_marker_key_written_twice(vault: Path, runner: CliRunner) -> None:
    # YAML keeps the last "memory"; a line edit would touch the first.
    text = b"---\nmemory: semantic\nmemory: source\n---\n- A fact in a marked note\n"
    note = write(vault, "Twice.md", text)
    r = run(runner, vault, "source", "remove", "Twice.md")
    assert r.exit_code == 1 and "more than once" in r.output
    assert note.read_bytes() == text
    text2 = b"---\nmemory_source: false\nmemory_source: no\n---\n- A fact in a plain note\n"
    note2 = write(vault, "Twice2.md", text2)
    r = run(runner, vault, "source", "add", "Twice2.md")
    assert r.exit_code == 1 and "more than once" in r.output
    assert note2.read_bytes() == text2


def test_source_add_refuses_a_non_type_memory_value_without_calling_it_a_memory_note(
    vault: Path, runner: CliRunner
) -> None:
    write(vault, "False.md", "---\nmemory: false\n---\n- A fact in a plain note\n")
    r = run(runner, vault, "source", "add", "False.md")
    assert r.exit_code == 1 and "change or remove that key first" in r.output
    assert (vault / "False.md").read_text() == "---\nmemory: false\n---\n- A fact in a plain note\n"


def test_source_list(vault: Path, runner: CliRunner) -> None:
    r = run(runner, vault, "sync")
    r = run(runner, vault, "source", "list")
    assert r.exit_code == 0 and "No memory sources yet" in r.output
    write(vault, "About me.md", "---\nmemory: source\n---\n- password: hunter2 for the router at home\n- Prefers dark mode in every editor\n")
    write(vault, "Tagged.md", "#memory/source\n- A fact in a tagged note\n")
    run(runner, vault, "sync")
    r = run(runner, vault, "source", "list")
    assert r.output.splitlines() == [
        "About me.md  (frontmatter; 2 facts, 1 secrets redacted)",  # the password's line keeps its other words
        "Tagged.md  (tag; 1 facts)",
    ]
    rows = lines_json(run(runner, vault, "source", "list", "--json").output)
    assert [(r["path"], r["marks"], r["facts"], r["redacted"], r["extractor"]) for r in rows] == [
        ("About me.md", ["frontmatter"], 2, 1, "default"), ("Tagged.md", ["tag"], 1, 0, "default"),
    ]


def test_facts_command_human_json_and_all(vault: Path, runner: CliRunner) -> None:
    p = write(vault, "About me.md", "---\nmemory: source\n---\n## Preferences\n- Prefers dark mode in every editor ^dark\n- Drinks coffee black, no sugar\n- [ ] Renew the passport soon 📅 2026-01-31\n")
    run(runner, vault, "sync")
    r = run(runner, vault, "facts", "About me.md")
    assert r.exit_code == 0
    out = r.output.splitlines()
    assert out[0].endswith("identity    L5        Preferences ^dark") and out[1] == "    Prefers dark mode in every editor"
    assert out[4].endswith("prospective L7        Preferences  due 2026-01-31")
    rows = lines_json(run(runner, vault, "facts", "About me.md", "--json").output)
    assert rows[0]["anchor"] == "^dark" and rows[0]["source_uri"] == "vault://About%20me.md#^dark"
    assert rows[0]["lines"] == [5, 5] and rows[0]["status"] == "active" and rows[2]["due"] == "2026-01-31"
    assert set(rows[0]) >= {"id", "type", "text", "heading_path", "block_id", "lines", "source_uri", "status", "tags", "links"}
    p.write_text(p.read_text().replace("no sugar", "two sugars"), "utf-8")
    run(runner, vault, "sync")
    assert len(lines_json(run(runner, vault, "facts", "About me.md", "--json").output)) == 3
    all_rows = lines_json(run(runner, vault, "facts", "About me.md", "--all", "--json").output)
    assert [(r["status"], r["reason"]) for r in all_rows if r["status"] != "active"] == [("superseded", "changed in source")]
    r = run(runner, vault, "facts", "About me.md", "--all")
    assert "(superseded: changed in source)" in r.output
    # history of the new fact shows the old one
    new_id = [r["id"] for r in all_rows if "two sugars" in r["text"]][0]
    r = run(runner, vault, "history", new_id)
    assert r.exit_code == 0 and "superseded (changed in source)" in r.output and "no sugar" in r.output


def test_facts_command_errors(vault: Path, runner: CliRunner) -> None:
    r = run(runner, vault, "facts", "Nothing.md")
    assert r.exit_code == 1 and "has no index yet" in r.output
    write(vault, "Plain.md", "- Not a source at all here\n")
    run(runner, vault, "sync")
    r = run(runner, vault, "facts", "Plain.md")
    assert r.exit_code == 0 and "has no facts" in r.output
    r = run(runner, vault, "facts", "Nothing.md")
    assert r.exit_code == 1 and "not in the index" in r.output
    r = run(runner, vault, "facts", "/etc/x.md")
    assert r.exit_code == 2 and "outside the vault" in r.output


def test_stats_show_facts_and_redacted_secrets(vault: Path, runner: CliRunner) -> None:
    write(vault, "About me.md", "---\nmemory: source\n---\n- My token: sk-abcdefghijklmnopqrstuvwx1234 for scripts\n- Prefers dark mode in every editor\n")
    run(runner, vault, "sync")
    data = json.loads(run(runner, vault, "stats", "--json").output)
    assert (data["facts"], data["fact_sources"], data["secrets_redacted"]) == (2, 1, 1)
    r = run(runner, vault, "stats")
    assert "secrets redacted:    1" in r.output and "facts:               2" in r.output
    r = run(runner, vault, "search", "token", "--what", "facts", "--json")
    assert "sk-" not in r.output and "[redacted]" in r.output


def test_stats_count_every_secret_of_a_line_once(vault: Path, runner: CliRunner) -> None:
    # The audit's repro: four lines that join into one sentence, a password
    # beside a key; and a password beside a token in one list item.
    key = "sk-proj-" + "abcdefghijklmnopqrstuvwxyz012345"
    token = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    write(vault, "Servers.md", (
        f"---\nmemory: source\n---\nStaging server\nuser: deploy\npassword: hunter2horse\nkey: {key}\n\n"
        f"- password: hunter2horse, api token {token}\n"
    ))
    run(runner, vault, "sync")
    data = json.loads(run(runner, vault, "stats", "--json").output)
    assert data["secrets_redacted"] == 4
    out = run(runner, vault, "facts", "Servers.md", "--json").output
    assert "hunter2horse" not in out and key not in out and token not in out
    assert "password: [redacted] key: [redacted]" in out


def test_source_list_follows_a_changed_sources_glob(vault: Path, runner: CliRunner, memvault_env: Path) -> None:
    write(vault, "Daily/2025-01-10.md", "#memory/source\n- Went to the market in the morning\n")
    write(vault, "Daily/2025-01-11.md", "- Went to the library in the evening\n")
    run(runner, vault, "sync")
    rows = lines_json(run(runner, vault, "source", "list", "--json").output)
    assert [(r["path"], r["marks"]) for r in rows] == [("Daily/2025-01-10.md", ["tag"])]
    (memvault_env / "config.toml").write_text('sources = ["Daily/**"]\n', "utf-8")
    rows = lines_json(run(runner, vault, "source", "list", "--json").output)
    assert [(r["path"], r["marks"], r["facts"]) for r in rows] == [
        ("Daily/2025-01-10.md", ["tag", "glob"], 1), ("Daily/2025-01-11.md", ["glob"], 1),
    ]
    (memvault_env / "config.toml").write_text("sources = []\n", "utf-8")
    rows = lines_json(run(runner, vault, "source", "list", "--json").output)
    assert [(r["path"], r["marks"], r["facts"]) for r in rows] == [("Daily/2025-01-10.md", ["tag"], 1)]
