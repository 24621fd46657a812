"""`memvault views`: Obsidian Bases views of memory, written once, never over a person's edit."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from helpers import CORPORA, FIXTURES, opened
from hypothesis import given
from hypothesis import strategies as st

from memvault.cli.main import cli
from memvault.vault_io.bases import (
    VIEW_TYPES,
    check_base,
    dump_base,
    expression_properties,
    load_base,
    note_properties,
    ownership,
    stamp,
)
from memvault.vault_io.bases_expr import check_expression
from memvault.vault_io.memory_views import HEADER, VIEWS, memories_base, render_view, sessions_base
from memvault.vault_io.parser import parse_note

NAMES = list(VIEWS)
#: Front-matter that moves without the memory changing (recall boosts
#: strength): a view reading it would show stale values or force rewrites.
UNSTABLE = {"strength", "recall_count", "recalls", "last_recalled", "last_seen"}


def run(vault: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, ["--vault", str(vault), *args], env=env)


def actions(output: str) -> dict[str, str]:
    """``--json`` lines as path -> action."""
    return {o["path"]: o["action"] for o in map(json.loads, output.splitlines())}


def snapshot(vault: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under the vault: its bytes and mtime (ns)."""
    return {p.relative_to(vault).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(vault.rglob("*")) if p.is_file()}


# -- The files are valid Bases syntax --------------------------------------------------------


@pytest.mark.parametrize("folder", ["Memory", "Brain/Memories", 'Odd "quoted" folder'])
@pytest.mark.parametrize("name", NAMES)
def test_every_view_file_is_valid_bases_syntax(name: str, folder: str) -> None:
    text = render_view(name, folder).decode("utf-8")
    data = load_base(text)
    assert data == VIEWS[name](folder)  # the YAML reads back as exactly what was meant
    assert check_base(data) == []  # strict: no legacy keys either
    assert {v["type"] for v in data["views"]} <= set(VIEW_TYPES)
    assert not note_properties(data) & UNSTABLE
    assert ownership(text.encode()) == "memvault"
    if name != "Conflicts.base":  # Conflicts.base looks at the whole vault
        assert json.dumps(folder)[1:-1] in data["filters"]["and"][0]


def test_the_views_cover_what_the_issue_asks_for() -> None:
    memories = {v["name"]: v for v in memories_base("Memory")["views"]}
    assert memories["By type"]["groupBy"]["property"] == "formula.memory_type"
    assert memories["Recent changes"]["sort"][0] == {"property": "file.mtime", "direction": "DESC"}
    assert memories["By scope"]["groupBy"]["property"] == "note.scope"
    assert memories["By source"]["groupBy"]["property"] == "formula.origin"
    sessions = {v["name"]: v for v in sessions_base("Memory")["views"]}
    assert sessions["By client"]["groupBy"]["property"] == "note.client"
    assert sessions["By date"]["sort"][0]["property"] == "note.started"
    assert {v["type"] for v in sessions.values()} == {"table", "list"}


KEPANO_BASES = sorted((CORPORA / "kepano-obsidian").rglob("*.base"))


@pytest.mark.skipif(not KEPANO_BASES, reason="../shared/corpora/kepano-obsidian is not available")
def test_the_checker_accepts_the_30_real_bases_of_kepanos_vault() -> None:
    assert len(KEPANO_BASES) == 30
    legacy = {}
    for path in KEPANO_BASES:
        data = load_base(path.read_text("utf-8"))
        assert check_base(data, strict=False) == [], path.name
        if problems := check_base(data):
            legacy[path.name] = problems
    # Strict checking flags exactly the keys and the functions early Bases versions wrote.
    assert {"Games.base", "Genre.base"} <= set(legacy)
    assert all("'display'" in p or ".sort[" in p or "Bases has no function not()" in p
               for ps in legacy.values() for p in ps)


@pytest.mark.parametrize(("base", "expected"), [
    ([1, 2], "a base is a mapping"),
    ({"views": [{"type": "table", "name": "T"}], "from": "x"}, "unknown top-level key 'from'"),
    ({"filters": {"and": ["a"], "or": ["b"]}, "views": [{"type": "table", "name": "T"}]}, "exactly one of and, or, not"),
    ({"filters": {"xor": ["a"]}, "views": [{"type": "table", "name": "T"}]}, "exactly one of and, or, not"),
    ({"filters": {"and": "a"}, "views": [{"type": "table", "name": "T"}]}, "filters.and: a list"),
    ({"filters": {"and": [{"not": [""]}]}, "views": [{"type": "table", "name": "T"}]}, "empty filter statement"),
    ({"formulas": {"x": 3}, "views": [{"type": "table", "name": "T"}]}, "formulas.x: an expression string"),
    ({"properties": {"a": {"width": 3}}, "views": [{"type": "table", "name": "T"}]}, "unknown key 'width'"),
    ({}, "views: missing"),
    ({"views": []}, "one or more views"),
    ({"views": [{"type": "gantt", "name": "T"}]}, "views[0].type: one of table, cards, list, map"),
    ({"views": [{"type": "table"}]}, "views[0].name: missing"),
    ({"views": [{"type": "table", "name": "T", "columnWidth": {}}]}, "unknown key 'columnWidth'"),
    ({"views": [{"type": "table", "name": "T", "sort": [{"property": "x", "direction": "UP"}]}]}, "ASC or DESC"),
    ({"views": [{"type": "table", "name": "T", "sort": [{"column": "x", "direction": "ASC"}]}]}, "property and direction"),
    ({"views": [{"type": "table", "name": "T", "groupBy": "x"}]}, "groupBy: a mapping"),
    ({"views": [{"type": "list", "name": "T", "limit": 0}]}, "limit: a whole number"),
    ({"views": [{"type": "table", "name": "T", "order": "file.name"}]}, "order: a list"),
    ({"views": [{"type": "table", "name": "T", "summaries": {"x": "Mode"}}]}, "unknown summary 'Mode'"),
    # Expressions (issue 35): each mistake Obsidian would show as an error or an empty view.
    ({"filters": 'file.inFoldr("Memory")', "views": [{"type": "table", "name": "T"}]},
     "filters 'file.inFoldr(\"Memory\")': Bases has no method inFoldr() (did you mean inFolder()?)"),
    ({"formulas": {"f": 'if(done, "yes"'}, "views": [{"type": "table", "name": "T"}]},
     "formulas.f 'if(done, \"yes\"': '(' at column 3 is never closed"),
    ({"formulas": {"f": "if(a, b))"}, "views": [{"type": "table", "name": "T"}]}, "')' at column 9 closes nothing"),
    ({"formulas": {"f": 'iff(a, "x")'}, "views": [{"type": "table", "name": "T"}]},
     "Bases has no function iff() (did you mean if()?)"),
    ({"formulas": {"f": "'open"}, "views": [{"type": "table", "name": "T"}]}, "a string left open at column 1"),
    ({"views": [{"type": "table", "name": "T", "filters": {"and": ["a b"]}}]},
     "views[0].filters.and[0] 'a b': unexpected 'b' at column 3"),
    ({"formulas": {"total": "price * 2"}, "views": [{"type": "table", "name": "T", "order": ["formula.totl"]}]},
     "views[0].order[0]: formula.totl names no formula of this base (did you mean formula.total?)"),
    ({"views": [{"type": "table", "name": "T", "sort": [{"property": "formula.x", "direction": "ASC"}]}]},
     "views[0].sort[0].property: formula.x names no formula"),
    ({"views": [{"type": "table", "name": "T", "groupBy": {"property": "formula.x", "direction": "ASC"}}]},
     "views[0].groupBy.property: formula.x names no formula"),
    ({"properties": {"formula.x": {"displayName": "X"}}, "views": [{"type": "table", "name": "T"}]},
     "properties.formula.x: formula.x names no formula"),
    ({"formulas": {"a": "formula.b + 1"}, "views": [{"type": "table", "name": "T"}]},
     "formulas.a 'formula.b + 1': formula.b names no formula"),
])
def test_the_checker_names_each_mistake(base: Any, expected: str) -> None:
    problems = check_base(base)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize("expression", [
    'file.inFolder("Memory") && !file.hasProperty("session_id")',
    'if(source, source.split(":")[0], "vault")',
    "(now() - birthday).years.floor()",
    'file.embeds[0].containsAny("jpg", "gif")',
    "/ab+c/gi.matches(file.name) || 1.isTruthy() && (2.5).round() > -3 % 2",
    '{"a": [1, 2.5, \'x\']}.isEmpty() != note["my key"]',
    "values.filter(value > 2).reduce(acc + value, 0) / this.file.size",
    "formula.total >= 3 && list(author).contains(this)",
])
def test_the_checker_takes_what_obsidian_reads(expression: str) -> None:
    base = {"formulas": {"total": "price * 2"}, "filters": expression, "views": [{"type": "table", "name": "T"}]}
    assert check_base(base) == []


@given(st.text(st.sampled_from(list('ab.(),[]{}"\'/!&|=<>+-*% 01:')), max_size=30))
def test_any_expression_gets_an_answer_never_an_exception(text: str) -> None:
    problem = check_expression(text, {"a"})
    assert problem is None or (problem and "\n" not in problem)


def test_an_expression_nested_thousands_deep_is_one_line() -> None:
    assert check_expression("(" * 5000 + "a" + ")" * 5000) == "it nests too deeply to read"


def test_a_view_may_use_the_bases_own_summary() -> None:
    base = {"summaries": {"spread": "values.max() - values.min()"},
            "views": [{"type": "table", "name": "T", "summaries": {"note.n": "spread", "note.m": "Average"}}]}
    assert check_base(base) == []


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_leaf = st.one_of(_text, st.integers(-10**6, 10**6), st.booleans())
_yaml = st.recursive(_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)), max_leaves=20)


@given(st.dictionaries(_text, _yaml, max_size=5))
def test_dump_base_reads_back_equal_and_is_deterministic(data: dict[str, Any]) -> None:
    text = dump_base(data)
    assert (yaml_data := load_base(text)) == data or (data == {} and yaml_data is None)
    assert dump_base(data) == text


@pytest.mark.parametrize(("expression", "expected"), [
    ('file.inFolder("Memory")', set()),
    ('if(type, type, file.folder.split("/")[1])', {"type"}),
    ('if(source, source.split(":")[0], "vault")', {"source"}),
    ('note.scope == "user" && !file.hasProperty("session_id")', {"scope"}),
    ("list(author).contains(this) || rating > 3", {"author", "rating"}),
    ("formula.ppu > 5 && values.mean() > 1", set()),
    ("note[\"my key\"] > 2", {"my key"}),
    ('status.contains("done") && now() > due', {"status", "due"}),
    ("'type and scope' == status || note[\"x\"]", {"status", "x"}),  # words in a text are not read
])
def test_expression_properties(expression: str, expected: set[str]) -> None:
    assert expression_properties(expression) == expected


# -- Install, re-install, a person's edit, --force, remove ----------------------------------


def test_install_writes_the_views_and_again_writes_nothing(vault: Path) -> None:
    r = run(vault, "views", "install", "--json")
    assert r.exit_code == 0, r.output
    assert actions(r.output) == {f"Memory/{n}": "written" for n in NAMES}
    for name in NAMES:
        assert (vault / "Memory" / name).read_bytes() == render_view(name, "Memory")
    old = 1_600_000_000_000_000_000  # an old mtime: a rewrite, even within a clock tick, would change it
    for name in NAMES:
        os.utime(vault / "Memory" / name, ns=(old, old))
    before = snapshot(vault)
    again = run(vault, "views", "install", "--json")
    assert again.exit_code == 0 and actions(again.output) == {f"Memory/{n}": "unchanged" for n in NAMES}
    assert snapshot(vault) == before
    people = run(vault, "views", "install")
    assert people.output.splitlines() == [f"unchanged    Memory/{n}" for n in NAMES]


def test_a_persons_edit_survives_install_and_remove(vault: Path) -> None:
    assert run(vault, "views", "install").exit_code == 0
    target = vault / "Memory/Memories.base"
    edited = target.read_bytes().replace(b"limit: 50", b"limit: 10")
    target.write_bytes(edited)
    r = run(vault, "views", "install")
    assert r.exit_code == 0
    line = next(x for x in r.output.splitlines() if "Memories.base" in x)
    assert line.startswith("kept-edited  Memory/Memories.base: changed since memvault wrote it")
    assert target.read_bytes() == edited
    r = run(vault, "views", "remove", "--json")
    assert r.exit_code == 0
    assert actions(r.output) == {"Memory/Memories.base": "kept-edited", "Memory/Sessions.base": "removed",
                                 "Memory/Conflicts.base": "removed"}
    assert sorted(p.name for p in (vault / "Memory").iterdir()) == ["Memories.base"]
    assert target.read_bytes() == edited
    assert actions(run(vault, "views", "remove", "--json").output)["Memory/Sessions.base"] == "absent"


def test_a_file_obsidian_resaved_or_a_person_wrote_is_theirs(vault: Path) -> None:
    # Obsidian re-saving a base drops comments, stamp included: memvault's no more.
    target = vault / "Memory/Sessions.base"
    target.parent.mkdir()
    resaved = render_view("Sessions.base", "Memory").split(b"\n", 4)[4]
    target.write_bytes(resaved)
    r = run(vault, "views", "install", "--json")
    assert actions(r.output)["Memory/Sessions.base"] == "kept-edited"
    assert target.read_bytes() == resaved
    assert actions(run(vault, "views", "remove", "--json").output)["Memory/Sessions.base"] == "kept-edited"
    assert target.read_bytes() == resaved


def test_force_backs_up_the_changed_file_and_replaces_it(vault: Path) -> None:
    run(vault, "views", "install")
    target = vault / "Memory/Conflicts.base"
    mine = b"views:\n  - type: cards\n    name: Mine\n"
    target.write_bytes(mine)
    r = run(vault, "views", "install", "--force", "--json")
    assert r.exit_code == 0, r.output
    rows = {o["path"]: o for o in map(json.loads, r.output.splitlines())}
    assert rows["Memory/Memories.base"]["action"] == "unchanged"
    replaced = rows["Memory/Conflicts.base"]
    assert replaced["action"] == "replaced"
    backup = vault / replaced["backup"]
    assert backup.parent == target.parent and backup.name.startswith("Conflicts (backup ") and backup.suffix == ".base"
    assert backup.read_bytes() == mine and target.read_bytes() == render_view("Conflicts.base", "Memory")
    # The backup is the person's: remove leaves it, install never touches it.
    run(vault, "views", "remove")
    assert [p.name for p in (vault / "Memory").iterdir()] == [backup.name]


def test_an_older_memvault_version_nobody_changed_is_brought_up_to_date(vault: Path) -> None:
    target = vault / "Memory/Memories.base"
    target.parent.mkdir()
    target.write_bytes(stamp(HEADER + "views:\n  - type: table\n    name: Old\n"))
    r = run(vault, "views", "install", "--json")
    assert actions(r.output)["Memory/Memories.base"] == "written"
    assert target.read_bytes() == render_view("Memories.base", "Memory")


def test_the_memory_folder_setting_is_where_views_go(vault: Path) -> None:
    r = run(vault, "views", "install", env={"MEMVAULT_MEMORY_FOLDER": "Brain/Memories"})
    assert r.exit_code == 0, r.output
    data = load_base((vault / "Brain/Memories/Memories.base").read_text("utf-8"))
    assert data["filters"]["and"][0] == 'file.inFolder("Brain/Memories")'
    assert data["formulas"]["memory_type"].endswith('split("/")[2])')
    assert not (vault / "Memory").exists()


def test_check_reports_a_broken_base_in_one_line(vault: Path, tmp_path: Path) -> None:
    run(vault, "views", "install")
    ok = run(vault, "views", "check")
    assert ok.exit_code == 0 and ok.output.count(": ok") == 3
    bad = tmp_path / "Bad.base"
    bad.write_text("views:\n  - type: gantt\n    name: x\n    limit: -1\n", "utf-8")
    broken = tmp_path / "Broken.base"
    broken.write_text("views: [\n", "utf-8")
    r = run(vault, "views", "check", str(bad), str(broken))
    assert r.exit_code == 1
    lines = r.output.splitlines()
    assert len(lines) == 2 and "type: one of table" in lines[0] and "limit" in lines[0]
    assert lines[1].startswith(f"{broken}: not valid YAML")
    # An expression Obsidian cannot read (issue 35): one line naming the file, where, and what.
    typo = tmp_path / "Typo.base"
    typo.write_text("filters: 'file.inFoldr(\"Memory\")'\nformulas:\n  due: 'if(done, \"late\"'\n"
                    "views:\n  - type: table\n    name: T\n    order: [file.name, formula.age]\n", "utf-8")
    r = run(vault, "views", "check", str(typo))
    assert r.exit_code == 1 and len(r.output.splitlines()) == 1 and "Traceback" not in r.output
    assert r.output.startswith(f"{typo}: filters") and "inFoldr()" in r.output and "never closed" in r.output
    assert "views[0].order[1]: formula.age names no formula" in r.output


def test_bad_input_is_one_line_and_the_right_exit_code(vault: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["--vault", str(tmp_path / "nowhere"), "views", "install"])
    assert r.exit_code == 2 and "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    assert run(vault, "views", "install", "--bogus").exit_code == 2
    # A view file that is a symlink out of the vault is neither read nor replaced.
    outside = tmp_path / "outside.base"
    outside.write_text("secret", "utf-8")
    (vault / "Memory").mkdir()
    (vault / "Memory/Memories.base").symlink_to(outside)
    r = run(vault, "views", "install")
    assert r.exit_code == 1 and "leads outside the vault" in r.output and "Traceback" not in r.output
    assert outside.read_text("utf-8") == "secret"


# -- Every way memvault writes a memory carries what the views read ---------------------------


def _frontmatter(vault: Path, rel: str) -> dict[str, Any]:
    return parse_note(rel, (vault / rel).read_bytes()).frontmatter


def test_notes_written_by_add_mcp_import_and_ingest_carry_every_property_the_views_use(
    vault: Path, tmp_path: Path,
) -> None:
    memory_props = note_properties(memories_base("Memory"))
    session_props = note_properties(sessions_base("Memory"))
    assert memory_props == {"type", "scope", "tags", "source", "created", "updated"}
    assert session_props == {"title", "client", "started", "ended", "turns"}

    r = run(vault, "add", "Prefers dark mode in every editor", "--type", "preference", "--json")
    assert r.exit_code == 0, r.output
    added = json.loads(r.output.splitlines()[-1])["path"]
    with opened(vault) as store:
        remembered = store.add("The staging database is called db2", "semantic", source="mcp:claude-code").path
        report = store.import_("csv", FIXTURES / "imports/memories.csv")
        assert report.imported >= 3
        lines = [{"role": "user", "content": "How do I rotate logs?", "timestamp": 1767225600},
                 {"role": "assistant", "content": "Use logrotate.", "timestamp": 1767225660}]
        data = "".join(json.dumps(x) + "\n" for x in lines).encode()
        session = store.ingest(io.BytesIO(data), session="chat-7", client="my-agent").path
    imported = [p.relative_to(vault).as_posix() for p in (vault / "Memory").rglob("*.md")
                if "session_id" not in _frontmatter(vault, p.relative_to(vault).as_posix())
                and p.relative_to(vault).as_posix() not in (added, remembered)]
    assert len(imported) >= 3
    sources = {}
    for rel in [added, remembered, *imported]:
        fm = _frontmatter(vault, rel)
        assert memory_props <= set(fm), (rel, memory_props - set(fm))
        # ...and what Memories.base filters on: no session or conflict marks.
        assert not {"session_id", "conflict_of"} & set(fm)
        sources[rel] = fm["source"]
    assert sources[added] == "manual" and sources[remembered] == "mcp:claude-code"
    assert {sources[rel] for rel in imported} == {"import:csv"}
    fm = _frontmatter(vault, session)
    assert session_props <= set(fm) and "session_id" in fm and session.startswith("Memory/")
