"""Keyed facts (issue 36 item 2): a memory that fills a slot (``editor.theme``).

A new value supersedes the memory holding the key as its next version when
the write says why; without a reason it is refused with the current text and
version (CLI: exit 1, the text on stdout; MCP: a tool error; through the
daemon the same). ``show``/``list --key``, a key typed into a note in
Obsidian, and two notes holding one key (a clash: the same holder whatever
order a device saw them, listed by ``conflicts`` and ``status``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli


def run(root: Path, *args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, ["--vault", str(root), *args])
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture
def synced(vault: Path) -> Path:
    with opened(vault) as v:
        v.sync(embed=False)
    return vault


def test_a_keyed_fact_is_superseded_only_with_a_reason(synced: Path) -> None:
    root = synced
    code, out, err = run(root, "add", "Uses the Solarized Dark theme", "--key", "Editor.Theme", "--json")
    assert code == 0, err
    first = json.loads(out)
    assert first["action"] == "added" and first["key"] == "editor.theme"
    note = (root / first["path"]).read_text(encoding="utf-8")
    assert "\nkey: editor.theme\n" in note
    # The same value again: answered, nothing written, no reason needed.
    code, out, _ = run(root, "add", "uses the solarized dark theme!", "--key", "editor.theme", "--json")
    assert code == 0 and json.loads(out)["action"] == "duplicate_of" and json.loads(out)["id"] == first["id"]
    # Another value without a reason: refused, the current text on stdout, one line on stderr.
    code, out, err = run(root, "add", "Uses the Gruvbox Light theme", "--key", "editor.theme")
    assert code == 1
    assert out.strip() == "Uses the Solarized Dark theme"
    assert len(err.strip().splitlines()) == 1 and first["id"] in err and "version 1" in err and "reason" in err
    code, out, _ = run(root, "add", "Uses the Gruvbox Light theme", "--key", "editor.theme", "--json")
    assert code == 1 and json.loads(out)["current"]["version"] == 1
    assert len(list((root / "Memory").rglob("*.md"))) == 1
    # With a reason: the same memory, its next version; the old text is in its history.
    code, out, err = run(root, "add", "Uses the Gruvbox Light theme", "--key", "editor.theme",
                         "--reason", "switched for daylight work", "--json")
    assert code == 0, err
    second = json.loads(out)
    assert (second["id"], second["action"], second["version"], second["key"]) == (first["id"], "updated", 2,
                                                                                  "editor.theme")
    code, out, _ = run(root, "history", first["id"], "--json")
    versions = [json.loads(line) for line in out.splitlines()]
    assert [v["content"] for v in versions] == ["Uses the Gruvbox Light theme", "Uses the Solarized Dark theme"]
    assert versions[1]["reason"] == "switched for daylight work"
    # show --key and list --key find it; another scope's slot is another slot.
    code, out, _ = run(root, "show", "--key", "editor.theme", "--json")
    assert code == 0 and json.loads(out)["id"] == first["id"] and json.loads(out)["content"].startswith("Uses the Gruv")
    code, out, _ = run(root, "show", "--key", "editor.theme")
    assert "key:         editor.theme" in out
    code, out, _ = run(root, "add", "Uses the default theme", "--key", "editor.theme", "--scope", "website",
                       "--json")
    assert code == 0 and json.loads(out)["action"] == "added"
    code, out, _ = run(root, "list", "--key", "editor.*", "--json")
    listed = [json.loads(line) for line in out.splitlines()]
    assert {(i["scope"], i["key"]) for i in listed} == {("user", "editor.theme"), ("website", "editor.theme")}
    code, out, _ = run(root, "list", "--key", "editor.font", "--json")
    assert code == 0 and out == ""
    code, _, err = run(root, "show", "--key", "editor.font")
    assert code == 1 and "no live memory holds key editor.font" in err


@pytest.mark.parametrize("key", ["two words", "a..b", ".hidden", "x" * 101, "sk-ant-api03-" + "a" * 40, ""])
def test_a_bad_key_is_one_usage_line(synced: Path, key: str) -> None:
    for args in (["add", "x", "--key", key], ["list", "--key", key or "."], ["show", "--key", key or "."]):
        code, out, err = run(synced, *args)
        assert code == 2, (args, out, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert "sk-ant" not in err
    assert not (synced / "Memory").exists()


def test_reason_without_key_is_a_usage_error(synced: Path) -> None:
    code, _, err = run(synced, "add", "x", "--reason", "because")
    assert code == 2 and "--reason goes with --key" in err


def _keyed_note(root: Path, mid: str, text: str, updated: str, key: str = "deploy.staging.host") -> None:
    write(root, f"Memory/semantic/{mid}.md",
          f"---\nid: {mid}\ntype: semantic\nscope: user\nkey: {key}\nstrength: 0.5\n"
          f"created: '2026-09-01T09:00:00+00:00'\nupdated: '{updated}'\nsource: manual\n---\n{text}\n")


def _holder_after(root: Path, order: list[tuple[str, str, str]]) -> tuple[str | None, tuple[str, ...], list[dict]]:
    for mid, text, updated in order:
        _keyed_note(root, mid, text, updated)
        with opened(root) as v:
            v.sync(embed=False)
    with opened(root) as v:
        found = v.key_holder("deploy.staging.host")
        return found.holder, found.others, [c.to_json() for c in v.key_clashes()]


def test_two_notes_holding_one_key_give_the_same_holder_in_either_order(tmp_path: Path) -> None:
    notes = [("m-aaaaaaaaaaaa", "Staging runs on stage-1.internal", "2026-10-02T10:00:00+00:00"),
             ("m-bbbbbbbbbbbb", "Staging runs on stage-2.internal", "2026-10-01T10:00:00+00:00")]
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    first = _holder_after(a, notes)
    second = _holder_after(b, notes[::-1])
    assert first == second
    holder, others, clashes = first
    assert holder == "m-aaaaaaaaaaaa" and others == ("m-bbbbbbbbbbbb",)  # updated last
    assert clashes == [{"scope": "user", "key": "deploy.staging.host", "holder": "m-aaaaaaaaaaaa",
                        "others": ["m-bbbbbbbbbbbb"], "kind": "key"}]
    code, out, _ = run(a, "conflicts")
    assert "deploy.staging.host (user): m-aaaaaaaaaaaa; also m-bbbbbbbbbbbb" in out
    code, out, _ = run(a, "status", "--json")
    assert json.loads(out)["key_clashes"][0]["holder"] == "m-aaaaaaaaaaaa"
    code, out, err = run(a, "show", "--key", "deploy.staging.host")
    assert code == 0 and "stage-1" in out and "also held by m-bbbbbbbbbbbb" in err
    # A keyed write supersedes the holder, never the other.
    code, out, _ = run(a, "add", "Staging runs on stage-3.internal", "--key", "deploy.staging.host",
                       "--reason", "moved", "--json")
    assert json.loads(out)["id"] == "m-aaaaaaaaaaaa"
    assert "stage-2" in (a / "Memory/semantic/m-bbbbbbbbbbbb.md").read_text()


def test_a_key_typed_in_obsidian_is_honoured_and_an_unkeyed_twin_takes_the_key(synced: Path) -> None:
    root = synced
    code, out, _ = run(root, "add", "Prefers 14pt Iosevka in the terminal", "--json")
    mid, path = json.loads(out)["id"], json.loads(out)["path"]
    # The same text with a key: the live memory takes the key instead of a second copy.
    code, out, _ = run(root, "add", "Prefers 14pt Iosevka in the terminal", "--key", "terminal.font", "--json")
    result = json.loads(out)
    assert code == 0 and result["id"] == mid and result["action"] == "duplicate_of" and "now holds key" in result["reason"]
    assert "\nkey: terminal.font\n" in (root / path).read_text()
    # A person changes the key in Obsidian: the edit is what counts.
    text = (root / path).read_text().replace("key: terminal.font", "key: Terminal.Typeface")
    (root / path).write_text(text)
    with opened(root) as v:
        v.sync(embed=False)
        assert v.key_holder("terminal.typeface").holder == mid
        assert v.key_holder("terminal.font").holder is None
    code, out, _ = run(root, "add", "Prefers 13pt Iosevka", "--key", "terminal.typeface", "--reason", "smaller",
                       "--json")
    assert json.loads(out)["id"] == mid
    after = (root / path).read_text()
    assert "key: Terminal.Typeface" in after and "Prefers 13pt Iosevka" in after  # the person's spelling kept


def test_mcp_remember_with_a_key(synced: Path) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from memvault.cli.mcp_server import build_server

    with opened(synced) as store:
        async def main() -> list[object]:
            async with Client(build_server(store), mode="legacy") as c:
                return [
                    await c.call_tool("remember", {"content": "Deploys go out on Tuesdays", "key": "deploy.day"}),
                    await c.call_tool("remember", {"content": "Deploys go out on Thursdays", "key": "deploy.day"}),
                    await c.call_tool("remember", {"content": "Deploys go out on Thursdays", "key": "deploy.day",
                                                   "reason": "the release train moved"}),
                    await c.call_tool("read", {"key": "deploy.day"}),
                    await c.call_tool("list", {"key": "deploy.*"}),
                    await c.call_tool("remember", {"content": "x", "key": "not a key"}),
                ]

        added, refused, superseded, read, listed, bad = asyncio.run(main())
    assert not added.is_error and added.structured_content["key"] == "deploy.day"
    mid = added.structured_content["id"]
    assert refused.is_error
    said = refused.content[0].text
    assert mid in said and "version 1" in said and "Deploys go out on Tuesdays" in said and "reason" in said
    assert not superseded.is_error and superseded.structured_content["version"] == 2
    assert read.structured_content["id"] == mid and read.structured_content["key"] == "deploy.day"
    assert "Thursdays" in read.structured_content["content"]
    assert [i["id"] for i in listed.structured_content["items"]] == [mid]
    assert bad.is_error and "not a key" in bad.content[0].text
    history = [v.reason for v in store_history(synced, mid)]
    assert history[1] and history[1].startswith("the release train moved (mcp")


def store_history(root: Path, mid: str) -> list:
    with opened(root) as v:
        return v.history(mid)


@pytest.fixture
def served(tmp_path: Path, memvault_env: Path) -> Iterator[object]:
    from fixtures.retrieval import support

    with support.query_server(tmp_path) as srv:
        yield srv


def test_a_key_refusal_through_the_daemon_reads_as_in_process(served: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from memvault.daemon import client

    root = served.store.root  # type: ignore[attr-defined]
    code, out, _ = run(root, "add", "Backups run at 02:00", "--key", "backup.time", "--json")
    assert code == 0
    before = served.requests  # type: ignore[attr-defined]
    remote = run(root, "add", "Backups run at 03:00", "--key", "backup.time")
    assert served.requests == before + 1  # type: ignore[attr-defined]
    monkeypatch.setattr(client, "socket_path", lambda data_dir: data_dir / "no-daemon.sock")
    local = run(root, "add", "Backups run at 03:00", "--key", "backup.time")
    assert remote == local and remote[0] == 1 and remote[1].strip() == "Backups run at 02:00"


def test_a_key_travels_through_export_and_import(synced: Path, tmp_path: Path) -> None:
    root = synced
    code, out, _ = run(root, "add", "Standup is at 09:30", "--key", "team.standup", "--json")
    mid = json.loads(out)["id"]
    run(root, "add", "Standup is at 09:45", "--key", "team.standup", "--reason", "moved", "--json")
    target = tmp_path / "export.json"
    assert run(root, "export", "-o", str(target))[0] == 0
    assert json.loads(target.read_text())["memory"][0]["key"] == "team.standup"
    other = tmp_path / "other"
    other.mkdir()
    code, _, err = run(other, "import", "json", str(target))
    assert code == 0, err
    with opened(other) as v:
        v.sync(embed=False)
        assert v.key_holder("team.standup").holder == mid
        assert [x.content for x in v.history(mid)] == ["Standup is at 09:45", "Standup is at 09:30"]
