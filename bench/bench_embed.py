"""Embedding throughput: memvault's indexing pipeline beside raw fastembed.

    python bench/bench_embed.py [--texts 300] [--seed 3]

Both embed the same texts (chunks of the labelled retrieval vault, a random
sample) with the same loaded model, cold (no cache hits):

* **raw**: ``TextEmbedding.embed(texts)`` with fastembed's default batch size,
  texts in their original order (what a plain fastembed caller gets);
* **raw sorted**: the same call on the texts sorted by length, in batches of
  32 (fastembed's best case here, with the padding saving the pipeline uses:
  the fair comparison for the pipeline's own overhead);
* **pipeline**: ``EmbeddingPipeline.embed_pending`` on an index holding those
  chunks: rebuild each text from its trace, check its hash, length-sorted
  token-bounded batches, float16 into the cache, generation bumps.

The bar is pipeline >= 90% of raw throughput; both ratios are reported.
Chunking (done once per changed trace, before embedding) is timed apart. Results go to
``bench/out/bench_embed-<time>.json``.

    python bench/bench_embed.py --first-sync 6600 20000 [--batch-tokens 512 2048 8192]

The memory bar: a first ``memvault sync`` (text and embedding) of a generated
vault of that many notes, as a whole process with a fresh data dir, reporting
its peak RSS (``ru_maxrss``), the texts it embedded, and texts/s, for each
``embedding.batch_tokens`` given (the first default was 8192, then 2048, now 512).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
FIXTURE = BENCH.parent / "tests" / "fixtures" / "retrieval"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--texts", type=int, default=300)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--first-sync", type=int, nargs="*", metavar="NOTES",
                    help="measure peak RSS and texts/s of a first `memvault sync` of generated vaults instead")
    ap.add_argument("--batch-tokens", type=int, nargs="*", default=[512])
    args = ap.parse_args()
    if args.first_sync:
        return first_syncs(args.first_sync, args.batch_tokens)
    work = Path(tempfile.mkdtemp(prefix="bench-embed-", dir=BENCH / "out"))
    for key in list(os.environ):
        if key.startswith("MEMVAULT_"):
            del os.environ[key]
    os.environ["MEMVAULT_HOME"] = str(work / "home")
    os.environ["MEMVAULT_CONFIG"] = str(work / "none.toml")
    try:
        result = run(work, args.texts, args.seed)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(result, indent=1)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (BENCH / "out" / f"bench_embed-{stamp}.json").write_text(text)
    (BENCH / "out" / "bench_embed-latest.json").write_text(text)
    print(text)


def run(work: Path, n: int, seed: int) -> dict[str, object]:
    from memvault.store.embedding import vectors as vec
    from memvault.store.embedding.pipeline import EmbeddingPipeline
    from memvault.store.memory_store import MemoryStore

    root = work / "vault"
    shutil.copytree(FIXTURE / "vault", root)
    v = MemoryStore.open(str(root))
    v.sync()
    p = EmbeddingPipeline.for_ctx(v.ctx, v.con)
    t = time.perf_counter()
    chunked = p.chunk_queued()
    chunk_s = time.perf_counter() - t
    # keep a random sample of chunks: drop the rest from the index
    rng = random.Random(seed)
    ids = [r[0] for r in v.con.execute("SELECT id FROM chunks")]
    keep = set(rng.sample(ids, min(n, len(ids))))
    v.con.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in ids if i not in keep])
    pending = p.pending()
    texts_by_id = vec.chunk_texts(v.con, [c.id for c in pending])
    texts = [texts_by_id[c.id][1] for c in sorted(pending, key=lambda c: c.id)]  # original order for raw
    tokens = sum(c.tokens for c in pending)
    model = p.embedder()
    model.embed(["warm up"])

    t = time.perf_counter()
    raw = list(model._model.embed(texts))
    raw_s = time.perf_counter() - t

    t = time.perf_counter()
    raw_sorted = list(model._model.embed(sorted(texts, key=len), batch_size=32))
    raw_sorted_s = time.perf_counter() - t

    t = time.perf_counter()
    report = p.embed_pending(pending=pending)
    pipe_s = time.perf_counter() - t
    assert report.embedded == len(texts) == len(raw)
    p.close()
    v.close()
    out = {
        "texts": len(texts), "tokens": tokens, "mean_tokens": round(tokens / len(texts), 1),
        "raw_fastembed_s": round(raw_s, 2), "raw_texts_per_s": round(len(texts) / raw_s, 1),
        "pipeline_s": round(pipe_s, 2), "pipeline_texts_per_s": round(len(texts) / pipe_s, 1),
        "raw_sorted_s": round(raw_sorted_s, 2), "raw_sorted_texts_per_s": round(len(raw_sorted) / raw_sorted_s, 1),
        "pipeline_vs_raw": round(raw_s / pipe_s, 3), "pipeline_vs_raw_sorted": round(raw_sorted_s / pipe_s, 3),
        "chunking_s": round(chunk_s, 3), "traces_chunked": chunked, "bar": ">= 0.90",
    }
    return out


_CHILD = """
import json, resource, sys, time
from click.testing import CliRunner
from memvault.cli.main import cli
t = time.perf_counter()
r = CliRunner().invoke(cli, ["--vault", sys.argv[1], "sync", "--json"])
out = json.loads(r.stdout)
print(json.dumps({"seconds": time.perf_counter() - t, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "embedded": out["embedding"]["embedded"], "embed_seconds": out["embedding"]["seconds"], "notes": out["added"]}))
"""


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _sampled_child(vault: Path, env: dict[str, str]) -> dict[str, object]:
    """Run one first sync in a child, sampling its RSS every second.

    The timeline shows whether memory is flat as the run goes on: the peak of
    the run's second half against its first half is reported beside the peak.
    """
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(vault)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples: list[tuple[float, float]] = []
    t0 = time.perf_counter()
    while proc.poll() is None:
        rss = _rss_mb(proc.pid)
        if rss is not None:
            samples.append((round(time.perf_counter() - t0, 1), round(rss, 1)))
            if len(samples) % 60 == 0:  # a long run shows its course as it goes
                print(json.dumps({"seconds": samples[-1][0], "rss_mb": samples[-1][1],
                                  "peak_so_far_mb": max(r for _, r in samples)}), file=sys.stderr, flush=True)
        time.sleep(1.0)  # a sampling period, not a wait for a condition
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(stderr)
    row: dict[str, object] = json.loads(stdout.strip().splitlines()[-1])
    half = len(samples) // 2
    row["rss_peak_first_half_mb"] = max((r for _, r in samples[:half]), default=None)
    row["rss_peak_second_half_mb"] = max((r for _, r in samples[half:]), default=None)
    row["rss_timeline_mb"] = samples[:: max(1, len(samples) // 60)]
    row["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return row


def first_syncs(sizes: list[int], batch_tokens: list[int]) -> int:
    """Peak RSS and throughput of a first whole-process sync, per vault size and batch size."""
    sys.path.insert(0, str(BENCH))
    import _common as C

    (BENCH / "out").mkdir(exist_ok=True)
    results = []
    for notes in sizes:
        vault = C.generated_vault(notes, 1)
        for bt in batch_tokens:
            home = Path(tempfile.mkdtemp(prefix="bench-first-sync-", dir=BENCH / "out"))
            env = C.isolate_env(home)
            env["MEMVAULT_EMBEDDING_BATCH_TOKENS"] = str(bt)
            try:
                row = _sampled_child(vault, env)
            finally:
                shutil.rmtree(home, ignore_errors=True)
            row.update(vault_notes=notes, batch_tokens=bt,
                       texts_per_s=round(row["embedded"] / max(row["embed_seconds"], 1e-9), 1))
            print(json.dumps(row), flush=True)
            results.append(row)
    out = {"first_syncs": results, "machine": C.machine_info(), "bar": "peak RSS < 600 MB, flat from 6.6k to 20k notes"}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (BENCH / "out" / f"bench_embed-first-sync-{stamp}.json").write_text(json.dumps(out, indent=1))
    (BENCH / "out" / "bench_embed-first-sync-latest.json").write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
