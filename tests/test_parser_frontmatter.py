"""Hand-written tests for front-matter: splitting, safe loading, Obsidian's keys."""

from __future__ import annotations

import json

import pytest

from memvault.vault_io.frontmatter import (
    FrontmatterError,
    key_lines,
    load_frontmatter,
    split_frontmatter,
)
from memvault.vault_io.note import Link, ParsedNote
from memvault.vault_io.parser import parse_note


def parse(text: str, path: str = "Note.md", **kwargs: int) -> ParsedNote:
    return parse_note(path, text.encode("utf-8"), **kwargs)


# --------------------------------------------------------------------------
# split_frontmatter
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("---\na: 1\n---\nbody\n", ("a: 1", "body\n", 4)),
        ("---   \na: 1\n---\t \nbody", ("a: 1", "body", 4)),  # trailing blanks allowed
        ("---\n---\nbody", ("", "body", 3)),
        ("---\n\n---\nbody", ("", "body", 4)),
        ("---\na: 1\n---", ("a: 1", "", 4)),
        ("---\na: 1\nb: 2\n---\n\n# H", ("a: 1\nb: 2", "\n# H", 5)),
        # not front-matter: Obsidian wants "---" alone on the very first line
        ("\n---\na: 1\n---\n", (None, "\n---\na: 1\n---\n", 1)),
        (" ---\na: 1\n---\n", (None, " ---\na: 1\n---\n", 1)),
        ("----\na: 1\n----\n", (None, "----\na: 1\n----\n", 1)),
        ("--- x\na: 1\n---\n", (None, "--- x\na: 1\n---\n", 1)),
        ("---\na: 1\n...\nbody", (None, "---\na: 1\n...\nbody", 1)),  # "..." does not close
        ("---\na: 1\n", (None, "---\na: 1\n", 1)),  # never closed
        ("---", (None, "---", 1)),
        ("# Title\n---\na: 1\n---\n", (None, "# Title\n---\na: 1\n---\n", 1)),
    ],
)
def test_split_frontmatter(text: str, expected: tuple[str | None, str, int]) -> None:
    assert split_frontmatter(text) == expected


# --------------------------------------------------------------------------
# load_frontmatter
# --------------------------------------------------------------------------


def test_empty_or_comment_only_front_matter_is_an_empty_mapping() -> None:
    assert load_frontmatter("") == {}
    assert load_frontmatter("  \n") == {}
    assert load_frontmatter("# just a comment") == {}


def test_invalid_yaml_names_the_file_line() -> None:
    with pytest.raises(FrontmatterError) as info:
        load_frontmatter("a: 1\nb: [unclosed\nc: 3")
    assert str(info.value).startswith("invalid YAML front-matter at line ")
    with pytest.raises(FrontmatterError, match=r"at line 3: .*unhashable key"):
        load_frontmatter("title: x\ncreated: {{date}}")


@pytest.mark.parametrize(
    ("yaml_text", "kind"),
    [("- a\n- b", "list"), ("just text", "string"), ("42", "number"), ("true", "boolean")],
)
def test_top_level_must_be_a_mapping(yaml_text: str, kind: str) -> None:
    with pytest.raises(FrontmatterError, match=f"front-matter is a {kind}, not a mapping"):
        load_frontmatter(yaml_text)


@pytest.mark.parametrize(
    "yaml_text",
    [
        "a: &x 1\nb: *x",
        "a: &x [1, 2]",
        "base: &b {k: v}\nother:\n  <<: *b",
        'lol: &a ["lol", "lol"]\nlol2: &b [*a, *a]',
    ],
)
def test_anchors_and_aliases_are_refused(yaml_text: str) -> None:
    with pytest.raises(FrontmatterError, match="anchors and aliases are not allowed"):
        load_frontmatter(yaml_text)


def test_ampersands_and_asterisks_in_text_are_fine() -> None:
    assert load_frontmatter('title: R&D *notes*\nq: "&x *y"') == {
        "title": "R&D *notes*",
        "q": "&x *y",
    }


def test_size_limit() -> None:
    line = "k: " + "x" * 60 + "\n"
    just_under = line * (65536 // len(line))
    assert load_frontmatter(just_under) == {"k": "x" * 60}
    over = just_under + "k2: " + "y" * 2000
    with pytest.raises(FrontmatterError, match="over the limit of 65536"):
        load_frontmatter(over)
    assert load_frontmatter("a: " + "é" * 40) == {"a": "é" * 40}
    with pytest.raises(FrontmatterError, match="is 83 bytes, over the limit of 50"):
        load_frontmatter("a: " + "é" * 40, max_bytes=50)  # UTF-8 bytes, not characters


def test_size_limit_is_configurable_through_parse_note() -> None:
    text = "---\nk: " + "x" * 200 + "\n---\n[[Body]]\n"
    assert parse(text).error is None
    note = parse(text, max_frontmatter_bytes=100)
    assert note.error is not None and "over the limit of 100" in note.error


@pytest.mark.parametrize(
    "yaml_text",
    ["a: " + "[" * 150 + "]" * 150, "a: " + "{b: " * 150 + "}" * 150, "a:\n  " + "- " * 150 + "x"],
)
def test_absurd_nesting_is_refused_before_yaml_sees_it(yaml_text: str) -> None:
    with pytest.raises(FrontmatterError, match="nests deeper than 100 levels"):
        load_frontmatter(yaml_text)


def test_many_quoted_links_are_not_nesting() -> None:
    yaml_text = "related:\n" + "".join(f'  - "[[Note {i}]]"\n' for i in range(300))
    assert len(load_frontmatter(yaml_text)["related"]) == 300


@pytest.mark.parametrize(
    "yaml_text",
    ["a: 2023-02-30", "a: " + "9" * 5000, "a: !custom x", "a: !!python/object:os.system x"],
)
def test_values_yaml_cannot_build_are_errors_not_crashes(yaml_text: str) -> None:
    with pytest.raises(FrontmatterError, match="invalid YAML front-matter"):
        load_frontmatter(yaml_text)


def test_values_are_converted_to_json() -> None:
    loaded = load_frontmatter(
        "date: 2023-09-12\n"
        "when: 2024-05-01 10:30:00+02:00\n"
        "naive: 2024-05-01T10:30:00\n"
        "set: !!set {b, a}\n"
        "bin: !!binary aGk=\n"
        "nan: .nan\n"
        "inf: -.inf\n"
        "7: seven\n"
        "2020-01-01: new year\n"
        "null: nothing\n"
        "nested: {1.5: [2023-01-01]}\n"
        "plain: [1, 2.5, true, null, text]\n"
    )
    assert loaded == {
        "date": "2023-09-12",
        "when": "2024-05-01T10:30:00+02:00",
        "naive": "2024-05-01T10:30:00",
        "set": ["a", "b"],
        "bin": "aGk=",
        "nan": ".nan",
        "inf": "-.inf",
        "7": "seven",
        "2020-01-01": "new year",
        "null": "nothing",
        "nested": {"1.5": ["2023-01-01"]},
        "plain": [1, 2.5, True, None, "text"],
    }
    json.dumps(loaded, allow_nan=False)


def test_key_lines() -> None:
    yaml_text = (
        'a: 1\n"b c": 2\n\'d\'\'e\': 3\n  nested: 4\nlist:\n  - x\n'
        "url: http://x\n# c: 1\nk:\n"
    )
    assert key_lines(yaml_text) == {"a": 2, "b c": 3, "d'e": 4, "list": 6, "url": 8, "k": 10}


# --------------------------------------------------------------------------
# Invalid front-matter never stops indexing
# --------------------------------------------------------------------------


def test_invalid_front_matter_indexes_the_whole_file_as_body() -> None:
    text = (
        '---\ncategories:\n  - "[[Books]]"\ncreated: {{date}}\nvia: ""\n---\n'
        "## Notes\n#tag [[Body]]\n"
    )
    note = parse(text, path="Templates/Book.md")
    assert note.frontmatter == {}
    assert note.body == text and note.body_line == 1
    assert note.error == (
        "invalid YAML front-matter at line 4: while constructing a mapping: found unhashable key"
    )
    assert [(x.target, x.kind, x.line) for x in note.links] == [
        ("Books", "link", 3),
        ("Body", "link", 8),
    ]
    assert note.tags == ("tag",)
    # 'via: ""' above the closing '---' is not read as a setext heading
    assert [(h.text, h.line) for h in note.headings] == [("Notes", 7)]
    assert note.title == "Book"


def test_non_mapping_front_matter_is_an_error_too() -> None:
    note = parse("---\n- a\n- b\n---\n[[x]]")
    assert note.error == "front-matter is a list, not a mapping of properties"
    assert note.frontmatter == {} and note.body_line == 1
    assert [x.target for x in note.links] == ["x"]


def test_anchor_front_matter_is_an_error_in_the_note() -> None:
    note = parse("---\na: &x 1\nb: *x\n---\nbody")
    assert note.error == "YAML anchors and aliases are not allowed in front-matter (line 2)"
    assert note.frontmatter == {}


# --------------------------------------------------------------------------
# Title, aliases, tags from properties
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("yaml_text", "title"),
    [
        ("title: My Title", "My Title"),
        ("title: '  Padded  '", "Padded"),
        ("title: ''", "Stem"),
        ("title: 42", "42"),  # YAML reads a number: still the title
        ("title: 2024-01-05", "2024-01-05"),  # and a date
        ("title: true", "Stem"),
        ("title: [a]", "Stem"),
        ("title: {a: 1}", "Stem"),
        ("title:", "Stem"),
        ("Title: Other case", "Stem"),
        ("", "Stem"),
    ],
)
def test_title(yaml_text: str, title: str) -> None:
    assert parse(f"---\n{yaml_text}\n---\n", path="F/Stem.md").title == title


@pytest.mark.parametrize(
    ("yaml_text", "aliases"),
    [
        ("aliases: [One, Two]", ("One", "Two")),
        ("aliases:\n  - One\n  - ' Two '\n  - One", ("One", "Two")),
        ("aliases: One, Two ,Three", ("One", "Two", "Three")),
        ("alias: Solo", ("Solo",)),
        ("aliases: [A]\nalias: B", ("A", "B")),
        ("Aliases: [Case]", ("Case",)),
        ("aliases: [1, null, '', Real, {a: b}]", ("Real",)),
        ("aliases:", ()),
        ("aliases: 12", ()),
    ],
)
def test_aliases(yaml_text: str, aliases: tuple[str, ...]) -> None:
    assert parse(f"---\n{yaml_text}\n---\n").aliases == aliases


@pytest.mark.parametrize(
    ("yaml_text", "tags"),
    [
        ("tags: [a, b]", ("a", "b")),
        ("tags:\n  - a\n  - '#b'", ("a", "b")),
        ("tags: a, b c", ("a", "b", "c")),
        ("tags: '#a #b,#c'", ("a", "b", "c")),
        ("tag: solo", ("solo",)),
        ("Tags: [case]", ("case",)),
        ("tags: [a/b/, 'x y']", ("a/b", "x", "y")),
        ("tags: [1984, y1984, 2024/05]", ("y1984", "2024/05")),
        ("tags: [c++, 'a.b', ok]", ("ok",)),
        ("tags: [A, a]", ("A",)),
        ("tags:", ()),
        ("tags: ''", ()),
        ("tags: [null, true, {a: b}]", ()),
        ("tags: #not-a-tag-but-a-yaml-comment", ()),
    ],
)
def test_front_matter_tags(yaml_text: str, tags: tuple[str, ...]) -> None:
    assert parse(f"---\n{yaml_text}\n---\n").tags == tags


# --------------------------------------------------------------------------
# Links in properties
# --------------------------------------------------------------------------


def prop_links(yaml_text: str) -> list[tuple[str, str | None, str | None, str | None, int]]:
    note = parse(f"---\n{yaml_text}\n---\nbody\n")
    assert note.error is None, note.error
    assert all(x.kind == "property" for x in note.links)
    return [(x.target, x.subpath, x.display, x.prop, x.line) for x in note.links]


def test_quoted_links_in_properties() -> None:
    yaml_text = (
        'categories: ["[[Books]]"]\n'
        'author: "[[Steph Ango]]"\n'
        "topics:\n"
        '  - "[[A|alias]]"\n'
        "  - '[[B#Heading]]'\n"
        'text: "see [[C]] and [[D#^blk]]"'
    )
    assert prop_links(yaml_text) == [
        ("Books", None, None, "categories", 2),
        ("Steph Ango", None, None, "author", 3),
        ("A", None, "alias", "topics", 4),
        ("B", "Heading", None, "topics", 4),
        ("C", None, None, "text", 7),
        ("D", "^blk", None, "text", 7),
    ]


def test_unquoted_links_in_properties() -> None:
    yaml_text = "related: [[X]]\nlist:\n  - [[Y|why]]\n  - [[Z#sub]]\nboth: [[P], [Q]]"
    assert prop_links(yaml_text) == [
        ("X", None, None, "related", 2),
        ("Y", None, "why", "list", 3),
        ("Z", "sub", None, "list", 3),
        ("P", None, None, "both", 6),
        ("Q", None, None, "both", 6),
    ]


def test_links_deep_inside_properties() -> None:
    yaml_text = 'meta:\n  people:\n    - name: "[[Ann]]"\n      see: [[[Bob]]]'
    assert prop_links(yaml_text) == [("Ann", None, None, "meta", 2), ("Bob", None, None, "meta", 2)]


def test_plain_lists_and_strings_are_not_links() -> None:
    yaml_text = "tags: [books]\nurl: https://x\nmatrix: [[1, 2]]\nempty: [[]]\nsingle: [X]"
    assert prop_links(yaml_text) == []


def test_embed_in_a_property_is_a_property_link() -> None:
    note = parse('---\ncover: "![[cover.jpg|200]]"\n---\n')
    assert note.links == (
        Link(target="cover.jpg", kind="property", size="200", line=2, prop="cover"),
    )
    assert note.embeds == ()


def test_property_links_come_before_body_links() -> None:
    note = parse('---\nup: "[[Up]]"\n---\n[[Body]]\n')
    assert [(x.target, x.kind, x.line) for x in note.links] == [
        ("Up", "property", 2),
        ("Body", "link", 4),
    ]


def test_property_link_line_defaults_to_one_when_the_key_is_not_found() -> None:
    note = parse('---\n? "[[K]]"\n: "[[V]]"\n---\n')
    assert [(x.target, x.prop, x.line) for x in note.links] == [("V", "[[K]]", 1)]
