"""Helpers shared by the benchmark scripts: environment, vaults, stats, output."""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OUT = BENCH / "out"
VAULTS = BENCH / "vaults"
CORPUS = REPO.parent / "shared" / "corpora" / "vaultofknowledge"
VENV_BIN = Path(sys.executable).parent
MEMVAULT_EXE = VENV_BIN / "memvault"


# -- environment ---------------------------------------------------------------


def isolate_env(home: Path) -> dict[str, str]:
    """Point this process (and the children it starts) at a private memvault home.

    Clears every ``MEMVAULT_*`` variable the shell may carry, sets
    ``MEMVAULT_HOME`` to ``home`` and ``MEMVAULT_CONFIG`` to a file that does
    not exist, so no user config or real index is ever touched.
    """
    for key in list(os.environ):
        if key.startswith("MEMVAULT_"):
            del os.environ[key]
    home.mkdir(parents=True, exist_ok=True)
    os.environ["MEMVAULT_HOME"] = str(home)
    os.environ["MEMVAULT_CONFIG"] = str(home / "no-config.toml")
    return dict(os.environ)


def machine_info() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    info: dict[str, Any] = {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory": mem,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": os.getloadavg(),
    }
    try:
        import apsw

        info["apsw"] = apsw.apsw_version()
        info["sqlite"] = apsw.sqlite_lib_version()
    except ImportError:
        pass
    try:
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        info["git"] = rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        pass
    return info


# -- vaults --------------------------------------------------------------------


def generated_vault(notes: int, seed: int) -> Path:
    """The generated vault for (notes, seed), made once and kept in bench/vaults/."""
    sys.path.insert(0, str(BENCH))
    import gen_vault  # noqa: E402

    path = VAULTS / f"gen-{notes}-s{seed}"
    manifest = path / ".bench-manifest.json"
    if manifest.exists():
        m = json.loads(manifest.read_text())
        if m.get("notes") == notes and m.get("seed") == seed:
            return path
    if path.exists():
        shutil.rmtree(path)
    print(f"generating {notes}-note vault (seed {seed}) in {path} ...", flush=True)
    t = time.perf_counter()
    gen_vault.generate(path, notes, seed, gen_vault.DEFAULT_WORDS_FROM)
    print(f"  generated in {time.perf_counter() - t:.1f}s", flush=True)
    return path


def copy_vault(src: Path, parent: Path, name: str) -> Path:
    """A private copy of a vault (mtimes kept), so benchmarks may modify it."""
    dst = parent / name
    shutil.copytree(src, dst, symlinks=True)
    return dst


def count_notes(root: Path) -> int:
    n = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        n += sum(1 for f in filenames if f.lower().endswith(".md") and not f.startswith("."))
    return n


def tree_bytes(path: Path) -> int:
    total = 0
    for p in path.rglob("*"):
        if p.is_file():
            total += p.stat().st_size
    return total


def mktemp(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))


# -- statistics ----------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (with 5 samples p95 is the maximum)."""
    s = sorted(values)
    if not s:
        return float("nan")
    k = max(1, math.ceil(p / 100 * len(s)))
    return s[k - 1]


def summarize(values: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "median": statistics.median(values),
        "p95": percentile(values, 95),
        "min": min(values),
        "max": max(values),
        "mean": statistics.fmean(values),
    }


# -- output ----------------------------------------------------------------------


def write_json(name: str, data: dict[str, Any]) -> Path:
    """Write ``bench/out/NAME-<timestamp>.json`` and ``NAME-latest.json``."""
    OUT.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    path = OUT / f"{name}-{stamp}.json"
    path.write_text(text)
    (OUT / f"{name}-latest.json").write_text(text)
    return path


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def fmt(r: list[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([fmt(header), sep, *(fmt(r) for r in rows)])


def ms(x: float) -> str:
    return f"{x * 1000:.1f} ms"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def wait_ready(sock: socket.socket, proc: subprocess.Popen[bytes], timeout: float) -> float:
    """Seconds until a daemon started with NOTIFY_SOCKET bound to ``sock`` says READY=1."""
    start = time.perf_counter()
    sock.settimeout(0.5)
    while time.perf_counter() - start < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"daemon exited with {proc.returncode} before READY")
        try:
            if "READY=1" in sock.recv(4096).decode().split("\n"):
                return time.perf_counter() - start
        except socket.timeout:
            continue
    raise SystemExit("daemon not ready in time")


def start_daemon(vault: Path, notify: Path, *, model: bool = False, timeout: float = 300) -> subprocess.Popen[bytes]:
    """``memvault --vault VAULT daemon`` (vectors off unless ``model``), once it says READY=1 on ``notify``."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(notify))
    env = dict(os.environ, NOTIFY_SOCKET=str(notify))
    if not model:
        env["MEMVAULT_EMBEDDING_MODEL"] = "none"
    proc = subprocess.Popen([str(MEMVAULT_EXE), "--vault", str(vault), "daemon"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(sock, proc, timeout)
    finally:
        sock.close()
    return proc
