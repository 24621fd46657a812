"""Memory flowing in and out: conversation ingest, importers, export and backup.

- :mod:`.conversation` the neutral form of a conversation and its turns;
  :mod:`.transcript` reads Claude Code and generic JSONL transcripts into it;
- :mod:`.sessions` writes conversations as session notes (append-only);
- :mod:`.ingest` is ``memvault ingest`` (and the agents' session hooks);
- :mod:`.importers` one module per foreign format, each a parser that yields
  items; :mod:`.sink` writes them through the store (memories through the
  mirror's outbox protocol, conversations as session notes) and keeps the
  import keys (:mod:`.keys`) that make a re-import change nothing;
- :mod:`.export` memvault's own formats out (and :mod:`.importers.memvault`
  back in); :mod:`.backup` a consistent snapshot of the databases and its restore.
"""
