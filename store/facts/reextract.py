"""Writing one source note's facts into the index, incrementally.

For one source note (:func:`sync_source_facts`):

1. every fact is extracted again (default rules, or the llm extractor);
2. a fact whose id already exists keeps it (the id comes from the note and
   the normalised text, so an unchanged fact keeps its id, creation time and
   retrieval statistics even when it moved within the note); only its
   anchor (lines, heading path, block id) is updated;
3. the remaining new facts are paired with the remaining old ones, first by
   block id (the same ``^id`` on both sides, used once on each side), then
   within the same heading path by text similarity (difflib ratio of at
   least :data:`SIMILARITY`, best pairs first; each new fact is compared
   with a few candidates found by shared words and position, so a rewrite
   of thousands of lines is paired in well under a second). A paired new
   fact gets an ``updates`` edge to its predecessor, which is kept as
   superseded with reason "changed in source" (``memvault history`` follows the chain);
4. old facts left unpaired are retired: "removed from source".

A statement said twice in one source (the same words; case, white space and
trailing punctuation aside) is one fact, and each repetition makes it
stronger, as a recall does (:func:`one_per_statement`).

A fact a person forgot (``memvault forget <fact id>``, recorded in
``state.fact_forgets``) is extracted like any other but written as
forgotten (status ``deleted``): it never comes back by itself, also not in a
rebuilt index, until it is restored.

Which notes to extract, and when, is :mod:`.facts`' business.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw

from memvault.store.db import records as rec
from memvault.store.facts import rows as sf
from memvault.store.index.event_time import fact_event_time, note_event_time
from memvault.store.memories.rows import bump_seen
from memvault.vault_io.facts import Extraction, FactDraft, source_uri
from memvault.vault_io.note import ParsedNote
from memvault.vault_io.resolve import LinkResolver, link_key
from memvault.vault_io.secrets import redact
from memvault.vault_io.sources import SourceMarks

log = logging.getLogger(__name__)

_WORD_RE = re.compile(r"[^\W_]+")

#: Lowest difflib ratio at which an edited fact is taken for its predecessor.
SIMILARITY = 0.6
#: Pairing work per changed fact is capped, so it stays near-linear when a
#: whole long section is rewritten: at most MAX_LOOKUPS old facts found by
#: shared words (only words in at most RARE_DF old facts of the heading are
#: looked up) plus the three at the same rank, of which at most MAX_RATIOS
#: (best word overlap first) get a full difflib ratio.
MAX_LOOKUPS = 8
RARE_DF = 32
MAX_RATIOS = 4
#: A ratio this high ends the search for a fact's predecessor.
SURE = 0.85
#: Candidates whose ratio cannot come within this of the best so far are skipped.
BEST_MARGIN = 0.1
REASON_CHANGED = "changed in source"
REASON_REMOVED = "removed from source"


@dataclass
class FactSyncResult:
    """What one source's reconcile did."""

    kept: int = 0
    added: int = 0
    changed: int = 0
    retired: int = 0
    warnings: list[str] = field(default_factory=list)


def fact_title(note_title: str, heading_path: str, context: str) -> str:
    """The indexed title of a fact: note title, heading path, context
    (a first heading that repeats the note title is said once). The note
    title, its file's name, is redacted like the heading path already is."""
    note_title = redact(note_title)[0]
    first, sep, rest = heading_path.partition(" > ")
    if first.strip().casefold() == note_title.strip().casefold():
        heading_path = rest
    return " > ".join(p for p in (note_title, heading_path, context) if p)


def build_fact(
    d: FactDraft, note: ParsedNote, source_id: str, extractor: str
) -> tuple[rec.TraceRow, sf.FactMeta]:
    """The trace and anchor row for one extracted fact."""
    context = " > ".join(d.context)
    uri = source_uri(note.path, d.anchor)
    meta = sf.FactMeta(
        trace_id=d.id, source_id=source_id, ordinal=d.ordinal, segment=d.segment,
        heading_path=d.heading_path, heading=d.headings[-1] if d.headings else None,
        block_id=d.block_id, line_start=d.line_start, line_end=d.line_end, source_uri=uri,
        context=context, due=d.due, text_key=d.key, extractor=extractor, redacted=d.redacted,
    )
    metadata: dict[str, Any] = {
        "source_id": source_id,
        "heading_path": d.heading_path,
        "block_id": d.block_id,
        "lines": [d.line_start, d.line_end],
        "source_uri": uri,
        "segment": d.segment,
        "extractor": extractor,
    }
    if context:
        metadata["context"] = context
    if d.due:
        metadata["due"] = d.due
    if d.topics:
        metadata["topics"] = list(d.topics)
    if d.importance is not None:
        metadata["importance"] = d.importance
    # When it happened: a dated heading above it, else its note's event time.
    when = fact_event_time(d.headings, note_event_time(note.frontmatter, note.path))
    if when:
        metadata["event_time"] = when
    tags = list(d.tags) + [t for t in (f"topic/{x}" for x in d.topics) if t not in d.tags]
    trace = rec.TraceRow(
        id=d.id, kind="fact", type=d.type, title=fact_title(note.title, d.heading_path, context),
        content=d.text, tags=tags, metadata=metadata, path=note.path, source="extracted",
        strength=d.importance, status=sf.ACTIVE,
    )
    return trace, meta


def pair_changed(
    new: Sequence[FactDraft], old: Sequence[tuple[rec.TraceRow, sf.FactMeta]]
) -> list[tuple[FactDraft, str]]:
    """Pair new facts with the old facts they replace: (new draft, old id).

    Same block id first (only when the id is used once on each side), then,
    within one heading path, the most similar texts (difflib ratio >=
    :data:`SIMILARITY`, best pairs first).

    Near-linear in the number of facts, so a note with thousands of edited
    lines stays on the daemon's hot path: each new fact is compared with a
    few candidates only (:func:`_score_heading`: old facts sharing its rarer
    words, and those at the same rank under the heading), best word overlap
    first, with difflib's cheap upper bounds skipping hopeless ones, and at
    most :data:`MAX_RATIOS` full ratios per fact.
    """
    pairs: list[tuple[FactDraft, str]] = []
    new_blocks: dict[str, list[FactDraft]] = defaultdict(list)
    old_blocks: dict[str, list[str]] = defaultdict(list)
    for d in new:
        if d.block_id:
            new_blocks[d.block_id].append(d)
    for t, m in old:
        if m.block_id:
            old_blocks[m.block_id].append(t.id)
    used_new: set[str] = set()
    used_old: set[str] = set()
    for block, ds in new_blocks.items():
        olds = old_blocks.get(block, [])
        if len(ds) == 1 and len(olds) == 1:
            pairs.append((ds[0], olds[0]))
            used_new.add(ds[0].id)
            used_old.add(olds[0])
    old_by_heading: dict[str, list[tuple[rec.TraceRow, sf.FactMeta]]] = defaultdict(list)
    for t, m in old:
        if t.id not in used_old:
            old_by_heading[m.heading_path].append((t, m))
    new_by_heading: dict[str, list[FactDraft]] = defaultdict(list)
    for d in new:
        if d.id not in used_new and d.heading_path in old_by_heading:
            new_by_heading[d.heading_path].append(d)
    scored: list[tuple[float, int, int, FactDraft, str]] = []
    for heading, drafts in new_by_heading.items():
        scored += _score_heading(drafts, old_by_heading[heading])
    scored.sort(key=lambda s: (-s[0], -s[1], s[2]))
    for _, _, _, d, old_id in scored:
        if d.id in used_new or old_id in used_old:
            continue
        pairs.append((d, old_id))
        used_new.add(d.id)
        used_old.add(old_id)
    return pairs


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD_RE.findall(text.lower()))


def _score_heading(
    drafts: list[FactDraft], olds: list[tuple[rec.TraceRow, sf.FactMeta]]
) -> list[tuple[float, int, int, FactDraft, str]]:
    """(ratio, -ordinal distance, new ordinal, draft, old id) for every
    candidate pair under one heading with ratio >= SIMILARITY."""
    drafts = sorted(drafts, key=lambda d: d.ordinal)
    olds = sorted(olds, key=lambda tm: tm[1].ordinal)
    old_texts = [t.content.lower() for t, _ in olds]
    old_words = [_words(x) for x in old_texts]
    # Inverted index of the old facts' words; words in more than RARE_DF
    # facts (the heading's "stop words") are left out: they would make every
    # lookup as long as the heading.
    postings: dict[str, list[int]] = defaultdict(list)
    for i, ws in enumerate(old_words):
        for w in ws:
            postings[w].append(i)
    scale = len(olds) / len(drafts)
    out: list[tuple[float, int, int, FactDraft, str]] = []
    sm = difflib.SequenceMatcher(None, autojunk=False)
    for rank, d in enumerate(drafts):
        text = d.text.lower()
        words = _words(d.text)
        # Same rank among the unpaired facts: when a whole section is
        # rewritten, the predecessor usually sits at the same place.
        near = int(rank * scale)
        cands = {i for i in (near - 1, near, near + 1) if 0 <= i < len(olds)}
        shared: dict[int, int] = defaultdict(int)
        for w in words:
            hits = postings.get(w)
            if hits is not None and len(hits) <= RARE_DF:
                for i in hits:
                    shared[i] += 1
        if shared:
            cands.update(sorted(shared, key=shared.__getitem__, reverse=True)[:MAX_LOOKUPS])

        def jaccard(i: int) -> float:
            ow = old_words[i]
            inter = len(words & ow)
            union = len(words) + len(ow) - inter
            return inter / union if union else 1.0

        ranked = sorted(cands, key=lambda i: (-jaccard(i), abs(olds[i][1].ordinal - d.ordinal)))
        sm.set_seq2(text)  # difflib caches its analysis of seq2: one per new fact
        best = 0.0
        for i in ranked[:MAX_RATIOS]:
            sm.set_seq1(old_texts[i])
            floor = max(SIMILARITY, best - BEST_MARGIN)
            if sm.real_quick_ratio() < floor or sm.quick_ratio() < floor:
                continue
            ratio = sm.ratio()
            if ratio >= SIMILARITY:
                t, m = olds[i]
                out.append((ratio, -abs(m.ordinal - d.ordinal), d.ordinal, d, t.id))
                best = max(best, ratio)
                if ratio >= SURE:
                    break  # the first candidate by word overlap nearly always is the one
    return out


def _same(t: rec.TraceRow, new: rec.TraceRow, m: sf.FactMeta | None, new_meta: sf.FactMeta) -> bool:
    return (
        m == new_meta
        and (t.type, t.title, t.content, t.tags, t.path, t.status, t.metadata, t.strength)
        == (new.type, new.title, new.content, new.tags, new.path, new.status, new.metadata,
            new.strength if new.strength is not None else t.strength)
    )


def _adopt_earlier_ids(
    con: apsw.Connection,
    note: ParsedNote,
    source_id: str,
    drafts: Sequence[FactDraft],
    by_id: dict[str, tuple[rec.TraceRow, sf.FactMeta]],
) -> None:
    """Facts recorded under an older trace id of the same note (it gained a
    front-matter id): same text, so they are renamed to their new ids, and
    every other fact of the old id joins this source (into ``by_id``)."""
    foreign: dict[str, list[str]] = defaultdict(list)
    for state in sf.sources_at(con, note.path):
        if state.source_id != source_id:
            for t, m in sf.facts_of(con, [state.source_id]):
                foreign[m.text_key].append(t.id)
            con.execute("DELETE FROM fact_sources WHERE source_id = ?", (state.source_id,))
    for d in drafts:
        if d.id not in by_id and foreign.get(d.key):
            old_id = foreign[d.key].pop(0)
            if rec.get_trace(con, d.id) is None:
                rec.rename_trace(con, old_id, d.id)
                con.execute("UPDATE facts SET source_id = ? WHERE trace_id = ?", (source_id, d.id))
                renamed, meta = rec.get_trace(con, d.id), sf.get_meta(con, d.id)
                if renamed and meta:
                    by_id[d.id] = (renamed, meta)
    for ids in foreign.values():
        for old_id in ids:
            con.execute("UPDATE facts SET source_id = ? WHERE trace_id = ?", (source_id, old_id))
            joined, meta = rec.get_trace(con, old_id), sf.get_meta(con, old_id)
            if joined and meta:
                by_id[old_id] = (joined, meta)


def sync_source_facts(
    con: apsw.Connection,
    note: ParsedNote,
    source_id: str,
    extraction: Extraction,
    marks: SourceMarks,
    resolver: "FactLinks",
) -> FactSyncResult:
    """Bring the facts of one source note in line with ``extraction``.

    Runs inside the caller's write transaction; see the module docstring.
    """
    result = FactSyncResult()
    extractor = extraction.extractor
    by_id = {t.id: (t, m) for t, m in sf.facts_of(con, [source_id])}
    drafts, repeats = one_per_statement(extraction.facts)
    _adopt_earlier_ids(con, note, source_id, drafts, by_id)
    forgotten = sf.forgotten_facts(con, source_id)
    new_ids = {d.id for d in drafts}
    active_old = [(t, m) for t, m in by_id.values() if t.status == sf.ACTIVE and t.id not in new_ids]
    fresh = [d for d in drafts if d.id not in forgotten and (d.id not in by_id or by_id[d.id][0].status != sf.ACTIVE)]
    pairs = dict((d.id, old_id) for d, old_id in pair_changed(fresh, active_old))
    paired_old = set(pairs.values())

    if any(t.path != note.path for t, _ in by_id.values()):
        sf.repath(con, source_id, note.path)
    pending = _Pending()
    for d in drafts:
        trace, meta = build_fact(d, note, source_id, extractor)
        current = by_id.get(d.id)
        if repeats.get(d.id, 1) > 1:
            trace.metadata["repeats"] = repeats[d.id]
        if d.id in forgotten:
            _keep_forgotten(con, d, trace, meta, current, forgotten[d.id], pending.facts, pending.edges, note.path, source_id)
            continue
        pending.strengthen.append((d.id, _new_repeats(con, d.id, repeats.get(d.id, 1), current)))
        if current is not None and current[0].status == sf.ACTIVE:
            result.kept += 1
            _keep_active(con, d, trace, meta, current)
            continue
        _write_fact(con, d, trace, meta, current, note.path, source_id, resolver, pending)
        old_id = pairs.get(d.id)
        if old_id:
            pending.updates.append((d.id, old_id))  # once the new fact exists
            sf.retire(con, old_id, REASON_CHANGED)
            result.changed += 1
        else:
            result.added += 1
    result.retired += _finish(con, pending, [t for t, _ in active_old if t.id not in paired_old])
    sf.put_source(con, sf.SourceState(
        source_id=source_id, path=note.path, hash=note.hash, marks=" ".join(marks.names),
        extractor=extractor, facts=len(drafts), redacted=extraction.redacted, extracted_at=rec.now_iso(),
    ))
    return result


@dataclass
class _Pending:
    """What the drafts of one source leave to write once every draft is
    settled: facts new to the index with their edges (in bulk), the update
    links of changed facts (once the new fact exists), and how often each
    fact was said again."""

    facts: list[tuple[rec.TraceRow, sf.FactMeta]] = field(default_factory=list)
    edges: list[tuple[str, rec.EdgeRow]] = field(default_factory=list)
    updates: list[tuple[str, str]] = field(default_factory=list)
    strengthen: list[tuple[str, int]] = field(default_factory=list)


def _keep_active(
    con: apsw.Connection, d: FactDraft, trace: rec.TraceRow, meta: sf.FactMeta,
    current: tuple[rec.TraceRow, sf.FactMeta],
) -> None:
    """An active fact still in its note. Same id, so same text: at most its
    anchor or type moved."""
    t, m = current
    if _same(t, trace, m, meta):
        return
    if t.content == trace.content and t.type == trace.type:
        trace.updated = t.updated  # only the anchor moved: not an update of the fact
    sf.put_fact(con, trace, meta)
    if (m.line_start, m.anchor) != (meta.line_start, meta.anchor):
        _move_edges(con, d)


def _write_fact(
    con: apsw.Connection, d: FactDraft, trace: rec.TraceRow, meta: sf.FactMeta,
    current: tuple[rec.TraceRow, sf.FactMeta] | None, path: str, source_id: str, resolver: "FactLinks",
    pending: _Pending,
) -> None:
    """A fact new to the index (written in bulk later, with its source edge),
    or a superseded or retired one whose text is back."""
    if current is None:
        pending.facts.append((trace, meta))
        pending.edges.append((d.id, rec.EdgeRow(
            kind=sf.DERIVED_FROM, target_name=path, target_path=path, target_id=source_id,
            anchor=d.anchor, line=d.line_start,
        )))
        pending.edges += [(d.id, e) for e in resolver.edges(d, path)]
    else:
        sf.put_fact(con, trace, meta)
        sf.reactivate_cleanup(con, d.id)  # a superseded fact whose text is back
        _move_edges(con, d)
        rec.replace_edges(con, d.id, resolver.edges(d, path), kinds=(sf.LINK,))


def _finish(con: apsw.Connection, pending: _Pending, unpaired: list[rec.TraceRow]) -> int:
    """Write what the drafts left pending, retire the active facts no draft
    says any more (``unpaired``), and count the repeats; how many were retired."""
    sf.insert_facts(con, pending.facts)
    _add_edges(con, pending.edges)
    for new_id, old_id in pending.updates:
        sf.link_update(con, new_id, old_id)
    for t in unpaired:
        sf.retire(con, t.id, REASON_REMOVED)
    for fact_id, times in pending.strengthen:
        for _ in range(times):
            bump_seen(con, fact_id)  # said again: stronger, as a recall makes it
    return len(unpaired)

def one_per_statement(drafts: Sequence[FactDraft]) -> tuple[list[FactDraft], dict[str, int]]:
    """One fact per statement of a source: the first draft of each statement
    (:func:`~.conversation.repeat_key`: case, white space and trailing
    punctuation aside) and, by its id, how often the source says it."""
    from memvault.store.facts.conversation import repeat_key

    first: dict[str, FactDraft] = {}
    count: dict[str, int] = {}
    for d in drafts:
        key = repeat_key(d.text) or d.key
        kept = first.setdefault(key, d)
        count[kept.id] = count.get(kept.id, 0) + 1
    return list(first.values()), count


def _new_repeats(con: apsw.Connection, fact_id: str, times: int,
                 current: tuple[rec.TraceRow, sf.FactMeta] | None) -> int:
    """How many more times than already counted the source says a fact.

    The count is kept in the fact's metadata (``repeats``), so extracting an
    unchanged note again strengthens nothing. A fact new to the index whose
    recall row is in the durable state (a rebuild, a restore) was counted
    before: its strength is in that row already."""
    if current is not None:
        before = current[0].metadata.get("repeats", 1)
        counted = int(before) if isinstance(before, int) else 1
    elif con.execute("SELECT 1 FROM state.recall WHERE trace_id = ?", (fact_id,)).fetchone():
        counted = times
    else:
        counted = 1
    return max(0, times - counted)


def _keep_forgotten(
    con: apsw.Connection,
    d: FactDraft,
    trace: rec.TraceRow,
    meta: sf.FactMeta,
    current: tuple[rec.TraceRow, sf.FactMeta] | None,
    reason: str,
    new_facts: list[tuple[rec.TraceRow, sf.FactMeta]],
    new_edges: list[tuple[str, rec.EdgeRow]],
    path: str,
    source_id: str,
) -> None:
    """A forgotten fact is still in its note: index it as forgotten (a fresh
    index gets it back that way), or keep it so with its new anchor."""
    trace.status, trace.reason = sf.FORGOTTEN, reason
    if current is None:
        new_facts.append((trace, meta))
        new_edges.append((d.id, rec.EdgeRow(
            kind=sf.DERIVED_FROM, target_name=path, target_path=path, target_id=source_id,
            anchor=d.anchor, line=d.line_start,
        )))
    elif current[0].status == sf.ACTIVE:
        sf.forget(con, d.id, source_id, reason)  # live in an index that missed the forget
    else:
        sf.put_meta(con, meta)


def _add_edges(con: apsw.Connection, edges: list[tuple[str, rec.EdgeRow]]) -> None:
    """Insert edges of many facts in one statement."""
    con.executemany(
        "INSERT INTO edges (source_id, kind, target_name, target_key, target_path, target_id, "
        "anchor, display, prop, line, ambiguous) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        [
            (source, e.kind, e.target_name, e.target_key, e.target_path, e.target_id,
             e.anchor, e.display, e.prop, e.line, int(e.ambiguous))
            for source, e in edges
        ],
    )


def _move_edges(con: apsw.Connection, d: FactDraft) -> None:
    """A fact moved within its note: its edges carry the new line and anchor."""
    con.execute(
        "UPDATE edges SET line = ? WHERE source_id = ? AND kind = ?", (d.line_start, d.id, sf.LINK)
    )
    con.execute(
        "UPDATE edges SET line = ?, anchor = ? WHERE source_id = ? AND kind = ?",
        (d.line_start, d.anchor, d.id, sf.DERIVED_FROM),
    )


class FactLinks:
    """Link resolution for fact edges, built lazily from the files table."""

    def __init__(self, con: apsw.Connection) -> None:
        self.con = con
        self._files: dict[str, str | None] | None = None
        self._resolver: LinkResolver | None = None

    def _load(self) -> None:
        self._files = {r[0]: r[1] for r in self.con.execute("SELECT path, trace_id FROM files")}
        self._resolver = LinkResolver(self._files)

    def resolve(self, target: str, source_path: str) -> tuple[str | None, str | None, bool]:
        """(path, trace id, ambiguous) for a link target written in ``source_path``."""
        if self._resolver is None:
            self._load()
        assert self._resolver is not None and self._files is not None
        hit = self._resolver.resolve(target, source_path)
        return hit.path, (self._files.get(hit.path) if hit.path else None), hit.ambiguous

    def edges(self, d: FactDraft, source_path: str) -> list[rec.EdgeRow]:
        """The link edges of one fact, resolved like note links."""
        out = []
        for link in d.links:
            path, trace_id, ambiguous = self.resolve(link.target, source_path)
            out.append(rec.EdgeRow(
                kind=sf.LINK, target_name=link.target, target_key=link_key(link.target) if link.target else "",
                target_path=path, target_id=trace_id, anchor=link.subpath, display=link.display,
                line=link.line, ambiguous=ambiguous,
            ))
        return out
