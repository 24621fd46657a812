"""`memvault import` of Claude.ai, mem0, the MCP memory server, CSV and Markdown notes."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

from click.testing import CliRunner
from helpers import FIXTURES, opened, write

from memvault.cli.main import cli
from memvault.store.flows.keys import get_key
from memvault.store.index.classify import content_key
from memvault.store.queries.search import SearchQuery
from memvault.vault_io.parser import parse_note

IMPORTS = FIXTURES / "imports"


def _memories(vault: Path) -> dict[str, dict]:
    """Memory notes in the vault by content: front-matter and path."""
    out = {}
    for p in sorted((vault / "Memory").rglob("*.md")):
        note = parse_note(p.relative_to(vault).as_posix(), p.read_bytes())
        if "session_id" not in note.frontmatter:
            out[note.body.split("\n## Related")[0].strip()] = {**note.frontmatter, "path": note.path}
    return out


# -- Claude.ai -------------------------------------------------------------------------------


def test_claude_conversations_projects_and_users(vault: Path) -> None:
    with opened(vault) as store:
        report = store.import_("claude", IMPORTS / "claude")
        assert (report.imported, report.skipped, len(report.errors)) == (5, 0, 1)
        assert report.errors[0][0].endswith('item 2 (c3-broken, "Broken")')
        sessions = {p.name: p.read_text("utf-8") for p in (vault / "Memory/episodic/sessions").glob("*.md")}
        apsw = sessions["2026-04-12 APSW connection pooling.md"]
        assert "client: claude.ai" in apsw and "HIDDEN-THINKING" not in apsw
        assert "[attachment: db.py]\n> ```\n> import apsw" in apsw  # extracted text kept, fenced
        assert "hunter2" not in apsw and "[file: screenshot.png]" in apsw
        assert "> - tool call: web_search `apsw threading`\n> - tool result: web_search: APSW docs: threading\n>\n" \
               "> Open one connection per thread." in apsw
        # An empty name: the first request names it.
        assert "2025-01-02 Remember that my sister's birthday is on 3 May.md" in sessions
        facts = store.search(SearchQuery("sister birthday", mode="keyword", what="facts")).to_json()["hits"]
        assert any(h["snippet"].replace("**", "") == "My sister's birthday is on 3 May." for h in facts)
        # Project documents are ordinary notes under the import folder; the
        # prompt template a procedural memory; the starter project is skipped.
        doc = vault / "Imports/Claude/memvault design/architecture.md"
        assert doc.read_text("utf-8").startswith("---\ntitle: architecture.md\nsource: claude.ai project\n")
        second = (vault / "Imports/Claude/memvault design/notes v2.md").read_text("utf-8")
        assert "The deploy token: [redacted]" in second and "ghp_" not in second
        assert not list(vault.rglob("intro.md"))
        assert store.show("Imports/Claude/memvault design/architecture.md").kind == "note"
        prompts = [m for m in _memories(vault).values() if m["type"] == "procedural"]
        assert len(prompts) == 1 and prompts[0]["tags"] == ["claude", "project-instructions"]
        again = store.import_("claude", IMPORTS / "claude")
        assert (again.imported, again.updated, again.skipped) == (0, 0, 5)


def test_claude_zip_and_single_files_and_a_changed_document(vault: Path, tmp_path: Path) -> None:
    archive = tmp_path / "data-2026.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name in ("conversations.json", "projects.json", "users.json"):
            z.write(IMPORTS / "claude" / name, name)
    projects = json.loads((IMPORTS / "claude" / "projects.json").read_text("utf-8"))
    with opened(vault) as store:
        assert store.import_("claude", archive).imported == 5
        assert store.import_("claude", IMPORTS / "claude" / "projects.json").skipped == 3
        projects[0]["docs"][0]["content"] = "# Architecture\nCLI, daemon and an MCP server.\n"
        changed = tmp_path / "projects.json"
        changed.write_text(json.dumps(projects), "utf-8")
        report = store.import_("claude", changed)
        assert (report.updated, report.skipped) == (1, 2)
        assert "MCP server" in (vault / "Imports/Claude/memvault design/architecture.md").read_text("utf-8")
        # A document edited in the vault is not written over.
        doc = vault / "Imports/Claude/memvault design/architecture.md"
        doc.write_text(doc.read_text("utf-8") + "\nMy own note.\n", "utf-8")
        projects[0]["docs"][0]["content"] = "# Architecture\nThird version.\n"
        changed.write_text(json.dumps(projects), "utf-8")
        report = store.import_("claude", changed)
        assert report.skipped == 3 and "was edited in the vault" in report.warnings[0]
        assert "My own note." in doc.read_text("utf-8")


# -- mem0 ------------------------------------------------------------------------------------


def test_mem0_results_become_scoped_memories(vault: Path, tmp_path: Path) -> None:
    with opened(vault) as store:
        report = store.import_("mem0", IMPORTS / "mem0-get_all.json")
        assert (report.imported, len(report.errors), report.redacted) == (3, 1, 1)
        assert report.errors[0][1] == "has no 'memory' text"
        mems = _memories(vault)
        tabs = mems["Prefers tabs over spaces"]
        assert (tabs["scope"], tabs["tags"], tabs["source"]) == ("user:alice", ["mem0", "preferences"], "import:mem0")
        assert tabs["created"] == "2026-03-01T10:15:00+00:00"
        assert tabs["mem0"] == {"id": "3c90c3cc-0d44-4b50-8888-8dd25736052a", "user_id": "alice",
                                "metadata": {"source": "chat", "category": "preferences"}}
        coder = mems["Works on a project called memvault"]
        assert coder["scope"] == "agent:coder" and coder["created"] == "2025-11-20T16:00:00+00:00"
        assert "Deploys with the key [redacted]" in mems
        assert not any("AKIA" in p.read_text("utf-8") for p in vault.rglob("*.md"))
        # A bare list (mem0 0.x), changed at the source: a new version.
        data = json.loads((IMPORTS / "mem0-get_all.json").read_text("utf-8"))["results"]
        data[0]["memory"] = "Prefers spaces over tabs now"
        bare = tmp_path / "old.json"
        bare.write_text(json.dumps(data), "utf-8")
        again = store.import_("mem0", bare)
        assert (again.imported, again.updated, again.skipped) == (0, 1, 2)
        memory_id = get_key(store.con, "mem0", data[0]["id"]).target_id
        assert [h.content for h in store.history(memory_id)] == [
            "Prefers spaces over tabs now", "Prefers tabs over spaces"]


def test_a_forgotten_import_stays_forgotten(vault: Path) -> None:
    with opened(vault) as store:
        store.import_("mem0", IMPORTS / "mem0-get_all.json")
        memory_id = get_key(store.con, "mem0", "3c90c3cc-0d44-4b50-8888-8dd25736052a").target_id
        store.forget(memory_id)
        again = store.import_("mem0", IMPORTS / "mem0-get_all.json")
        assert (again.imported, again.skipped) == (0, 3)
        assert "Prefers tabs over spaces" not in _memories(vault)


# -- the MCP memory server -----------------------------------------------------------------


def test_mcp_memory_entities_become_linked_memory_notes(vault: Path, tmp_path: Path) -> None:
    with opened(vault) as store:
        report = store.import_("mcp-memory", IMPORTS / "memory.jsonl")
        assert report.imported == 3
        assert [why for _, why in report.errors] == [
            "not JSON (Expecting property name enclosed in double quotes)", "an entity without a name"]
        alice = (vault / "Memory/semantic/Alice.md").read_text("utf-8")
        assert "- Prefers tabs over spaces\n- Lives in Berlin\n- maintains [[memvault]]\n" \
               "- reads [[C C++ notes|C/C++ notes]]" in alice
        memvault = (vault / "Memory/semantic/memvault.md").read_text("utf-8")
        assert "- Has a daemon" in memvault and "- mentions Nobody" in memvault
        assert "- Deploy key is [redacted]" in memvault and report.redacted == 1
        links = {link.target: link.target_path for link in store.links("Memory/semantic/Alice.md")}
        assert links == {"memvault": "Memory/semantic/memvault.md", "C C++ notes": "Memory/semantic/C C++ notes.md"}
        lines = (IMPORTS / "memory.jsonl").read_text("utf-8").splitlines()
        lines.append(json.dumps({"type": "relation", "from": "memvault", "to": "Alice", "relationType": "is maintained by"}))
        grown = tmp_path / "memory.jsonl"
        grown.write_text("\n".join(lines) + "\n", "utf-8")
        again = store.import_("mcp-memory", grown)
        assert (again.imported, again.updated, again.skipped) == (0, 1, 2)
        assert "- is maintained by [[Alice]]" in (vault / "Memory/semantic/memvault.md").read_text("utf-8")


# -- CSV -------------------------------------------------------------------------------------


def test_csv_rows_with_types_tags_scopes_and_dates(vault: Path) -> None:
    with opened(vault) as store:
        report = store.import_("csv", IMPORTS / "memories.csv")
        assert (report.imported, report.redacted) == (4, 1)
        assert [(ref.split("memories.csv ")[1], why.split(":")[0]) for ref, why in report.errors] == [
            ('row 5 ("Has an unknown type")', "unknown memory type 'weird-type'"),
            ('row 6 ("Bad date here")', "created 'last tuesday' is not a date or time"),
            ("row 7", "the content is empty"),
        ]
        mems = _memories(vault)
        dark = mems["Prefers dark mode in every editor"]
        assert (dark["type"], dark["tags"], dark["created"]) == ("semantic", ["ui", "editor"], "2026-01-05T00:00:00+00:00")
        deploy = mems["Deploy with `make release`, never by hand"]
        assert (deploy["type"], deploy["scope"]) == ("procedural", "project:memvault")
        assert mems["Call the dentist"]["type"] == "prospective"
        assert "The secret token is [redacted]" in mems
        assert store.import_("csv", IMPORTS / "memories.csv").skipped == 4


def test_csv_without_a_content_column_names_the_file_and_header(vault: Path) -> None:
    r = CliRunner().invoke(cli, ["--vault", str(vault), "import", "csv", str(IMPORTS / "no-content.csv")])
    assert r.exit_code == 1
    assert r.output.strip() == f"Error: {IMPORTS / 'no-content.csv'}: a `content` column is required; the header is text, kind"


def test_an_existing_memory_with_the_same_text_is_adopted(vault: Path) -> None:
    with opened(vault) as store:
        added = store.add("Call the dentist", "prospective")
        store.import_("csv", IMPORTS / "memories.csv")
        assert sum(1 for p in (vault / "Memory/prospective").glob("*.md")) == 1
        key = get_key(store.con, "csv", content_key("Call the dentist", "prospective", "user"))
        assert key is not None and key.target_id == added.id


# -- Markdown notes ---------------------------------------------------------------------------


def test_markdown_notes_are_copied_in_as_memory_notes(vault: Path, tmp_path: Path) -> None:
    with opened(vault) as store:
        report = store.import_("markdown", IMPORTS / "markdown")
        assert (report.imported, report.skipped, report.errors) == (2, 1, [])
        editor = parse_note("x.md", (vault / "Memory/semantic/editor.md").read_bytes())
        fm = editor.frontmatter
        assert (fm["id"], fm["type"], fm["strength"], fm["mood"]) == ("m-aaaaaaaaaaaa", "semantic", 0.8, "calm")
        assert fm["created"] == "2026-01-01T00:00:00+00:00" and fm["source"] == "manual"
        assert editor.body.endswith("## Related\n- [[Editor setup]]\n")
        assert store.show("m-aaaaaaaaaaaa").kind == "memory"
        no_type = (vault / "Memory/semantic/no-type.md").read_text("utf-8")
        assert "Its admin password: [redacted]" in no_type and "Tr0ub4dor" not in no_type
        assert store.import_("markdown", IMPORTS / "markdown").skipped == 3
        # An edited note at the source: a new version of the same memory.
        src = tmp_path / "md"
        shutil.copytree(IMPORTS / "markdown", src)
        edited = (src / "editor.md").read_text("utf-8").replace("dark mode", "light mode")
        write(src, "editor.md", edited)
        again = store.import_("markdown", src)
        assert (again.updated, again.skipped) == (1, 2)
        assert [h.content for h in store.history("m-aaaaaaaaaaaa")][:2] == [
            "Prefers light mode in every editor.", "Prefers dark mode in every editor."]
