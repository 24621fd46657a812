"""The index's schema: ordered, named migrations recorded in ``PRAGMA user_version``.

Migration *n* (1-based) is ``MIGRATIONS[n - 1]``. An index at
``user_version == k`` has had the first *k* applied
(:func:`memvault.store.db.connection.migrate` applies the rest). Never edit a
migration that has shipped; append a new one. Everything here can be rebuilt
from the vault (``memvault rebuild``); what cannot lives in
:mod:`.state_schema`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import apsw

from memvault.store.db.rows import Row, rows


def m001_foundation(con: apsw.Connection) -> None:
    """Files, traces, edges, tags and the FTS5 index over traces."""
    # Long, and kept whole: it is one schema script, read top to bottom.
    con.execute(
        """
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );

        -- One row per file of the vault that memvault tracks: notes (which
        -- carry a trace) and attachments (kept only so links resolve).
        CREATE TABLE files (
            path        TEXT PRIMARY KEY,
            kind        TEXT NOT NULL CHECK (kind IN ('note', 'attachment')),
            trace_id    TEXT,
            mtime_ns    INTEGER NOT NULL,
            size        INTEGER NOT NULL,
            hash        TEXT,
            parse_error TEXT,
            read_error  TEXT,
            indexed_at  TEXT NOT NULL
        );
        CREATE INDEX files_hash ON files(hash);
        CREATE INDEX files_trace ON files(trace_id);

        -- Bumped whenever the set of files or their trace ids change, so a
        -- long-lived indexer knows when its in-memory path index is stale.
        INSERT INTO meta (key, value) VALUES ('files_generation', 0);
        CREATE TRIGGER files_gen_ai AFTER INSERT ON files BEGIN
            UPDATE meta SET value = value + 1 WHERE key = 'files_generation';
        END;
        CREATE TRIGGER files_gen_ad AFTER DELETE ON files BEGIN
            UPDATE meta SET value = value + 1 WHERE key = 'files_generation';
        END;
        CREATE TRIGGER files_gen_au AFTER UPDATE OF path, trace_id ON files BEGIN
            UPDATE meta SET value = value + 1 WHERE key = 'files_generation';
        END;

        -- A trace is one unit of memory: a note, a memory, or a fact.
        CREATE TABLE traces (
            rowid           INTEGER PRIMARY KEY,
            id              TEXT NOT NULL UNIQUE,
            kind            TEXT NOT NULL,
            type            TEXT NOT NULL,
            title           TEXT NOT NULL,
            content         TEXT NOT NULL,
            tags            TEXT NOT NULL DEFAULT '',
            metadata        TEXT NOT NULL DEFAULT '{}',
            path            TEXT,
            source          TEXT,
            scope           TEXT,
            strength        REAL,
            status          TEXT NOT NULL DEFAULT 'active',
            reason          TEXT,
            created         TEXT NOT NULL,
            updated         TEXT NOT NULL,
            retrieval_count INTEGER NOT NULL DEFAULT 0,
            last_access     TEXT
        );
        CREATE INDEX traces_path ON traces(path);
        CREATE INDEX traces_kind_status ON traces(kind, status);

        CREATE TABLE trace_tags (
            trace_id TEXT NOT NULL REFERENCES traces(id) ON DELETE CASCADE ON UPDATE CASCADE,
            tag      TEXT NOT NULL,
            PRIMARY KEY (trace_id, tag)
        ) WITHOUT ROWID;
        CREATE INDEX trace_tags_tag ON trace_tags(tag);

        -- Typed edges. Vault links keep the name as written (target_name) and
        -- its lookup key so they re-resolve when the target appears later.
        CREATE TABLE edges (
            id          INTEGER PRIMARY KEY,
            source_id   TEXT NOT NULL REFERENCES traces(id) ON DELETE CASCADE ON UPDATE CASCADE,
            kind        TEXT NOT NULL,
            target_name TEXT NOT NULL DEFAULT '',
            target_key  TEXT NOT NULL DEFAULT '',
            target_path TEXT,
            target_id   TEXT,
            anchor      TEXT,
            display     TEXT,
            prop        TEXT,
            line        INTEGER,
            ambiguous   INTEGER NOT NULL DEFAULT 0
        );
        -- No index on target_path: backlinks go by target_id (set for every
        -- link that resolves to a note), and each index costs the first
        -- index of a large vault seconds.
        CREATE INDEX edges_source ON edges(source_id);
        CREATE INDEX edges_target_id ON edges(target_id);
        CREATE INDEX edges_target_key ON edges(target_key);

        CREATE VIRTUAL TABLE traces_fts USING fts5(
            title, content, tags,
            content='traces', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        -- Triggers keep the FTS index in the same transaction as the rows,
        -- except during a bulk load (a first index), which sets the
        -- 'bulk_load' flag and rebuilds the FTS index once at the end:
        -- half the CPU of row-by-row updates. See records.begin_bulk_load().
        CREATE TRIGGER traces_ai AFTER INSERT ON traces
        WHEN NOT EXISTS (SELECT 1 FROM meta WHERE key = 'bulk_load') BEGIN
            INSERT INTO traces_fts(rowid, title, content, tags)
            VALUES (new.rowid, new.title, new.content, new.tags);
        END;
        CREATE TRIGGER traces_ad AFTER DELETE ON traces
        WHEN NOT EXISTS (SELECT 1 FROM meta WHERE key = 'bulk_load') BEGIN
            INSERT INTO traces_fts(traces_fts, rowid, title, content, tags)
            VALUES ('delete', old.rowid, old.title, old.content, old.tags);
        END;
        CREATE TRIGGER traces_au AFTER UPDATE OF title, content, tags ON traces
        WHEN NOT EXISTS (SELECT 1 FROM meta WHERE key = 'bulk_load') BEGIN
            INSERT INTO traces_fts(traces_fts, rowid, title, content, tags)
            VALUES ('delete', old.rowid, old.title, old.content, old.tags);
            INSERT INTO traces_fts(rowid, title, content, tags)
            VALUES (new.rowid, new.title, new.content, new.tags);
        END;
        """
    )


def m002_memories(con: apsw.Connection) -> None:
    """Store-written memories: a dedup key, the outbox of pending note
    writes, and the conflicts found while mirroring."""
    con.execute(
        """
        -- sha256 of type, scope and normalised content, for memories created
        -- through the store: adding the same memory twice returns the first.
        ALTER TABLE traces ADD COLUMN content_key TEXT;
        CREATE INDEX traces_content_key ON traces(content_key);

        -- A store-side change waiting to be mirrored into the vault. It is
        -- recorded in the same transaction as the change and cleared once
        -- the note is written, so a writer that dies in between leaves work
        -- that the next writer (or the daemon) finishes. The watcher knows
        -- an event is our own write when (path, hash) matches a row here.
        CREATE TABLE outbox (
            trace_id      TEXT PRIMARY KEY REFERENCES traces(id) ON DELETE CASCADE ON UPDATE CASCADE,
            action        TEXT NOT NULL CHECK (action IN ('write', 'trash', 'restore')),
            expected_path TEXT,
            expected_hash TEXT,
            created       REAL NOT NULL
        );
        CREATE INDEX outbox_path ON outbox(expected_path);

        -- A store version written beside a note a person had changed.
        CREATE TABLE conflicts (
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


def m003_facts(con: apsw.Connection) -> None:
    """Facts extracted from memory-source notes, and the state of each source.

    A fact is a trace (kind 'fact'); its ``facts`` row says where in its
    source note it came from. Superseded facts keep their rows, so history
    and anchors survive. ``fact_sources`` records, per source note, what was
    extracted last (content hash, extractor, counts), so an unchanged note is
    not extracted twice and ``memvault stats`` can count redacted secrets.
    """
    con.execute(
        """
        CREATE TABLE facts (
            trace_id     TEXT PRIMARY KEY REFERENCES traces(id) ON DELETE CASCADE ON UPDATE CASCADE,
            -- The source note's trace id. No foreign key: a fact outlives its
            -- note's trace (retired as superseded when the note is deleted).
            source_id    TEXT NOT NULL,
            ordinal      INTEGER NOT NULL DEFAULT 0,      -- position in the note
            segment      TEXT NOT NULL DEFAULT 'sentence', -- item, task, sentence, row, property, llm
            heading_path TEXT NOT NULL DEFAULT '',         -- 'Projects > memvault > Decisions'
            heading      TEXT,                             -- the innermost heading, as written
            block_id     TEXT,
            line_start   INTEGER,                          -- 1-based file lines
            line_end     INTEGER,
            source_uri   TEXT NOT NULL,
            context      TEXT NOT NULL DEFAULT '',         -- parent list items, lead-in, callout title
            due          TEXT,
            text_key     TEXT NOT NULL DEFAULT '',         -- normalised text the id was derived from
            extractor    TEXT NOT NULL DEFAULT 'default',
            redacted     INTEGER NOT NULL DEFAULT 0         -- secrets replaced in this fact's text
        );
        CREATE INDEX facts_source ON facts(source_id, ordinal);
        CREATE INDEX facts_due ON facts(due) WHERE due IS NOT NULL;

        CREATE TABLE fact_sources (
            source_id    TEXT PRIMARY KEY,
            path         TEXT NOT NULL,
            hash         TEXT,
            marks        TEXT NOT NULL DEFAULT '',          -- 'frontmatter tag glob', space separated
            extractor    TEXT NOT NULL DEFAULT 'default',
            facts        INTEGER NOT NULL DEFAULT 0,
            redacted     INTEGER NOT NULL DEFAULT 0,        -- secrets redacted in the last extraction
            extracted_at TEXT NOT NULL
        );
        CREATE INDEX fact_sources_path ON fact_sources(path);
        """
    )


def m004_vectors(con: apsw.Connection) -> None:
    """Chunks of traces to embed, the queue of traces to (re)chunk, and a
    generation counter that tells readers their in-memory vectors are stale.

    The vectors themselves live in the embedding cache (``embeddings.db``
    beside the index, keyed by model and text hash) so that a rebuilt index
    finds them again; see :mod:`memvault.store.embedding.vectors`.
    """
    con.execute(
        """
        -- One embedded text: a character span of its trace's content under a
        -- heading path. hash = sha256 of the exact text embedded.
        CREATE TABLE chunks (
            id          INTEGER PRIMARY KEY,
            trace_rowid INTEGER NOT NULL REFERENCES traces(rowid) ON DELETE CASCADE,
            seq         INTEGER NOT NULL,
            start       INTEGER NOT NULL,
            stop        INTEGER NOT NULL,
            heading     TEXT NOT NULL DEFAULT '',
            tokens      INTEGER NOT NULL,
            hash        BLOB NOT NULL,
            UNIQUE (trace_rowid, seq)
        );
        CREATE INDEX chunks_hash ON chunks(hash);

        -- Traces whose text changed since they were last chunked; filled by
        -- the triggers below in the same transaction as the change. (NOT
        -- EXISTS rather than OR IGNORE: an outer statement's conflict
        -- clause would override the trigger's.)
        CREATE TABLE embed_queue (
            trace_rowid INTEGER PRIMARY KEY REFERENCES traces(rowid) ON DELETE CASCADE
        );

        CREATE TABLE vector_state (
            id         INTEGER PRIMARY KEY CHECK (id = 1),
            generation INTEGER NOT NULL
        );
        INSERT INTO vector_state (id, generation) VALUES (1, 0);

        CREATE TRIGGER chunks_gen_ai AFTER INSERT ON chunks BEGIN
            UPDATE vector_state SET generation = generation + 1 WHERE id = 1;
        END;
        CREATE TRIGGER chunks_gen_ad AFTER DELETE ON chunks BEGIN
            UPDATE vector_state SET generation = generation + 1 WHERE id = 1;
        END;
        CREATE TRIGGER traces_embed_ai AFTER INSERT ON traces BEGIN
            INSERT INTO embed_queue (trace_rowid) SELECT new.rowid
            WHERE NOT EXISTS (SELECT 1 FROM embed_queue WHERE trace_rowid = new.rowid);
        END;
        CREATE TRIGGER traces_embed_au AFTER UPDATE OF title, content, kind ON traces
        WHEN old.title IS NOT new.title OR old.content IS NOT new.content OR old.kind IS NOT new.kind BEGIN
            INSERT INTO embed_queue (trace_rowid) SELECT new.rowid
            WHERE NOT EXISTS (SELECT 1 FROM embed_queue WHERE trace_rowid = new.rowid);
        END;
        INSERT INTO embed_queue (trace_rowid) SELECT rowid FROM traces;
        """
    )


def m005_file_ctime(con: apsw.Connection) -> None:
    """The inode change time of each file, beside its mtime.

    mtime and size alone miss a file replaced by another of the same size and
    mtime (``mv a b`` keeps the moved file's mtime); the rename changes ctime.
    0 means unknown: the next sync reads the file again to fill it in.
    """
    con.execute("ALTER TABLE files ADD COLUMN ctime_ns INTEGER NOT NULL DEFAULT 0")


def m006_tag_rowids(con: apsw.Connection) -> None:
    """Each tag row also names its trace by rowid, indexed by tag.

    A tag filter on a keyword search then lists the rowids of the tagged
    traces from one index range, where going through the text ids cost a
    lookup in the traces' id index per tagged trace (40 ms for 13,000).
    """
    con.execute(
        """
        ALTER TABLE trace_tags ADD COLUMN trace_rowid INTEGER;
        UPDATE trace_tags SET trace_rowid = (SELECT rowid FROM traces WHERE traces.id = trace_tags.trace_id);
        CREATE INDEX trace_tags_tag_rowid ON trace_tags(tag, trace_rowid);
        DROP INDEX trace_tags_tag;
        """
    )


def m007_recheck_conflict_copies(con: apsw.Connection) -> None:
    """Read conflict copies again on the next sync.

    Before this version a conflict copy (``conflict_of:`` in its front-matter)
    was indexed as a live memory; forgetting the stored file state makes
    the next sync classify it again, as an ordinary note.
    """
    con.execute(
        """
        UPDATE files SET hash = NULL, mtime_ns = 0, ctime_ns = 0
        WHERE trace_id IN (
            SELECT id FROM traces
            WHERE kind = 'memory' AND json_valid(metadata)
              AND json_extract(metadata, '$.frontmatter.conflict_of') IS NOT NULL
        )
        """
    )


def m008_durable_state_apart(con: apsw.Connection) -> None:
    """Move what only memvault knows out of the index into ``state.db``.

    Before this version the outbox, conflicts, memory versions, forgotten
    memories, recall statistics and fact history lived only in the index, so
    a rebuild lost them. They are copied into the durable state (created by
    its own first migration, which runs before this one), and the outbox and
    conflicts tables leave the index. Written against the schema as of
    m007, independently of the live code.
    """
    cols = (
        "id, kind, type, title, content, tags, metadata, path, source, scope, strength, "
        "status, reason, created, updated, retrieval_count, last_access"
    )
    names = [c.strip() for c in cols.split(",")]

    def trace_json(row: Row) -> str:
        d = dict(zip(names, row))
        d["tags"] = d["tags"].split(" ") if d["tags"] else []
        d["metadata"] = json.loads(d["metadata"]) if d["metadata"] else {}
        return json.dumps(d, ensure_ascii=False, sort_keys=True)

    def traces(where: str, params: tuple[Any, ...] = ()) -> list[Row]:
        return rows(con, f"SELECT {cols} FROM traces WHERE {where}", params)

    for row in traces("kind = 'memory' AND status = 'superseded'"):
        meta = json.loads(row[6] or "{}")
        if meta.get("version_of") and meta.get("version"):
            con.execute(
                "INSERT OR IGNORE INTO state.memory_versions (id, memory_id, version, trace, reason, superseded_at) "
                "VALUES (?,?,?,?,?,?)",
                (row[0], meta["version_of"], int(meta["version"]), trace_json(row), row[12], row[14]),
            )
    for row in traces("kind = 'memory' AND status = 'deleted'"):
        con.execute(
            "INSERT OR IGNORE INTO state.forgotten (memory_id, reason, at, trace) VALUES (?,?,?,?)",
            (row[0], row[12], row[14], trace_json(row)),
        )
    con.execute(
        "INSERT OR IGNORE INTO state.recall (trace_id, retrieval_count, last_access, strength) "
        "SELECT id, retrieval_count, last_access, strength FROM traces "
        "WHERE kind IN ('memory', 'fact') AND (retrieval_count > 0 OR last_access IS NOT NULL)"
    )
    anchor_cols = [
        "trace_id", "source_id", "ordinal", "segment", "heading_path", "heading", "block_id", "line_start",
        "line_end", "source_uri", "context", "due", "text_key", "extractor", "redacted",
    ]
    for row in traces("kind = 'fact' AND status = 'superseded'"):
        anchor = con.execute(f"SELECT {', '.join(anchor_cols)} FROM facts WHERE trace_id = ?", (row[0],)).fetchone()
        if anchor is None:
            continue
        newer = con.execute(
            "SELECT source_id FROM edges WHERE target_id = ? AND kind = 'updates' LIMIT 1", (row[0],)
        ).fetchone()
        con.execute(
            "INSERT OR IGNORE INTO state.fact_history "
            "(fact_id, source_id, trace, anchor, reason, replaced_by, retired_at) VALUES (?,?,?,?,?,?,?)",
            (row[0], anchor[1], trace_json(row), json.dumps(dict(zip(anchor_cols, anchor)), ensure_ascii=False),
             row[12] or "superseded", newer[0] if newer else None, row[14]),
        )
    con.execute(
        """
        INSERT OR IGNORE INTO state.outbox (trace_id, action, expected_path, expected_hash, created)
            SELECT trace_id, action, expected_path, expected_hash, created FROM main.outbox;
        INSERT INTO state.conflicts (trace_id, path, conflict_path, kind, detail, created)
            SELECT trace_id, path, conflict_path, kind, detail, created FROM main.conflicts ORDER BY id;
        DROP TABLE main.outbox;
        DROP TABLE main.conflicts;
        """
    )
    for (trace_id,) in rows(con, "SELECT trace_id FROM state.outbox WHERE trace IS NULL"):
        found = traces("id = ?", (trace_id,))
        if found:
            con.execute("UPDATE state.outbox SET trace = ? WHERE trace_id = ?", (trace_json(found[0]), trace_id))


def m009_embed_pending(con: apsw.Connection) -> None:
    """The chunks still without a vector, kept as chunks come and vectors go.

    Before this, every wake of the embedding worker (and every poll) read
    every chunk and every cached hash to find the few without a vector. Now
    a trigger adds each new chunk here, storing a vector removes its text's
    rows, and a change of model (``meta`` ``pending_model``) refills it once.
    """
    con.execute(
        """
        CREATE TABLE embed_pending (
            chunk_id INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE
        );
        CREATE TRIGGER chunks_pending_ai AFTER INSERT ON chunks BEGIN
            INSERT OR IGNORE INTO embed_pending (chunk_id) VALUES (new.id);
        END;
        DELETE FROM meta WHERE key = 'pending_model';
        """
    )


def m010_fact_text_key(con: apsw.Connection) -> None:
    """Facts found by their normalised text: a conversation's new fact that
    repeats a live fact of another source is not added twice, and asking
    that must not scan every fact (or the full-text index of every transcript)."""
    con.execute("CREATE INDEX facts_text_key ON facts(text_key COLLATE NOCASE)")


#: The text each trace gives the full-text index, one column per FTS column
#: (index migration 11). A *derived* title is not indexed as a title: a
#: memory's title is its first line (already in its body) unless its
#: front-matter names one, and a fact's ("Note > Heading > parent item") is
#: where it sits, indexed unboosted in ``context`` with a memory's speaker.
FTS_SOURCE_SQL = """
CREATE VIEW traces_fts_source AS
SELECT
    rowid AS rowid,
    CASE
        WHEN kind = 'fact' THEN ''
        WHEN kind = 'memory' AND NOT coalesce(json_valid(metadata)
            AND json_type(metadata, '$.frontmatter.title') = 'text'
            AND trim(json_extract(metadata, '$.frontmatter.title')) <> '', 0) THEN ''
        ELSE title
    END AS title,
    content,
    tags,
    trim(
        CASE WHEN kind = 'fact' THEN title ELSE '' END || ' ' ||
        CASE WHEN json_valid(metadata) THEN coalesce(json_extract(metadata, '$.frontmatter.speaker'), '') ELSE '' END
    ) AS context
FROM traces
"""


def m011_event_time_and_fts_context(con: apsw.Connection) -> None:
    """Event time, conversation sessions, and a full-text index that does not
    count derived titles twice.

    * ``event_time``, ``session`` and ``seq`` read what the indexer puts in a
      trace's metadata (when it happened; the conversation session it is a
      turn of, and its position), and ``happened`` places every trace in time:
      its event time, else its creation time (when it looks like a date), else
      its last change. Generated columns, so the row writers stay as they are;
      ``happened`` is indexed for ``--since``/``--until``, sessions for
      neighbour lookups.
    * The FTS table is rebuilt over :data:`FTS_SOURCE_SQL` with a fourth
      column, ``context``; the triggers read that view, so every write, the
      bulk loader's 'rebuild' and snippets see the same text.
    * A change of a trace's session, position or status moves the vector
      generation: the retriever's neighbour arrays are built with its matrix.
    * Every note (and source note's facts) is read again on the next sync, so
      existing traces get their event time and session.
    """
    meta = "CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.{}') END"
    con.execute(
        f"""
        ALTER TABLE traces ADD COLUMN event_time TEXT GENERATED ALWAYS AS ({meta.format('event_time')}) VIRTUAL;
        ALTER TABLE traces ADD COLUMN session TEXT GENERATED ALWAYS AS ({meta.format('session')}) VIRTUAL;
        ALTER TABLE traces ADD COLUMN seq REAL GENERATED ALWAYS AS ({meta.format('seq')}) VIRTUAL;
        ALTER TABLE traces ADD COLUMN happened TEXT GENERATED ALWAYS AS (coalesce(
            {meta.format('event_time')},
            CASE WHEN created GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' THEN created END,
            updated)) VIRTUAL;
        CREATE INDEX traces_session ON traces(session, seq) WHERE session IS NOT NULL;
        CREATE INDEX traces_happened ON traces(happened);

        DROP TRIGGER traces_ai;
        DROP TRIGGER traces_ad;
        DROP TRIGGER traces_au;
        DROP TABLE traces_fts;
        {FTS_SOURCE_SQL};
        CREATE VIRTUAL TABLE traces_fts USING fts5(
            title, content, tags, context,
            content='traces_fts_source', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER traces_ai AFTER INSERT ON traces
        WHEN NOT EXISTS (SELECT 1 FROM meta WHERE key = 'bulk_load') BEGIN
            INSERT INTO traces_fts(rowid, title, content, tags, context)
            SELECT rowid, title, content, tags, context FROM traces_fts_source WHERE rowid = new.rowid;
        END;
        CREATE TRIGGER traces_bd BEFORE DELETE ON traces
        WHEN NOT EXISTS (SELECT 1 FROM meta WHERE key = 'bulk_load') BEGIN
            INSERT INTO traces_fts(traces_fts, rowid, title, content, tags, context)
            SELECT 'delete', rowid, title, content, tags, context FROM traces_fts_source WHERE rowid = old.rowid;
        END;
        CREATE TRIGGER traces_bu BEFORE UPDATE OF kind, title, content, tags, metadata ON traces
        WHEN NOT EXISTS (SELECT 1 FROM meta WHERE key = 'bulk_load') BEGIN
            INSERT INTO traces_fts(traces_fts, rowid, title, content, tags, context)
            SELECT 'delete', rowid, title, content, tags, context FROM traces_fts_source WHERE rowid = old.rowid;
        END;
        CREATE TRIGGER traces_au AFTER UPDATE OF kind, title, content, tags, metadata ON traces
        WHEN NOT EXISTS (SELECT 1 FROM meta WHERE key = 'bulk_load') BEGIN
            INSERT INTO traces_fts(rowid, title, content, tags, context)
            SELECT rowid, title, content, tags, context FROM traces_fts_source WHERE rowid = new.rowid;
        END;
        INSERT INTO traces_fts(traces_fts) VALUES ('rebuild');

        CREATE TRIGGER traces_session_au AFTER UPDATE OF metadata, status ON traces
        WHEN old.session IS NOT new.session OR old.seq IS NOT new.seq
            OR (new.session IS NOT NULL AND old.status IS NOT new.status) BEGIN
            UPDATE vector_state SET generation = generation + 1 WHERE id = 1;
        END;

        UPDATE files SET hash = NULL, mtime_ns = 0, ctime_ns = 0 WHERE kind = 'note';
        UPDATE fact_sources SET hash = NULL;
        """
    )


def m012_redact_notes(con: apsw.Connection) -> None:
    """Read every note again on the next sync, redacted.

    Before this version only memories were indexed redacted: a credential in
    an ordinary note reached the full-text index, its embedded chunks,
    snippets and agents. And redaction cut a password's whole line where it
    now cuts the value alone, so facts are extracted again too.
    """
    con.execute(
        """
        UPDATE files SET hash = NULL, mtime_ns = 0, ctime_ns = 0 WHERE kind = 'note';
        UPDATE fact_sources SET hash = NULL;
        """
    )


#: The full-text source from migration 13: a turn's title is its speaker
#: (for the embedded text), which the index reads once, unboosted, in
#: ``context`` (as any speaker), not again as a boosted title.
FTS_SOURCE_SQL_13 = FTS_SOURCE_SQL.replace("WHEN kind = 'fact' THEN ''", "WHEN kind IN ('fact', 'turn') THEN ''", 1)


def m013_turn_traces(con: apsw.Connection) -> None:
    """Turns of session notes become traces of their own
    (:mod:`memvault.store.index.turn_traces`).

    * The full-text source leaves a turn's title (its speaker) out of the
      boosted column; no turn trace exists yet, so nothing is re-indexed.
    * Every note holding a transcript is read again on the next sync, which
      derives its turns.
    """
    con.execute(
        f"""
        DROP VIEW traces_fts_source;
        {FTS_SOURCE_SQL_13};
        UPDATE files SET hash = NULL, mtime_ns = 0, ctime_ns = 0 WHERE kind = 'note' AND trace_id IN (
            SELECT id FROM traces WHERE kind = 'note' AND instr(content, '> [!') > 0 AND instr(content, char(10) || '^t') > 0);
        """
    )


def m014_speaker_turns_embedded_as_turns(con: apsw.Connection) -> None:
    """A memory with a front-matter ``speaker`` (a turn of a conversation
    written as its own note) is embedded as "Speaker: text", as a session
    note's turn is (``store/embedding/vectors.py``): such memories are
    chunked again, and their new texts embedded, on the next embedding run."""
    con.execute(
        """
        INSERT OR IGNORE INTO embed_queue (trace_rowid)
        SELECT rowid FROM traces WHERE kind = 'memory' AND json_valid(metadata)
            AND typeof(json_extract(metadata, '$.frontmatter.speaker')) = 'text';
        """
    )


def m015_file_inode(con: apsw.Connection) -> None:
    """The inode number of each file, beside its mtime, size and ctime.

    A sync tool (Syncthing) writes a received file to a temp file and renames
    it over the note, keeping the sender's mtime: with the same size and a
    ctime in the same clock tick as the file it replaced, only the inode
    tells the two apart. 0 means unknown: the next sync reads the file again
    (a hash compare; an unchanged note is only touched).
    """
    # Idempotent: an index whose version was set back (a test's "index from
    # before", or a downgrade and upgrade) may already have the column.
    if not any(row[1] == "inode" for row in con.execute("PRAGMA table_info(files)")):
        con.execute("ALTER TABLE files ADD COLUMN inode INTEGER NOT NULL DEFAULT 0")


def m016_inferred_sessions(con: apsw.Connection) -> None:
    """Sessions inferred where no ``session`` key says so (an episodic note's
    folder and day, a conversation id: ``store/index/event_time.py``): every
    note is read again on the next sync, so existing traces get theirs."""
    con.execute("UPDATE files SET hash = NULL, mtime_ns = 0, ctime_ns = 0 WHERE kind = 'note'")


MIGRATIONS: list[Callable[[apsw.Connection], None]] = [
    m001_foundation,
    m002_memories,
    m003_facts,
    m004_vectors,
    m005_file_ctime,
    m006_tag_rowids,
    m007_recheck_conflict_copies,
    m008_durable_state_apart,
    m009_embed_pending,
    m010_fact_text_key,
    m011_event_time_and_fts_context,
    m012_redact_notes,
    m013_turn_traces,
    m014_speaker_turns_embedded_as_turns,
    m015_file_inode,
    m016_inferred_sessions,
]
