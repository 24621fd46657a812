"""What a long-running host of a store (the daemon) works with.

The daemon is a process: it owns threads, their supervision, the sockets
and the timing, and hosts services the store builds::

    pipeline = store.embedding_loop()          # the embedding loop's step: pipeline.run()
    retriever = store.open_retriever()         # the query server's warm retriever
    jobs = store.llm_fact_jobs(cancel)         # the llm worker's extraction, one source at a time
    runner = store.consolidation_runner()      # scheduled consolidation runs

This module names their types and the outcomes a host tells apart (a vault
that vanished, an index held by another writer too long), so the daemon
imports from the store's public modules only, never from its sub-packages.
"""

from __future__ import annotations

from memvault.store.consolidation.scheduled import ConsolidationRunner
from memvault.store.db.connection import StoreBusyError
from memvault.store.embedding.pipeline import EmbeddingPipeline, EmbedReport
from memvault.store.facts.background import LLMFactJobs
from memvault.store.index.reconcile import SyncSummary, VaultMissingError
from memvault.store.retrieval.retriever import Retriever

__all__ = [
    "ConsolidationRunner",
    "EmbedReport",
    "EmbeddingPipeline",
    "LLMFactJobs",
    "Retriever",
    "StoreBusyError",
    "SyncSummary",
    "VaultMissingError",
]
