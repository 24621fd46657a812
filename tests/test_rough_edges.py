"""Rough edges (issue 19): every odd input ends in one clear line naming the
file or argument, with the right exit code (1 runtime, 2 usage), no
traceback and nothing half-written; or the input is understood."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import write

from memvault.cli.main import cli


@pytest.fixture(autouse=True)
def no_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")


def run(vault: Path, *args: str, input: str | bytes | None = None) -> Result:
    """One CLI command on ``vault``, as a person types it."""
    return CliRunner().invoke(cli, ["--vault", str(vault), *args], input=input)


def one_error_line(result: Result, code: int, *names: str) -> str:
    """Check ``result`` failed with ``code`` and exactly one stderr line that
    names each of ``names`` (and no traceback); return that line."""
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "Traceback" not in result.output
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


@pytest.fixture
def indexed(vault: Path) -> Path:
    """A vault with an index and one memory."""
    write(vault, "a.md", "# A note\n")
    assert run(vault, "add", "Prefers dark mode in every editor", "--tag", "ui").exit_code == 0
    return vault


# -- export ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["markdown", "obsidian"])
def test_export_notes_onto_an_existing_file_is_a_usage_error(indexed: Path, tmp_path: Path, fmt: str) -> None:
    existing = tmp_path / "existing"
    existing.write_text("mine\n")
    one_error_line(run(indexed, "export", "--format", fmt, "-o", str(existing)), 2, str(existing))
    assert existing.read_text() == "mine\n"


@pytest.mark.parametrize(("fmt", "output"), [("sqlite", "/proc/x/"), ("csv", "/proc/x.csv"), ("json", "/proc/x.json"),
                                             ("markdown", "/proc/x")])
def test_export_to_an_unwritable_place_is_one_line(indexed: Path, fmt: str, output: str) -> None:
    one_error_line(run(indexed, "export", "--format", fmt, "-o", output), 1, output.rstrip("/"))


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_export_of_one_file_onto_a_folder_is_a_usage_error(indexed: Path, tmp_path: Path, fmt: str) -> None:
    one_error_line(run(indexed, "export", "--format", fmt, "-o", str(tmp_path)), 2, str(tmp_path))


def test_a_failed_export_leaves_the_old_file_whole(indexed: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """An export that fails halfway (the disk fills up: a fault injected, as a
    real full disk cannot be had in a test) leaves neither half a file nor a
    temp file, and the previous export is still there."""
    import errno

    from memvault.store.flows import export as ex

    out = tmp_path / "out.csv"
    out.write_text("the previous export\n")

    def half_then_a_full_disk(stream: object, memories: object) -> int:
        stream.write("id,half")  # type: ignore[attr-defined]
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ex, "write_csv", half_then_a_full_disk)
    one_error_line(run(indexed, "export", "--format", "csv", "-o", str(out)), 1, str(out))
    assert out.read_text() == "the previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["out.csv"]


# -- import and ingest: the input checked before anything is written ----------------

MEM0 = '{"results": [{"id": "a1", "memory": "Likes green tea", "user_id": "bob"}]}\n'
MEM0_LINE = '{"id": "a1", "memory": "Likes green tea", "user_id": "bob"}\n'
ENTITY = '{"type": "entity", "name": "Café Lisboa", "entityType": "place", "observations": ["Open late"]}\n'


def nothing_written(vault: Path) -> None:
    """No memory, session or imported note in the vault."""
    assert sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*") if p.is_file()) == ["a.md"]


@pytest.mark.parametrize(("fmt", "text", "expected"), [
    ("mcp-memory", MEM0_LINE, "MCP memory file"),
    ("mcp-memory", MEM0, "MCP memory file"),
    ("chatgpt", MEM0, "ChatGPT export"),
    ("claude", MEM0, "Claude.ai export"),
    ("claude", '[{"mapping": {}, "title": "a ChatGPT one"}]', "Claude.ai export"),
    ("mem0", ENTITY, "mem0"),
    ("mem0", '[{"type": "entity", "name": "x"}]', "mem0"),
    ("markdown", MEM0, "Markdown"),
])
def test_a_file_of_another_format_is_refused_before_anything_is_written(vault: Path, tmp_path: Path, fmt: str,
                                                                        text: str, expected: str) -> None:
    write(vault, "a.md", "# A note\n")
    given = write(tmp_path, "given.json", text)
    one_error_line(run(vault, "import", fmt, str(given)), 1, str(given), expected)
    nothing_written(vault)


@pytest.mark.parametrize("fmt", ["chatgpt", "claude", "mem0", "mcp-memory", "csv", "json", "markdown"])
def test_a_binary_file_is_one_line(vault: Path, tmp_path: Path, fmt: str) -> None:
    write(vault, "a.md", "# A note\n")
    given = write(tmp_path, "given.bin", bytes(range(256)) * 40)
    one_error_line(run(vault, "import", fmt, str(given)), 1, str(given), "is a binary file")
    nothing_written(vault)


@pytest.mark.parametrize(("fmt", "name", "text"), [
    ("mem0", "mem0.json", MEM0.replace("green tea", "café crème")),
    ("mcp-memory", "memory.jsonl", ENTITY),
    ("csv", "rows.csv", "content,tags\nLikes café crème,drinks\n"),
])
def test_latin1_input_is_refused_not_imported_as_mojibake(vault: Path, tmp_path: Path, fmt: str, name: str,
                                                           text: str) -> None:
    write(vault, "a.md", "# A note\n")
    given = write(tmp_path, name, text.encode("latin-1"))
    line = one_error_line(run(vault, "import", fmt, str(given)), 1, str(given), "UTF-8")
    assert "0xE9" in line
    nothing_written(vault)
    # The check refuses only what is wrong: the same file in UTF-8 goes in.
    write(tmp_path, name, text)
    r = run(vault, "import", fmt, str(given))
    assert r.exit_code == 0 and "1 imported" in r.output, r.output


@pytest.mark.parametrize(("name", "data", "why"), [
    ("empty.jsonl", b"", "no conversation turns"),
    ("blank.jsonl", b"\n\n", "no conversation turns"),
    ("mem0.jsonl", MEM0_LINE.encode(), "no conversation turns"),
    ("binary.jsonl", bytes(range(256)) * 40, "is a binary file"),
    ("latin1.jsonl", '{"role": "user", "content": "un café"}\n'.encode("latin-1"), "UTF-8"),
])
def test_ingest_of_what_is_no_transcript_is_one_line_exit_1(vault: Path, tmp_path: Path, name: str,
                                                              data: bytes, why: str) -> None:
    write(vault, "a.md", "# A note\n")
    given = write(tmp_path, name, data)
    one_error_line(run(vault, "ingest", str(given)), 1, str(given), why)
    one_error_line(run(vault, "ingest", "-", input=data), 1, "<stdin>", why)
    nothing_written(vault)


# -- a vault never indexed: reading never writes -------------------------------------


@pytest.mark.parametrize("args", [
    ("history", "m-123456789abc"),
    ("history", "f-1234567890abcdef"),
    ("export",),
    ("export", "--format", "jsonl"),
])
def test_a_read_on_a_vault_never_indexed_says_so_and_creates_nothing(vault: Path, memvault_env: Path,
                                                                      args: tuple[str, ...]) -> None:
    write(vault, "a.md", "# A note\n")
    r = run(vault, *args)
    one_error_line(r, 1, "has no index yet", "sync")
    assert r.stdout == ""  # not the head of an export
    assert [p for p in memvault_env.rglob("*") if p.is_file() and p.name != "config.toml"] == []


# -- VS Code's mcp.json is JSONC ------------------------------------------------------

VSCODE_JSONC = """\
{
  // Servers for this machine; the token comes from an input.
  "inputs": [
    {"id": "tok", "type": "promptString", "description": "GitHub token, // not a comment"},
  ],
  "servers": {
    /* the reference memory server */
    "memory": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"], // pinned later
    },
  },
}
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home and XDG config dir, so no real client config is touched."""
    import sys

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setattr(sys, "platform", "linux")
    return home


def test_vscode_mcp_json_with_comments_is_read_and_its_comments_kept(vault: Path, home: Path) -> None:
    from memvault.cli.clients.jsonc import loads

    path = home / ".config" / "Code" / "User" / "mcp.json"
    path.parent.mkdir(parents=True)
    path.write_text(VSCODE_JSONC)
    r = run(vault, "mcp", "install", "--client", "vscode")
    assert r.exit_code == 0, r.output
    text = path.read_text()
    data = loads(text)
    assert set(data["servers"]) == {"memory", "memvault"}
    assert data["inputs"][0]["description"] == "GitHub token, // not a comment"
    for comment in ("// Servers for this machine", "/* the reference memory server */", "// pinned later"):
        assert comment in text
    assert "comments could not be kept" not in r.output
    # Uninstall takes out only memvault's entry: the file is as it was.
    r = run(vault, "mcp", "uninstall", "--client", "vscode")
    assert r.exit_code == 0, r.output
    assert loads(path.read_text()) == loads(VSCODE_JSONC)
    assert "// pinned later" in path.read_text() and "/* the reference memory server */" in path.read_text()


# -- tags and ids ---------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ("add", "Likes sparkling water", "--tag", "two words"),
    ("add", "Likes sparkling water", "--tag", "1984"),
    ("update", "{id}", "--tag", "a,b"),
    ("list", "--tag", "two words"),
    ("search", "dark mode", "--tag", "tag!"),
])
def test_a_tag_obsidian_would_not_read_is_a_usage_error(indexed: Path, args: tuple[str, ...]) -> None:
    memory = next(indexed.glob("Memory/*/*.md"))
    before = memory.read_text()
    ident = run(indexed, "list", "--json").stdout.split('"id": "')[1].split('"')[0]
    line = one_error_line(run(indexed, *(a.format(id=ident) for a in args)), 2, "--tag", repr(args[-1]))
    assert "is not a tag" in line
    assert memory.read_text() == before and len(list(indexed.glob("Memory/*/*.md"))) == 1


def test_an_imported_category_becomes_a_tag_obsidian_reads(vault: Path, tmp_path: Path) -> None:
    """An import adapts a tag rather than refusing the item or dropping it."""
    write(vault, "a.md", "# A note\n")
    given = write(tmp_path, "mem0.json", '[{"id": "a1", "memory": "Likes green tea", "categories": ["Food & Drink"]}]')
    assert run(vault, "import", "mem0", str(given)).exit_code == 0
    listed = run(vault, "list", "--tag", "Food-Drink", "--json")
    assert listed.exit_code == 0 and "Likes green tea" in listed.stdout


@pytest.mark.parametrize("command", ["forget", "restore", "history", "update"])
def test_an_unknown_fact_id_is_named_a_fact(indexed: Path, command: str) -> None:
    args = [command, "f-1234567890abcdef", *(["--content", "x"] if command == "update" else [])]
    line = one_error_line(run(indexed, *args), 1)
    assert line == "Error: no fact matches 'f-1234567890abcdef'"


# -- a huge argument is not echoed back whole ------------------------------------------

HUGE_ID = "m-" + "x" * 1_400_000


def test_a_huge_unknown_id_is_not_echoed_back_whole_by_the_cli(indexed: Path) -> None:
    line = one_error_line(run(indexed, "history", HUGE_ID), 1, "m-xxxx")
    assert len(line) < 200 and "…" in line


def test_a_huge_unknown_id_is_not_echoed_back_whole_over_mcp(indexed: Path, tmp_path: Path) -> None:
    """The real SDK client against `memvault mcp`: every error about the id
    (and about a huge tool name) is one short sentence."""
    import asyncio
    import os
    import sys

    mcp = pytest.importorskip("mcp")
    from mcp.types import Implementation

    env = {k: v for k, v in os.environ.items() if k.startswith("MEMVAULT_")}
    server = mcp.StdioServerParameters(command=str(Path(sys.executable).parent / "memvault"),
                                       args=["--vault", str(indexed), "mcp"], env=env)
    calls = [("read", {"id": HUGE_ID}), ("history", {"id": HUGE_ID}), ("forget", {"id": HUGE_ID}),
             ("x" * 100_000, {})]

    async def main() -> list[object]:
        with open(tmp_path / "server.err", "w") as err:
            async with mcp.stdio_client(server, errlog=err) as (read, write):
                async with mcp.ClientSession(read, write, client_info=Implementation(name="pytest", version="1")) as s:
                    await s.initialize()
                    return [await s.call_tool(name, args) for name, args in calls]

    for (name, _), result in zip(calls, asyncio.run(main())):
        assert result.is_error, name[:20]
        message = result.content[0].text
        assert len(message) < 300 and "…" in message, (name[:20], message[:400])


# -- status: one count of conflicts ------------------------------------------------------


def test_status_counts_the_conflicts_it_lists_in_text_and_json(indexed: Path) -> None:
    import json

    write(indexed, "a.sync-conflict-20261123-142501-ABCDEFG.md", "# A note\nwritten on the laptop\n")
    assert run(indexed, "sync", "--no-embed").exit_code == 0
    data = json.loads(run(indexed, "status", "--json").stdout)
    assert len(data["conflict_list"]) == 1
    assert data["conflicts"] == len(data["conflict_list"]) and data["conflicts_recorded"] == 0
    text = run(indexed, "status").stdout
    assert "conflicts:   1 open (1 from file sync; 0 recorded by memvault in all)" in text
    assert "the other version in a.sync-conflict-20261123-142501-ABCDEFG.md" in text


# -- many bad items: errors capped with a count -------------------------------------------


def test_many_bad_items_are_twenty_lines_and_a_count(vault: Path, tmp_path: Path) -> None:
    write(vault, "a.md", "# A note\n")
    given = write(tmp_path, "rows.csv", "content,created\n" + "".join(f"Row {n},not a date\n" for n in range(130))
                  + "A good row,\n")
    r = run(vault, "import", "csv", str(given))
    assert r.exit_code == 1
    assert r.stdout.startswith("1 imported, 0 updated, 0 skipped, 130 errors")
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 21 and lines[-1] == "error: ... and 110 more errors (--json lists them all)"
    data = run(vault, "import", "csv", str(given), "--dry-run", "--json")
    assert len(__import__("json").loads(data.stdout)["failed"]) == 130


def test_a_transcript_with_many_bad_lines_warns_twenty_and_a_count(vault: Path, tmp_path: Path) -> None:
    write(vault, "a.md", "# A note\n")
    given = write(tmp_path, "t.jsonl", "not json\n" * 40 + '{"role": "user", "content": "How do I rotate logs?"}\n')
    r = run(vault, "ingest", str(given))
    assert r.exit_code == 0, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 21 and lines[-1] == "warning: ... and 20 more warnings (--json lists them all)"
