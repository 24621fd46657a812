"""The memory note format: lossless round trips and safe file names."""

from __future__ import annotations

import os
import unicodedata
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


@given(st.text(max_size=400), st.text(alphabet="0123456789abcdef", min_size=8, max_size=8))
def test_file_names_are_safe(content: str, short: str) -> None:
    name = memory_filename(content, short)
    assert "/" not in name and "\\" not in name and "\x00" not in name
    assert not name.startswith(".") and ".." not in name.split("-" + short)[0].split("/")
    assert all(ord(c) >= 32 and c != "\x7f" for c in name)
    assert len(name.encode("utf-8")) <= 255
    assert unicodedata.normalize("NFC", name) == name
    assert name.endswith(f"-{short}.md")
    for ch in "[]#^|":
        assert ch not in name


@given(st.text(max_size=200))
def test_file_name_stays_inside_the_folder(content: str) -> None:
    folder = Path("/vault/Memory/semantic")
    target = Path(os.path.normpath(folder / memory_filename(content, "abcdef12")))
    assert target.parent == folder


def test_slug_is_readable() -> None:
    assert slugify("Prefers dark mode in every editor.") == "prefers-dark-mode-in-every-editor"
    assert slugify("../../etc/passwd") == "etc-passwd"
    assert slugify("   ") == "memory"
    assert slugify("Café ÉCOLE") == "café-école"
