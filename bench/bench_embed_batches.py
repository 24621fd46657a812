"""Peak memory and throughput of embedding by batch size (``embedding.batch_tokens``).

Each setting runs in a fresh process (peak RSS is per process), over the
same texts: up to ``--texts`` paragraphs of the vaultofknowledge corpus,
counted with the bundled tokenizer and cut into memvault's own length-sorted,
token-bounded batches (:func:`memvault.store.embedding.pipeline.batches`),
embedded with the bundled model. Settings are interleaved over ``--rounds``
rounds, so a machine whose load changes treats each alike.

    python bench/bench_embed_batches.py --tokens 256 512 1024 2048 --rounds 2

Why it exists: onnxruntime keeps the arena memory of the largest batch it has
seen, so a batch of 2,048 padded tokens costs about 0.2 MB per token for the
rest of a run, while throughput on a CPU is flat across these sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
CORPUS = BENCH.parent.parent / "shared" / "corpora" / "vaultofknowledge"

_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from memvault.store.embedding import vectors as vec
from memvault.store.embedding.model import count_tokens, load_embedder, resolve_model
from memvault.store.embedding.pipeline import batches

corpus, limit, batch_tokens, home = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
paras = []
for p in sorted(corpus.rglob("*.md")):
    for para in p.read_text(errors="replace").split("\n\n"):
        if len(para.strip()) > 40:
            paras.append(para.strip()[:1500])
    if len(paras) >= limit:
        break
paras = paras[:limit]
tokens = [min(t, 128) for t in count_tokens(paras, special=True)]
pending = [vec.PendingChunk(i, b"", t) for i, t in enumerate(tokens)]
pending.sort(key=lambda p: p.tokens)
model = load_embedder(resolve_model("default"), home)
start = time.perf_counter()
for batch in batches(pending, batch_tokens):
    model.embed([paras[p.id] for p in batch])
seconds = time.perf_counter() - start
print(json.dumps({"batch_tokens": batch_tokens, "texts": len(paras), "tokens": sum(tokens),
                  "seconds": round(seconds, 2), "texts_per_s": round(len(paras) / seconds, 1),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


def main() -> int:
    """Run every batch size ``--rounds`` times, interleaved; print and save the rows."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, nargs="+", default=[256, 512, 1024, 2048])
    ap.add_argument("--texts", type=int, default=1200)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    if not CORPUS.is_dir():
        raise SystemExit(f"the corpus {CORPUS} is not here")
    sys.path.insert(0, str(BENCH))
    import _common as C

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-embed-batches-") as tmp:
        env = C.isolate_env(Path(tmp) / "home")
        for _ in range(args.rounds):
            for bt in args.tokens:
                r = subprocess.run([sys.executable, "-c", _CHILD, str(CORPUS), str(args.texts), str(bt),
                                    str(Path(tmp) / "home")], env=env, capture_output=True, text=True)
                if r.returncode != 0:
                    raise SystemExit(r.stderr)
                row = json.loads(r.stdout.strip().splitlines()[-1])
                row["load_average"] = [round(x, 2) for x in os.getloadavg()]
                print(json.dumps(row), flush=True)
                rows.append(row)
    out = {"rows": rows, "machine": C.machine_info(), "when": time.strftime("%Y-%m-%d %H:%M")}
    (BENCH / "out").mkdir(exist_ok=True)
    (BENCH / "out" / "bench_embed_batches-latest.json").write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
