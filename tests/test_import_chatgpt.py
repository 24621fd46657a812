"""`memvault import chatgpt`: a hand-made export with every listed malformation."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import FIXTURES, opened

from memvault.cli.main import cli
from memvault.store.flows.importers.stream import ImportFormatError, iter_array
from memvault.store.queries.recall import ContextQuery
from memvault.store.queries.search import SearchQuery
from memvault.vault_io.parser import parse_note
from memvault.vault_io.session_note import turn_spans

EXPORT = FIXTURES / "imports" / "chatgpt" / "conversations.json"
SESSIONS = "Memory/episodic/sessions"


def _sessions(vault: Path) -> dict[str, str]:
    return {p.name: p.read_text("utf-8") for p in sorted((vault / SESSIONS).glob("*.md"))}


def _turns(text: str) -> list[tuple[str, str]]:
    note = parse_note("x.md", text.encode())
    lines = note.body.split("\n")
    return [(s.role, "\n".join(lines[s.first_line - note.body_line + 1 : s.last_line - note.body_line - 1]))
            for s in turn_spans(note.body, note.body_line)]


def test_the_visible_branch_of_each_conversation_becomes_a_session_note(vault: Path) -> None:
    with opened(vault) as store:
        report = store.import_("chatgpt", EXPORT)
    assert (report.imported, report.updated, report.skipped) == (6, 0, 0)  # 4 conversations + 2 instructions
    assert [ref.split(" (")[0] for ref, _ in report.errors] == [f"{EXPORT} item 1", f"{EXPORT} item 4"]
    assert "not a conversation object" in report.errors[0][1]
    assert "shared_conversations.json" in report.errors[1][1]
    notes = _sessions(vault)
    editor = notes["2024-04-05 Editor settings.md"]
    # The regenerated answer (an abandoned branch), reasoning and hidden
    # messages are not in it; the image is named, not embedded.
    for absent in ("ABANDONED-BRANCH", "HIDDEN-REASONING", "Thought for 14s", "Python developer in Berlin"):
        assert absent not in editor
    assert _turns(editor) == [
        ("user", "> [image: file-AbC123]\n> Tabs or spaces? I always use tabs in Go code. Here is my editor config."),
        ("assistant", "> Your config already uses tabs; keep it."),
    ]
    assert "\ue200" not in editor  # citation markers dropped


def test_null_title_missing_times_code_tools_and_images(vault: Path) -> None:
    with opened(vault) as store:
        store.import_("chatgpt", EXPORT)
    name, text = next((n, t) for n, t in _sessions(vault).items() if "Plot the squares" in n)
    # No create_time: the messages' own times date it; no title: its first request names it.
    assert name.startswith("2024-04-06 Plot the squares of 1 to 5.")
    fm = parse_note("x.md", text.encode()).frontmatter
    assert fm["started"] == "2024-04-06T10:40:02+00:00" and fm["title"].startswith("Plot the squares")
    roles = [r for r, _ in _turns(text)]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert "- tool call: python `import matplotlib print([i*i for i in range(1, 6)])`" in text
    assert "python: [1, 4, 9, 16, 25] (2 lines)" in text
    assert "[generated image: a bar chart of squares]" in text and "[attachment: data.csv]" in text
    assert "ghp_" not in text and "[redacted]" in text


def test_a_missing_current_node_uses_the_newest_leaf_and_cycles_end(vault: Path) -> None:
    with opened(vault) as store:
        store.import_("chatgpt", EXPORT)
    notes = _sessions(vault)
    ada = next(t for n, t in notes.items() if "My name is Ada" in n)
    assert "OLDER-LEAF" not in ada and "Nice to meet you" in ada
    loop = notes["2024-04-08 Loop.md"]
    assert [r for r, _ in _turns(loop)] == ["user", "assistant"]


def test_custom_instructions_become_identity_and_preference_memories(vault: Path) -> None:
    with opened(vault) as store:
        store.import_("chatgpt", EXPORT)
        hits = store.search(SearchQuery("Python developer Berlin", mode="keyword", what="memories")).to_json()["hits"]
        assert [h["type"] for h in hits] == ["identity"]
        # Identity joins a block when asked about (issue 35 item 4), not beside any message.
        block = store.context(ContextQuery("who am I?")).to_json()
        assert "About me (ChatGPT custom instructions): I am a Python developer in Berlin." in block["text"]
        hits = store.search(SearchQuery("concise", mode="keyword", what="memories")).to_json()["hits"]
        assert [h["title"] for h in hits] == ["How I want answers (ChatGPT custom instructions): Be concise."]


def test_facts_and_search_work_right_after_the_import(vault: Path) -> None:
    with opened(vault) as store:
        store.import_("chatgpt", EXPORT)
        facts = {h["snippet"] for h in store.search(SearchQuery("seaborn", mode="keyword", what="facts")).to_json()["hits"]}
        assert any("seaborn" in f for f in facts)
        assert store.search(SearchQuery("matplotlib", mode="keyword")).to_json()["hits"]  # the transcript, at once
        ada = store.search(SearchQuery("data engineer", mode="keyword", what="facts")).to_json()["hits"]
        assert {(h["type"], h["snippet"].replace("**", "")) for h in ada} >= {
            ("identity", "My name is Ada and I work as a data engineer.")}


def test_importing_again_imports_nothing_and_a_grown_conversation_appends(vault: Path, tmp_path: Path) -> None:
    data = json.loads(EXPORT.read_text("utf-8"))
    with opened(vault) as store:
        store.import_("chatgpt", EXPORT)
        before = _sessions(vault)
        again = store.import_("chatgpt", EXPORT)
        assert (again.imported, again.updated, again.skipped) == (0, 0, 6)
        assert _sessions(vault) == before
        # The conversation went on at ChatGPT, and the custom instructions changed.
        conv = data[0]
        conv["mapping"]["n6"]["children"] = ["n7"]
        conv["mapping"]["n7"] = {"id": "n7", "parent": "n6", "children": [], "message": {
            "id": "n7", "author": {"role": "user"}, "create_time": 1712345800.0,
            "content": {"content_type": "text", "parts": ["I'm going to switch to Zed next week."]},
            "weight": 1.0, "metadata": {}, "recipient": "all"}}
        conv["current_node"] = "n7"
        conv["update_time"] = 1712345900.0
        n1 = conv["mapping"]["n1"]["message"]
        n1["metadata"]["user_context_message_data"]["about_model_message"] = "Be concise and cite sources."
        changed = tmp_path / "conversations.json"
        changed.write_text(json.dumps(data), "utf-8")
        grown = store.import_("chatgpt", changed)
        assert (grown.imported, grown.updated, grown.skipped) == (0, 2, 4)
        text = (vault / SESSIONS / "2024-04-05 Editor settings.md").read_text("utf-8")
        old = before["2024-04-05 Editor settings.md"]
        assert text[text.index("## Transcript"):].startswith(old[old.index("## Transcript"):])
        assert "switch to Zed" in text
        hit = store.search(SearchQuery("cite sources", mode="keyword", what="memories")).to_json()["hits"][0]
        history = store.history(hit["id"])
        assert [h.content for h in history] == [
            "How I want answers (ChatGPT custom instructions): Be concise and cite sources.",
            "How I want answers (ChatGPT custom instructions): Be concise.",
        ]
        assert history[1].reason == "changed at the source (chatgpt-instructions)"


def test_split_files_in_a_zip_with_macos_junk(vault: Path, tmp_path: Path) -> None:
    data = json.loads(EXPORT.read_text("utf-8"))
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("export/conversations-000.json", json.dumps(data[:3]))
        z.writestr("export/conversations-001.json", json.dumps(data[3:]))
        z.writestr("__MACOSX/export/._conversations-000.json", b"\x00\x05\x16\x07junk")
        z.writestr("export/chat.html", "<html></html>")
        z.writestr("export/user.json", "{}")
    with opened(vault) as store:
        report = store.import_("chatgpt", archive)
        assert (report.imported, len(report.errors)) == (6, 2)
        assert report.errors[0][0].startswith("export.zip:export/conversations-000.json item 1")
        assert report.errors[1][0].startswith("export.zip:export/conversations-001.json item 1")
        folder = tmp_path / "folder"
        folder.mkdir()
        (folder / "conversations-000.json").write_text(json.dumps(data[:3]))
        (folder / "conversations-001.json").write_text(json.dumps(data[3:]))
        assert store.import_("chatgpt", folder).skipped == 6


def test_a_broken_file_among_split_files_is_one_error(vault: Path, tmp_path: Path) -> None:
    data = json.loads(EXPORT.read_text("utf-8"))
    (tmp_path / "conversations-000.json").write_text(json.dumps(data[:1]))
    (tmp_path / "conversations-001.json").write_text(json.dumps(data[2:4])[:-30])  # cut short
    with opened(vault) as store:
        report = store.import_("chatgpt", tmp_path)
    assert report.imported == 4  # one conversation of each file, and the instructions
    assert report.errors[-1][0].endswith("conversations-001.json")
    assert "item 1 is not valid JSON" in report.errors[-1][1]


def test_html_and_shared_conversations_are_refused_clearly(vault: Path, tmp_path: Path) -> None:
    html = tmp_path / "conversations.json"
    html.write_text("<!DOCTYPE html><html>chat</html>")
    runner = CliRunner()
    r = runner.invoke(cli, ["--vault", str(vault), "import", "chatgpt", str(html)])
    assert r.exit_code == 1 and "looks like HTML" in r.output
    shared = tmp_path / "shared_conversations.json"
    shared.write_text(json.dumps([{"id": "s1", "conversation_id": "c1", "title": "t", "is_anonymous": True}]))
    r = runner.invoke(cli, ["--vault", str(vault), "import", "chatgpt", str(shared)])
    # refused before anything is written, in one line
    assert r.exit_code == 1 and "holds shared links (shared_conversations.json)" in r.output
    assert len(r.output.splitlines()) == 1


def test_dry_run_writes_nothing(vault: Path) -> None:
    r = CliRunner().invoke(cli, ["--vault", str(vault), "import", "chatgpt", str(EXPORT), "--dry-run", "--json"])
    data = json.loads(r.output.splitlines()[0])
    assert (data["dry_run"], data["imported"], data["errors"]) == (True, 6, 2)
    assert not (vault / "Memory").exists()


def test_cli_summary_names_each_failed_item(vault: Path) -> None:
    r = CliRunner().invoke(cli, ["--vault", str(vault), "import", "chatgpt", str(EXPORT)])
    assert r.exit_code == 1
    lines = r.output.splitlines()
    assert lines[0] == "6 imported, 0 updated, 0 skipped, 2 errors; 1 secrets redacted"
    assert sum(1 for line in lines if line.startswith("error: ")) == 2


@pytest.mark.parametrize("chunk", [1, 3, 64, 1 << 20])
def test_the_array_is_streamed_element_by_element(chunk: int) -> None:
    items = [{"n": i, "text": "x" * (i * 31), "nested": [1, {"a": "]"}]} for i in range(60)] + [12345, "s", []]
    raw = json.dumps(items).encode()
    seen: list[int] = []
    got = list(iter_array(io.BytesIO(raw), "t.json", seen.append, chunk=chunk))
    assert got == items
    assert seen[-1] == len(raw) and seen == sorted(seen)
    with pytest.raises(ImportFormatError, match="item 61 is not valid JSON"):
        list(iter_array(io.BytesIO(raw[:-8]), "t.json", chunk=chunk))


def test_a_big_array_is_read_with_bounded_memory() -> None:
    import tracemalloc

    item = json.dumps({"title": "t", "mapping": {str(i): {"message": {"text": "y" * 200}} for i in range(20)}})
    raw = ("[" + ",".join([item] * 4000) + "]").encode()  # about 19 MB
    tracemalloc.start()
    count = sum(1 for _ in iter_array(io.BytesIO(raw), "big.json", chunk=1 << 16))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 4000
    assert peak < 2_000_000, f"peak {peak} bytes while streaming a {len(raw)}-byte array"
