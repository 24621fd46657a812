"""Property tests for the note parser (Hypothesis).

Settings come from the profile that ``tests/conftest.py`` loads ("ci":
derandomized, 200 examples, no deadline), so none are set here.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any
from urllib.parse import unquote

from hypothesis import given
from hypothesis import strategies as st

from memvault.vault_io.note import ParsedNote
from memvault.vault_io.parser import parse_note

# Pieces of Obsidian Markdown (and of its failure modes) that the scanners
# react to, so random notes exercise every branch rather than plain prose.
FRAGMENTS = [
    "[[", "]]", "[", "]", "(", ")", "![[", "![", "!", "|", "\\|", "#", "##", "# ", "#^",
    "^", " ^id", "`", "``", "```", "~~~", "%%", "<!--", "-->", "<div>", "</div>",
    "<span style='color:#f00'>", "<", ">", "> ", "> [!note]", "$$", "---", "===",
    "- ", "* ", "1. ", "- [ ] ", "    ", "\t", " ", "\n", "\n\n", "\r\n", "\r", "\ufeff",
    "Note", "a", "tag", "123", ".png", ".md", "%20", "é", "🌲", "日本", "http://x.y/", ":",
    "title: x", "tags: [a, b]", "aliases: A, B", "up: '[[Up]]'", "rel: [[X|y]]",
    "&a", "*a", "{{date}}", '"', "'", "|100", "|100x200", "\\", "\x00", "\u2028",
]

fragment_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=60
).map("".join)

# Notes that often open with front-matter, so YAML and its errors get hit.
notes = st.one_of(
    fragment_text,
    st.builds(lambda fm, body: f"---\n{fm}\n---\n{body}", fragment_text, fragment_text),
    st.text(max_size=200),
)


def parse(text: str) -> ParsedNote:
    return parse_note("Folder/Note.md", text.encode("utf-8", "surrogatepass"))


def strings_in(value: Any) -> list[str]:
    """Every string (keys and values) inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in strings_in(item)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings_in(v)]]
    return []


def check_invariants(note: ParsedNote, text: str) -> None:
    """What must hold for any note: sane ranges, JSON-safe, no internal error."""
    assert note.error is None or not note.error.startswith("internal parser error"), note.error
    normalised = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    assert normalised.endswith(note.body)
    assert note.body_line == normalised[: len(normalised) - len(note.body)].count("\n") + 1
    last_line = normalised.count("\n") + 1
    json.dumps(note.frontmatter, allow_nan=False)
    for item in note.links + note.embeds:
        assert 1 <= item.line <= last_line
        assert item.target or item.subpath
        assert (item.kind == "property") == (item.prop is not None)
        assert item.size is None or item.kind != "link"
    for heading in note.headings:
        assert 1 <= heading.level <= 6 and 1 <= heading.line <= last_line
    for block in note.blocks:
        assert 1 <= block.line <= block.end_line <= last_line
    lowered = [tag.lower() for tag in note.tags]
    assert len(set(lowered)) == len(lowered)
    for tag in note.tags:
        assert tag and not tag.isdigit() and "#" not in tag and not any(c.isspace() for c in tag)


def check_targets_occur(note: ParsedNote, text: str) -> None:
    """Every link target comes from the note itself."""
    fm_strings = strings_in(note.frontmatter)
    for item in note.links + note.embeds:
        if item.kind == "property":
            assert any(item.target in s for s in fm_strings), item
        elif item.markdown:
            assert item.target in unquote(text) or item.target in text, item
        else:
            assert item.target in text, item


@given(notes)
def test_never_raises_on_markdownish_text(text: str) -> None:
    note = parse(text)
    check_invariants(note, text)
    check_targets_occur(note, text)


@given(st.text())
def test_never_raises_on_arbitrary_text(text: str) -> None:
    note = parse(text)
    check_invariants(note, text)
    check_targets_occur(note, text)


@given(st.binary(max_size=300))
def test_arbitrary_bytes_parse_with_replacement_characters_and_say_so(data: bytes) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        note = parse_note("Folder/Bin.md", data)
        assert note.undecodable and note.undecodable.startswith("byte 0x")
        assert note.error and note.error.startswith("not valid UTF-8 (byte 0x")
        check_invariants(note, data.decode("utf-8", "replace"))
    else:
        check_invariants(parse_note("Folder/Bin.md", data), data.decode("utf-8"))


@given(notes)
def test_crlf_and_bom_parse_like_the_lf_twin(text: str) -> None:
    lf = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    twin = parse(lf)
    for variant, bom, crlf in [
        (lf.replace("\n", "\r\n"), False, "\n" in lf),
        ("\ufeff" + lf, True, False),
        ("\ufeff" + lf.replace("\n", "\r\n"), True, "\n" in lf),
    ]:
        note = parse(variant)
        assert (note.bom, note.crlf) == (bom, crlf)
        assert dataclasses.replace(note, hash=twin.hash, bom=False, crlf=False) == twin


@given(notes)
def test_nothing_counts_inside_a_fence_or_a_comment(text: str) -> None:
    """Masking is total: wrapped in a code fence or a %% comment, any text is inert."""
    text = text.replace("\r", "\n")
    for wrapped, closer in [(f"````````\n{text}\n````````\n", "````````"), (f"%%{text}%%", "%%")]:
        if closer in text:
            continue
        note = parse(wrapped)
        assert (note.links, note.embeds, note.tags, note.headings, note.blocks) == ((),) * 5
