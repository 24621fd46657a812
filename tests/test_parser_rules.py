"""Hand-written tests for the body rules of the note parser.

One small test per rule: link forms, embeds, tags, masking of code,
comments and HTML, headings, block ids, line numbers, BOM/CRLF, decoding.
Front-matter rules are in ``test_parser_frontmatter.py``.
"""

from __future__ import annotations

import dataclasses

import pytest

from memvault.vault_io import mask
from memvault.vault_io.note import BlockId, Heading, Link, ParsedNote
from memvault.vault_io.parser import parse_note


def parse(text: str, path: str = "Note.md") -> ParsedNote:
    return parse_note(path, text.encode("utf-8"))


def link(text: str) -> Link:
    """The one link or embed in ``text``."""
    note = parse(text)
    found = note.links + note.embeds
    assert len(found) == 1, found
    return found[0]


def targets(text: str) -> list[str]:
    note = parse(text)
    return [item.target for item in note.links + note.embeds]


# --------------------------------------------------------------------------
# Wikilinks
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "target", "subpath", "display"),
    [
        ("[[Note]]", "Note", None, None),
        ("[[Note.md]]", "Note.md", None, None),
        ("[[Folder/Note]]", "Folder/Note", None, None),
        ("[[/Folder/Note]]", "/Folder/Note", None, None),
        ("[[Note|alias]]", "Note", None, "alias"),
        ("[[Note#Heading]]", "Note", "Heading", None),
        ("[[Note#H1#H2]]", "Note", "H1#H2", None),
        ("[[Note#^block]]", "Note", "^block", None),
        ("[[Note#^block|alias]]", "Note", "^block", "alias"),
        ("[[#Heading]]", "", "Heading", None),
        ("[[#^block]]", "", "^block", None),
        ("[[image.png]]", "image.png", None, None),
        ("[[ Note ]]", "Note", None, None),
        ("[[Note|a|b]]", "Note", None, "a|b"),
        # Obsidian drops empty "#" segments: "##^id" is "#^id"
        ("[[Note##^block|alias]]", "Note", "^block", "alias"),
        ("[[Note#H1##H2]]", "Note", "H1#H2", None),
    ],
)
def test_wikilink_forms(text: str, target: str, subpath: str | None, display: str | None) -> None:
    found = link(f"see {text} here")
    assert (found.kind, found.target, found.subpath, found.display) == (
        "link",
        target,
        subpath,
        display,
    )
    assert found.markdown is False and found.size is None and found.prop is None


def test_escaped_pipe_in_a_table_row_separates_alias() -> None:
    found = link("| a | b |\n|---|---|\n| [[Note\\|alias]] | x |\n")
    assert (found.target, found.display) == ("Note", "alias")


@pytest.mark.parametrize("text", ["[[]]", "[[|alias]]", "[[#]]", "[[ ]]", "[[#|x]]"])
def test_wikilinks_naming_nothing_are_ignored(text: str) -> None:
    assert targets(text) == []


def test_wikilinks_do_not_span_lines_or_nest() -> None:
    assert targets("[[a\nb]]") == []
    assert targets("[[a [[b]]") == ["b"]


def test_links_keep_order_and_repeats() -> None:
    assert targets("[[b]] [[a]] [[b]]") == ["b", "a", "b"]


# --------------------------------------------------------------------------
# Markdown links
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "target", "subpath", "display"),
    [
        ("[text](Some%20Note.md)", "Some Note.md", None, "text"),
        ("[text](<Some Note.md>)", "Some Note.md", None, "text"),
        ("[text](Folder/Note.md#Some%20Heading)", "Folder/Note.md", "Some Heading", "text"),
        ("[text](Note.md#^block)", "Note.md", "^block", "text"),
        ("[text](#Heading)", "", "Heading", "text"),
        ('[text](Note.md "a title")', "Note.md", None, "text"),
        ("[](Note.md)", "Note.md", None, None),
        ("[text](Note%20(1).md)", "Note (1).md", None, "text"),
    ],
)
def test_markdown_link_forms(
    text: str, target: str, subpath: str | None, display: str | None
) -> None:
    found = link(f"see {text} here")
    assert (found.kind, found.target, found.subpath, found.display) == (
        "link",
        target,
        subpath,
        display,
    )
    assert found.markdown is True


@pytest.mark.parametrize(
    "dest",
    [
        "https://obsidian.md",
        "http://example.com/a.md",
        "mailto:me@example.com",
        "obsidian://open?vault=v&file=Note",
        "file:///home/me/Note.md",
        "ftp://example.com/x",
        "data:text/plain,hi",
        "zotero://select/items/1",
        "",
        "#",
    ],
)
def test_urls_and_blank_destinations_are_not_vault_links(dest: str) -> None:
    assert targets(f"[text]({dest})") == []


def test_markdown_link_nested_in_another_is_found() -> None:
    note = parse("[![logo](logo.png)](Home.md)")
    assert [(x.kind, x.target) for x in note.links + note.embeds] == [
        ("link", "Home.md"),
        ("embed", "logo.png"),
    ]


# --------------------------------------------------------------------------
# Embeds
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "target", "subpath", "display", "size"),
    [
        ("![[image.png]]", "image.png", None, None, None),
        ("![[image.png|100]]", "image.png", None, None, "100"),
        ("![[image.PNG|100x200]]", "image.PNG", None, None, "100x200"),
        ("![[photo.jpeg|a caption|300]]", "photo.jpeg", None, "a caption", "300"),
        ("![[photo.webp|a caption]]", "photo.webp", None, "a caption", None),
        ("![[Note|alias]]", "Note", None, "alias", None),
        ("![[Note|100]]", "Note", None, "100", None),  # not an image: no size
        ("![[Books.base#View]]", "Books.base", "View", None, None),
        ("![[Note#^block]]", "Note", "^block", None, None),
        ("![[doc.pdf#page=3]]", "doc.pdf", "page=3", None, None),
        ("![alt](file.png)", "file.png", None, "alt", None),
        ("![alt|200](file.svg)", "file.svg", None, "alt", "200"),
        ("![](My%20Note.md)", "My Note.md", None, None, None),
    ],
)
def test_embed_forms(
    text: str, target: str, subpath: str | None, display: str | None, size: str | None
) -> None:
    note = parse(f"x {text} y")
    assert note.links == ()
    (found,) = note.embeds
    assert (found.kind, found.target, found.subpath, found.display, found.size) == (
        "embed",
        target,
        subpath,
        display,
        size,
    )
    assert found.markdown is (not text.startswith("![["))


@pytest.mark.parametrize("ext", ["png", "jpg", "jpeg", "gif", "bmp", "svg", "webp", "avif", "JPG"])
def test_every_image_extension_takes_a_size(ext: str) -> None:
    assert link(f"![[a.{ext}|64]]").size == "64"


def test_external_image_is_not_an_embed() -> None:
    assert targets("![x](https://example.com/a.png)") == []


# --------------------------------------------------------------------------
# Tags
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tags"),
    [
        ("#tag", ("tag",)),
        ("a #tag b", ("tag",)),
        ("a\t#tag", ("tag",)),
        ("#a/b/c", ("a/b/c",)),
        ("#a/b/", ("a/b",)),
        ("#snake_case #kebab-case #CamelCase", ("snake_case", "kebab-case", "CamelCase")),
        ("#123", ()),
        ("#1a #y1984", ("1a", "y1984")),
        ("#2024/05", ("2024/05",)),
        ("# Heading", ()),
        ("## Heading #tag", ("tag",)),
        ("a#b", ()),
        ("(#b) **#c** [#d]", ()),  # only after whitespace or at line start
        ("#tag.", ("tag",)),
        ("#tag, #other!", ("tag", "other")),
        ("#日本語 #café #हिन्दी #Ελληνικά", ("日本語", "café", "हिन्दी", "Ελληνικά")),
        ("#0🌲", ("0🌲",)),
        ("#a#b", ("a",)),
        ("##", ()),
        ("#/", ()),
        ("see http://example.com/#anchor", ()),
        ("[[Note#Heading]] [[Note #x]] [x](<a #b.md>)", ()),
    ],
)
def test_inline_tags(text: str, tags: tuple[str, ...]) -> None:
    assert parse(text).tags == tags


def test_tags_are_deduplicated_case_insensitively_keeping_the_first_spelling() -> None:
    assert parse("#Tag #tag #TAG #other").tags == ("Tag", "other")


def test_front_matter_tags_come_first() -> None:
    note = parse("---\ntags: [fm, Body]\n---\n#inline #body #fm\n")
    assert note.tags == ("fm", "Body", "inline")


# --------------------------------------------------------------------------
# Masking: nothing counts inside code, comments, HTML and math
# --------------------------------------------------------------------------

HIDDEN = "[[hidden]] ![[hidden.png]] #hidden [md](hidden.md)"


@pytest.mark.parametrize(
    "text",
    [
        f"`{HIDDEN}`",
        f"``{HIDDEN} ` still code``",
        f"```{HIDDEN}```",
        f"```\n{HIDDEN}\n```",
        f"~~~python\n{HIDDEN}\n~~~",
        f"````\n```\n{HIDDEN}\n````",
        f"```\n{HIDDEN}\n~~~\n```",  # a ~~~ line does not close a ``` fence
        f"```\n{HIDDEN}",  # an unclosed fence runs to the end
        f"text\n\n    {HIDDEN}",
        f"\t{HIDDEN}",
        f"# Heading\n    {HIDDEN}",
        f"%%{HIDDEN}%%",
        f"%%\n{HIDDEN}\n\n{HIDDEN}\n%%",
        f"%% unclosed\n{HIDDEN}",
        f"<!-- {HIDDEN} -->",
        f"<!--\n{HIDDEN}\n-->",
        f"<div>\n{HIDDEN}\n</div>",
        f'<div class="x">{HIDDEN}</div>',
        f"<details>\n<summary>s</summary>\n{HIDDEN}\n</details>",
        f"<script>\n{HIDDEN}\n\n{HIDDEN}\n</script>",
        f"$${HIDDEN}$$",
        f"$$\n{HIDDEN}\n$$",
        f"${HIDDEN}$",
        f"x ${HIDDEN}$.",
        f"> ```\n> {HIDDEN}\n> ```",
        f"- item\n  ```\n  {HIDDEN}\n  ```",
    ],
)
def test_nothing_counts_inside_masked_regions(text: str) -> None:
    note = parse(text)
    assert (note.links, note.embeds, note.tags) == ((), (), ())


def test_html_attributes_yield_no_tags() -> None:
    assert parse('<span style="color:#ff0000">red</span> #real').tags == ("real",)
    assert parse("<font color=#00ff00>x</font>").tags == ()


def test_text_after_masked_regions_still_counts() -> None:
    text = (
        "`code` [[a]]\n%% c %% [[b]]\n<!-- c --> [[c]]\n```\nx\n```\n[[d]]\n"
        "<div>\nx\n</div>\n\n[[e]] $$x$$ [[f]]"
    )
    assert targets(text) == ["a", "b", "c", "d", "e", "f"]


@pytest.mark.parametrize(
    "text",
    ["$5 and $10 [[Note]]", "$ x [[Note]] $", "$x [[Note]] $", "$x$5 [[Note]]", "\\$x [[Note]]$", "$x\n\n[[Note]]$"],
)
def test_dollars_that_are_not_inline_math_hide_nothing(text: str) -> None:
    assert targets(text) == ["Note"]


def test_unclosed_backticks_are_literal() -> None:
    assert targets("a ` b [[Note]]") == ["Note"]
    assert targets("``a` [[Note]]") == ["Note"]


def test_code_span_ends_at_a_paragraph_break() -> None:
    assert targets("`a\n\n[[Note]] `") == ["Note"]


def test_backslash_escaped_backtick_opens_no_code_span() -> None:
    assert targets("\\`[[Note]]`") == ["Note"]


def test_indented_lines_under_a_list_item_are_content_not_code() -> None:
    text = "- item\n\n    - [[nested]] #nested\n\n        [[deeper]]\n"
    note = parse(text)
    assert [x.target for x in note.links] == ["nested", "deeper"]
    assert note.tags == ("nested",)


def test_indented_line_continuing_a_paragraph_is_not_code() -> None:
    assert targets("text\n    [[Note]]") == ["Note"]


def test_fence_inside_a_blockquote_ends_with_the_quote() -> None:
    assert targets("> ```\n> [[hidden]]\n\n[[shown]]") == ["shown"]


def test_inline_html_tag_alone_on_a_line_starts_an_html_block_only_after_a_blank() -> None:
    assert targets("<span>\n[[hidden]]\n\n[[shown]]") == ["shown"]
    assert targets("para\n<span>\n[[shown]]") == ["shown"]


def test_lone_dollars_are_text() -> None:
    assert targets("costs $$ and [[Note]]") == ["Note"]


def test_markdown_link_with_angle_destination_is_not_an_html_tag() -> None:
    assert targets("[x](<Some Note.md>) and [y]( <Other Note.md>)") == [
        "Some Note.md",
        "Other Note.md",
    ]


def test_mask_keeps_length_and_newlines() -> None:
    text = "a `b`\n```\nc\n```\n%% d\ne %% <!-- f -->\n<div>\ng\n</div>\n"
    masked = mask.mask_markdown(text)
    assert len(masked.text) == len(text)
    assert [i for i, ch in enumerate(masked.text) if ch == "\n"] == [
        i for i, ch in enumerate(text) if ch == "\n"
    ]
    assert masked.code_lines == frozenset({1, 2, 3, 6, 7, 8})


# --------------------------------------------------------------------------
# Headings
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "headings"),
    [
        ("# One", [(1, "One", 1)]),
        ("###### Six", [(6, "Six", 1)]),
        ("####### Seven", []),
        ("#NoSpace", []),
        ("#", [(1, "", 1)]),
        ("## Closed ##", [(2, "Closed", 1)]),
        ("## C# and F#", [(2, "C# and F#", 1)]),
        ("##   Spaced   ", [(2, "Spaced", 1)]),
        ("   ### Indented three", [(3, "Indented three", 1)]),
        ("    # Indented four", []),
        ("#\tTab", [(1, "Tab", 1)]),
        ("## The `code` heading", [(2, "The `code` heading", 1)]),
        ("Title\n=====", [(1, "Title", 1)]),
        ("Title\n---", [(2, "Title", 1)]),
        ("Two line\ntitle\n---", [(2, "Two line title", 1)]),
        ("para\n\n---", []),  # a thematic break
        ("---\ntext", []),
        ("- item\n---", []),  # a setext underline cannot follow a list item
        ("> quote\n---", []),
        ("# A\n===", [(1, "A", 1)]),  # "===" after a heading is text
        ("Title\n===\n===", [(1, "Title", 1)]),
        ("```\n# not\n```\n# yes", [(1, "yes", 4)]),
        ("%% # not %%\n<!--\n# not\n-->\n# yes", [(1, "yes", 5)]),
        ("> # in a quote", []),
        ("## Heading ^block-id", [(2, "Heading ^block-id", 1)]),
    ],
)
def test_headings(text: str, headings: list[tuple[int, str, int]]) -> None:
    assert parse(text).headings == tuple(Heading(level, t, line) for level, t, line in headings)


# --------------------------------------------------------------------------
# Block ids
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "blocks"),
    [
        ("A paragraph. ^para", [("para", 1, 1)]),
        ("First line\nsecond line ^para", [("para", 1, 2)]),
        ("intro\n\nFirst line\nsecond line ^para", [("para", 3, 4)]),
        ("^alone", [("alone", 1, 1)]),
        ("para\n^id", [("id", 1, 2)]),  # a lazy line of the paragraph
        ("para\n\n^id", [("id", 1, 3)]),
        ("- a\n- b ^item", [("item", 2, 2)]),
        ("- a\n  more ^item", [("item", 1, 2)]),
        ("- a\n\t- nested ^item", [("item", 2, 2)]),
        ("- a\n- b\n\n^list", [("list", 1, 4)]),
        ("- a\n\n- b\n\n^list", [("list", 1, 5)]),
        ("1. a\n2. b\n\n^list", [("list", 1, 4)]),
        ("- a\n- b\n^item", [("item", 2, 3)]),  # lazy: part of item "b"
        ("> quote\n> more ^q", [("q", 1, 2)]),
        ("> quote\n> more\n\n^q", [("q", 1, 4)]),
        ("> [!note] Callout\n> body\n\n^c", [("c", 1, 4)]),
        ("| a | b |\n|---|---|\n| 1 | 2 |\n\n^table", [("table", 1, 5)]),
        ("| a | b |\n|---|---|\n| 1 | 2 |\n^table", [("table", 1, 4)]),
        ("```\ncode\n```\n\n^code", [("code", 1, 5)]),
        ("# Heading\n\n^h", [("h", 1, 3)]),
        ("# Heading ^h", [("h", 1, 1)]),
        ("text ^with-dash-123", [("with-dash-123", 1, 1)]),
        ("two ^ids ^last", [("last", 1, 1)]),
        ("x^2", []),
        ("[[Note#^abc]]", []),
        ("text ^under_score", []),
        ("text ^café", []),  # Latin letters only
        ("text ^id trailing", []),
        ("```\ntext ^hidden\n```", []),
        ("`text ^hidden`", []),
        ("%% ^hidden %%", []),
    ],
)
def test_block_ids(text: str, blocks: list[tuple[str, int, int]]) -> None:
    assert parse(text).blocks == tuple(BlockId(*b) for b in blocks)


# --------------------------------------------------------------------------
# Line numbers, BOM, CRLF, decoding
# --------------------------------------------------------------------------


def test_line_numbers_are_file_lines_after_front_matter() -> None:
    text = "---\na: 1\nb: 2\n---\n# H\n\n[[x]] ![[y.png]]\ntext ^b\n"
    note = parse(text)
    assert note.body_line == 5
    assert note.headings == (Heading(1, "H", 5),)
    assert [(x.target, x.line) for x in note.links + note.embeds] == [("x", 7), ("y.png", 7)]
    assert note.blocks == (BlockId("b", 7, 8),)


SAMPLE = (
    "---\ntitle: T\ntags: [a]\nup: '[[Up]]'\n---\n# H\n\nSee [[x|y]] and #t.\n"
    "```\n[[no]]\n```\n- a ^b\n\nTitle\n---\n"
)


@pytest.mark.parametrize(
    ("raw", "bom", "crlf"),
    [
        ("\ufeff" + SAMPLE, True, False),
        (SAMPLE.replace("\n", "\r\n"), False, True),
        ("\ufeff" + SAMPLE.replace("\n", "\r\n"), True, True),
    ],
)
def test_bom_and_crlf_parse_like_the_lf_twin(raw: str, bom: bool, crlf: bool) -> None:
    twin = parse(SAMPLE)
    note = parse(raw)
    assert (note.bom, note.crlf) == (bom, crlf)
    assert note.body == twin.body and "\r" not in note.body and "\ufeff" not in note.body
    assert note.hash != twin.hash
    assert dataclasses.replace(note, hash=twin.hash, bom=False, crlf=False) == twin


def test_lone_carriage_returns_count_as_line_breaks() -> None:
    note = parse("# A\r[[x]]")
    assert note.headings == (Heading(1, "A", 1),)
    assert note.links[0].line == 2


def test_hash_is_sha256_of_the_raw_bytes() -> None:
    import hashlib

    data = "\ufeff# x\r\n".encode()
    assert parse_note("a.md", data).hash == hashlib.sha256(data).hexdigest()


def test_non_utf8_bytes_become_replacement_characters_and_the_note_says_where() -> None:
    data = b"# Title\nabc" + b"\xff" + b"def"
    note = parse_note("Folder/x.md", data)
    assert note.body == "# Title\nabc\ufffddef" and note.headings[0].text == "Title"
    assert note.undecodable == "byte 0xff at offset 11"
    assert note.error is not None and note.error.startswith("not valid UTF-8 (byte 0xff at offset 11)")


def test_title_defaults_to_the_file_stem() -> None:
    assert parse("x", path="Folder/My Note.md").title == "My Note"
    assert parse("x", path="a.b.md").title == "a.b"
    assert parse("x", path="Folder/.hidden").title == ".hidden"


def test_an_internal_error_becomes_an_error_field_not_an_exception(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("memvault.vault_io.parser.find_tags", broken)
    note = parse("---\ntitle: T\n---\nbody\r\n", path="F/n.md")
    assert note.error == "internal parser error: RuntimeError: boom"
    assert (note.title, note.body_line, note.crlf) == ("n", 1, True)
    assert note.body == "---\ntitle: T\n---\nbody\n"


def test_empty_note() -> None:
    note = parse("", path="Empty.md")
    assert (note.title, note.body, note.body_line, note.frontmatter, note.error) == (
        "Empty",
        "",
        1,
        {},
        None,
    )


# --------------------------------------------------------------------------
# Speed: hostile input must stay linear
# --------------------------------------------------------------------------

HOSTILE = {
    "code spans": "`a " * 30000,
    "unclosed runs": "".join("`" * (i + 1) + " x " for i in range(200)) * 10,
    "angle brackets": "<a b='x " * 20000,
    "open wikilinks": "[[a " * 30000,
    "open markdown links": "[a](" * 30000,
    "block ids in one paragraph": "x ^a\n" * 20000,
    "block ids in lazy list text": "- a\n" + "b ^c\n" * 20000,
    "block ids in a quote": "> a ^b\n" * 20000,
    "setext candidates": "- x\n" + ("a\n" * 100 + "=\n") * 200,
    "deep brackets in front-matter": "---\na: " + "[" * 30000 + "]" * 30000 + "\n---\n",
    "blanks in a heading": "# a" + " " * 50000 + "b",
    "blanks in a link destination": "[x](" + " " * 50000 + "y",
    "blanks in a tag": "<a b" + " " * 50000 + "c",
    "front-matter line without a colon": "---\na" + " " * 60000 + "b\n---\n",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_input_parses_quickly(name: str) -> None:
    import time

    data = HOSTILE[name].encode()
    started = time.perf_counter()
    note = parse_note("hostile.md", data)
    elapsed = time.perf_counter() - started
    # Linear work takes ~0.1 s here; the quadratic versions took tens of seconds.
    assert elapsed < 3.0, f"{name}: {elapsed:.2f}s for {len(data)} bytes"
    assert note.error is None or not note.error.startswith("internal")
