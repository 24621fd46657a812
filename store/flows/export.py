"""``memvault export``: memories out, in memvault's own formats and others.

- ``json``: one document ``{"format": "memvault-export", "version", ...header,
  "memory": [...], "source": [...], "fact": [...], "fact_history": [...],
  "edge": [...], "import": [...], ...}`` (every kind in :mod:`.records`), written
  as a stream (50,000 memories never sit in memory at once);
- ``jsonl``: the same, one record a line, each with its ``record`` kind,
  after a header line;
- ``markdown``/``obsidian``: a folder, one note per memory under its type,
  in the memory-note format, with a ``## Related`` section of
  ``[[wikilinks]]`` to related memories (and for ``obsidian`` the tags as
  ``#tags`` in the body too);
- ``csv``: one row per memory;
- ``sqlite``: a backup of the databases (:mod:`.backup`).

``json``/``jsonl`` hold forgotten and merged-away memories always (they are
lossless: see :mod:`.records` for every kind of record);
the other formats only with ``include_deleted``. ``types`` and ``scope``
narrow the memories (``types`` the facts too).
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from memvault.store.context import StoreContext
from memvault.store.db import records as rec
from memvault.store.flows import records as rx
from memvault.store.flows.csv_cells import guard
from memvault.vault_io.atomic import atomic_stream, free_path
from memvault.vault_io.errors import MemvaultError, UsageError
from memvault.vault_io.gate import Gate, Kind, export_target
from memvault.vault_io.memory_note import MemoryDoc, memory_filename, render_memory
from memvault.vault_io.secrets import redact_tree

FORMATS = ("json", "jsonl", "markdown", "obsidian", "csv", "sqlite")
CSV_COLUMNS = ("id", "type", "status", "content", "scope", "tags", "strength", "created", "updated", "source", "path",
               "retrieval_count", "last_access", "versions")


@dataclass
class ExportOptions:
    """What to export and where."""

    format: str = "json"
    output: Path | None = None  # None: stdout (json, jsonl, csv)
    types: Sequence[str] = ()
    scope: str | None = None
    include_deleted: bool = False
    embeddings: bool = False


@dataclass
class ExportReport:
    """What an export wrote."""

    format: str
    output: str
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"format": self.format, "output": self.output, "counts": dict(self.counts),
                "seconds": round(self.seconds, 3)}


def header(ctx: StoreContext) -> dict[str, Any]:
    """The document's header: format, version, when, which vault and model."""
    from memvault.store.embedding.model import resolve_model

    spec = resolve_model(ctx.settings.embedding.model)
    return {"format": rx.FORMAT, "version": rx.VERSION, "exported_at": rec.now_iso(), "vault": ctx.name,
            "memory_folder": ctx.settings.memory_folder, "embedding_model": spec.key if spec else None}


def document_records(ctx: StoreContext, options: ExportOptions) -> Iterator[tuple[str, dict[str, Any]]]:
    """(kind, record) for the whole document, kinds in :data:`records.KINDS` order."""
    con = ctx.read_con()
    cache = model = None
    if options.embeddings:
        from memvault.store.embedding import vectors as vec

        cache = vec.open_cache(ctx.data_dir, create=False)
        model = header(ctx)["embedding_model"]
    try:
        for m in rx.memories(con, types=options.types, scope=options.scope, root=ctx.root):
            if options.embeddings:
                m["embedding"] = rx.embeddings_of(con, cache, model, m["id"])
            yield "memory", m
        for s in rx.sources(con, ctx.root):
            yield "source", s
        for f in rx.facts(con):
            if options.types and f["type"] not in options.types:
                continue
            if options.embeddings:
                f["embedding"] = rx.embeddings_of(con, cache, model, f["id"])
            yield "fact", f
        rest = {"fact_history": rx.fact_history(con), "fact_forget": rx.fact_forgets(con), "edge": rx.edges(con),
                "import": rx.imports(con), "merge": rx.merges(con), "contradiction": rx.contradictions(con),
                "link": rx.links(con), "consolidation": rx.consolidation_runs(con),
                "conflict": rx.conflicts(con, ctx.root), "verdict": rx.verdicts(con)}
        for kind in rx.KINDS[3:]:  # in the document's order (a generator each: nothing runs before its turn)
            for r in rest[kind]:
                yield kind, r
    finally:
        if cache is not None:
            cache.close()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def write_json(out: IO[str], head: dict[str, Any], records: Iterator[tuple[str, dict[str, Any]]],
               counts: dict[str, int]) -> None:
    """The whole document as one JSON object, written record by record
    (a list per record kind, every kind present)."""
    out.write("{\n")
    for key, value in head.items():
        out.write(f"  {_dumps(key)}: {_dumps(value)},\n")
    groups = itertools.groupby(records, key=lambda kr: kr[0])
    group = next(groups, None)
    for i, kind in enumerate(rx.KINDS):
        out.write(f"  {_dumps(kind)}: [")
        n = 0
        if group is not None and group[0] == kind:
            for _, record in group[1]:
                out.write(("," if n else "") + "\n    " + _dumps(record))
                n += 1
            group = next(groups, None)
        counts[kind] = n
        out.write(("\n  " if n else "") + "]" + ("," if i < len(rx.KINDS) - 1 else "") + "\n")
    out.write("}\n")


def write_jsonl(out: IO[str], head: dict[str, Any], records: Iterator[tuple[str, dict[str, Any]]],
                counts: dict[str, int]) -> None:
    """A header line, then one record a line."""
    out.write(_dumps({"record": "header", **head}) + "\n")
    for kind, record in records:
        out.write(_dumps({"record": kind, **record}) + "\n")
        counts[kind] = counts.get(kind, 0) + 1


@contextlib.contextmanager
def _output_file(ctx: StoreContext, output: Path | None) -> Iterator[IO[str]]:
    """stdout, or a file written whole or not at all: the export goes to a
    temporary file beside ``output`` that replaces it only once complete, so
    a failure (a full disk, a bad record) never leaves half an export. A
    file inside the vault is written through its write gate."""
    if output is None or str(output) == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    if output.is_dir():
        raise UsageError(f"--output {output} is a folder: this format writes one file, give its name")
    rel = ctx.gate.vault_rel(output)
    try:
        with ctx.gate.stream(rel, Kind.EXPORT) if rel is not None else atomic_stream(output) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
            yield text
            text.flush()
            text.detach()
    except OSError as exc:
        raise cannot_write(output, exc) from None


def cannot_write(path: Path, exc: OSError) -> MemvaultError:
    """One line naming the output that cannot be written (runtime: exit 1)."""
    return MemvaultError(f"cannot write the export to {path}: {exc.strerror or exc}")


def export(ctx: StoreContext, options: ExportOptions) -> ExportReport:
    """Write the export ``options`` ask for."""
    import time

    started = time.monotonic()
    fmt = options.format
    if fmt not in FORMATS:
        raise UsageError(f"unknown export format {fmt!r}: use one of {', '.join(FORMATS)}")
    report = ExportReport(fmt, str(options.output) if options.output else "-")
    ctx.read_con()  # no index yet: one line before anything (a header on stdout) is written
    if options.output is not None and str(options.output) != "-":
        export_target(ctx.root, options.output)  # into the vault: never a hidden part of it
    if fmt == "sqlite":
        from memvault.store.flows.backup import backup

        try:
            path = backup(ctx, options.output)
        except OSError as exc:
            raise cannot_write(options.output or Path.cwd(), exc) from None
        report.output, report.counts = str(path), {"files": 1}
    elif fmt in ("json", "jsonl"):
        with _output_file(ctx, options.output) as out:
            writer = write_json if fmt == "json" else write_jsonl
            writer(out, header(ctx), document_records(ctx, options), report.counts)
    elif fmt == "csv":
        with _output_file(ctx, options.output) as out:
            report.counts["memory"] = write_csv(out, _memories(ctx, options))
    else:
        if options.output is None:
            raise UsageError(f"--output FOLDER is required for the {fmt} format")
        if options.output.exists() and not options.output.is_dir():
            raise UsageError(f"--output {options.output} is a file: the {fmt} format writes a folder of notes")
        try:
            report.counts["memory"] = write_notes(options.output, _memories(ctx, options),
                                                  obsidian=fmt == "obsidian", links=memory_links(ctx), gate=ctx.gate)
        except OSError as exc:  # name the note that failed, not only the folder
            raise cannot_write(Path(exc.filename) if isinstance(exc.filename, str) else options.output, exc) from None
    report.seconds = time.monotonic() - started
    return report


def _memories(ctx: StoreContext, options: ExportOptions) -> Iterator[dict[str, Any]]:
    """Memory records for the formats made to be shared or read (csv,
    markdown, obsidian), redacted: a memory's text is indexed redacted, but
    a person's memory note may hold a credential in a property or its file
    name. (``json``/``jsonl`` are lossless: they keep the notes as typed.)"""
    for m in rx.memories(ctx.read_con(), types=options.types, scope=options.scope,
                         include_deleted=options.include_deleted):
        yield redact_tree(m)


def write_csv(out: IO[str], memories: Iterator[dict[str, Any]]) -> int:
    """One row per memory; tags space separated; returns the row count.
    Every text cell is guarded against spreadsheet formulas
    (:mod:`.csv_cells`), and every cell is quoted (OWASP's advice both)."""
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)
    writer.writerow(CSV_COLUMNS)
    n = 0
    for m in memories:
        recall = m["recall"] or {}
        row = [
            m["id"], m["type"], m["status"], m["content"], m["scope"], " ".join(m["tags"]), m["strength"],
            m["created"], m["updated"], m["source"], m["path"], recall.get("retrieval_count", 0),
            recall.get("last_access"), len(m["versions"]),
        ]
        writer.writerow([guard(cell) if isinstance(cell, str) else cell for cell in row])
        n += 1
    return n


def memory_links(ctx: StoreContext) -> dict[str, list[str]]:
    """Memory id -> ids of the memories its note links to."""
    out: dict[str, list[str]] = {}
    for e in rx.edges(ctx.read_con()):
        if e["kind"] in ("link", "related") and e["target_id"]:
            out.setdefault(e["source_id"], []).append(e["target_id"])
    return out


def write_notes(folder: Path, memories: Iterator[dict[str, Any]], *, obsidian: bool,
                links: dict[str, list[str]] | None = None, gate: Gate | None = None) -> int:
    """One note per memory under ``folder/<type>/`` (forgotten ones under
    ``folder/forgotten/<type>/``), each with a Related section of
    ``[[wikilinks]]`` to the memories it links to or names as related; a
    note inside the vault is written through its write ``gate``."""
    records = list(memories)
    stems: dict[str, str] = {}
    for m in records:
        name = Path(m["path"]).name if m["path"] else memory_filename(m["content"], m["id"][2:10])
        stems[m["id"]] = name[:-3]
    links = links or {}
    if gate is None or gate.vault_rel(folder / "x") is None:
        folder.mkdir(parents=True, exist_ok=True)
    for m in records:
        related = list(dict.fromkeys([*m["related"], *(stems[i] for i in links.get(m["id"], []) if i in stems)]))
        content = m["content"]
        if obsidian and m["tags"]:
            content += "\n\n" + " ".join(f"#{t}" for t in m["tags"])
        extra = dict(m["extra"])
        if m["status"] != "active":  # forgotten, or merged into another
            extra["forgotten"] = (m["forgotten"] or {}).get("reason") or "forgotten"
        doc = MemoryDoc(id=m["id"], type=m["type"], content=content, scope=m["scope"], tags=m["tags"],
                        strength=m["strength"], created=m["created"], updated=m["updated"], source=m["source"] or "",
                        supersedes=m["supersedes"], related=related, extra=extra, key=m.get("key"))
        sub = folder / ("forgotten" if m["status"] != "active" else "") / m["type"]
        target = free_path(sub / f"{stems[m['id']]}.md")
        rel = gate.vault_rel(target) if gate is not None else None
        if gate is not None and rel is not None:
            gate.write(rel, render_memory(doc).encode("utf-8"), Kind.EXPORT)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(render_memory(doc), "utf-8")
    return len(records)
