"""The default extractor, one rule at a time, on small hand-written notes."""

from __future__ import annotations

import time

import pytest

from memvault.vault_io.facts import (
    Extraction,
    extract_facts,
    fact_id,
    heading_type,
    is_daily_note,
    normalise,
    source_uri,
)
from memvault.vault_io.parser import parse_note
from memvault.vault_io.segment import split_sentences
from memvault.vault_io.sources import source_marks


def extract(text: str, path: str = "Note.md", source_id: str = "n-1") -> Extraction:
    return extract_facts(parse_note(path, text.encode("utf-8")), source_id)


def texts(text: str, path: str = "Note.md") -> list[str]:
    return [f.text for f in extract(text, path).facts]


def one(text: str, path: str = "Note.md"):
    found = extract(text, path).facts
    assert len(found) == 1, [f.text for f in found]
    return found[0]


def sentences(text: str) -> list[str]:
    return [text[s:e].strip() for s, e in split_sentences(text)]


# -- segmentation ---------------------------------------------------------------


def test_each_list_item_is_a_fact_and_nested_items_carry_their_parents() -> None:
    facts = extract("- Tools I use daily\n  - Obsidian for every note\n    - Daily notes with templates\n- Coffee every morning at seven\n").facts
    assert [f.text for f in facts] == [
        "Tools I use daily", "Obsidian for every note", "Daily notes with templates", "Coffee every morning at seven",
    ]
    assert [f.context for f in facts] == [
        (), ("Tools I use daily",), ("Tools I use daily", "Obsidian for every note"), (),
    ]
    assert [f.segment for f in facts] == ["item"] * 4
    assert [(f.line_start, f.line_end) for f in facts] == [(1, 1), (2, 2), (3, 3), (4, 4)]


def test_short_parent_is_context_but_not_a_fact() -> None:
    facts = extract("- Design\n  - Form over function\n").facts
    assert [(f.text, f.context) for f in facts] == [("Form over function", ("Design",))]


def test_item_continuation_lines_join_the_item() -> None:
    f = one("- A long item that\n  continues on the next line\n")
    assert f.text == "A long item that continues on the next line" and (f.line_start, f.line_end) == (1, 2)


def test_ordered_lists_and_other_bullets() -> None:
    assert texts("1. First do this thing\n2) Then do that thing\n* Star bullet item here\n+ Plus bullet item here\n") == [
        "First do this thing", "Then do that thing", "Star bullet item here", "Plus bullet item here",
    ]


def test_lead_in_line_becomes_context_of_the_list() -> None:
    facts = extract("Things I learned today:\n- Poetry manages Python dependencies\n").facts
    assert [(f.text, f.context) for f in facts] == [("Poetry manages Python dependencies", ("Things I learned today:",))]


def test_sentences_of_a_paragraph_with_line_numbers() -> None:
    facts = extract("# Notes\n\nThe first sentence is here. The second one\nspans two lines! Is this the third one?\n").facts
    assert [f.text for f in facts] == [
        "The first sentence is here.", "The second one spans two lines!", "Is this the third one?",
    ]
    assert [(f.line_start, f.line_end) for f in facts] == [(3, 3), (3, 4), (4, 4)]
    assert all(f.segment == "sentence" and f.headings == ("Notes",) for f in facts)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dr. Smith met Mr. Jones at 3 p.m. today.", ["Dr. Smith met Mr. Jones at 3 p.m. today."]),
        ("It costs 3.5 euros. Then it rose.", ["It costs 3.5 euros.", "Then it rose."]),
        ("See https://example.com/a.b. Then go home.", ["See https://example.com/a.b.", "Then go home."]),
        ("J. R. R. Tolkien wrote books. He was English.", ["J. R. R. Tolkien wrote books.", "He was English."]),
        ("Use e.g. a hammer. Or i.e. a nail.", ["Use e.g. a hammer.", "Or i.e. a nail."]),
        ("Born in the U.S. He moved later.", ["Born in the U.S. He moved later."]),
        ("Read [[Note. With dot]] first. Then more.", ["Read [[Note. With dot]] first.", "Then more."]),
        ("Run `a. B` here. Next one.", ["Run `a. B` here.", "Next one."]),
        ("He said \"stop.\" Then left.", ["He said \"stop.\"", "Then left."]),
        ("Wait... Then go.", ["Wait...", "Then go."]),
        ("lower case. continues here", ["lower case. continues here"]),
        ("我喜欢咖啡。我每天喝。", ["我喜欢咖啡。", "我每天喝。"]),
        ("Line one without stop\nLine two starts upper", ["Line one without stop", "Line two starts upper"]),
        ("A hard wrapped line\ncontinues in lower case", ["A hard wrapped line\ncontinues in lower case"]),
        ("Ends with a comma,\nNext Line", ["Ends with a comma,\nNext Line"]),
        ("Version 2. Next step.", ["Version 2.", "Next step."]),
        # Ordinary words that used to be taken for abbreviations end sentences.
        ("We enjoyed the sun. It was warm all day.", ["We enjoyed the sun.", "It was warm all day."]),
        ("I said no. Then he left the room.", ["I said no.", "Then he left the room."]),
        ("We sat. Nobody spoke.", ["We sat.", "Nobody spoke."]),
        ("Turn it up to max. Wait a minute.", ["Turn it up to max.", "Wait a minute."]),
        ("Let it rest for 5 min. Then serve.", ["Let it rest for 5 min.", "Then serve."]),
        ("Here I am. You are there.", ["Here I am.", "You are there."]),
        ("We met on wed. Then again.", ["We met on wed.", "Then again."]),
        ("I work at Acme Inc. It is fine.", ["I work at Acme Inc.", "It is fine."]),
        ("Apples, pears, etc. Then we left.", ["Apples, pears, etc.", "Then we left."]),
        ("It was 5 pm. Then we left.", ["It was 5 pm.", "Then we left."]),
        ("The next gen. Old ones fade.", ["The next gen.", "Old ones fade."]),
        # A decimal at the end of a sentence ends it.
        ("The total was 3.5. Next we tried 4.", ["The total was 3.5.", "Next we tried 4."]),
        ("Upgrade to v1.2. It fixes the bug.", ["Upgrade to v1.2.", "It fixes the bug."]),
        # True abbreviations, and words that are abbreviations in context.
        ("See No. 5 for details.", ["See No. 5 for details."]),
        ("Read p. 12 and Fig. 3 first.", ["Read p. 12 and Fig. 3 first."]),
        ("Meet on Mon. 3 May at noon.", ["Meet on Mon. 3 May at noon."]),
        ("Due on Sat. Jan 5 at the latest.", ["Due on Sat. Jan 5 at the latest."]),
        ("Founded Sept. 2019 in Berlin.", ["Founded Sept. 2019 in Berlin."]),
        ("Smith et al. The paper is old.", ["Smith et al. The paper is old."]),
        ("Ask Brett al. Then go.", ["Ask Brett al.", "Then go."]),
        ("We met on Sat. Maybe again.", ["We met on Sat.", "Maybe again."]),
        ("Ask Gen. Patton and Prof. Xavier.", ["Ask Gen. Patton and Prof. Xavier."]),
        ("Climb Mt. Everest vs. K2 later.", ["Climb Mt. Everest vs. K2 later."]),
        ("Use tools, e.g. Python or i.e. Go.", ["Use tools, e.g. Python or i.e. Go."]),
        ("It is approx. 5 km away.", ["It is approx. 5 km away."]),
        ("Born in the U.K. Moved to the U.S. Later.", ["Born in the U.K. Moved to the U.S. Later."]),
        ("A Ph.D. Student wrote it.", ["A Ph.D. Student wrote it."]),
    ],
)
def test_sentence_splitting(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_ordinary_words_end_paragraph_sentences_as_facts() -> None:
    assert texts("We enjoyed the sun. It was warm all day.\n\nI said no. Then he left the room.\n") == [
        "We enjoyed the sun.", "It was warm all day.", "I said no.", "Then he left the room.",
    ]


def test_table_rows_become_column_value_facts() -> None:
    facts = extract("| Name | Role | Notes |\n|---|:-:|---|\n| Alice Example | Lead | |\n| Bob | Dev \\| Ops | knows [[Kyoto\\|the city]] |\n").facts
    assert [f.text for f in facts] == [
        "Name: Alice Example; Role: Lead",
        "Name: Bob; Role: Dev | Ops; Notes: knows [[Kyoto|the city]]",
    ]
    assert [f.segment for f in facts] == ["row", "row"]
    assert [f.line_start for f in facts] == [3, 4]
    assert [l.target for l in facts[1].links] == ["Kyoto"]


def test_table_with_empty_header_cells_names_columns() -> None:
    assert texts("| | Value |\n|---|---|\n| Speed of light | 299792 km/s |\n") == [
        "Column 1: Speed of light; Value: 299792 km/s"
    ]


def test_front_matter_properties_are_facts_except_technical_keys() -> None:
    note = "---\nbirthday: 1990-04-02\nmemory: source\nid: me\naliases: [Me]\ntags: [person]\ncreated: 2024-01-01\nfavourite_color: green\nhobbies: [climbing, chess]\nnested: {a: 1}\nempty:\nwebsite: \"[[Homepage]]\"\n---\nBody sentence with enough words.\n"
    facts = extract(note).facts
    props = [f for f in facts if f.segment == "property"]
    assert [f.text for f in props] == [
        "Birthday: 1990-04-02", "Favourite color: green", "Hobbies: climbing, chess", "Website: [[Homepage]]",
    ]
    assert [l.target for l in props[3].links] == ["Homepage"]
    assert all(f.tags == ("person",) for f in facts)


def test_code_embeds_comments_html_and_callout_markers_are_not_facts() -> None:
    note = """Intro sentence with enough words.

```python
print("code is never a fact")
```

    indented code is not a fact either

%% a comment that is not a fact %%
<!-- an html comment that is not a fact -->
<div>
an html block that is not a fact
</div>

![[Embedded note that is not a fact]]

$$
x = math is not a fact
$$

> [!warning] Careful here
> The callout body is a fact.
> ```
> code in a callout is not a fact
> ```

Text with <b>bold html</b> and %%hidden%% inline `code. Kept` stays.
"""
    facts = extract(note).facts
    assert [f.text for f in facts] == [
        "Intro sentence with enough words.",
        "The callout body is a fact.",
        "Text with bold html and inline `code. Kept` stays.",
    ]
    assert facts[1].context == ("Careful here",)


def test_fragments_pure_links_and_headings_alone_are_not_facts() -> None:
    assert texts("# A heading with many words in it\n\n- Go slow\n- [[Some Note]]\n- https://example.com/a/long/path\n- [A link](https://x.org) [[Other]]\n- See [[Buy wisely]] first\n") == [
        "See [[Buy wisely]] first"
    ]


def test_three_words_counting_cjk_characters() -> None:
    assert texts("- 咖啡好\n- 咖啡\n") == ["咖啡好"]


def test_block_ids_are_anchors_and_not_text() -> None:
    facts = extract("## Decisions\n- Use SQLite for the index ^use-sqlite\n- Another decision worth keeping\n\nA paragraph with two sentences. Both belong to it. ^para\n").facts
    assert [(f.text, f.block_id) for f in facts] == [
        ("Use SQLite for the index", "use-sqlite"),
        ("Another decision worth keeping", None),
        ("A paragraph with two sentences.", "para"),
        ("Both belong to it.", "para"),
    ]
    assert facts[0].anchor == "^use-sqlite" and facts[1].anchor == "Decisions"


def test_heading_path_follows_levels_and_setext() -> None:
    note = "# Projects\n## memvault\n### Decisions\nWe keep the index outside the vault.\n## Other\nSetext heading below\n---\n\nA sentence under the setext heading.\n"
    facts = extract(note).facts
    assert [f.heading_path for f in facts] == [
        "Projects > memvault > Decisions", "Projects > Setext heading below",  # "---" makes a level 2
    ]


def test_inline_tags_and_links_of_a_fact() -> None:
    f = one("---\ntags: [work]\n---\n- Talked to [[Alice]] about [the plan](Plans/Q3.md#Goals) #meeting ![[img.png]]\n")
    assert f.tags == ("work", "meeting")
    assert [(l.target, l.subpath) for l in f.links] == [("Alice", None), ("Plans/Q3.md", "Goals")]
    assert "img.png" not in f.text


def test_lines_of_tags_alone_are_not_facts() -> None:
    assert texts("#journal #memory/source\n\nTags: #work #memory\n\n- #a #b/c #d\n- Loved the film #movie\n") == [
        "Loved the film #movie"
    ]


def test_every_fact_carries_the_notes_front_matter_and_body_tags() -> None:
    note = "---\ntags: [work]\n---\n#journal #memory/source\n\n- Met the team in Berlin #travel\n- Wrote the quarterly report\n"
    facts = extract(note).facts
    assert [(f.text, f.tags) for f in facts] == [
        ("Met the team in Berlin #travel", ("work", "journal", "travel")),
        ("Wrote the quarterly report", ("work", "journal", "travel")),
    ]


def test_marker_tag_is_not_a_fact_tag() -> None:
    f = one("#memory/source\n\n- A fact with a #topic tag\n")
    assert f.tags == ("topic",)


# -- types ------------------------------------------------------------------------


def test_open_tasks_are_prospective_with_due_dates_done_tasks_episodic() -> None:
    facts = extract(
        "- [ ] Renew the passport soon 📅 2026-01-31\n- [ ] Call the dentist again [due:: 2026-02-15]\n"
        "- [x] Booked the flights already\n- [-] Cancelled the old plan\n- [/] Half way through it\n- [ ] No date on this one\n"
    ).facts
    assert [(f.type, f.due) for f in facts] == [
        ("prospective", "2026-01-31"), ("prospective", "2026-02-15"), ("episodic", None),
        ("episodic", None), ("prospective", None), ("prospective", None),
    ]
    assert facts[0].text == "Renew the passport soon 📅 2026-01-31" and facts[0].segment == "task"


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("Lessons", "procedural"), ("Lessons learned", "procedural"), ("How-to", "procedural"),
        ("How to deploy", "procedural"), ("Steps", "procedural"), ("Checklist", "procedural"),
        ("2025-01-31", "episodic"), ("31st Jan, 2025", "episodic"), ("March 12", "episodic"),
        ("About me", "identity"), ("Profile", "identity"), ("👤 About me", "identity"),
        ("Preferences", None), ("Projects", None), ("Decisions", None),
        # A heading that merely mentions a setup is no how-to; guides, recipes are.
        ("Setup of my desk", None), ("Desk setup", None), ("My setup", None), ("Setup", "procedural"),
        ("Setup guide", "procedural"), ("Installation guide", "procedural"), ("Recipe: pancakes", "procedural"),
        ("Instructions", "procedural"), ("Steps to deploy", "procedural"), ("Lessons from 2024", "procedural"),
        ("Next steps", None), ("Learning Rust", None), ("Learnings", "procedural"), ("Tutorial", "procedural"),
        ("Workflow ideas", None), ("My workflow", "procedural"),
    ],
)
def test_heading_types(heading: str, expected: str | None) -> None:
    assert heading_type(heading) == expected


def test_nearest_heading_decides_then_the_note() -> None:
    note = "# About me\n## Preferences\n- Prefers dark mode everywhere\n## Lessons\n- Always back up first\n## 2024-05-01\n- Moved to a new flat\n"
    assert [f.type for f in extract(note, "People/Someone.md").facts] == ["identity", "procedural", "episodic"]


def test_note_level_types() -> None:
    assert one("- Prefers dark mode everywhere\n", "About me.md").type == "identity"
    assert one("- Went to the market today\n", "Journal/Some day.md").type == "episodic"
    assert one("- Went to the market today\n", "2024-11-04.md").type == "episodic"
    assert one("- Paris is the capital of France\n", "Geography.md").type == "semantic"
    assert is_daily_note("Daily Notes/Entry of 31st Jan, 2025.md")
    assert not is_daily_note("Notes/Daily habits.md")


@pytest.mark.parametrize(
    ("path", "daily"),
    [
        ("Notes/2025/01/10.md", True), ("Journal/2025-01-10.md", True), ("2025/2025-01-10 Friday.md", True),
        ("Logs/2025/01/10 Friday.md", True), ("2025/01/10.md", True), ("Notes/2025/01/Meeting.md", False),
        ("Notes/2025/13/10.md", False), ("Projects/2025 plan.md", False), ("Archive/2025/Summary.md", False),
    ],
)
def test_daily_notes_in_date_folders(path: str, daily: bool) -> None:
    assert is_daily_note(path) is daily
    assert one("- Went to the market today\n", path).type == ("episodic" if daily else "semantic")


# -- anchors, ids ---------------------------------------------------------------------


def test_source_uri_forms() -> None:
    assert source_uri("About me.md", "Preferences") == "vault://About%20me.md#Preferences"
    assert source_uri("Projects/Road map.md", "^q3-goals") == "vault://Projects/Road%20map.md#^q3-goals"
    assert source_uri("Note.md", None) == "vault://Note.md"


def test_ids_are_stable_and_count_duplicates() -> None:
    a = extract("- Same fact text here\n- Same fact text here\n- Other fact text here\n").facts
    b = extract("- Other fact text here\n\n- Same   fact text here\n").facts
    assert a[0].id != a[1].id
    assert a[0].id == fact_id("n-1", normalise("Same fact text here"), 0)
    assert {f.id for f in b} <= {f.id for f in a}  # moved and re-spaced, same ids
    assert extract("- Same fact text here\n", source_id="n-2").facts[0].id != a[0].id


# -- secrets ---------------------------------------------------------------------------


def test_secrets_are_redacted_and_counted() -> None:
    note = (
        "---\napi_key: sk-proj-abcdefghijklmnopqrstuvwxyz123456\n---\n"
        "- The staging key is AKIAIOSFODNN7EXAMPLE for now\n"
        "- Database at postgres://app:s3cretpw@db.internal/app works\n"
        "- passphrase: correct horse battery staple\n"
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----\n"
        "```\ntoken = ghp_abcdefghijklmnopqrstuvwxyz0123456789\n```\n"
    )
    ex = extract(note)
    assert [f.text for f in ex.facts] == [
        "Api key: [redacted]",
        "The staging key is [redacted] for now",
        "Database at postgres://app:[redacted]@db.internal/app works",
    ]
    assert [f.redacted for f in ex.facts] == [1, 1, 1]
    # "password: ..." loses all but two words (so it is no fact) and the key
    # block is skipped; both still count. The token inside code is no fact.
    assert ex.redacted == 5
    assert "AKIA" not in repr(ex) and "s3cretpw" not in repr(ex) and "horse" not in repr(ex)


# -- markers ----------------------------------------------------------------------------


def test_source_markers() -> None:
    def marks(text: str, path: str = "N.md", globs: tuple[str, ...] = ()) -> list[str]:
        return source_marks(parse_note(path, text.encode()), globs).names

    assert marks("---\nmemory: source\n---\nx") == ["frontmatter"]
    assert marks("---\nmemory: Source\n---\nx") == ["frontmatter"]
    assert marks("---\nmemory_source: true\n---\nx") == ["frontmatter"]
    assert marks("---\nmemory_source: false\n---\nx") == []
    assert marks("---\nmemory: semantic\n---\nx") == []
    assert marks("text #memory/source") == ["tag"]
    assert marks("---\ntags: [memory/source]\n---\nx") == ["tag"]
    assert marks("x", "Projects/Road map.md", ("Projects/**",)) == ["glob"]
    assert marks("x", "Other/Road map.md", ("Projects/**",)) == []


# -- speed ---------------------------------------------------------------------------------


def test_a_five_thousand_line_note_extracts_quickly() -> None:
    parts = ["---\nmemory: source\n---\n"]
    sections = 500
    for i in range(sections):
        parts.append(
            f"## Section {i}\n- Item number {i} about things\n  - Nested detail {i} with words\n"
            f"- [ ] Task {i} to do soon 📅 2026-01-31\n\nA sentence {i} here. Another one {i} follows! ^b{i}\n\n"
            f"| Key | Value |\n|---|---|\n| Row {i} | Value {i} |\n"
        )
    text = "".join(parts)
    assert text.count("\n") >= 5000
    note = parse_note("Big.md", text.encode())
    start = time.perf_counter()
    facts = extract_facts(note, "n-big").facts
    elapsed = time.perf_counter() - start
    assert len(facts) == 6 * sections
    assert elapsed < 10.0, f"{elapsed:.2f}s"  # a guard against quadratic extraction: ~0.2 s here, 3.2 s at load 36 (bench_facts measures speed)
