"""Contradictions at write time: a new claim against the live claims it may replace.

``add`` (and MCP ``remember``) and ``update`` run the rule consolidation
flags contradictions with (:func:`.rules.contradiction`) against the new
claim's rivals, in the same scope:

* its nearest live claims by cosine (the cosines ``add`` computes anyway
  for ``similar_to``: :func:`.dedup.find_similar`), at most
  :data:`NEAREST`, from the contradiction threshold up;
* its rivals by slot, found by words in the index (FTS5, best first, at
  most :data:`BY_WORDS`): the names and content words of its frame, and for
  a naming or a residence the words of that relation ("named", "lives"...),
  so "Moved to Lisbon" meets "Lives in Porto" at any similarity.

The new claim is stored whatever it contradicts (a guess never drops a
write). Each contradiction found is flagged at once in the durable state,
the new claim the newer (:func:`record`): ``context`` then recalls it and
labels the older one possibly outdated, ``conflicts`` lists it, and the next
consolidation does not flag the pair again. The answer names each older
claim (``contradicts: [{id, text, kind}]``) beside ``similar_to``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from memvault.store.consolidation import frames, rules
from memvault.store.consolidation.text import STOP_WORDS, features, fold, word_lists
from memvault.store.index.event_time import parse_stamp

if TYPE_CHECKING:
    import apsw

    from memvault.store.context import StoreContext

#: Most nearest claims by cosine judged.
NEAREST = 12
#: Most claims found by words judged.
BY_WORDS = 24
#: Words that name the relation of a naming or a residence, added to the search for a claim that states one.
_RELATION_WORDS = {"name": ("name", "named", "called"), "live": ("lives", "live", "home", "based", "moved")}


@dataclass(frozen=True)
class Contradicts:
    """A live claim a new one contradicts: the older side of the pair."""

    id: str
    text: str
    kind: str
    reason: str

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form (an item of a write result's ``contradicts``)."""
        return {"id": self.id, "text": self.text, "kind": self.kind}


def find(ctx: "StoreContext", type_: str, scope: str, content: str, cosines: dict[str, float],
         exclude: str | None = None) -> list[Contradicts]:
    """The live claims of ``scope`` that ``content`` (of ``type_``)
    contradicts (module docstring); ``cosines``: the new text's cosine with
    each memory of its block (empty without vectors); ``exclude``: the
    memory being updated."""
    if type_ not in rules.CLAIM_TYPES:
        return []
    threshold = rules.Thresholds().contradiction
    nearest = [tid for tid, sim in sorted(cosines.items(), key=lambda t: (-t[1], t[0])) if sim >= threshold]
    wanted = dict.fromkeys(nearest[:NEAREST])
    wanted.update(dict.fromkeys(_by_words(ctx.con, scope, content, BY_WORDS)))
    wanted.pop(exclude or "", None)
    if not wanted:
        return []
    now = datetime.now(timezone.utc)
    new = rules.Memo("", type_, scope, content, now, features(content))
    out = []
    for tid, text, t_type, created in _claims(ctx.con, scope, list(wanted)):
        old = rules.Memo(tid, t_type, scope, text, min(parse_stamp(created) or now, now), features(text))
        book = rules.NameBook.of([old.f, new.f])
        found = rules.contradiction(old, new, cosines.get(tid), threshold, book)
        if found is not None:
            out.append(Contradicts(tid, text, found[0], found[1]))
    return out


def record(con: "apsw.Connection", newer: str, found: list[Contradicts]) -> None:
    """Flag each contradiction found at once (``newer`` over the older claim),
    unless the pair was flagged (or dismissed) before."""
    if not found:
        return
    from memvault.store.consolidation import rows as log
    from memvault.store.db.connection import write_transaction

    known = log.known_pairs(con)
    with write_transaction(con):
        for c in found:
            if frozenset((c.id, newer)) not in known:
                log.put_contradiction(con, c.id, newer, c.kind, f"{c.reason}; found when {newer} was written", None)


def _claims(con: "apsw.Connection", scope: str, ids: list[str]) -> list[tuple[str, str, str, str]]:
    """(id, content, type, created) of those of ``ids`` that are live claims of ``scope``."""
    marks = ",".join("?" * len(ids))
    types = sorted(rules.CLAIM_TYPES)
    return [(r[0], r[1], r[2], r[3]) for r in con.execute(
        f"SELECT id, content, type, created FROM traces WHERE id IN ({marks}) AND kind IN ('memory', 'fact') "
        f"AND status = 'active' AND scope = ? AND type IN ({','.join('?' * len(types))}) ORDER BY id",
        (*ids, scope, *types))]


def _by_words(con: "apsw.Connection", scope: str, content: str, limit: int) -> list[str]:
    """Live claims of ``scope`` that share the words of ``content``'s frame, best first (FTS5 bm25)."""
    terms = _terms(content)
    if not terms:
        return []
    import apsw

    match = " OR ".join('"' + t.replace('"', "") + '"' for t in terms)
    types = sorted(rules.CLAIM_TYPES)
    try:
        return [r[0] for r in con.execute(
            "SELECT t.id FROM traces_fts f JOIN traces t ON t.rowid = f.rowid WHERE traces_fts MATCH ? "
            "AND t.kind IN ('memory', 'fact') AND t.status = 'active' AND t.scope = ? "
            f"AND t.type IN ({','.join('?' * len(types))}) ORDER BY bm25(traces_fts) LIMIT ?",
            (match, scope, *types, limit))]
    except apsw.SQLError:  # a query FTS5 cannot read: no candidates by words (the nearest still count)
        return []


def _terms(content: str) -> list[str]:
    """The words to search a claim's rivals by: its names and content words
    (not stop words), and the words of its relation for a naming or a residence."""
    from memvault.store.consolidation import conflicts

    out: list[str] = []
    for clause in frames.parse(content).clauses:
        out += [w.folded for w in clause.words if w.kind in ("word", "name")]
        out += list(clause.subject.nouns) + sorted(clause.subject.names)
        if clause.verb and clause.verb not in conflicts.LIGHT and clause.verb != "be":
            out.append(clause.lemma)
        if conflicts.naming(clause):
            out += _RELATION_WORDS["name"]
        if conflicts.residence(clause) or clause.verb == "move":
            out += _RELATION_WORDS["live"]
    skip = STOP_WORDS | word_lists()["clause_adverbs"]
    seen = dict.fromkeys(w for w in (fold(x) for x in out) if w and w not in skip and w.isascii() and len(w) > 1)
    return list(seen)[:12]
