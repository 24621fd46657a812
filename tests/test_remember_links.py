"""A memory's ``links`` (MCP ``remember``, ``memvault add --link``) are
written as ``- [[link]]`` items of its note's Related section: what is
written reads back as exactly the links given, or the write is refused with
one line naming ``links``, nothing written. A link holding a line break or
``]]`` wrote lines of its own into the note (a fake ``---`` block, more
links, a Related section that no longer parsed, so the memory's text changed).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened
from hypothesis import given
from hypothesis import strategies as st

from memvault.cli.main import cli
from memvault.vault_io.errors import UsageError
from memvault.vault_io.memory_note import check_related, read_memory, render_body, split_related
from memvault.vault_io.parser import parse_note

ODD_BUT_FINE = ["---", "k: v", "*ref", "!tag", "Note|shown as", "Note#Heading", "Projects/Alpha", "[[Bracketed]]",
                "  spaced  ", "{a: b}", "'quoted'", "# not a heading"]
BAD = ["a]]\n---\nid: m-evil\n---\n[[b", "x\n## Related\n- [[y", "e]]f", "[[g]] and [[h]]", "tab\there",
       "esc\x1b]0;x\x07", "a[b"]


def memories_on_disk(vault: Path) -> list[Path]:
    return sorted((vault / "Memory").rglob("*.md")) if (vault / "Memory").exists() else []


def test_remember_writes_every_link_so_it_reads_back_as_given_and_refuses_one_it_cannot(vault: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from memvault.cli.mcp_server import build_server

    with opened(vault) as store:
        store.sync()

        async def main() -> tuple[object, list[object]]:
            async with Client(build_server(store), mode="legacy") as c:
                good = await c.call_tool("remember", {"content": "Kayaks are fun", "links": ODD_BUT_FINE})
                bad = [await c.call_tool("remember", {"content": f"Canoes are fun {i}", "links": ["Fine", link]})
                       for i, link in enumerate(BAD)]
                return good, bad

        good, bad = asyncio.run(main())
    assert not good.is_error  # type: ignore[attr-defined]
    path = vault / good.structured_content["path"]  # type: ignore[attr-defined]
    note = parse_note(path.name, path.read_bytes())
    doc = read_memory(note.frontmatter, note.body)
    assert doc.content == "Kayaks are fun"
    assert doc.related == ["---", "k: v", "*ref", "!tag", "Note|shown as", "Note#Heading", "Projects/Alpha",
                           "Bracketed", "spaced", "{a: b}", "'quoted'", "# not a heading"]
    assert doc.id == good.structured_content["id"]  # type: ignore[attr-defined]
    for result in bad:
        assert result.is_error and "links:" in result.content[0].text  # type: ignore[attr-defined]
        assert "\n" not in result.content[0].text.split("links:", 1)[1]  # type: ignore[attr-defined]
    assert memories_on_disk(vault) == [path]  # nothing half-written


def test_add_with_a_bad_link_is_one_line_and_exit_2(vault: Path) -> None:
    r = CliRunner().invoke(cli, ["--vault", str(vault), "add", "Canoes are fun", "--link", "a]]\n---\nid: m-x"])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "links:" in r.output and "Traceback" not in r.output
    assert memories_on_disk(vault) == []


@given(st.lists(st.text(max_size=12), max_size=4))
def test_a_checked_link_reads_back_exactly_and_any_other_is_refused(links: list[str]) -> None:
    try:
        checked = check_related(links)
    except UsageError as exc:
        assert str(exc).startswith("links: ")
        return
    assert split_related(render_body("Some text", checked)) == ("Some text", checked)
    assert len(checked) <= len(links)
