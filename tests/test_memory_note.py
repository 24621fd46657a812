"""The memory note format: lossless round trips and safe file names."""

from __future__ import annotations

import os
import unicodedata
from dataclasses import replace
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from memvault.vault_io.memory_note import (
    MemoryDoc,
    memory_filename,
    read_memory,
    render_memory,
    slugify,
    split_related,
)
from memvault.vault_io.parser import parse_note

TYPES = st.sampled_from(["identity", "semantic", "episodic", "procedural", "prospective"])
WORD = st.text(alphabet=st.characters(categories=("L", "N")), min_size=1, max_size=12)
LINE = st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40), min_size=1, max_size=4)


@st.composite
def docs(draw: st.DrawFn) -> MemoryDoc:
    paragraphs = draw(st.lists(LINE.map(" ".join), min_size=1, max_size=3))
    content = "\n\n".join(p.strip() or "x" for p in paragraphs).strip() or "x"
    return MemoryDoc(
        id="m-" + draw(st.text(alphabet="0123456789abcdef", min_size=12, max_size=12)),
        type=draw(TYPES),
        content=content,
        scope=draw(st.sampled_from(["user", "work", "agent:claude"])),
        tags=draw(st.lists(WORD, max_size=3, unique_by=str.lower)),
        strength=draw(st.one_of(st.none(), st.floats(0, 1, allow_nan=False).map(lambda x: round(x, 3)))),
        created="2026-11-22T03:00:00+00:00",
        updated="2026-11-22T04:00:00+00:00",
        source=draw(st.sampled_from(["manual", "agent", "import"])),
        supersedes=draw(st.one_of(st.none(), st.just("m-000000000001"))),
        related=draw(st.lists(WORD, max_size=3)),
    )


def roundtrip(doc: MemoryDoc) -> MemoryDoc:
    note = parse_note("Memory/semantic/x.md", render_memory(doc).encode("utf-8"))
    assert note.error is None, note.error
    return read_memory(note.frontmatter, note.body)


@given(docs())
def test_render_then_read_is_lossless(doc: MemoryDoc) -> None:
    # content that itself ends like a Related section would be ambiguous;
    # generated content has no "## Related" heading
    assert roundtrip(doc) == doc


@given(docs(), docs())
def test_rewrite_reads_back_as_the_new_doc(old: MemoryDoc, new: MemoryDoc) -> None:
    rewritten = render_memory(new, render_memory(old))
    note = parse_note("Memory/semantic/x.md", rewritten.encode("utf-8"))
    assert read_memory(note.frontmatter, note.body) == new
    if old == new:
        assert rewritten == render_memory(old)


def test_rewrite_keeps_unknown_keys_comments_and_crlf() -> None:
    doc = MemoryDoc(id="m-1", type="semantic", content="Old text.", tags=["a"], created="c", updated="u")
    text = render_memory(doc).replace("\n", "\r\n").replace("scope: user\r\n", "scope: user\r\n# mine\r\nmood: calm\r\n")
    doc.content = "New text."
    out = render_memory(doc, text)
    assert "# mine\r\nmood: calm\r\n" in out and "New text.\r\n" in out and "\n" not in out.replace("\r\n", "")


def test_related_section_only_when_it_holds_links_only() -> None:
    assert split_related("Body.\n\n## Related\n- [[A]]\n- [[B|b]]\n") == ("Body.", ["A", "B|b"])
    assert split_related("Body.\n\n## Related\nSome prose [[A]].\n") == ("Body.\n\n## Related\nSome prose [[A]].", [])


# Arbitrary text, text dense in what makes names unsafe (dots, separators,
# blanks), and lone surrogates (undecodable bytes of a command line).
CONTENT = st.one_of(
    st.text(max_size=400),
    st.text(alphabet=". /\\-a\u0301", max_size=40),
    st.text(alphabet=st.characters(categories=["Cs", "Ll", "Zs"]), max_size=40),
)


@given(CONTENT, st.text(alphabet="0123456789abcdef", min_size=8, max_size=8))
def test_file_names_are_safe(content: str, short: str) -> None:
    name = memory_filename(content, short)
    assert "/" not in name and "\\" not in name and "\x00" not in name
    assert not name.startswith(".") and ".." not in name
    assert all(ord(c) >= 32 and c != "\x7f" for c in name)
    assert len(name.encode("utf-8")) <= 255
    assert unicodedata.normalize("NFC", name) == name
    assert name.endswith(f"-{short}.md")
    for ch in "[]#^|":
        assert ch not in name


@given(CONTENT)
def test_file_name_stays_inside_the_folder(content: str) -> None:
    folder = Path("/vault/Memory/semantic")
    target = Path(os.path.normpath(folder / memory_filename(content, "abcdef12")))
    assert target.parent == folder


def test_slug_is_readable() -> None:
    assert slugify("Prefers dark mode in every editor.") == "prefers-dark-mode-in-every-editor"
    assert slugify("../../etc/passwd") == "etc-passwd"
    assert slugify("   ") == "memory"
    assert slugify("Café ÉCOLE") == "café-école"


def test_no_double_dots_in_slugs() -> None:
    assert memory_filename("a..b", "abcdef12") == "a.b-abcdef12.md"
    assert slugify("version 1.2...final") == "version-1.2.final"
    assert ".." not in memory_filename("x", "ab..cd")


def test_strength_is_written_rounded() -> None:
    doc = MemoryDoc(id="m-1", type="semantic", content="x", strength=0.5 + 0.02 * 4)
    assert "\nstrength: 0.58\n" in render_memory(doc)
    doc.strength = 0.1 + 0.2
    assert "\nstrength: 0.3\n" in render_memory(doc)


def test_extra_keys_are_read_and_written_back_when_rendering_whole() -> None:
    note = parse_note(
        "Memory/semantic/x.md",
        b"---\nid: m-1\ntype: semantic\nmood: calm\ndue: 2026-03-01\nrefs: ['[[A]]', 2]\n---\nText.\n",
    )
    doc = read_memory(note.frontmatter, note.body)
    assert doc.extra == {"mood": "calm", "due": "2026-03-01", "refs": ["[[A]]", 2]}
    text = render_memory(doc)
    assert "mood: calm\ndue: 2026-03-01\nrefs:\n  - '[[A]]'\n  - 2\n" in text  # a date stays a date
    again = parse_note("Memory/semantic/x.md", text.encode())
    assert read_memory(again.frontmatter, again.body) == doc


# How a person (or another tool) may spell the managed keys: memvault reads
# them all the same, and must leave those lines alone when their value holds.
CREATED = st.sampled_from([
    "created: 2024-01-05", "created: '2024-01-05'", 'created: "2024-01-05"',
    "created: 2024-01-05T10:00:00+00:00", "created: '2026-11-22T03:00:00+00:00'  # when",
])
TAGS = st.sampled_from([
    "tags: [a, b]", "tags:\n  - a\n  - b", "tags:\n- a\n- '#b'", "tags: a, b", "tags: []",
])
STRENGTH = st.sampled_from(["strength: .5", "strength: 0.50", "strength: 0.5", "strength: 1", "strength: 0.333"])
SCOPE = st.sampled_from(["scope: user", "scope: 'work'", 'scope: "agent:claude"', "# mine\nscope: work"])
SOURCE = st.sampled_from(["source: manual", "source: 'agent'", ""])
EXTRA = st.sampled_from(["", "mood: calm", "aliases: [Tea]\n# a comment\nrating: 4"])


@given(CREATED, TAGS, STRENGTH, SCOPE, SOURCE, EXTRA, st.permutations(range(6)), LINE.map(" ".join))
def test_content_only_update_leaves_other_frontmatter_lines_alone(
    created: str, tags: str, strength: str, scope: str, source: str, extra: str, order: list[int], words: str
) -> None:
    keys = ["id: m-0123456789ab", "type: semantic", created, tags, strength, scope]
    lines = [keys[i] for i in order] + [x for x in (source, extra, "updated: '2026-01-01T00:00:00+00:00'") if x]
    text = "---\n" + "\n".join(lines) + "\n---\nOld text.\n"
    note = parse_note("Memory/semantic/x.md", text.encode())
    assert note.error is None, note.error
    doc = read_memory(note.frontmatter, note.body)
    new = replace(doc, content=words.strip() or "x", updated="2026-02-02T00:00:00+00:00")
    out = render_memory(new, text)
    head_before = text.split("---\n")[1].splitlines()
    head_after = out.split("---\n")[1].splitlines()
    assert [x for x in head_after if not x.startswith("updated:")] == [
        x for x in head_before if not x.startswith("updated:")]
    assert "updated: '2026-02-02T00:00:00+00:00'" in head_after
    again = parse_note("Memory/semantic/x.md", out.encode())
    assert read_memory(again.frontmatter, again.body) == new
