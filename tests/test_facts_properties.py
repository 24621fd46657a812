"""Properties of the default extractor on generated Markdown (Hypothesis).

What is asserted, precisely, for every note:

1. :func:`extract_facts` never raises, and gives the same result twice.
2. Fact ids are unique within the note.
3. Every fact's line range lies within the file, start <= end.
4. For list items, tasks and sentences, the *word tokens* of the fact text
   (runs of letters and digits, as ``[^\\W_]+``; the token ``redacted`` of a
   ``[redacted]`` left out) are an ordered subsequence of the word tokens of
   its source lines ``line_start..line_end``. That is "the text occurs in
   the source" modulo white space, removed markup (list markers,
   checkboxes, quote prefixes, block ids, embeds, comments, HTML tags) and
   redaction.
5. For table rows (``Column: value; ...``) every word token of the fact
   occurs in the note's body (``Column 3:``, the label of a column without
   a header, aside).
6. No fact text still holds a credential :func:`redact` would find.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st
from memvault.vault_io.facts import extract_facts
from memvault.vault_io.parser import parse_note
from memvault.vault_io.secrets import redact
from memvault.vault_io.segment import split_sentences

_TOKEN = re.compile(r"[^\W_]+")

words = st.sampled_from(
    "alpha beta gamma delta coffee dark mode Obsidian index note vault e.g. Dr. 3.5 U.S. "
    "https://example.com/a.b [[Link]] [[Target|alias]] [md](x.md) #tag `code.` ** _ %% <b> </b> "
    "password: AKIAIOSFODNN7EXAMPLE ^blk 📅 2026-01-31 due:: 咖啡 . ! ? : ; | \\|".split()
)
phrase = st.lists(words, min_size=0, max_size=12).map(" ".join)
indent = st.sampled_from(["", "  ", "    ", "\t", " "])

line = st.one_of(
    phrase,
    st.builds(lambda i, p: f"{i}- {p}", indent, phrase),
    st.builds(lambda i, c, p: f"{i}- [{c}] {p}", indent, st.sampled_from([" ", "x", "-", "/"]), phrase),
    st.builds(lambda i, p: f"{i}1. {p}", indent, phrase),
    st.builds(lambda n, p: "#" * n + " " + p, st.integers(1, 7), phrase),
    st.builds(lambda p: f"> {p}", phrase),
    st.builds(lambda t, p: f"> [!{t}] {p}", st.sampled_from(["note", "warning", ""]), phrase),
    st.builds(lambda a, b: f"| {a} | {b} |", phrase, phrase),
    st.sampled_from(["", "", "---", "***", "|---|---|", "```", "~~~", "$$", "%%", "<div>", "</div>",
                     "<!--", "-->", "![[Embed]]", "^blockid", "=====", "-----BEGIN RSA PRIVATE KEY-----",
                     "-----END RSA PRIVATE KEY-----", "    code line", "> ```"]),
    st.text(max_size=40),
)
markdown = st.lists(line, max_size=40).map("\n".join)
frontmatter = st.sampled_from(["", "---\nmemory: source\n---\n", "---\ntitle: x\nbirthday: 1990-04-02\n---\n",
                               "---\nbroken: [\n---\n"])


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _is_subsequence(needle: list[str], hay: list[str]) -> bool:
    it = iter(hay)
    return all(any(tok == h for h in it) for tok in needle)


@given(frontmatter, markdown)
def test_extraction_properties(fm: str, body: str) -> None:
    text = fm + body
    note = parse_note("Generated.md", text.encode("utf-8"))
    result = extract_facts(note, "n-gen")
    again = extract_facts(note, "n-gen")
    assert result == again
    ids = [f.id for f in result.facts]
    assert len(ids) == len(set(ids))
    # File lines as the parser counts them: CRLF and a lone CR end a line too.
    file_lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    body_tokens = set(_tokens(text))
    for f in result.facts:
        assert f.line_start is not None and f.line_end is not None
        assert 1 <= f.line_start <= f.line_end <= len(file_lines)
        assert redact(f.text)[1] == 0, f.text
        mine = [t for t in _tokens(f.text) if t != "redacted"]
        if f.segment in ("item", "task", "sentence"):
            source = _tokens("\n".join(file_lines[f.line_start - 1 : f.line_end]))
            assert _is_subsequence(mine, source), (f.text, file_lines[f.line_start - 1 : f.line_end])
        elif f.segment == "row":
            # "Column 3:" names a column whose header cell is empty.
            labelled = re.sub(r"Column \d+:", " ", f.text)
            assert {t for t in _tokens(labelled) if t != "redacted"} <= body_tokens, f.text


@given(st.text(max_size=200))
def test_sentence_spans_cover_the_text_in_order(text: str) -> None:
    spans = split_sentences(text)
    last = 0
    for s, e in spans:
        assert last <= s < e <= len(text)
        assert text[last:s].strip() == ""
        last = e
    assert text[last:].strip() == ""


@given(st.text(max_size=300))
def test_redaction_is_idempotent(text: str) -> None:
    once, _ = redact(text)
    assert redact(once) == (once, 0)
