"""Issue 36 item 10, the smaller gaps: MCP ``search`` with ``raw`` FTS5 syntax;
the CSV importer keeps extra columns as (redacted) front-matter; ``import``
detects the format, refusing what none or several formats take; ``forget
--all --scope S`` (a typed confirmation or ``--yes``, a backup first);
``context --json`` says when the block is over 80 % of its budget with
items left out."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import FIXTURES, opened, write

from memvault.cli.main import cli
from memvault.store.flows.importers.detect import AmbiguousFormat, detect
from memvault.vault_io.parser import parse_note

IMPORTS = FIXTURES / "imports"
TOKEN = "ghp_" + "x1Y2z3" * 6  # a GitHub token's shape


def run(root: Path, *args: str, input: str | None = None) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, ["--vault", str(root), *args], input=input)
    return r.exit_code, r.stdout, r.stderr


def test_mcp_search_takes_raw_fts5_and_says_what_is_wrong(vault: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from memvault.cli.mcp_server import build_server

    write(vault, "Deploy.md", "Blue green deploys keep the old fleet warm.\n")
    write(vault, "Other.md", "Green tea after lunch.\n")
    with opened(vault) as store:
        store.sync(embed=False)

        async def main() -> list[object]:
            async with Client(build_server(store), mode="legacy") as c:
                return [await c.call_tool("search", {"query": '"blue green" NOT tea', "raw": True}),
                        await c.call_tool("search", {"query": '"blue green', "raw": True}),
                        await c.call_tool("search", {"query": "green", "raw": True, "what": "notes"})]

        phrase, broken, word = asyncio.run(main())
    assert not phrase.is_error
    assert [h["path"] for h in phrase.structured_content["hits"]] == ["Deploy.md"]
    assert broken.is_error and len(broken.content[0].text.splitlines()) == 1
    assert "fts5" in broken.content[0].text.lower() or "query" in broken.content[0].text.lower()
    assert {h["path"] for h in word.structured_content["hits"]} == {"Deploy.md", "Other.md"}


def test_csv_extra_columns_become_redacted_front_matter(vault: Path, tmp_path: Path) -> None:
    source = tmp_path / "facts.csv"
    source.write_text(
        "content,type,Project,owner,api token,key,source,strength,updated,\n"
        f"Staging deploys need a green build,procedural,Atlas,Noor,{TOKEN},deploy.rule,wiki,0.8,2026-03-02,\n"
        "Lunch is at noon,,,,,,,,,\n"
        "Bad strength,,,,,,,7,,\n", encoding="utf-8")
    code, out, err = run(vault, "import", "csv", str(source), "--json")
    report = json.loads(out)
    assert (report["imported"], report["errors"]) == (2, 1) and code == 1
    assert "strength '7' is not a number from 0 to 1" in report["failed"][0]["error"]
    notes = {}
    for p in (vault / "Memory").rglob("*.md"):
        note = parse_note(p.relative_to(vault).as_posix(), p.read_bytes())
        notes[note.body.strip()] = note.frontmatter
    deploy = notes["Staging deploys need a green build"]
    assert (deploy["project"], deploy["owner"], deploy["api token"]) == ("Atlas", "Noor", "[redacted]")
    assert (deploy["csv_key"], deploy["csv_source"]) == ("deploy.rule", "wiki")  # names memvault writes itself
    assert deploy["strength"] == 0.8 and str(deploy["updated"]).startswith("2026-03-02")
    assert "key" not in deploy and deploy["source"] == "import:csv"
    lunch = notes["Lunch is at noon"]
    assert not {"project", "owner", "api token"} & set(lunch)  # an empty cell adds nothing
    assert all(TOKEN not in p.read_text() for p in vault.rglob("*.md"))


def _export(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    assert run(src, "add", "Likes rye bread")[0] == 0
    out = tmp_path / "export.json"
    assert run(src, "export", "-o", str(out))[0] == 0
    return out


def test_import_detects_the_format(vault: Path, tmp_path: Path) -> None:
    assert detect(IMPORTS / "chatgpt") == "chatgpt"
    assert detect(IMPORTS / "chatgpt" / "conversations.json") == "chatgpt"
    assert detect(IMPORTS / "claude") == "claude"
    assert detect(IMPORTS / "mem0-get_all.json") == "mem0"
    assert detect(IMPORTS / "memory.jsonl") == "mcp-memory"
    assert detect(IMPORTS / "memories.csv") == "csv"
    assert detect(IMPORTS / "markdown") == "markdown"
    assert detect(IMPORTS / "markdown" / "editor.md") == "markdown"
    assert detect(_export(tmp_path)) == "json"
    code, out, err = run(vault, "import", str(IMPORTS / "memories.csv"))
    assert code == 1 and "row 5" in err  # the fixture's odd rows, as `import csv` reports them
    assert out.strip().endswith("(read as csv)") and out.startswith("4 imported")


@pytest.mark.parametrize("name, text, says", [
    ("empty.json", "[]", "could be chatgpt or mem0"),
    ("notes.txt", "just some words\n", "in no format memvault imports"),
    ("mixed", None, "could be csv or markdown"),
])
def test_import_refuses_input_no_format_or_several_take(vault: Path, tmp_path: Path, name: str,
                                                         text: str | None, says: str) -> None:
    path = tmp_path / name
    if text is None:
        write(path, "a.md", "A note.\n")
        write(path, "b.csv", "content\nA memory\n")
    else:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(AmbiguousFormat):
        detect(path)
    code, out, err = run(vault, "import", str(path))
    assert code == 1 and says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (vault / "Memory").exists()


@pytest.mark.parametrize("args, says", [
    (["nonsense", "x.csv"], "unknown import format 'nonsense'"),
    (["csv", "/no/such/file.csv"], "does not exist"),
    (["/no/such/file.csv"], "does not exist"),
    (["csv", "a", "b"], "give [FORMAT] PATH"),
])
def test_import_usage_errors(vault: Path, args: list[str], says: str) -> None:
    code, _, err = run(vault, "import", *args)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1


def test_forget_all_of_a_scope(vault: Path, memvault_env: Path) -> None:
    for text in ("Atlas uses Postgres 16", "Atlas deploys on Fridays", "Atlas owns the billing queue"):
        assert run(vault, "add", text, "--scope", "atlas")[0] == 0
    assert run(vault, "add", "Likes rye bread")[0] == 0
    code, _, err = run(vault, "forget", "--all")
    assert code == 2 and "--all takes --scope S" in err
    code, _, err = run(vault, "forget", "m-1", "--all", "--scope", "atlas")
    assert code == 2
    code, _, err = run(vault, "forget", "m-1", "--yes")
    assert code == 2 and "go with --all" in err
    # A wrong word typed (or none): nothing forgotten, no backup.
    code, _, err = run(vault, "forget", "--all", "--scope", "atlas", input="user\n")
    assert code == 1 and "nothing was forgotten" in err
    code, _, err = run(vault, "forget", "--all", "--scope", "atlas", input="")
    assert code == 1 and "nothing was forgotten" in err
    assert len(list((vault / "Memory").rglob("*.md"))) == 4
    assert not list(memvault_env.rglob("memvault-backup-*.zip"))
    code, out, err = run(vault, "forget", "--all", "--scope", "atlas", "--json", input="atlas\n")
    assert code == 0, err
    done = json.loads(out.strip().splitlines()[-1])
    assert done["forgotten"] == 3 and done["failed"] == []
    assert Path(done["backup"]).is_file() and Path(done["backup"]).parent.name == "backups"
    assert Path(done["backup"]).is_relative_to(memvault_env)  # memvault's data dir, never the vault
    left = [p for p in (vault / "Memory").rglob("*.md")]
    assert len(left) == 1 and "rye" in left[0].read_text()
    assert len(list((vault / ".trash").glob("*.md"))) == 3
    code, out, _ = run(vault, "list", "--scope", "atlas", "--json")
    assert out == ""
    assert run(vault, "restore", done["ids"][0])[0] == 0  # each one comes back
    code, out, _ = run(vault, "forget", "--all", "--scope", "atlas", "--yes")
    assert code == 0 and out.startswith("Forgot 1 memories of scope atlas")
    code, out, _ = run(vault, "forget", "--all", "--scope", "atlas", "--yes")
    assert code == 0 and "No live memory has scope atlas" in out


def test_context_json_says_when_the_block_is_full(vault: Path) -> None:
    for n in range(12):
        write(vault, f"Memory/semantic/kiln-{n}.md",
              f"---\ntype: semantic\n---\nThe pottery kiln firing schedule note {n}: cone 6 glaze firing takes "
              f"about {8 + n} hours and the kiln must cool overnight before unloading.\n")
    with opened(vault) as v:
        v.sync(embed=False)
    code, out, _ = run(vault, "context", "kiln firing schedule", "--budget", "120", "--json", "--no-record")
    small = json.loads(out)
    assert small["left_out"] >= 1 and small["tokens"] > 0.8 * 120
    assert small["full"].startswith("the block uses ") and "did not fit" in small["full"]
    code, out, err = run(vault, "context", "kiln firing schedule", "--budget", "120", "--no-record")
    assert "notice: the block uses" in err
    code, out, _ = run(vault, "context", "kiln firing schedule", "--budget", "4000", "--json", "--no-record")
    large = json.loads(out)
    assert "full" not in large and "left_out" not in large
