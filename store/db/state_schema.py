"""The durable state's schema: what only memvault knows, never rebuilt.

``state.db`` sits beside the index and is attached to every connection as
schema ``state`` (see :mod:`.connection`). Its tables hold what the vault
cannot give back: earlier versions of memories, forgotten memories, recall
statistics and strength, the history of facts, conflicts, and the outbox of
store-side note writes not yet confirmed. Each row carries enough (a trace
as JSON) to be put back into a freshly rebuilt index (:mod:`.state`).

Migrations are ordered, named functions recorded in ``PRAGMA
state.user_version``; never edit one that has shipped, append a new one.
"""

from __future__ import annotations

from collections.abc import Callable

import apsw


def m001_durable_state(con: apsw.Connection) -> None:
    """Memory versions, forgotten memories, recall statistics, fact history,
    conflicts and the outbox."""
    con.execute(
        """
        CREATE TABLE state.meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );

        -- An earlier version of a memory, kept when it changed (through the
        -- store or in the vault). trace: the version as a trace, JSON.
        CREATE TABLE state.memory_versions (
            id            TEXT PRIMARY KEY,          -- '<memory id>.v<n>'
            memory_id     TEXT NOT NULL,
            version       INTEGER NOT NULL,
            trace         TEXT NOT NULL,
            reason        TEXT,
            superseded_at TEXT NOT NULL,
            UNIQUE (memory_id, version)
        );

        -- A memory that is deleted: forgotten through the store, or its note
        -- deleted in the vault. trace: the memory as it was, JSON (its note
        -- may be gone from .trash too).
        CREATE TABLE state.forgotten (
            memory_id TEXT PRIMARY KEY,
            reason    TEXT,
            at        TEXT NOT NULL,
            trace     TEXT NOT NULL
        );

        -- How often and when a memory or fact was recalled, and its strength.
        CREATE TABLE state.recall (
            trace_id        TEXT PRIMARY KEY,
            retrieval_count INTEGER NOT NULL DEFAULT 0,
            last_access     TEXT,
            strength        REAL
        );

        -- A fact that is no longer in its source note (changed or removed),
        -- or that a person retired. anchor: where it was, JSON.
        CREATE TABLE state.fact_history (
            fact_id     TEXT PRIMARY KEY,
            source_id   TEXT NOT NULL,
            trace       TEXT NOT NULL,
            anchor      TEXT NOT NULL,
            reason      TEXT NOT NULL,
            replaced_by TEXT,
            retired_at  TEXT NOT NULL
        );
        CREATE INDEX state.fact_history_source ON fact_history(source_id);

        -- A store-side change waiting to be mirrored into the vault. It is
        -- recorded in the same transaction as the change and cleared once
        -- the note is written, so a writer that dies in between leaves work
        -- that the next writer (or the daemon) finishes. trace: the memory as
        -- the store wants it written, JSON (a rebuilt index gets it back).
        CREATE TABLE state.outbox (
            trace_id      TEXT PRIMARY KEY,
            action        TEXT NOT NULL CHECK (action IN ('write', 'trash', 'restore')),
            expected_path TEXT,
            expected_hash TEXT,
            created       REAL NOT NULL,
            trace         TEXT
        );
        CREATE INDEX state.outbox_path ON outbox(expected_path);

        -- A store version written beside a note a person had changed.
        CREATE TABLE state.conflicts (
            id            INTEGER PRIMARY KEY,
            trace_id      TEXT NOT NULL,
            path          TEXT NOT NULL,
            conflict_path TEXT,
            kind          TEXT NOT NULL,
            detail        TEXT NOT NULL,
            created       TEXT NOT NULL
        );
        """
    )


def m002_fact_forgets(con: apsw.Connection) -> None:
    """Facts a person forgot: they stay retired however often their source
    note is re-extracted (or the index rebuilt), until restored."""
    con.execute(
        """
        CREATE TABLE state.fact_forgets (
            fact_id   TEXT PRIMARY KEY,
            source_id TEXT NOT NULL,
            reason    TEXT,
            at        TEXT NOT NULL
        );
        CREATE INDEX state.fact_forgets_source ON fact_forgets(source_id);
        """
    )


def m003_import_keys(con: apsw.Connection) -> None:
    """What was imported or ingested from where: the key of each item at its
    source, so importing or ingesting it again changes nothing (and an item
    changed at the source updates what it became). Lives here, not in the
    index: a rebuilt index must not make a re-import duplicate everything."""
    con.execute(
        """
        -- source: the kind of item ('session', 'mem0', 'csv', ...); key: its
        -- id at the source, else 'sha256:<hash of its content>'; target_id:
        -- the memory or note id it became; path: that note's vault path when
        -- written; hash: the item's content as last imported; detail: JSON
        -- (for a session: the digest of each turn written).
        CREATE TABLE state.import_keys (
            source    TEXT NOT NULL,
            key       TEXT NOT NULL,
            target_id TEXT NOT NULL,
            path      TEXT,
            hash      TEXT NOT NULL,
            detail    TEXT NOT NULL DEFAULT '{}',
            created   TEXT NOT NULL,
            updated   TEXT NOT NULL,
            PRIMARY KEY (source, key)
        );
        CREATE INDEX state.import_keys_target ON import_keys(target_id);
        """
    )


def m004_consolidation(con: apsw.Connection) -> None:
    """Consolidation: the log of runs and their actions (what undo needs),
    merged memories, flagged contradictions, links only memvault knows
    (``derived_from``), and when a memory's strength last decayed."""
    con.execute(
        """
        -- One consolidation run (or one `memvault merge`): what it did is in
        -- consolidation_actions, in order. status: done | undone | failed.
        CREATE TABLE state.consolidation_runs (
            id       TEXT PRIMARY KEY,
            started  TEXT NOT NULL,
            finished TEXT,
            day      TEXT NOT NULL,             -- the day the plan was made for (UTC date)
            trigger  TEXT NOT NULL,             -- cli | daemon | merge
            status   TEXT NOT NULL,
            summary  TEXT NOT NULL DEFAULT '{}'
        );

        -- One action of a run, with its reason. detail: the planned action,
        -- JSON; undo: what reversing it needs (earlier traces, note bytes), JSON.
        CREATE TABLE state.consolidation_actions (
            run_id TEXT NOT NULL,
            seq    INTEGER NOT NULL,
            kind   TEXT NOT NULL,
            ids    TEXT NOT NULL,
            reason TEXT NOT NULL,
            detail TEXT NOT NULL,
            undo   TEXT,
            PRIMARY KEY (run_id, seq)
        );

        -- A memory merged into another (superseded, its note in .trash/).
        -- old_key: the link key of its note's name, so links to it resolve
        -- to the survivor in the index.
        CREATE TABLE state.merges (
            memory_id   TEXT PRIMARY KEY,
            survivor_id TEXT NOT NULL,
            run_id      TEXT NOT NULL,
            old_path    TEXT,
            old_key     TEXT,
            at          TEXT NOT NULL
        );
        CREATE INDEX state.merges_survivor ON merges(survivor_id);

        -- Two live claims that disagree. status: open | resolved | dismissed.
        CREATE TABLE state.contradictions (
            id       INTEGER PRIMARY KEY,
            older_id TEXT NOT NULL,
            newer_id TEXT NOT NULL,
            kind     TEXT NOT NULL,
            reason   TEXT NOT NULL,
            run_id   TEXT,
            status   TEXT NOT NULL DEFAULT 'open',
            created  TEXT NOT NULL,
            UNIQUE (older_id, newer_id)
        );

        -- Typed links between traces that only memvault knows (derived_from:
        -- a promoted memory and the episodes it came from).
        CREATE TABLE state.memory_links (
            source_id TEXT NOT NULL,
            kind      TEXT NOT NULL,
            target_id TEXT NOT NULL,
            run_id    TEXT,
            created   TEXT NOT NULL,
            PRIMARY KEY (source_id, kind, target_id)
        );

        ALTER TABLE state.recall ADD COLUMN decayed_at TEXT;
        """
    )


def m005_contradiction_verdicts(con: apsw.Connection) -> None:
    """What the configured llm answered about a contradiction candidate
    (``extractor = "llm"``), kept so a dry run and the run after it plan the
    same, and a pair is asked once while neither text changes."""
    con.execute(
        """
        -- pair: sha256 of the two texts (older, newer); verdict: 1 they
        -- contradict, 0 they do not; why: the model's reason, as answered.
        CREATE TABLE state.contradiction_verdicts (
            pair    TEXT PRIMARY KEY,
            verdict INTEGER NOT NULL,
            why     TEXT NOT NULL DEFAULT '',
            model   TEXT NOT NULL,
            at      TEXT NOT NULL
        );
        """
    )


#: The durable tables every device shares through the vault's history logs
#: (:mod:`memvault.store.history`), with their key columns. Frozen here as
#: m006 created their triggers; a later migration adding a table adds its own.
HISTORY_TABLES_M006: dict[str, tuple[str, ...]] = {
    "memory_versions": ("id",),
    "forgotten": ("memory_id",),
    "fact_history": ("fact_id",),
    "fact_forgets": ("fact_id",),
    "import_keys": ("source", "key"),
    "consolidation_runs": ("id",),
    "consolidation_actions": ("run_id", "seq"),
    "merges": ("memory_id",),
    "contradictions": ("older_id", "newer_id"),
    "memory_links": ("source_id", "kind", "target_id"),
    "contradiction_verdicts": ("pair",),
}


def m006_history_log(con: apsw.Connection) -> None:
    """History in the vault: this device's id, the rows changed since they
    were last written to its log (filled by triggers, in the transaction of
    the change), the records read from every device's log, and how far each
    log file was read. Every row the shared tables already hold is queued,
    so the first flush puts this device's whole history into its log."""
    con.execute(
        """
        -- A shared row changed here and not yet appended to this device's log.
        CREATE TABLE state.history_pending (
            n   INTEGER PRIMARY KEY,
            tbl TEXT NOT NULL,
            key TEXT NOT NULL                     -- JSON array of the key columns
        );

        -- One record of a device's log: the row as it became (NULL: deleted).
        CREATE TABLE state.history_records (
            device TEXT NOT NULL,
            seq    INTEGER NOT NULL,
            stamp  INTEGER NOT NULL,              -- ms since the epoch, a hybrid logical clock
            tbl    TEXT NOT NULL,
            key    TEXT NOT NULL,
            row    TEXT,
            PRIMARY KEY (device, seq)
        );
        CREATE INDEX state.history_records_key ON history_records(tbl, key);
        CREATE INDEX state.history_records_stamp ON history_records(stamp);

        -- How far each log file in the vault was read (inode, bytes, its first bytes' hash).
        CREATE TABLE state.history_files (
            name   TEXT PRIMARY KEY,
            ino    INTEGER NOT NULL,
            offset INTEGER NOT NULL,
            head   TEXT NOT NULL
        );

        INSERT OR IGNORE INTO state.meta (key, value) VALUES ('device_id', lower(hex(randomblob(6))));
        """
    )
    share_through_history(con, HISTORY_TABLES_M006)


def share_through_history(con: apsw.Connection, tables: dict[str, tuple[str, ...]]) -> None:
    """Queue every change of ``tables`` (name -> key columns) for this
    device's history log, and queue the rows they hold now (each migration
    that adds shared tables calls it: m006, m007)."""
    for table, cols in tables.items():
        new = "json_array(" + ", ".join(f"NEW.{c}" for c in cols) + ")"
        old = "json_array(" + ", ".join(f"OLD.{c}" for c in cols) + ")"
        con.execute(
            f"""
            CREATE TRIGGER state.history_{table}_ins AFTER INSERT ON {table}
            BEGIN INSERT INTO history_pending (tbl, key) VALUES ('{table}', {new}); END;
            CREATE TRIGGER state.history_{table}_upd AFTER UPDATE ON {table}
            BEGIN
                INSERT INTO history_pending (tbl, key) VALUES ('{table}', {old});
                INSERT INTO history_pending (tbl, key) SELECT '{table}', {new} WHERE {new} != {old};
            END;
            CREATE TRIGGER state.history_{table}_del AFTER DELETE ON {table}
            BEGIN INSERT INTO history_pending (tbl, key) VALUES ('{table}', {old}); END;
            INSERT INTO state.history_pending (tbl, key) SELECT '{table}', json_array({", ".join(cols)})
                FROM state.{table};
            """
        )


#: The shared table m007 adds (see :func:`share_through_history`).
HISTORY_TABLES_M007: dict[str, tuple[str, ...]] = {"pauses": ("id",)}


def m007_pauses(con: apsw.Connection) -> None:
    """Memory paused (``memvault pause``): one row a pause, shared with every
    device through the history logs, so a pause made on one device holds on
    all, and the windows it covered stay known (turns said then are never
    stored, whenever a transcript is ingested)."""
    con.execute(
        """
        CREATE TABLE state.pauses (
            id      TEXT PRIMARY KEY,              -- <device>-<ms>: one pause, made on one device
            scope   TEXT NOT NULL,                 -- '*': all memory; else a project's scope
            since   TEXT NOT NULL,                 -- ISO 8601 UTC
            until   TEXT,                          -- when it ends by itself (NULL: when resumed)
            resumed TEXT,                          -- when `memvault resume` ended it
            reason  TEXT
        );
        """
    )
    share_through_history(con, HISTORY_TABLES_M007)


MIGRATIONS: list[Callable[[apsw.Connection], None]] = [
    m001_durable_state,
    m002_fact_forgets,
    m003_import_keys,
    m004_consolidation,
    m005_contradiction_verdicts,
    m006_history_log,
    m007_pauses,
]
