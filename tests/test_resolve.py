"""Link resolution with Obsidian's rules."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memvault.vault_io.resolve import LinkResolver, link_key, path_key

PATHS = [
    "Note.md",
    "Folder/Note.md",
    "Folder/Other.md",
    "Deep/Folder/Other.md",
    "Deep/Unique.md",
    "img/pic.png",
    "Books.base",
    "v1.2 Release.md",
]


def r() -> LinkResolver:
    return LinkResolver(PATHS)


def test_bare_name_case_insensitive() -> None:
    assert r().resolve("unique", "x.md").path == "Deep/Unique.md"
    assert not r().resolve("unique", "x.md").ambiguous


def test_same_folder_wins_then_shortest_path_and_ambiguous_flag() -> None:
    hit = r().resolve("Note", "Folder/Other.md")
    assert (hit.path, hit.ambiguous) == ("Folder/Note.md", True)
    hit = r().resolve("Note", "Elsewhere/x.md")
    assert (hit.path, hit.ambiguous) == ("Note.md", True)
    hit = r().resolve("Other", "Top.md")
    assert (hit.path, hit.ambiguous) == ("Folder/Other.md", True)


def test_md_extension_optional_and_attachments_by_full_name() -> None:
    assert r().resolve("Unique.md", "x.md").path == "Deep/Unique.md"
    assert r().resolve("pic.png", "x.md").path == "img/pic.png"
    assert r().resolve("Books.base", "x.md").path == "Books.base"
    assert r().resolve("v1.2 Release", "x.md").path == "v1.2 Release.md"


def test_path_qualified_links() -> None:
    assert r().resolve("Folder/Other", "x.md").path == "Folder/Other.md"
    assert r().resolve("/Folder/Note", "Deep/x.md").path == "Folder/Note.md"
    assert r().resolve("/Other", "x.md").path is None
    # a path tail matches a longer path
    hit = r().resolve("Folder/Other", "Deep/y.md")
    assert hit.path == "Folder/Other.md"
    assert r().resolve("Deep/Folder/Other", "x.md").path == "Deep/Folder/Other.md"


def test_relative_links() -> None:
    assert r().resolve("./Other", "Folder/x.md").path == "Folder/Other.md"
    assert r().resolve("../Note", "Folder/x.md").path == "Note.md"
    assert r().resolve("../../escape", "Folder/x.md").path is None


def test_same_note_link() -> None:
    assert r().resolve("", "Folder/Note.md").path == "Folder/Note.md"


def test_unresolved_then_resolves_when_target_appears() -> None:
    res = r()
    assert res.resolve("Later", "x.md").path is None
    res.add("Sub/Later.md")
    assert res.resolve("Later", "x.md").path == "Sub/Later.md"
    res.remove("Sub/Later.md")
    assert res.resolve("Later", "x.md").path is None


def test_keys_match_between_links_and_paths() -> None:
    assert link_key("Folder/Note") == path_key("Folder/Note.md") == "note"
    assert link_key("Note.md") == "note"
    assert link_key("pic.PNG") == path_key("img/pic.png")


@given(st.text(), st.sampled_from(PATHS))
def test_resolve_never_raises(target: str, source: str) -> None:
    hit = r().resolve(target, source)
    assert hit.path is None or hit.path in PATHS or hit.path == source


def test_case_variants_of_one_path_are_both_kept() -> None:
    res = LinkResolver(["Note.md", "note.md", "Dir/x.md"])
    assert (res.resolve("note", "Dir/x.md").path, res.resolve("note", "Dir/x.md").ambiguous) == ("note.md", True)
    assert res.resolve("Note", "Dir/x.md").path == "Note.md"
    assert res.resolve("/NOTE", "Dir/x.md").path in {"Note.md", "note.md"}
    assert res.resolve("/note", "Dir/x.md") == res.resolve("/note.md", "Dir/x.md")
    res.remove("Note.md")
    assert "Note.md" not in res and "note.md" in res
    assert (res.resolve("Note", "Dir/x.md").path, res.resolve("Note", "Dir/x.md").ambiguous) == ("note.md", False)
    res.remove("note.md")
    assert res.resolve("note", "Dir/x.md").path is None
