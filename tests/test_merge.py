"""memvault merge: one memory keeps the merged content, the union of tags and
links, the highest strength and the earliest created; the others are
superseded with merged_into, their notes in .trash/, links to them resolve to
the survivor; history shows the merge; restore undoes one member's part."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli
from memvault.store.db import records as rec
from memvault.store.index.lookup import find_trace
from memvault.store.queries.search import SearchQuery


def _note(root: Path, mid: str, content: str, *, created: str, strength: float, tags: list[str],
          related: list[str] = ()) -> str:
    rel = f"Memory/semantic/{mid}.md"
    tag_lines = "".join(f"  - {t}\n" for t in tags)
    body = content + "\n" + ("\n## Related\n" + "".join(f"- [[{r}]]\n" for r in related) if related else "")
    write(root, rel, f"---\nid: {mid}\ntype: semantic\nscope: user\ntags:\n{tag_lines}strength: {strength}\n"
                     f"created: '{created}'\nupdated: '{created}'\nsource: manual\n---\n{body}")
    return rel


@pytest.fixture
def three(vault: Path):
    write(vault, "Editor setup.md", "# Editor setup\n")
    write(vault, "Themes.md", "# Themes\n")
    _note(vault, "m-a", "Prefers dark mode", created="2026-03-01T00:00:00+00:00", strength=0.4, tags=["ui"],
          related=["Editor setup"])
    _note(vault, "m-b", "Likes dark themes in every editor she uses", created="2025-12-01T00:00:00+00:00",
          strength=0.7, tags=["editor", "UI"], related=["Themes"])
    _note(vault, "m-c", "Dark mode, always", created="2026-05-01T00:00:00+00:00", strength=0.2, tags=["prefs"])
    write(vault, "Daily.md", "Remember [[m-b]] and [[m-c|that one]].\n")
    with opened(vault) as v:
        v.sync()
        yield v


def test_merge_keeps_one_memory_with_everything(three) -> None:
    v = three
    out = v.merge(["m-a", "m-b", "m-c"])
    assert (out.survivor, out.merged, out.skipped) == ("m-a", ["m-b", "m-c"], [])
    t = find_trace(v.con, "m-a")
    assert t.status == "active" and t.content == "Likes dark themes in every editor she uses"  # the longest
    assert t.tags == ["ui", "editor", "prefs"]  # union, first spelling kept
    assert t.strength == 0.7
    text = (v.root / out.path).read_text()
    assert "created: '2025-12-01T00:00:00+00:00'" in text and "strength: 0.7" in text
    assert "- [[Editor setup]]" in text and "- [[Themes]]" in text
    for mid in ("m-b", "m-c"):
        gone = find_trace(v.con, mid)
        assert (gone.status, gone.metadata["merged_into"], gone.reason) == ("superseded", "m-a", "merged into m-a")
        assert (v.root / ".trash" / f"{mid}.md").exists() and not (v.root / f"Memory/semantic/{mid}.md").exists()
    # links to the merged notes point to the survivor in the index
    daily = find_trace(v.con, "Daily.md")
    assert sorted(e.target_id for e in rec.edges_from(v.con, daily.id)) == ["m-a", "m-a"]
    assert {b.source_id for b in v.backlinks("m-a")} >= {daily.id}
    history = v.history("m-a")
    assert history[1].reason == "merged m-b, m-c into m-a"
    assert [h.id for h in history[2:]] == ["m-b", "m-c"]
    # search no longer offers the merged ones
    assert {h["id"] for h in v.search(SearchQuery("dark", mode="keyword")).to_json()["hits"]} == {"m-a"}


def test_merge_with_content_and_the_links_survive_a_rebuild(three) -> None:
    v = three
    v.merge(["m-c", "m-a"], content="Uses dark mode everywhere")
    assert find_trace(v.con, "m-c").content == "Uses dark mode everywhere"
    kept = [(h.id, h.status, h.reason) for h in v.history("m-c")]
    v.rebuild()
    assert [(h.id, h.status, h.reason) for h in v.history("m-c")] == kept
    daily = find_trace(v.con, "Daily.md")
    assert sorted(e.target_id or "" for e in rec.edges_from(v.con, daily.id)) == ["m-b", "m-c"]
    assert find_trace(v.con, "m-a").metadata["merged_into"] == "m-c"


def test_restore_of_a_merged_memory_undoes_its_part(three) -> None:
    v = three
    v.merge(["m-a", "m-b", "m-c"])
    result = v.restore("m-b")
    assert result.action == "restored" and (v.root / "Memory/semantic/m-b.md").exists()
    assert not (v.root / ".trash/m-b.md").exists()
    a = find_trace(v.con, "m-a")
    assert a.content == "Prefers dark mode"  # m-b's text was the merged content; m-c is shorter than m-a
    assert a.tags == ["ui", "prefs"] and a.strength == 0.4
    assert find_trace(v.con, "m-b").status == "active" and find_trace(v.con, "m-c").status == "superseded"
    assert "created: '2026-03-01T00:00:00+00:00'" in (v.root / "Memory/semantic/m-a.md").read_text()
    assert v.history("m-a")[1].reason == "unmerged m-b"
    v.restore("m-c")
    a = find_trace(v.con, "m-a")
    assert (a.content, a.tags, a.strength) == ("Prefers dark mode", ["ui"], 0.4)


def test_a_whole_merge_is_undone_exactly(three) -> None:
    import hashlib

    v = three

    def files() -> dict[str, str]:  # memvault's history log records the merge and its undo: not compared
        return {p.relative_to(v.root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in v.root.rglob("*") if p.is_file() and ".memvault" not in p.parts}

    before = files()
    out = v.merge(["m-a", "m-b"])
    assert files() != before
    assert not v.undo_consolidation(out.undo["run"]).refused
    assert files() == before
    assert find_trace(v.con, "m-b").status == "active" and len(v.history("m-a")) == 1


def test_merge_refuses_what_is_not_two_live_memories(three) -> None:
    from memvault.store.memories.mirror import MemoryOpError

    v = three
    with pytest.raises(MemoryOpError, match="two or more different"):
        v.merge(["m-a", "m-a"])
    with pytest.raises(MemoryOpError, match="no memory matches"):
        v.merge(["m-a", "m-zzz"])
    v.merge(["m-a", "m-b"])
    with pytest.raises(MemoryOpError):
        v.merge(["m-a", "m-b"])  # m-b is merged already


def test_cli_merge(three, vault: Path) -> None:
    three.close()
    runner = CliRunner()
    out = runner.invoke(cli, ["--vault", str(vault), "merge", "m-a", "m-c", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert (data["id"], data["merged"], data["action"]) == ("m-a", ["m-c"], "merged") and data["run"]
    out = runner.invoke(cli, ["--vault", str(vault), "merge", "m-a"])
    assert out.exit_code == 2 and "two or more" in out.output
    out = runner.invoke(cli, ["--vault", str(vault), "history", "m-a"])
    assert "merged m-c into m-a" in out.output and "m-c  superseded (merged into m-a)" in out.output
    out = runner.invoke(cli, ["--vault", str(vault), "restore", "m-c"])
    assert out.exit_code == 0 and "Restored m-c" in out.output, out.output


def test_doctor_finds_a_merge_in_order(three, vault: Path) -> None:
    """A merged memory is superseded and recorded in state.merges, not in
    memory_versions: doctor used to call every merge unhealthy, forever
    (backfill had nothing to copy)."""
    three.merge(["m-a", "m-b"])
    three.close()
    out = CliRunner().invoke(cli, ["--vault", str(vault), "doctor", "--json"])
    assert out.exit_code == 0 and json.loads(out.output)["healthy"] is True, out.output


def _standing(v, memory_id: str) -> tuple[str, str | None]:
    t = find_trace(v.con, memory_id)
    return t.status, t.metadata.get("merged_into")


def test_a_merged_memory_stays_merged_through_every_rebuild(vault: Path) -> None:
    """The steps of test_mirror_stateful's machine: add two memories, merge
    them, drop the index, then the whole data dir. The merged one is neither
    live nor forgotten but superseded by its survivor, before and after each
    rebuild (the merge is in the history log in the vault); only with the
    logs gone too does the vault alone give its note in .trash/ back as a
    forgotten memory."""
    import shutil

    with opened(vault) as v:
        v.sync()
        a = v.memories.add("Remember the blue door always.", "fact").id
        b = v.memories.add("Remember the red gate always.", "event").id
        out = v.merge([a, b])
        assert (out.survivor, out.merged) == (a, [b])
        v.sync()
        merged = ("superseded", a)
        assert _standing(v, b) == merged and _standing(v, a) == ("active", None)
        assert [p.parent.name for p in vault.rglob("*.md") if b[2:10] in p.name] == [".trash"]
        history = [(h.id, h.status, h.reason, h.content) for h in v.history(a)]

        v.rebuild()
        assert _standing(v, b) == merged and _standing(v, a) == ("active", None)
        assert [(h.id, h.status, h.reason, h.content) for h in v.history(a)] == history

        v.close()
        shutil.rmtree(v.data_dir)
        v.rebuild()
        assert _standing(v, b) == merged and _standing(v, a) == ("active", None)
        assert [(h.id, h.status, h.reason, h.content) for h in v.history(a)] == history

        v.close()
        shutil.rmtree(v.data_dir)
        shutil.rmtree(vault / "Memory" / ".memvault")  # a sync tool that skips dot-folders
        v.rebuild()
        assert _standing(v, b)[0] == "deleted" and _standing(v, a) == ("active", None)
