"""mem0 as a peer in the recall benchmarks: offline, ``infer=False``, the bundled model.

mem0 (``pip install 'mem0ai>=2.2,<2.3'``, a bench-only dependency: see
bench/README.md; never a product one) is run the way its open-source
``Memory`` runs without an LLM: every message added with ``infer=False`` is a
memory of its own, embedded as it is; ``search`` takes the vector store's
semantic candidates (``max(4 x limit, 60)``), scores each as the average of
its cosine and a sigmoid of its BM25 score (``mem0/utils/scoring.py``), and
returns the best. What is set here so it runs offline and on the same model:

* **embedder**: memvault's bundled MiniLM (the same vectors memvault and the
  plain cosine baseline use, read from the bench's vector cache), registered
  as a mem0 embedder provider;
* **vector store**: mem0's Qdrant store on an in-process ``QdrantClient(":memory:")``;
* **BM25**: Qdrant's sparse BM25 (fastembed ``Qdrant/bm25``: Snowball
  stemmer, NLTK's English stop words) loaded from a local folder written
  here, since its usual source is a model hub;
* no LLM is called (``infer=False``); the LLM config holds a placeholder key,
  telemetry is off and mem0's own files go to a temp folder.

spaCy is not installed, so mem0's lemmatizer passes text through and its
entity boost is empty (as in a plain ``pip install mem0ai``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: NLTK's English stop word list, the one the ``Qdrant/bm25`` model ships.
NLTK_ENGLISH_STOPWORDS = (
    "i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself yourselves he him "
    "his himself she she's her hers herself it it's its itself they them their theirs themselves what which who "
    "whom this that that'll these those am is are was were be been being have has had having do does did doing a "
    "an the and but if or because as until while of at by for with about against between into through during "
    "before after above below to from up down in out on off over under again further then once here there when "
    "where why how all any both each few more most other some such no nor not only own same so than too very s t "
    "can will just don don't should should've now d ll m o re ve y ain aren aren't couldn couldn't didn didn't "
    "doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma mightn mightn't mustn mustn't needn needn't "
    "shan shan't shouldn shouldn't wasn wasn't weren weren't won won't wouldn wouldn't"
).split()

#: The model name mem0's config gives to mean the bundled model.
BUNDLED = "memvault-bundled-minilm"
#: The embedder mem0's provider class uses (set by :func:`open_peer`).
_EMBED: dict[str, Callable[[list[str]], list[list[float]]]] = {}


def available() -> bool:
    """Whether mem0 is installed (importing it with its telemetry off)."""
    os.environ["MEM0_TELEMETRY"] = "False"
    try:
        import mem0  # noqa: F401
    except ImportError:
        return False
    return True


def version() -> str:
    """mem0's installed version."""
    from importlib.metadata import version as v

    return v("mem0ai")


class BundledEmbedding:
    """A mem0 embedder over memvault's bundled model (see :data:`_EMBED`)."""

    def __init__(self, config: Any = None) -> None:
        from mem0.configs.embeddings.base import BaseEmbedderConfig

        self.config = config or BaseEmbedderConfig()
        self.config.embedding_dims = 384

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        """One text's vector."""
        return _EMBED["embed"]([text])[0]

    def embed_batch(self, texts: list[str], memory_action: str | None = None) -> list[list[float]]:
        """Several texts' vectors."""
        return _EMBED["embed"](list(texts))


def _bm25_folder(work: Path) -> Path:
    """A local copy of what fastembed's ``Qdrant/bm25`` needs (no weights: a config and the stop words)."""
    folder = work / "qdrant-bm25"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "bm25"}))
    (folder / "english.txt").write_text("\n".join(NLTK_ENGLISH_STOPWORDS) + "\n")
    return folder


def _environment(work: Path) -> None:
    """mem0's telemetry off, its files in ``work``, a placeholder LLM key
    (read when mem0 is imported: call before)."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(work / "mem0-dir"))
    os.environ.setdefault("OPENAI_API_KEY", "not-used-infer-is-false")


def _patch(work: Path) -> None:
    """Register the embedder and load BM25 from :func:`_bm25_folder` (once per process)."""
    from mem0.utils.factory import EmbedderFactory
    from mem0.vector_stores import qdrant

    if getattr(qdrant.Qdrant, "_bench_patched", False):
        return
    create = EmbedderFactory.create.__func__  # type: ignore[attr-defined]

    def embedder(cls: Any, provider: str, config: Any, vector_config: Any) -> Any:
        # mem0's config accepts only its own providers: the "fastembed" one
        # naming this model is answered with the bundled model instead.
        if provider == "fastembed" and (config or {}).get("model") == BUNDLED:
            return BundledEmbedding()
        return create(cls, provider, config, vector_config)

    EmbedderFactory.create = classmethod(embedder)  # type: ignore[method-assign]
    folder = _bm25_folder(work)

    def encoder(self: Any) -> Any:
        if self._bm25_encoder is None:
            from fastembed import SparseTextEmbedding

            self._bm25_encoder = SparseTextEmbedding(model_name="Qdrant/bm25", specific_model_path=str(folder))
        return self._bm25_encoder

    qdrant.Qdrant._get_bm25_encoder = encoder
    qdrant.Qdrant._bench_patched = True


class Peer:
    """One mem0 ``Memory`` holding one conversation's turns (a user id per conversation)."""

    def __init__(self, memory: Any, user: str) -> None:
        self.memory = memory
        self.user = user

    def add(self, items: Sequence[tuple[str, str, str]]) -> None:
        """Add (turn id, role, text) messages with ``infer=False``, each a memory."""
        for tid, role, text in items:
            self.memory.add([{"role": role, "content": text}], user_id=self.user, infer=False,
                            metadata={"turn": tid})

    def search(self, query: str, limit: int) -> list[str]:
        """Turn ids of mem0's best ``limit`` memories for ``query``, best first."""
        found = self.memory.search(query, top_k=limit, filters={"user_id": self.user})
        return [r["metadata"]["turn"] for r in found["results"] if (r.get("metadata") or {}).get("turn")]


def open_peer(work: Path, user: str, embed: Callable[[list[str]], list[list[float]]]) -> Peer:
    """A fresh mem0 memory for ``user`` in process memory, embedding with ``embed``."""
    work.mkdir(parents=True, exist_ok=True)
    _environment(work)
    _patch(work)
    _EMBED["embed"] = embed
    from mem0 import Memory
    from mem0.configs.base import MemoryConfig
    from qdrant_client import QdrantClient

    config = MemoryConfig(
        embedder={"provider": "fastembed", "config": {"model": BUNDLED, "embedding_dims": 384}},
        vector_store={"provider": "qdrant", "config": {"collection_name": f"bench_{abs(hash(user))}",
                                                        "embedding_model_dims": 384,
                                                        "client": QdrantClient(":memory:")}},
        history_db_path=str(work / "mem0-history.db"),
    )
    return Peer(Memory(config), user)
