"""Redaction: speed on adversarial lines and on a real vault, and quality on a labelled set.

Every figure is given beside the same run's baseline: the redactor of an
earlier commit (``--base``, default the commit before the linear redactor),
imported from ``git show BASE:vault_io/secrets.py`` written to a temp file.

Speed (``--only speed``):

- adversarial 64 KiB lines (repeated key-prefix words, long tokens, many cues,
  separators): median and p95 CPU time of ``redact`` over ``--rounds``; the
  baseline runs each case in a child process with ``--old-timeout`` seconds
  (it is quadratic on some: a case that exceeds it is reported as such), at
  4 KiB and 16 KiB too, to show its growth;
- the vaultofknowledge corpus (``../shared/corpora/vaultofknowledge``): every
  note's text redacted, as indexing does: median and p95 of the pass's CPU
  time, MB/s.

Quality (``--set FILE``, a JSON set of ``{"class", "text", "secrets"}`` cases):
per class, the share of secret substrings that no longer occur in the
output (recall) for positive classes, and the share of texts left
unchanged for negative ones (cases whose ``secrets`` is empty), new beside
the baseline.

    python bench/bench_redact.py                      # speed (~1-3 min: the baseline is slow)
    python bench/bench_redact.py --set tests/fixtures/secrets/tune/secrets-tune.json --only quality
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing as mp
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import _common as C

from memvault.vault_io import secrets as new_secrets

DEFAULT_BASE = "dc46757"  # main before the linear redactor
Redact = Callable[[str], tuple[str, int]]


def old_module(base: str) -> ModuleType:
    """The redactor of commit ``base``, imported from a temp file."""
    source = subprocess.run(["git", "show", f"{base}:vault_io/secrets.py"], cwd=C.REPO, check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp(prefix="memvault-old-redact-")) / "old_secrets.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_secrets", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def adversarial(n: int) -> dict[str, str]:
    """Lines of ``n`` characters built to make a backtracking redactor slow."""
    def fill(unit: str) -> str:
        return (unit * (n // len(unit) + 1))[:n]

    return {
        "prefix words then a key (a_a_..._pass)": fill("a_") + "pass",
        "key-prefix words (db_password_ ...)": fill("db_password_ "),
        "chained keys (api_key_token_secret_...)": fill("api_key_token_secret_"),
        "keys and signs (key:key:...)": fill("key:"),
        "hyphenated keys (password-...)": fill("password-"),
        "bare keys (password password ...)": fill("password "),
        "pairs (user x pass ...)": fill("user x pass "),
        "long options (--password ...)": fill("--password "),
        "URL schemes (a://b:...)": fill("a://b:"),
        "a long value (password: A1b2...)": "password: " + fill("A1b2"),
        "a long token (ghp_aaa...)": "ghp_" + fill("a"),
        "qualifiers (password for the a b c ...)": fill("password for the a b c d e f "),
        "separator run (password: + spaces)": "password:" + " " * n + "x9",
    }


def _time_cpu(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def _old_case(base_file: str, text: str, queue: Any) -> None:
    spec = importlib.util.spec_from_file_location("old_secrets", base_file)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    queue.put(_time_cpu(lambda: module.redact(text)))


def old_time(module: ModuleType, text: str, timeout: float) -> float | None:
    """CPU seconds of the baseline on ``text`` in a child process, None past ``timeout``."""
    queue: Any = mp.Queue()
    proc = mp.Process(target=_old_case, args=(module.__file__, text, queue))
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.kill()
        proc.join()
        return None
    return float(queue.get())


def speed(old: ModuleType, rounds: int, old_timeout: float, corpus: Path) -> dict[str, Any]:
    """Adversarial lines and the corpus, new beside old."""
    out: dict[str, Any] = {"adversarial": [], "corpus": {}}
    rows = []
    for name, text in adversarial(64 * 1024).items():
        times = [_time_cpu(lambda: new_secrets.redact(text)) for _ in range(rounds)]
        olds = {}
        for size in (4096, 16384, 65536):
            olds[size] = old_time(old, adversarial(size)[name], old_timeout)
        s = C.summarize(times)
        out["adversarial"].append({"case": name, "new": s, "old_cpu_s": olds})
        fmt = {k: (f"{v * 1000:.0f} ms" if v is not None else f"> {old_timeout:.0f} s") for k, v in olds.items()}
        rows.append([name, f"{s['median'] * 1000:.1f} / {s['p95'] * 1000:.1f} ms", fmt[4096], fmt[16384], fmt[65536]])
    print(C.table(rows, ["64 KiB line", "new median / p95", "old 4 KiB", "old 16 KiB", "old 64 KiB"]))
    texts = [p.read_text(errors="replace") for p in sorted(corpus.rglob("*.md")) if ".obsidian" not in p.parts]
    size_mb = sum(len(t.encode()) for t in texts) / 1e6
    for label, fn in (("new", new_secrets.redact), ("old", old.redact)):
        passes = [_time_cpu(lambda f=fn: [f(t) for t in texts]) for _ in range(rounds)]
        s = C.summarize(passes)
        out["corpus"][label] = {**s, "mb_per_s": size_mb / s["median"]}
    out["corpus"]["notes"], out["corpus"]["mb"] = len(texts), size_mb
    print(f"\ncorpus: {len(texts)} notes, {size_mb:.1f} MB, {rounds} passes (CPU)")
    for label in ("new", "old"):
        c = out["corpus"][label]
        print(f"  {label}: median {c['median']:.3f} s, p95 {c['p95']:.3f} s, {c['mb_per_s']:.1f} MB/s")
    return out


def score(cases: list[dict[str, Any]], redact: Redact) -> dict[str, dict[str, float]]:
    """Per class: recall of secret substrings (positives) or share of texts unchanged (negatives)."""
    hit: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for case in cases:
        out, _ = redact(case["text"])
        counts = hit[case["class"]]
        if case["secrets"]:
            counts[0] += sum(1 for s in case["secrets"] if s not in out)
            counts[1] += len(case["secrets"])
        else:
            counts[0] += out == case["text"]
            counts[1] += 1
    return {k: {"share": v[0] / v[1], "n": v[1], "negative": not any(
        c["secrets"] for c in cases if c["class"] == k)} for k, v in sorted(hit.items())}


def quality(path: Path, old: ModuleType, show: bool) -> dict[str, Any]:
    """The labelled set's scores, new beside old."""
    cases = json.loads(path.read_text())["cases"]
    new, base = score(cases, new_secrets.redact), score(cases, old.redact)
    rows = []
    for cls in new:
        what = "unchanged" if new[cls]["negative"] else "recall"
        rows.append([cls, what, str(new[cls]["n"]), f"{base[cls]['share']:.2f}", f"**{new[cls]['share']:.2f}**"])
    pos = [c for c in cases if c["secrets"]]
    neg = [c for c in cases if not c["secrets"]]
    for label, fn in (("new", new_secrets.redact), ("old", old.redact)):
        r = sum(1 for c in pos for s in c["secrets"] if s not in fn(c["text"])[0]) / sum(len(c["secrets"]) for c in pos)
        k = sum(1 for c in neg if fn(c["text"])[0] == c["text"]) / max(1, len(neg))
        print(f"{label}: recall {r:.3f} over {len(pos)} positive texts, negatives unchanged {k:.3f} over {len(neg)}")
    print(C.table(rows, ["class", "measure", "n", "baseline", "new"]))
    if show:
        for c in cases:
            out = new_secrets.redact(c["text"])[0]
            missed = [s for s in c["secrets"] if s in out]
            if missed or (not c["secrets"] and out != c["text"]):
                print(f"- [{c['class']}] {c['id']}: {c['text']!r}\n    -> {out!r}\n    missed {missed}")
    return {"new": new, "old": base}


def main() -> None:
    """Parse the arguments, run the parts asked for, write bench/out/bench_redact.json."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default=DEFAULT_BASE, help="commit whose redactor is the baseline")
    ap.add_argument("--only", choices=["speed", "quality"], help="run one part")
    ap.add_argument("--set", type=Path, help="labelled set (JSON) for the quality part")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--old-timeout", type=float, default=60.0, help="seconds per baseline adversarial case")
    ap.add_argument("--show", action="store_true", help="print every case the new redactor gets wrong")
    ap.add_argument("--corpus", type=Path, default=C.CORPUS, help="vault whose notes are the throughput corpus")
    args = ap.parse_args()
    old = old_module(args.base)
    result: dict[str, Any] = {"machine": C.machine_info(), "base": args.base}
    print(f"{result['machine']['date']}, load {result['machine']['loadavg_at_start']}, baseline {args.base}")
    if args.only in (None, "speed"):
        result["speed"] = speed(old, args.rounds, args.old_timeout, args.corpus)
    if args.only in (None, "quality") and args.set:
        result["quality"] = quality(args.set, old, args.show)
    print(f"\nwritten {C.write_json('bench_redact', result)}")
    print(f"load at the end {statistics.mean(__import__('os').getloadavg()):.2f} (1/5/15-min mean)")


if __name__ == "__main__":
    sys.path.insert(0, str(C.BENCH))
    main()
