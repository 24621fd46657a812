"""Facts of session notes: what a person said about themselves in a conversation.

A session note (:mod:`memvault.vault_io.session_note`) is a memory source
like any other, but most of what it holds is not worth remembering: the
assistant's answers, tool output, questions. Its extractor keeps

- the digest's first line (episodic: when, where, what the session began with);
- from the **user's** turns only, first-person statements that say who the
  person is (identity), what they prefer or use, what they decided
  (semantic), what they plan (prospective), and anything they asked to be
  remembered ("remember that ...", "note that ...", "keep in mind ...").

Questions and requests to the assistant are left out by their mood
(:mod:`.mood`: "Write a short summary of what we decided." asks, it does
not decide), and so are conditionals. Every
fact anchors to the turn it came from (``^t12``), whichever extractor found
it (the rules here, or the llm extractor with :data:`CONVERSATION_PROMPT`).

:func:`drop_repeats` is the one place that decides that a new fact of a
conversation repeats something already known (a live memory, a live fact of
an ordinary source or of an earlier session) and is not added twice; today it
compares normalised text, and write-time similarity checks can extend it. Of
several sessions that state one fact, the earliest (:func:`session_rank`,
read from the notes) holds it, whatever order they were indexed in: a later
session's fact is taken over when an earlier one arrives.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import replace

import apsw

from memvault.store.db import rows as db
from memvault.store.facts.llm_extract import SCHEMA_DOC
from memvault.store.facts.mood import DECLARATIVE, HORTATIVE, IMPERATIVE, WH_WORDS, mood
from memvault.store.index.classify import memory_key
from memvault.store.index.event_time import note_event_time
from memvault.store.memories.memtypes import MEMORY_TYPES
from memvault.vault_io.facts import (
    EPISODIC,
    IDENTITY,
    PROSPECTIVE,
    SEMANTIC,
    DraftBuilder,
    Extraction,
    is_fact_text,
    normalise,
)
from memvault.vault_io.note import ParsedNote
from memvault.vault_io.secrets import redact
from memvault.vault_io.segment import collapse, split_sentences
from memvault.vault_io.session_digest import block_lines
from memvault.vault_io.session_note import DIGEST_HEADING, TurnSpan, is_session_note, superseded_lines, turn_spans

#: The extractor name recorded for facts the rules found in a session note.
EXTRACTOR = "conversation"
#: Longer statements are pasted text, not something a person said about themselves.
MAX_CHARS = 300
#: Characters of each assistant line the llm is shown (the user's lines are whole).
ASSISTANT_LINE_CHARS = 300

CONVERSATION_PROMPT = f"""You read one conversation between a person (the User turns) and an AI assistant,
written as a Markdown note with numbered lines, and keep what is worth remembering about the person.
Extract atomic facts the person stated or confirmed: who they are, their preferences and habits, the tools
and setups they use, decisions they made, their plans and deadlines, and anything they asked to be remembered.
Do not extract the assistant's suggestions unless the person accepted them, questions, or passing details of
the task at hand. Write each fact as a short self-contained sentence about "the user". Give the line it comes from.
Types: identity (who the person is), semantic (preferences, decisions, knowledge), episodic (what happened),
procedural (how the person wants things done), prospective (plans, tasks, deadlines; give "due" when dated).
Answer with JSON only, no prose, in exactly this shape:
{SCHEMA_DOC}"""

_I = r"(?:i|we)"
_REMEMBER_RE = re.compile(
    r"^(?:please\s+|pls\s+|also,?\s+)?(?:remember|note|keep in mind|don'?t forget|do not forget|for the record|fyi)"
    r"(?:\s+(?:that|this))?\s*[:,]?\s+(?P<rest>.+)$",
    re.I,
)
_IDENTITY_RES = (
    re.compile(r"^my (?:name|job|role|title|pronouns|background|profession|occupation|employer|company)\b.*\b(?:is|are)\b", re.I),
    re.compile(r"^i(?:'m| am) (?:from|based in|located in|living in|\d+ years old)\b", re.I),
    re.compile(r"^i (?:live|grew up|was born|work (?:as|at|for)|studied|speak|teach)\b", re.I),
    re.compile(r"^i(?:'ve| have) been (?:a|an|working (?:as|at|for))\b", re.I),
)
# "I'm a/an ..." is who the person is only when one of the next few words
# names a kind of person (WordNet's person nouns: "a data engineer", "a
# night nurse"), not a state ("a bit tired", "a mix of nervous and
# hopeful").
_A_KIND_OF_RE = re.compile(r"^i(?:'m| am) (?:a|an)\s+(?P<rest>.+)$", re.I)
#: Words after the article read for a person noun ("a senior data engineer").
KIND_WORDS = 3


def _says_a_kind_of_person(text: str) -> bool:
    """Whether ``text`` is "I'm a/an ..." with a person noun among its next :data:`KIND_WORDS` words."""
    m = _A_KIND_OF_RE.match(text)
    if not m:
        return False
    from memvault.store.consolidation.lexicon import person

    words = re.findall(r"[a-z]+(?:-[a-z]+)*", m.group("rest").casefold())[:KIND_WORDS]
    return any(person(w) for w in words)


_PREFERENCE_RES = (
    re.compile(
        rf"^{_I} (?:really |strongly |usually |generally |always |mostly |much |definitely )?"
        r"(?:prefer|like|love|hate|dislike|enjoy|favou?r|can'?t stand|don'?t like|do not like|don'?t want|do not want)\b",
        re.I,
    ),
    re.compile(r"^my (?:favou?rite|preferred|usual|default|go-to)\b", re.I),
    re.compile(rf"^{_I} (?:always|never|usually|normally|only|mostly) (?:use|write|work|run|deploy|test|code|keep|want)\b", re.I),
    re.compile(rf"^{_I}(?:'re| are|'m| am)? (?:use|using|run|running|work with|working with|write|writing) (?!it\b|this\b|that\b)", re.I),
    re.compile(r"^(?:always|never) (?:use|write|add|run|call|put|commit|push)\b", re.I),
)
_DECISION_RE = re.compile(
    rf"\b(?:{_I}(?:'ve| have)? decided|let'?s go with|{_I}(?:'ll| will) go with|{_I}(?:'re| are) going with|"
    rf"{_I} (?:chose|picked|settled on)|the decision is|{_I} agreed)\b",
    re.I,
)
_PLAN_RES = (
    re.compile(rf"^{_I}(?:'m| am|'re| are) (?:going|planning|about) to\b", re.I),
    re.compile(rf"^(?:{_I} (?:plan|intend|aim|hope) to|my (?:plan|goal|aim) is)\b", re.I),
    re.compile(
        rf"^{_I}(?:'ll| will| need to| have to| must)\b.*\b(?:tomorrow|tonight|today|next|this (?:week|month|weekend|year)"
        r"|by (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|the end|\d)|on (?:monday|tuesday|wednesday"
        r"|thursday|friday|saturday|sunday)|before|deadline|\d{4}-\d{2}-\d{2})\b",
        re.I,
    ),
)
# Openings that make a first-person sentence a hypothesis or a reply about the
# task at hand rather than a statement about the person (conditional and
# temporal clauses, thanks and acknowledgements). Questions and requests are
# told apart by their mood (:mod:`.mood`), not by their first word.
_NOT_A_STATEMENT_RE = re.compile(r"^(?:if|when|whether|thanks|thank you|ok|okay|hmm|so|but)\b", re.I)
#: A standing rule given as an imperative ("always use tabs", "never push on Fridays"): how the person wants
#: things done, kept, where any other request to the assistant is not a statement.
_STANDING_RULE_RE = re.compile(r"^(?:always|never)\b", re.I)
#: Words that make the clause after them an embedded question ("what we decided", "whether we agreed"):
#: a decision reported, not stated.
_EMBEDDING = WH_WORDS | {"whether", "if"}
_REPEAT_STRIP_RE = re.compile(r"[\s.!;:,]+$")
# How a statement the rules keep begins (lower case), or a word a decision holds.
_OPENINGS = ("i ", "i'", "im ", "my ", "we ", "we'", "let", "always ", "never ", "remember", "note", "keep in mind",
             "don't forget", "dont forget", "do not forget", "for the record", "fyi", "please ", "pls ", "also")
_DECISION_WORDS = ("decided", "go with", "going with", "chose", "picked", "settled on", "decision is", "agreed")
# A paragraph worth splitting into sentences holds one of these words.
_TRIGGER_RE = re.compile(
    r"\b(?:i|i'm|im|i've|i'll|i'd|my|we|we're|we've|we'll|let's|lets|remember|note|keep in mind|forget|fyi"
    r"|for the record|always|never)\b",
    re.I,
)
_FENCE_LINE_RE = re.compile(r"^[ \t]*(?:```|~~~)")
_ITEM_RE = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+(?:\[.\][ \t]+)?")


def classify(text: str) -> tuple[str, str] | None:
    """(memory type, topic) of a statement worth keeping, or None."""
    if text.endswith("?") or len(text) > MAX_CHARS:
        return None
    low = text.lower()
    if not low.startswith(_OPENINGS) and not any(word in low for word in _DECISION_WORDS):
        return None  # what every rule below needs, tested first: most sentences end here
    m = _REMEMBER_RE.match(text)
    if m:
        rest = m.group("rest")
        if rest.lower().startswith("to "):
            return PROSPECTIVE, "remembered"  # "remember to renew the certificate"
        found = classify(rest)
        return (found[0] if found else SEMANTIC), "remembered"
    if not _states(text) or _NOT_A_STATEMENT_RE.match(text):
        return None
    if any(r.search(text) for r in _IDENTITY_RES) or _says_a_kind_of_person(text):
        return IDENTITY, "identity"
    if _states_a_decision(text):
        return SEMANTIC, "decision"
    if any(r.search(text) for r in _PLAN_RES):
        return PROSPECTIVE, "plan"
    if any(r.search(text) for r in _PREFERENCE_RES):
        return SEMANTIC, "preference"
    return None


def _states(text: str) -> bool:
    """Whether a sentence states something: not a question, and not a request
    to the assistant unless it is a standing rule (:mod:`.mood`)."""
    found = mood(text)
    return found in (DECLARATIVE, HORTATIVE) or (found == IMPERATIVE and bool(_STANDING_RULE_RE.match(text)))


def _states_a_decision(text: str) -> bool:
    """Whether a decision's words in ``text`` state one, not report one in an
    embedded question ("I forgot what we decided")."""
    for m in _DECISION_RE.finditer(text):
        before = re.findall(r"[a-z']+", text[: m.start()].lower())
        if not before or before[-1] not in _EMBEDDING:
            return True
    return False


def remembered_text(text: str) -> str:
    """``text`` without a leading "remember that" (what is to be remembered)."""
    m = _REMEMBER_RE.match(text)
    if not m:
        return text
    rest = m.group("rest").strip()
    if rest.lower().startswith("to "):
        return text
    return rest[:1].upper() + rest[1:]


def _turn_of(spans: list[TurnSpan], line: int | None) -> TurnSpan | None:
    if line is None:
        return None
    for span in spans:
        if span.first_line <= line <= span.last_line:
            return span
    return None


def extract_conversation_facts(note: ParsedNote, source_id: str) -> Extraction:
    """The facts of one session note by the rules (module docstring).

    Reads the user's turns only, and splits into sentences only the
    paragraphs and list items that hold a first-person word or a "remember"
    (most of a transcript holds neither): an import of thousands of
    conversations must not segment every line the assistant wrote.
    """
    spans = turn_spans(note.body, note.body_line)
    result = Extraction(extractor=EXTRACTOR)
    builder = DraftBuilder(note, source_id)
    lines = note.body.split("\n")
    digest = _digest_line(note, lines)
    if digest is not None:
        line_no, text = digest
        first = split_sentences(text)[:1]
        sentence, n = redact(collapse(text[first[0][0] : first[0][1]])) if first else ("", 0)
        result.redacted += n
        if is_fact_text(sentence):
            builder.add("digest", sentence, line_no, line_no, _headings_at(note, line_no), (), EPISODIC, None, n)
    for span in spans:
        if span.role != "user":
            continue
        headings = _headings_at(note, span.first_line)
        for block, first_line in _blocks(lines, span, note.body_line):
            if not _TRIGGER_RE.search(block):
                continue
            for start, end in split_sentences(block):
                said = collapse(block[start:end])
                found = classify(said)  # before redacting: most sentences are not kept
                if found is None:
                    continue
                text, n = redact(said)
                if not is_fact_text(text):
                    continue
                result.redacted += n
                first_of = first_line + block.count("\n", 0, start)
                last_of = first_of + block[start:end].rstrip("\n").count("\n")
                type_, topic = found
                draft = builder.add("turn", remembered_text(text), first_of, last_of, headings, (), type_, None, n,
                                    (topic,))
                builder.facts[-1] = replace(draft, block_id=f"t{span.n}")
    result.facts = builder.facts
    return result


def _digest_line(note: ParsedNote, lines: list[str]) -> tuple[int, str] | None:
    """(file line, text) of the digest's first line."""
    for i, line in enumerate(lines):
        if line.strip() == DIGEST_HEADING:
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            return (note.body_line + i + 1, nxt) if nxt.strip() and not nxt.startswith(("#", "- ")) else None
    return None


def _headings_at(note: ParsedNote, line: int) -> tuple[str, ...]:
    """The heading path (outermost first) that holds file line ``line``."""
    path: list[tuple[int, str]] = []
    for h in note.headings:
        if h.line > line:
            break
        while path and path[-1][0] >= h.level:
            path.pop()
        path.append((h.level, h.text))
    return tuple(text for _, text in path)


def _blocks(lines: list[str], span: TurnSpan, body_line: int) -> list[tuple[str, int]]:
    """The paragraphs and list items of one turn's callout, as (text, file
    line of its first line), fenced code left out."""
    out: list[tuple[str, int]] = []
    current: list[str] = []
    start = 0
    fenced = False

    def close() -> None:
        if current:
            out.append(("\n".join(current), start))
            current.clear()

    for i in range(span.first_line - body_line + 1, span.last_line - body_line):
        raw = lines[i]
        text = raw[2:] if raw.startswith("> ") else raw[1:] if raw.startswith(">") else raw
        if _FENCE_LINE_RE.match(text):
            close()
            fenced = not fenced
            continue
        if fenced:
            continue
        item = _ITEM_RE.match(text)
        if not text.strip() or item:
            close()
        if text.strip():
            if not current:
                start = body_line + i
            current.append(text[item.end():] if item else text)
    close()
    return out


def anchor_to_turns(note: ParsedNote, extraction: Extraction) -> Extraction:
    """Every fact inside a turn anchors to that turn's block id (``^t12``),
    whatever the parser made of the callout's inner blocks."""
    spans = turn_spans(note.body, note.body_line)
    if not spans:
        return extraction
    facts = []
    for draft in extraction.facts:
        span = _turn_of(spans, draft.line_start)
        facts.append(replace(draft, block_id=f"t{span.n}") if span is not None else draft)
    extraction.facts = facts
    return extraction


def llm_prompt(note: ParsedNote) -> str:
    """The user message for the llm: the note's title, then its digest and
    turns as numbered file lines (tool results left out, assistant lines
    shortened), redacted."""
    spans = turn_spans(note.body, note.body_line)
    superseded = superseded_lines(note.body, note.body_line)  # changed at the source: a record, not said
    digest = block_lines(note.body)  # memvault's own digest of the conversation: not said either
    lines = [f"Conversation: {note.title}", ""]
    body = note.body.split("\n")
    for i, text in enumerate(body):
        line_no = note.body_line + i
        span = _turn_of(spans, line_no)
        if (span is not None and span.role == "tool") or line_no in superseded or i in digest:
            continue
        if span is not None and span.role == "assistant" and len(text) > ASSISTANT_LINE_CHARS:
            text = text[:ASSISTANT_LINE_CHARS] + " …"
        lines.append(f"{line_no}: {redact(text)[0]}")
    return redact("\n".join(lines))[0]


# -- repeats ---------------------------------------------------------------------


def repeat_key(text: str) -> str:
    """The form in which two statements count as the same: NFC, white space
    collapsed, case folded, trailing punctuation dropped."""
    return _REPEAT_STRIP_RE.sub("", collapse(unicodedata.normalize("NFC", text)).casefold())


#: Where a session note stands among the sessions that state one fact (:func:`session_rank`).
Rank = tuple[int, str, str, str]


def known_elsewhere(con: apsw.Connection, source_id: str, text: str, rank: Rank | None = None) -> list[str] | None:
    """Whether ``text`` (case, white space and a trailing period aside) is
    known already: said by a live memory, by a live fact of an ordinary
    source, or by one of a session that ranks before ``rank`` (all other
    sessions, without a rank). None if so; else the live facts of later
    sessions that say it, which the session at ``rank`` takes over (so the
    earliest session holds a fact whichever of them was indexed first).
    Two indexed lookups: memories by their content key, facts by their
    normalised text."""
    base = _REPEAT_STRIP_RE.sub("", normalise(text))
    if not base:
        return []
    variants = [base, base + ".", base + "!"]
    memory_keys = [memory_key(t, "user", v) for t in MEMORY_TYPES for v in variants]
    marks = ",".join("?" * len(memory_keys))
    if con.execute(
        f"SELECT 1 FROM traces WHERE content_key IN ({marks}) AND +kind = 'memory' AND +status = 'active' LIMIT 1",
        memory_keys,
    ).fetchone():
        return None
    later: list[str] = []
    for fact_id, holder in db.rows(
        con,
        "SELECT f.trace_id, f.source_id FROM facts f JOIN traces t ON t.id = f.trace_id "
        "WHERE f.text_key COLLATE NOCASE IN (?,?,?) AND f.source_id != ? AND t.status = 'active'",
        (*variants, source_id),
    ):
        theirs = _source_rank(con, holder) if rank is not None else None
        if rank is None or theirs is None or theirs < rank:
            return None
        later.append(fact_id)
    return later


def _source_rank(con: apsw.Connection, source_id: str) -> Rank | None:
    """:func:`session_rank` of an indexed source note, from what the index
    read of it; None if it is not a session note."""
    row = db.first(con, "SELECT metadata, event_time, path FROM traces WHERE id = ?", (source_id,))
    if row is None:
        return None
    meta = json.loads(row[0] or "{}")
    frontmatter = meta.get("frontmatter") if isinstance(meta, dict) else None
    if not isinstance(frontmatter, dict) or not is_session_note(frontmatter):
        return None
    return _rank(row[1], source_id, row[2] or "")


def _rank(when: str | None, note_id: str, path: str) -> Rank:
    """The order of :func:`session_rank`: a time first (earliest first), then id, then path."""
    return (0 if when else 1, when or "", note_id, path)


def session_rank(note: ParsedNote, note_id: str) -> Rank:
    """Where a session note stands among the sessions that state one fact:
    the one that ranks first holds it, whichever was indexed first
    (:func:`drop_repeats` takes it over from a later one; the observer goes
    through the sessions of a batch in this order). The earliest to have happened
    (its event time: ``started``), then the smallest note id, then the path;
    a session without a time after those with one. All of it is read from
    the note, so every device picks the same note whatever order it saw
    the files in."""
    return _rank(note_event_time(note.frontmatter, note.path), note_id, note.path)


def drop_repeats(
    con: apsw.Connection, source_id: str, extraction: Extraction, seen: dict[str, str] | None = None,
    rank: Rank | None = None, take_over: list[str] | None = None,
) -> Extraction:
    """``extraction`` without the facts that repeat what is already known
    (:func:`known_elsewhere`), nor ones another source of the same batch
    said first (``seen``: repeat key -> source id, filled in as it goes;
    the caller goes through a batch's sessions by :func:`session_rank`).
    With this session's ``rank``, the facts of later sessions that say what
    it keeps are added to ``take_over``: the caller retires them when it
    writes this session's facts. The digest fact and the action items
    are about this session alone and always stay."""
    kept = []
    for draft in extraction.facts:
        if draft.segment in ("digest", "action"):  # about this session alone (an action item: its task)
            kept.append(draft)
            continue
        key = repeat_key(draft.text)
        first = seen.setdefault(key, source_id) if seen is not None else source_id
        if first != source_id:
            continue
        later = known_elsewhere(con, source_id, draft.text, rank)
        if later is None:
            continue
        if take_over is not None:
            take_over += later
        kept.append(draft)
    extraction.facts = kept
    return extraction
