"""Embedding bookkeeping that scales: pending work kept incrementally, one
embedder per vault (a daemon's), a pruned cache, and a second device that
starts warm from an exported cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import opened, write

from memvault.cli.main import cli
from memvault.daemon.lock import DaemonLock
from memvault.store.embedding import cache as cache_mod
from memvault.store.embedding import vectors as vec
from memvault.store.embedding.model import resolve_model
from memvault.store.location import vault_data_dir

MODEL = resolve_model("default").key


def run(vault: Path, *args: str):  # type: ignore[no-untyped-def]
    r = CliRunner().invoke(cli, ["--vault", str(vault), *args])
    assert r.exit_code == 0, r.output
    return r


def sync_json(vault: Path) -> dict:
    return json.loads(run(vault, "sync", "--json").stdout)


def pending(vault: Path) -> int:
    """Texts waiting: traces to chunk, and chunks without a vector."""
    with opened(vault) as v:
        return sum(v.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("embed_queue", "embed_pending"))


def chunked(v) -> None:  # type: ignore[no-untyped-def]
    """Cut the queued traces into chunks, embedding nothing."""
    from memvault.store.embedding.pipeline import EmbeddingPipeline

    p = EmbeddingPipeline.for_ctx(v.ctx, v.con)
    p.chunk_queued()
    p.close()


def test_pending_work_is_kept_not_rescanned(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(vault, "A.md", "Alpha retries with exponential backoff.\n")
    assert sync_json(vault)["embedding"]["embedded"] == 1
    assert pending(vault) == 0
    # From now on finding work never lists the cache: an idle poll is one empty query.
    monkeypatch.setattr(vec, "cached_hashes", lambda *a: pytest.fail("listed every cached vector"))
    assert sync_json(vault)["embedding"]["embedded"] == 0
    write(vault, "B.md", "Beta covers schema migrations.\n")
    run(vault, "sync", "--no-embed")
    assert pending(vault) == 1
    assert sync_json(vault)["embedding"]["embedded"] == 1 and pending(vault) == 0


def test_a_vector_stored_elsewhere_clears_pending_work(vault: Path) -> None:
    write(vault, "A.md", "Alpha retries with exponential backoff.\n")
    run(vault, "sync", "--no-embed")
    with opened(vault) as v:
        chunked(v)
        (h,) = v.con.execute("SELECT hash FROM chunks").fetchone()
        cache = vec.open_cache(v.data_dir)
        vec.put_vectors(cache, MODEL, [(h, b"\0\0" * 384)])  # another process embedded it
        assert vec.pending_chunks(v.con, cache, MODEL) == []
        assert v.con.execute("SELECT count(*) FROM embed_pending").fetchone()[0] == 0
        cache.close()


def test_sync_leaves_embedding_to_a_running_daemon(vault: Path) -> None:
    write(vault, "A.md", "Alpha retries with exponential backoff.\n")
    run(vault, "sync", "--no-embed")
    with DaemonLock(vault, vault_data_dir(vault)):
        r = CliRunner().invoke(cli, ["--vault", str(vault), "sync", "--json"])
        assert r.exit_code == 0
        assert "handed_to_daemon" in json.loads(r.stdout)["embedding"]
        assert "embedding is left to the running daemon" in r.stderr
    assert pending(vault) == 1  # nothing was embedded twice: the daemon's job


def test_a_second_device_starts_warm_from_an_exported_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = tmp_path / "laptop" / "Notes"
    write(first, "A.md", "Alpha retries with exponential backoff.\n")
    write(first, "B.md", "# Beta\n\nBeta covers schema migrations and their rollback.\n")
    monkeypatch.setenv("MEMVAULT_HOME", str(tmp_path / "laptop-home"))
    assert sync_json(first)["embedding"]["embedded"] >= 2
    export = tmp_path / "carried.db"
    out = json.loads(run(first, "cache", "export", str(export), "--json").stdout)
    assert out["vectors"] >= 2 and (export.stat().st_mode & 0o777) == 0o600
    second = tmp_path / "desktop" / "Notes"
    shutil.copytree(first, second)  # what a file-sync tool delivers
    monkeypatch.setenv("MEMVAULT_HOME", str(tmp_path / "desktop-home"))
    added = json.loads(run(second, "cache", "import", str(export), "--json").stdout)["added"]
    assert added == out["vectors"]
    assert sync_json(second)["embedding"]["embedded"] == 0  # nothing embedded twice
    r = CliRunner().invoke(cli, ["--vault", str(second), "search", "backoff strategy", "--mode", "semantic", "--json"])
    assert json.loads(r.stdout.splitlines()[0])["path"] == "A.md"


def test_importing_something_else_is_one_clear_line(vault: Path, tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.db"
    bogus.write_bytes(b"not a database at all" * 50)
    r = CliRunner().invoke(cli, ["--vault", str(vault), "cache", "import", str(bogus)])
    assert r.exit_code == 2 and "not a memvault embedding cache" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(cli, ["--vault", str(vault), "cache", "import", str(tmp_path / "missing.db")])
    assert r.exit_code == 2 and "is not a file" in r.output


def test_prune_drops_unused_vectors_oldest_first_and_keeps_those_in_use(vault: Path) -> None:
    write(vault, "A.md", "Alpha retries with exponential backoff.\n")
    run(vault, "sync", "--no-embed")
    with opened(vault) as v:
        chunked(v)
        (live,) = v.con.execute("SELECT hash FROM chunks").fetchone()
        cache = vec.open_cache(v.data_dir)
        blob = b"\1\0" * 384
        cache.execute("INSERT INTO vectors (model, hash, vec, used) VALUES (?, ?, ?, ?)", (MODEL, live, blob, "2020-01-01"))
        for i, used in enumerate(["2020-01-01T00:00:00+00:00", "2099-01-01T00:00:00+00:00", "2099-02-01T00:00:00+00:00"]):
            cache.execute("INSERT INTO vectors (model, hash, vec, used) VALUES (?, ?, ?, ?)",
                          (MODEL, bytes([i]) * 32, blob, used))
        report = cache_mod.prune(cache, v.con, keep_days=30, max_bytes=10**9)
        assert (report.kept, report.dropped_unused, report.dropped_for_size) == (1, 1, 0)
        # over the cap: the least recently used unused one goes, never the one in use
        report = cache_mod.prune(cache, v.con, keep_days=30, max_bytes=1)
        left = {r[0] for r in cache.execute("SELECT hash FROM vectors")}
        assert live in left and report.dropped_for_size >= 1
        assert bytes([1]) * 32 not in left or bytes([2]) * 32 not in left
        cache.close()
    out = json.loads(run(vault, "cache", "prune", "--json").stdout)
    assert out["kept"] == 1
