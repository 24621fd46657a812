"""Properties of the default extractor on generated Markdown (Hypothesis).

What is asserted, precisely, for every note:

1. :func:`extract_facts` never raises, and gives the same result twice.
2. Fact ids are unique within the note.
3. Every fact's line range lies within the file, start <= end.
4. For list items, tasks and sentences the fact text *is a substring* of
   its source lines ``line_start..line_end`` once both are normalised the
   same way (:func:`_normalised_source`): white space collapsed, and the
   markup the segmenter drops removed from the source (quote prefixes, list
   markers, checkboxes, block ids, embeds, and the
   comments, HTML tags and math that the parser's masking pass finds). The
   only slack is redaction: the pieces of the text between ``[redacted]``
   markers must occur in that order. Added context (parent items, lead-ins,
   heading paths) is kept apart from the text and not checked here.
5. For table rows (``Column: value; ...``) every word token of the fact
   occurs in the row's line or its table's header line (``Column 3:``, the
   label of a column without a header, aside).
6. No fact text still holds a credential :func:`redact` would find.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from memvault.vault_io.blocks import strip_block_id
from memvault.vault_io.facts import extract_facts
from memvault.vault_io.mask import mask_markdown
from memvault.vault_io.parser import parse_note
from memvault.vault_io.secrets import REDACTED, redact
from memvault.vault_io.segment import split_sentences
from memvault.vault_io.syntax import EMBED_RE, LIST_ITEM_RE, QUOTES_RE, TASK_RE

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


_MASKED_RUN = re.compile(r" +")


def _unmasked(raw: str, masked: str) -> str:
    """``raw`` with what the masking pass hid blanked, except inline code
    (a fact keeps its code spans as written)."""
    out, last = [], 0
    for m in _MASKED_RUN.finditer(masked):
        original = raw[m.start() : m.end()]
        if original.strip() and not original.lstrip().startswith("`"):
            out += [raw[last : m.start()], " "]
            last = m.end()
    out.append(raw[last:])
    return "".join(out)


def _normalised_line(raw: str, masked: str) -> str:
    text = _unmasked(raw, masked)
    m = QUOTES_RE.match(text)
    if m and text.lstrip(" ").startswith(">"):
        text = text[m.end() :]
    m = LIST_ITEM_RE.match(text)
    if m:
        text = text[m.end() :]
        m = TASK_RE.match(text)  # a checkbox only opens a list item
        if m:
            text = text[m.end() :]
    text = strip_block_id(text.rstrip())
    return EMBED_RE.sub(" ", text)


def _normalised_source(file_lines: list[str], masked_lines: list[str], first: int, last: int) -> str:
    """Lines ``first..last`` (1-based) as a fact's text is written: markup
    the segmenter drops removed, white space collapsed."""
    parts = [_normalised_line(file_lines[i - 1], masked_lines[i - 1]) for i in range(first, last + 1)]
    return " ".join(" ".join(parts).split())


def _occurs_in(text: str, source: str) -> bool:
    """``text`` is a substring of ``source``, but for its ``[redacted]``
    parts: the pieces between them must occur in order."""
    at = 0
    for piece in (" ".join(p.split()) for p in text.split(REDACTED)):
        if not piece:
            continue
        found = source.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return True


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
    # The masking pass over the body, padded to file lines (front-matter is
    # never masked: no fact of a segment comes from it).
    masked_lines = file_lines[: note.body_line - 1] + mask_markdown(note.body).text.split("\n")
    for f in result.facts:
        assert f.line_start is not None and f.line_end is not None
        assert 1 <= f.line_start <= f.line_end <= len(file_lines)
        assert redact(f.text)[1] == 0, f.text
        if f.segment in ("item", "task", "sentence"):
            source = _normalised_source(file_lines, masked_lines, f.line_start, f.line_end)
            assert _occurs_in(f.text, source), (f.text, source)
        elif f.segment == "row":
            # "Column 3:" names a column whose header cell is empty; the
            # header is the nearest line above with the delimiter row under it.
            header = next(
                i for i in range(f.line_start - 2, 0, -1) if re.fullmatch(r"[\s|:>-]*-[\s|:>-]*", file_lines[i])
            )
            around = set(_tokens(file_lines[header - 1] + " " + file_lines[f.line_start - 1]))
            labelled = re.sub(r"Column \d+:", " ", f.text)
            assert {t for t in _tokens(labelled) if t != "redacted"} <= around, f.text


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
