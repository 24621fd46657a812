"""memvault's own export (``json`` or ``jsonl``, :mod:`..records`) back in.

Into an empty vault this is a restore: memory notes are written with their
ids, paths, times, strength and front-matter (through the mirror), memory
sources and session notes are written back as they were (their facts come
back from them with the same ids), and what ``state.db`` held (versions,
forgotten memories, recall statistics, fact history, import keys) is put
back and applied to the index, and so are merges, flagged contradictions,
the consolidation log (``consolidate --undo`` works after the restore),
forgotten facts (retired before their sources are extracted), write
conflicts (with their conflict copies) and the llm's verdicts. Exporting
again gives the same records.

Into a vault that has some of it (a new device whose sync tool brought the
notes first): a memory whose id exists is updated as a new version when the
export says something else (reason "changed at the source (memvault)"),
else skipped, and its earlier versions come in either way; a note already
at a source's path is left as it is, and the facts it gives still take the
export's forgets (a fact forgotten there is forgotten here) and history;
durable rows already present are kept.

An export is hostile input: every path passes the write gate as the kind it
is, and every text written new is redacted (:mod:`.export_texts`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.store.consolidation import links
from memvault.store.db import records as rec
from memvault.store.db.connection import write_transaction
from memvault.store.flows import keys as ik
from memvault.store.flows import records as rx
from memvault.store.flows.importers import Entry, MemoryItem, Progress
from memvault.store.flows.importers.export_texts import ExportTexts
from memvault.store.flows.importers.stream import ImportFormatError, members, sniff
from memvault.store.flows.memories import import_memory
from memvault.store.index.classify import memory_key
from memvault.vault_io import json_input
from memvault.vault_io.gate import Kind

if TYPE_CHECKING:
    from memvault.store.flows.sink import ImportSink


def read(path: Path, progress: Progress | None = None) -> Iterator[Entry]:
    """Entries for every record of an export, then one that applies the state."""
    found = members(path, lambda rel: rel.endswith((".json", ".jsonl")))
    if len(found) != 1:
        raise ImportFormatError(f"{path}: expected one memvault export file (.json or .jsonl), found {len(found)}")
    member = found[0]
    with member.opener() as fh:
        data = fh.read()
    sniff(data[:64], member.name, "a memvault export")
    text = data.decode("utf-8-sig", "replace")
    records = _jsonl(text, member.name) if _is_jsonl(text) else _document(text, member.name)
    head = next(records)
    embeddings: list[tuple[str, bytes, bytes]] = []
    n = 0
    for kind, record in records:
        n += 1
        ref = f"{member.name} {kind} {record.get('id') or record.get('key') or n}"
        yield Entry.one(ref, _Record, kind, record, head, embeddings)
    yield Entry(f"{member.name} state", lambda: [_Finish(head, embeddings)])
    if progress is not None:
        progress(1, 1)


def _is_jsonl(text: str) -> bool:
    first = text.lstrip().split("\n", 1)[0]
    try:
        return bool(json_input.loads(first).get("record") == "header")
    except (ValueError, AttributeError):
        return False


def _check(head: Any, name: str) -> dict[str, Any]:
    if not isinstance(head, dict) or head.get("format") != rx.FORMAT:
        raise ImportFormatError(f"{name} is not a memvault export (no \"format\": \"{rx.FORMAT}\")")
    if int(head.get("version", 0)) > rx.VERSION:
        raise ImportFormatError(f"{name} was written by a newer memvault (export version {head['version']})")
    return head


def _document(text: str, name: str) -> Iterator[Any]:
    try:
        doc = json_input.loads(text)
    except ValueError as exc:
        raise ImportFormatError(f"{name} is not valid JSON ({exc})") from None
    yield _check(doc, name)
    for kind in rx.KINDS:
        for record in doc.get(kind) or []:
            yield kind, record


def _jsonl(text: str, name: str) -> Iterator[Any]:
    lines = iter(enumerate(text.splitlines(), 1))
    _, first = next(lines)
    try:
        head = json_input.loads(first)
    except ValueError as exc:
        raise ImportFormatError(f"{name} line 1 is not JSON ({exc})") from None
    head.pop("record", None)
    yield _check(head, name)
    for n, line in lines:
        if not line.strip():
            continue
        try:
            record = json_input.loads(line)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(f"{name} line {n} is not JSON ({exc.msg})") from None
        yield record.pop("record", None), record


@dataclass
class _Record:
    """One exported record; :meth:`restore` returns the action to count (None: not an item)."""

    kind: str
    data: dict[str, Any]
    head: dict[str, Any]
    embeddings: list[tuple[str, bytes, bytes]]

    def restore(self, sink: "ImportSink") -> str | None:
        self._keep_vectors()
        # What this record writes is redacted on the way in (an export is hostile input).
        self.texts = ExportTexts()
        try:
            return getattr(self, f"_{self.kind}", self._unknown)(sink)
        finally:
            sink.report.redacted += self.texts.redacted
            sink.report.warnings += self.texts.warnings

    def _unknown(self, sink: "ImportSink") -> str | None:
        raise ImportFormatError(f"unknown record kind {self.kind!r}")

    def _keep_vectors(self) -> None:
        emb = self.data.get("embedding")
        if isinstance(emb, dict) and emb.get("model"):
            for chunk in emb.get("chunks") or []:
                self.embeddings.append((emb["model"], bytes.fromhex(chunk["hash"]), base64.b64decode(chunk["vector"])))

    # -- memories ----------------------------------------------------------------

    def _memory(self, sink: "ImportSink") -> str | None:
        m = self.data
        ctx, con = sink.ctx, sink.ctx.con
        if rec.get_trace(con, m["id"]) is not None and not sink.report.dry_run:
            # Known here already (its note came first, by the sync tool): its
            # earlier versions and recall statistics still come in, beside
            # what this vault has; the note decides whether it is live.
            with write_transaction(con):
                self._versions(con, m)
                _put_recall(con, m["id"], m.get("recall"), replace=False)
        if rec.get_trace(con, m["id"]) is not None or sink.report.dry_run:
            item = MemoryItem(source="memvault", key=m["id"], content=m["content"], type=m["type"], tags=m["tags"],
                              scope=m["scope"], id=m["id"])
            if m["status"] != "active" and rec.get_trace(con, m["id"]) is None:
                return "imported"  # dry run
            outcome = import_memory(ctx, sink.memories, item, dry_run=sink.report.dry_run, keyed=False)
            self.texts.redacted += outcome.redacted if outcome.action != "skipped" else 0
            return outcome.action
        # The trace's redactions are counted unless the note's own bytes are
        # written instead (they hold the same texts: each secret counts once).
        traced = ExportTexts()
        trace = self._trace(m, traced)
        with write_transaction(con):
            self._durable_rows(con, m, trace, ctx.settings.memory_folder)
        path = self._path(m.get("path"), ctx.settings.memory_folder) if m["status"] == "active" else None
        path = self.texts.path(path) if path else None
        if path and not ctx.gate.allows(path, Kind.MEMORY):
            sink.report.warnings.append(f"memory {m['id']}: {path} is not a memory note's place "
                                        f"({ctx.settings.memory_folder}/<type>/NAME.md); written under a new name")
            path = None
        if m["status"] == "active" and isinstance(m.get("note"), str) and path and not (ctx.root / path).exists():
            # The note's own bytes: what a consolidation run logged of
            # them (for its undo) still matches after the restore.
            sink.will_write(path)
            if ctx.gate.create(path, self.texts.text(m["note"]).encode("utf-8", "surrogateescape"), Kind.MEMORY):
                return "imported"
            path = None  # a note made there meanwhile keeps its bytes: the memory gets a name of its own
        self.texts.redacted += traced.redacted
        self.texts.warnings += traced.warnings
        if m["status"] == "active":
            sink.memories.create(trace, path)
        return "imported"

    @staticmethod
    def _trace(m: dict[str, Any], texts: ExportTexts) -> rec.TraceRow:
        """The new memory's trace, its texts redacted and its links checked (by ``texts``)."""
        what = f"memory {m['id']}"
        content = texts.text(m["content"] or "")
        tags = texts.names(list(m["tags"]), what)
        key = texts.key(m.get("key"), what)
        return rec.TraceRow(
            id=m["id"], kind="memory", type=m["type"], title=content.splitlines()[0][:80] if content else "",
            content=content, tags=tags,
            metadata={"frontmatter": texts.tree(dict(m.get("extra") or {})), "aliases": [],
                      "related": texts.related(m.get("related") or [], what), "fm_tags": list(tags),
                      "supersedes": m.get("supersedes"), **({"key": key} if isinstance(key, str) and key else {})},
            source=m.get("source"), scope=texts.text(m["scope"]), strength=m.get("strength"), created=m["created"],
            updated=m["updated"], content_key=memory_key(m["type"], m["scope"], content),
        )

    def _versions(self, con: Any, m: dict[str, Any]) -> None:
        """The memory's earlier versions into the durable state (a version
        already there, or a number this vault gave another version, is kept),
        redacted: the history log carries them into the vault."""
        for v in m.get("versions") or []:
            con.execute(
                "INSERT OR IGNORE INTO state.memory_versions (id, memory_id, version, trace, reason, superseded_at) "
                "VALUES (?,?,?,?,?,?)",
                (v["id"], m["id"], v["version"],
                 json.dumps(self.texts.trace(v["trace"]), ensure_ascii=False, sort_keys=True),
                 self.texts.optional(v.get("reason")), v["superseded_at"]),
            )

    def _durable_rows(self, con: Any, m: dict[str, Any], trace: rec.TraceRow, folder: str) -> None:
        self._versions(con, m)
        if m["status"] != "active":  # forgotten, or merged away (its merge record follows)
            forgotten = m.get("forgotten") or {}
            snapshot = rec.TraceRow(**{**trace.__dict__, "status": "deleted",
                                       "reason": self.texts.optional(forgotten.get("reason"))})
            snapshot.content_key = None
            back = self._path(forgotten.get("from"), folder)
            if back:  # where `restore` puts its note back (a place of this vault's memory folder only)
                snapshot.metadata = {**snapshot.metadata, "trashed_from": back}
            con.execute(
                "INSERT OR IGNORE INTO state.forgotten (memory_id, reason, at, trace) VALUES (?,?,?,?)",
                (m["id"], snapshot.reason, forgotten.get("at") or rec.now_iso(), rec.trace_json(snapshot)),
            )
        _put_recall(con, m["id"], m.get("recall"))

    def _path(self, path: str | None, folder: str) -> str | None:
        """The note's path in this vault (its memory folder may be named otherwise)."""
        src = str(self.head.get("memory_folder") or "Memory").strip("/")
        if not isinstance(path, str) or not path.startswith(src + "/") or ".." in path.split("/"):
            return None
        return f"{folder}/{path[len(src) + 1:]}"

    # -- sources, facts and the rest ----------------------------------------------------

    def _source(self, sink: "ImportSink") -> str | None:
        s = self.data
        rel = self.texts.path(str(s["path"]))
        sink.ctx.gate.check(rel, Kind.NOTE)  # a memory source or session note is a visible note
        target = sink.ctx.root / rel
        if s.get("kind") == "session":
            sink.fact_keep.setdefault(str(s["id"]), set())
        if target.exists():
            same = target.read_bytes().decode("utf-8", "replace") == s["text"]
            if not same:
                sink.report.warnings.append(f"{rel} is already in the vault with other text; left as it is")
            return "skipped"
        text = self.texts.text(s["text"])
        if not sink.report.dry_run:
            sink.will_write(rel)
            if not sink.ctx.gate.create(rel, text.encode("utf-8"), Kind.NOTE):
                sink.report.warnings.append(f"{rel} was made in the vault meanwhile; left as it is")
                return "skipped"
        return "imported"

    def _fact(self, sink: "ImportSink") -> str | None:
        if str(self.data["source_id"]) in sink.fact_keep:
            sink.fact_keep[str(self.data["source_id"])].add(str(self.data["id"]))
        if not sink.report.dry_run:
            with write_transaction(sink.ctx.con):
                _put_recall(sink.ctx.con, self.data["id"], self.data.get("recall"), replace=False)
        return None  # facts come back from their sources

    def _fact_history(self, sink: "ImportSink") -> str | None:
        h, texts = self.data, self.texts
        anchor = {**h["anchor"], **{k: texts.optional(h["anchor"].get(k)) for k in ("context", "heading")
                                    if k in h["anchor"]}} if isinstance(h["anchor"], dict) else h["anchor"]
        if not sink.report.dry_run:
            with write_transaction(sink.ctx.con):
                sink.ctx.con.execute(
                    "INSERT OR IGNORE INTO state.fact_history (fact_id, source_id, trace, anchor, reason, replaced_by, "
                    "retired_at) VALUES (?,?,?,?,?,?,?)",
                    (h["id"], h["source_id"], json.dumps(texts.trace(h["trace"]), ensure_ascii=False, sort_keys=True),
                     json.dumps(anchor, ensure_ascii=False), texts.optional(h["reason"]), h.get("replaced_by"),
                     h["retired_at"]),
                )
                _put_recall(sink.ctx.con, h["id"], h.get("recall"), replace=False)
        return None

    def _edge(self, sink: "ImportSink") -> str | None:
        return None  # edges come back from the notes and the state

    # -- what only state.db knows: put back as it was (into an empty vault; rows already there are kept) --

    def _state_row(self, sink: "ImportSink", table: str, columns: tuple[str, ...],
                   json_columns: tuple[str, ...] = ()) -> None:
        if not sink.report.dry_run:
            # A reason or a why is text the history log carries into the vault: redacted.
            data = {**self.data, **{c: self.texts.optional(self.data.get(c)) for c in _TEXT_COLUMNS if c in columns}}
            with write_transaction(sink.ctx.con):
                _insert(sink.ctx.con, table, data, columns, json_columns)

    def _fact_forget(self, sink: "ImportSink") -> str | None:
        # Before the sources are extracted (at the end): the fact stays retired.
        self.data = {**self.data, "fact_id": self.data.get("id")}
        self._state_row(sink, "fact_forgets", ("fact_id", "source_id", "reason", "at"))
        return None

    def _merge(self, sink: "ImportSink") -> str | None:
        self._state_row(sink, "merges", ("memory_id", "survivor_id", "run_id", "old_path", "old_key", "at"))
        return None

    def _contradiction(self, sink: "ImportSink") -> str | None:
        self._state_row(sink, "contradictions",
                        ("id", "older_id", "newer_id", "kind", "reason", "run_id", "status", "created"))
        return None

    def _link(self, sink: "ImportSink") -> str | None:
        self._state_row(sink, "memory_links", ("source_id", "kind", "target_id", "run_id", "created"))
        return None

    def _verdict(self, sink: "ImportSink") -> str | None:
        self._state_row(sink, "contradiction_verdicts", ("pair", "verdict", "why", "model", "at"))
        return None

    def _consolidation(self, sink: "ImportSink") -> str | None:
        if sink.report.dry_run:
            return None
        # Undo data and details hold texts (a merge's originals, its why) that
        # the history log carries into the vault: redacted like the memories'
        # own texts, so an undo restores what the import wrote.
        run = {**self.data, "summary": self.texts.json_tree(self.data.get("summary"))}
        with write_transaction(sink.ctx.con):
            _insert(sink.ctx.con, "consolidation_runs", run,
                    ("id", "started", "finished", "day", "trigger", "status", "summary"), ("summary",))
            for action in run.get("actions") or []:
                row = {**action, "run_id": run["id"], "reason": self.texts.optional(action.get("reason")),
                       "detail": self.texts.json_tree(action.get("detail")),
                       "undo": self.texts.json_tree(action.get("undo"))}
                if row.get("undo") is None:
                    row["undo"] = None
                _insert(sink.ctx.con, "consolidation_actions", row,
                        ("run_id", "seq", "kind", "ids", "reason", "detail", "undo"),
                        ("ids", "detail") + (("undo",) if action.get("undo") is not None else ()))
        return None

    def _conflict(self, sink: "ImportSink") -> str | None:
        c = self.data
        if sink.report.dry_run:
            return None
        con, root = sink.ctx.con, sink.ctx.root
        rel = self.texts.path(c["conflict_path"]) if isinstance(c.get("conflict_path"), str) else c.get("conflict_path")
        if rel is not None:
            # A conflict copy goes beside its note, and its note is a visible note.
            sink.ctx.gate.check(str(c["path"]), Kind.NOTE)
            sink.ctx.gate.check(str(rel), Kind.CONFLICT, near=str(c["path"]))
        if rel and isinstance(c.get("text"), str) and not (root / rel).exists():
            sink.will_write(rel)
            text = self.texts.text(c["text"])
            sink.ctx.gate.create(rel, text.encode("utf-8", "surrogateescape"), Kind.CONFLICT, near=str(c["path"]))
        with write_transaction(con):
            if con.execute("SELECT 1 FROM state.conflicts WHERE trace_id = ? AND conflict_path IS ? AND created = ?",
                           (c["trace_id"], rel, c["created"])).fetchone() is None:
                con.execute("INSERT INTO state.conflicts (trace_id, path, conflict_path, kind, detail, created) "
                            "VALUES (?,?,?,?,?,?)",
                            (c["trace_id"], c["path"], rel, c["kind"], c["detail"], c["created"]))
        return None

    def _import(self, sink: "ImportSink") -> str | None:
        if not sink.report.dry_run:
            d = self.data
            with write_transaction(sink.ctx.con):
                ik.insert_key(sink.ctx.con, ik.ImportKey(
                    d["source"], d["key"], d["target_id"], d["hash"], d.get("path"), d.get("detail") or {},
                    d.get("created") or rec.now_iso(), d.get("updated") or rec.now_iso()))
        return None


#: The columns of durable rows that hold a person's or a model's words.
_TEXT_COLUMNS = ("reason", "why")


def _put_recall(con: Any, trace_id: str, recall: dict[str, Any] | None, *, replace: bool = True) -> None:
    if not recall:
        return
    verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
    con.execute(
        f"{verb} INTO state.recall (trace_id, retrieval_count, last_access, strength, decayed_at) VALUES (?,?,?,?,?)",
        (trace_id, recall.get("retrieval_count") or 0, recall.get("last_access"), recall.get("strength"),
         recall.get("decayed_at")),
    )


def _insert(con: Any, table: str, record: dict[str, Any], columns: tuple[str, ...], json_columns: tuple[str, ...] = ()) -> None:
    """One durable row from an export record; a row already there is kept."""
    values = [json.dumps(record.get(c), ensure_ascii=False, sort_keys=True) if c in json_columns else record.get(c)
              for c in columns]
    con.execute(f"INSERT OR IGNORE INTO state.{table} ({', '.join(columns)}) VALUES ({','.join('?' * len(columns))})",
                values)


@dataclass
class _Finish:
    """The last entry: index what was written, then apply the durable state to it."""

    head: dict[str, Any]
    embeddings: list[tuple[str, bytes, bytes]]

    def restore(self, sink: "ImportSink") -> str | None:
        if sink.report.dry_run:
            return None
        from memvault.store.index.rebuild import apply_state

        try:
            sink.finish()
        finally:
            sink.fact_keep.clear()
        apply_state(sink.ctx.con)
        links.apply_durable(sink.ctx.con)  # merged-away memories, contradiction and derived_from edges
        if self.embeddings:
            from memvault.store.embedding import vectors as vec

            cache = vec.open_cache(sink.ctx.data_dir)
            if cache is not None:
                try:
                    by_model: dict[str, list[tuple[bytes, bytes]]] = {}
                    for model, digest, vector in self.embeddings:
                        by_model.setdefault(model, []).append((digest, vector))
                    for model, items in by_model.items():
                        vec.put_vectors(cache, model, items)
                finally:
                    cache.close()
        return None
