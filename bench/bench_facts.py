#!/usr/bin/env python3
"""Facts benchmark: extraction speed, facts/s on a real vault, save-to-searchable.

    python bench/bench_facts.py                  # defaults below
    python bench/bench_facts.py --saves 50

Three measurements, each with a private MEMVAULT_HOME (never the real one):

1. **One long note**: the default extractor on a 5,000-line note made of
   real notes of ../shared/corpora/vaultofknowledge laid end to end (and on
   a synthetic 5,000-line note dense with lists, tasks, tables and block
   ids), median of ``--runs`` runs of ``extract_facts`` (parsing apart).
2. **Whole vault**: a private copy of vaultofknowledge with every note a
   memory source through the config glob (``MEMVAULT_SOURCES="**"``, so no
   note is edited), cold ``indexer().sync()``. Reported: facts, the time of
   extraction alone (all notes, in process, no index), the time the fact
   observer took inside the sync (extract + write + link resolution), and
   facts/s for both; plus the sync time with and without sources.
3. **Save to searchable**: a 200-line source note in that vault; ``--saves``
   times, one line is changed to a new unique word, the file is written,
   ``Indexer.sync_paths([path])`` runs (what the daemon does after its
   debounce) and a keyword search over facts must find the changed fact.
   Reported: median and p95 of write -> found, and of the fact observer's
   part of it. Then the same through a running daemon (``--daemon-saves``
   times; an in-process :class:`DaemonRunner` with its real watchdog
   observer and debounce): write -> found by a read-only connection polled
   every 2 ms, reported beside the debounce (latency - debounce is what the
   daemon adds).

4. **Large edits**: a source note of 3,000 list items under one heading,
   and a ~2,100-line note of real vaultofknowledge notes, each indexed, then
   rewritten with *every* item / sentence edited by one word and
   re-indexed with ``sync_paths`` (the daemon's path). Reported: the
   re-index time, the part spent pairing changed facts with their
   predecessors (``pair_changed``), and how many were paired ("changed in
   source") versus retired and added.

``--only long,vault,edit`` runs some of them (default: all).

Results: a summary on stdout and JSON in bench/out/bench_facts-*.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as C  # noqa: E402


def _timed_observer(indexer: Any, box: list[float]) -> None:
    """Wrap the fact observer of ``indexer`` so its time lands in ``box``."""
    from memvault.store.facts.observer import FactObserver

    for obs in indexer.observers:
        if isinstance(obs, FactObserver):
            inner = obs.notes_changed

            def timed(written, removed, _inner=inner):
                start = time.perf_counter()
                try:
                    return _inner(written, removed)
                finally:
                    box.append(time.perf_counter() - start)

            obs.notes_changed = timed  # type: ignore[method-assign]


def long_note_texts(corpus: Path, lines: int) -> tuple[str, str]:
    """(real, synthetic) note texts of at least ``lines`` lines."""
    parts: list[str] = []
    count = 0
    for path in sorted(corpus.rglob("*.md")):
        if any(p.startswith(".") for p in path.relative_to(corpus).parts):
            continue
        text = path.read_text("utf-8", "replace").replace("\r\n", "\n")
        if text.startswith("---\n"):
            end = text.find("\n---", 4)
            text = text[end + 4 :] if end > 0 else text
        parts.append(f"\n# {path.stem}\n{text}\n")
        count += text.count("\n") + 3
        if count >= lines:
            break
    real = "---\nmemory: source\n---\n" + "".join(parts)
    synth = ["---\nmemory: source\n---\n"]
    i = 0
    while sum(s.count("\n") for s in synth) < lines:
        synth.append(
            f"## Section {i}\n- Item number {i} about things\n  - Nested detail {i} with words\n"
            f"- [ ] Task {i} to do soon 📅 2026-01-31\n\nA sentence {i} here. Another one {i} follows! ^b{i}\n\n"
            f"| Key | Value |\n|---|---|\n| Row {i} | Value {i} |\n\n"
        )
        i += 1
    return real, "".join(synth)


def bench_long_note(corpus: Path, runs: int) -> dict[str, Any]:
    from memvault.vault_io.facts import extract_facts
    from memvault.vault_io.parser import parse_note

    out: dict[str, Any] = {}
    for name, text in zip(("real", "synthetic"), long_note_texts(corpus, 5000)):
        data = text.encode()
        t = time.perf_counter()
        note = parse_note("Long.md", data)
        parse_s = time.perf_counter() - t
        times = []
        facts = 0
        for _ in range(runs):
            t = time.perf_counter()
            facts = len(extract_facts(note, "n-long").facts)
            times.append(time.perf_counter() - t)
        out[name] = {
            "lines": text.count("\n") + 1, "bytes": len(data), "facts": facts, "parse_s": parse_s,
            "extract": C.summarize(times),
        }
    return out


SOURCE_NOTE_LINES = 200


def source_note(i: int) -> str:
    """A 200-line source note; line ``i % 100`` of the list carries the marker word."""
    lines = ["---", "memory: source", "---", "# Bench source note"]
    for k in range(20):
        lines.append(f"## Topic {k}")
        for j in range(4):
            n = k * 4 + j
            word = f"zqmark{i}" if n == i % 80 else f"plain{n}"
            lines.append(f"- Fact number {n} mentions {word} in this note")
        lines.append(f"Sentence about topic {k} goes here. And another sentence for topic {k} too.")
        lines += [f"- [ ] Follow up on topic {k} next week", "", ""]
        lines.append(f"| Topic | Owner |\n|---|---|\n| topic {k} | person {k} |")
    text = "\n".join(lines)
    return text + "\n" * max(0, SOURCE_NOTE_LINES - text.count("\n"))


def bench_daemon_saves(vault: Path, rel: str, saves: int, first: int) -> dict[str, Any]:
    """Save -> searchable through a running daemon (watcher + debounce)."""
    import apsw

    from memvault.daemon.runner import DaemonRunner
    from memvault.store.memory_store import MemoryStore
    from memvault.store.retrieval.keyword import Filters, keyword_search

    runner = DaemonRunner(MemoryStore.open(str(vault)), rescan_interval=0, background=False)
    runner.start()
    latencies: list[float] = []
    try:
        end = time.monotonic() + 300
        while not runner.ready.wait(0.05):
            if runner.error is not None or time.monotonic() > end:
                raise SystemExit(f"daemon did not become ready: {runner.error!r}")
        con = apsw.Connection(str(runner.store.index_path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            for i in range(first, first + saves):
                word = f"zqmark{i}"
                (vault / rel).write_text(source_note(i), "utf-8")
                t = time.perf_counter()
                while not keyword_search(con, word, filters=Filters(kinds=("fact",)), limit=1):
                    if time.perf_counter() - t > 10:
                        raise SystemExit(f"daemon save {i}: the changed fact was not found within 10 s")
                    time.sleep(0.002)
                latencies.append(time.perf_counter() - t)
                time.sleep(0.05)  # saves apart, like a person's
        finally:
            con.close()
    finally:
        runner.stop()
    debounce = runner.debounce
    return {
        "saves": saves, "debounce_ms": debounce * 1000, "latency": C.summarize(latencies),
        "after_debounce": C.summarize([x - debounce for x in latencies]),
    }


def bench_vault(corpus: Path, workdir: Path, saves: int, daemon_saves: int = 0) -> dict[str, Any]:
    from memvault.store.memory_store import MemoryStore
    from memvault.store.retrieval.keyword import Filters, keyword_search
    from memvault.vault_io.facts import extract_facts
    from memvault.vault_io.parser import parse_note

    vault = C.copy_vault(corpus, workdir, "vaultofknowledge")
    notes = C.count_notes(vault)
    result: dict[str, Any] = {"notes": notes}

    # Baseline: the same cold sync with no memory sources.
    C.isolate_env(workdir / "home-plain")
    os.environ["MEMVAULT_EMBEDDING_MODEL"] = "none"
    t = time.perf_counter()
    v = MemoryStore.open(str(vault))
    v.sync()
    v.close()
    result["sync_without_sources_s"] = time.perf_counter() - t

    # Extraction alone, every note, in process.
    datas = []
    for path in vault.rglob("*.md"):
        rel = path.relative_to(vault).as_posix()
        if not any(p.startswith(".") for p in rel.split("/")):
            datas.append((rel, path.read_bytes()))
    parsed = [parse_note(rel, data) for rel, data in datas]
    t = time.perf_counter()
    extracted = sum(len(extract_facts(n, "n-x").facts) for n in parsed)
    extract_s = time.perf_counter() - t
    result["extraction_only"] = {"notes": len(parsed), "facts": extracted, "seconds": extract_s,
                                 "facts_per_s": extracted / extract_s}

    # Cold sync with every note a source.
    C.isolate_env(workdir / "home-sources")
    os.environ["MEMVAULT_EMBEDDING_MODEL"] = "none"
    os.environ["MEMVAULT_SOURCES"] = "**"
    box: list[float] = []
    t = time.perf_counter()
    v = MemoryStore.open(str(vault))
    v.index_on_open = False  # else the first connection syncs, before the observer is timed
    indexer = v.reconciler
    _timed_observer(indexer, box)
    summary = indexer.sync()
    sync_s = time.perf_counter() - t
    facts = int(v.con.execute("SELECT count(*) FROM traces WHERE kind = 'fact' AND status = 'active'").fetchone()[0])
    sources = int(v.con.execute("SELECT count(*) FROM fact_sources").fetchone()[0])
    observer_s = sum(box)
    result["sync_with_sources"] = {
        "seconds": sync_s, "facts": facts, "sources": sources, "observer_s": observer_s,
        "facts_per_s_observer": facts / observer_s if observer_s else None,
        "facts_per_s_end_to_end": facts / sync_s, "warnings": len(summary.warnings),
    }

    # Save to searchable, in process (what the daemon does after its debounce).
    rel = "Bench source note.md"
    path = vault / rel
    path.write_text(source_note(0), "utf-8")
    indexer.sync_paths([rel])
    latencies: list[float] = []
    observer_parts: list[float] = []
    for i in range(1, saves + 1):
        box.clear()
        t = time.perf_counter()
        path.write_text(source_note(i), "utf-8")
        indexer.sync_paths([rel])
        hits = keyword_search(v.con, f"zqmark{i}", filters=Filters(kinds=("fact",)))
        elapsed = time.perf_counter() - t
        if not hits or f"zqmark{i}" not in (hits[0].snippet + hits[0].title):
            raise SystemExit(f"save {i}: the changed fact was not found")
        latencies.append(elapsed)
        observer_parts.append(sum(box))
    v.close()
    if daemon_saves:
        result["daemon_save_to_searchable"] = bench_daemon_saves(vault, rel, daemon_saves, saves + 1)
    v = MemoryStore.open(str(vault))
    versions = int(v.con.execute(
        "SELECT count(*) FROM traces t JOIN facts f ON f.trace_id = t.id JOIN fact_sources s ON s.source_id = f.source_id "
        "WHERE s.path = ? AND t.status = 'superseded'", (rel,)
    ).fetchone()[0])
    v.close()
    result["save_to_searchable"] = {
        "note_lines": SOURCE_NOTE_LINES, "saves": saves, "latency": C.summarize(latencies),
        "observer": C.summarize(observer_parts), "superseded_versions_kept": versions,
    }
    return result


EDIT_ITEMS = 3000
EDIT_REAL_LINES = 2100
_WORDS = (
    "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec "
    "romeo sierra tango uniform victor whiskey xray yankee zulu river stone cloud paper garden window silver "
    "orange market engine forest bridge candle planet rocket summer winter autumn spring"
).split()


def items_note(n: int, edited: bool) -> str:
    """``n`` list items under one heading (the worst case for pairing: every
    old fact is a candidate); ``edited`` changes one word in every item."""
    import random

    rnd = random.Random(7)
    lines = ["---", "memory: source", "---", "# Many items", "## Items"]
    for i in range(n):
        words = [rnd.choice(_WORDS) for _ in range(rnd.randint(5, 12))]
        if edited:
            words[len(words) // 2] = "changed"
        lines.append(f"- Item {i} says " + " ".join(words))
    return "\n".join(lines) + "\n"


def real_note(corpus: Path, lines: int, edited: bool) -> str:
    """Real notes laid end to end (~``lines`` lines); ``edited`` adds a word
    to every sentence and every text line."""
    import re

    text = long_note_texts(corpus, lines)[0]
    if not edited:
        return text
    fm = "---\nmemory: source\n---\n"
    body = text[len(fm):]
    out = []
    fence = False
    for line in body.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
        if fence or not line.strip() or line.lstrip().startswith(("#", "|", "```", "---", "![[")):
            out.append(line)
            continue
        line = re.sub(r"([A-Za-z])([.!?])(\s)", r"\1 indeed\2\3", line)
        out.append(line + " indeed")
    return fm + "\n".join(out)


def bench_large_edit(corpus: Path, workdir: Path) -> dict[str, Any]:
    """Every fact of a big source note edited at once: re-index and pairing time."""
    from memvault.store.facts import reextract as dfacts
    from memvault.store.memory_store import MemoryStore

    out: dict[str, Any] = {}
    cases = {
        f"items{EDIT_ITEMS}": (items_note(EDIT_ITEMS, False), items_note(EDIT_ITEMS, True)),
        f"real{EDIT_REAL_LINES}": (real_note(corpus, EDIT_REAL_LINES, False), real_note(corpus, EDIT_REAL_LINES, True)),
    }
    inner = dfacts.pair_changed
    for name, (before, after) in cases.items():
        root = workdir / f"edit-{name}"
        root.mkdir()
        C.isolate_env(workdir / f"home-edit-{name}")
        os.environ["MEMVAULT_EMBEDDING_MODEL"] = "none"
        path = root / "Big.md"
        path.write_text(before, "utf-8")
        v = MemoryStore.open(str(root))
        try:
            indexer = v.reconciler
            indexer.sync()
            facts_before = int(v.con.execute("SELECT count(*) FROM traces WHERE kind = 'fact'").fetchone()[0])
            box: list[float] = []

            def timed(new, old, _box=box):
                t0 = time.perf_counter()
                try:
                    return inner(new, old)
                finally:
                    _box.append(time.perf_counter() - t0)

            dfacts.pair_changed = timed
            path.write_text(after, "utf-8")
            t = time.perf_counter()
            indexer.sync_paths(["Big.md"])
            seconds = time.perf_counter() - t
            reasons = dict(v.con.execute(
                "SELECT reason, count(*) FROM traces WHERE kind = 'fact' AND status = 'superseded' GROUP BY reason"
            ).fetchall())
            active = int(v.con.execute(
                "SELECT count(*) FROM traces WHERE kind = 'fact' AND status = 'active'").fetchone()[0])
        finally:
            dfacts.pair_changed = inner
            v.close()
        out[name] = {
            "lines": after.count("\n") + 1, "facts": facts_before, "reindex_s": seconds, "pair_changed_s": sum(box),
            "paired": reasons.get("changed in source", 0), "retired": reasons.get("removed from source", 0),
            "active_after": active,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="runs of the long-note extraction")
    ap.add_argument("--saves", type=int, default=30, help="saves in the save-to-searchable loop")
    ap.add_argument("--daemon-saves", type=int, default=20,
                    help="saves through a running daemon (watcher + debounce) after the in-process loop; 0: skip")
    ap.add_argument("--only", default="long,vault,edit", help="comma-separated parts to run: long, vault, edit")
    args = ap.parse_args()
    only = {p.strip() for p in args.only.split(",") if p.strip()}
    if not C.CORPUS.is_dir():
        raise SystemExit(f"corpus missing: {C.CORPUS}")
    workdir = C.mktemp("memvault-bench-facts-")
    C.isolate_env(workdir / "home")
    try:
        data: dict[str, Any] = {"machine": C.machine_info()}
        if "long" in only:
            data["long_note"] = bench_long_note(C.CORPUS, args.runs)
        if "vault" in only:
            data["vault"] = bench_vault(C.CORPUS, workdir, args.saves, args.daemon_saves)
        if "edit" in only:
            data["large_edit"] = bench_large_edit(C.CORPUS, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    out = C.write_json("bench_facts", data)

    if "long_note" in data:
        ln = data["long_note"]
        print("One long note (default extractor, parse excluded):")
        for name in ("real", "synthetic"):
            d = ln[name]
            print(f"  {name:9} {d['lines']} lines, {d['facts']} facts: median {C.ms(d['extract']['median'])}, "
                  f"max {C.ms(d['extract']['max'])} (parse {C.ms(d['parse_s'])})")
    if "vault" in data:
        print_vault(data["vault"])
    if "large_edit" in data:
        print("Every fact of a big source note edited at once (sync_paths):")
        for name, d in data["large_edit"].items():
            print(f"  {name}: {d['lines']} lines, {d['facts']} facts: re-index {d['reindex_s']:.2f}s, "
                  f"pairing {d['pair_changed_s']:.2f}s; {d['paired']} paired, {d['retired']} retired")
    print(f"JSON: {out}")


def print_vault(vt: dict[str, Any]) -> None:
    """The whole-vault and save-to-searchable summary."""
    eo, sw = vt["extraction_only"], vt["sync_with_sources"]
    print(f"vaultofknowledge, {vt['notes']} notes, all memory sources:")
    print(f"  extraction only: {eo['facts']} facts in {eo['seconds']:.2f}s = {eo['facts_per_s']:.0f} facts/s")
    print(f"  cold sync: {sw['seconds']:.2f}s with sources vs {vt['sync_without_sources_s']:.2f}s without; "
          f"{sw['facts']} facts from {sw['sources']} sources")
    fo = sw['facts_per_s_observer']
    print(f"  fact observer (extract + index): {sw['observer_s']:.2f}s = {fo if fo is None else round(fo)} facts/s; "
          f"end to end {sw['facts_per_s_end_to_end']:.0f} facts/s")
    st = vt["save_to_searchable"]
    print(f"Save -> searchable ({st['note_lines']}-line source note, {st['saves']} saves, in process):")
    print(f"  median {C.ms(st['latency']['median'])}, p95 {C.ms(st['latency']['p95'])} "
          f"(fact observer median {C.ms(st['observer']['median'])})")
    if "daemon_save_to_searchable" in vt:
        ds = vt["daemon_save_to_searchable"]
        print(f"Save -> searchable through a running daemon ({ds['saves']} saves, debounce {ds['debounce_ms']:.0f} ms):")
        print(f"  median {C.ms(ds['latency']['median'])}, p95 {C.ms(ds['latency']['p95'])}, i.e. "
              f"{C.ms(ds['after_debounce']['median'])} / {C.ms(ds['after_debounce']['p95'])} after the debounce")


if __name__ == "__main__":
    main()
