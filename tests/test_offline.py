"""No network, no model: every command still answers at once, with keyword
results and one clear notice, and nothing ever tries to download.

The commands run as real processes with the network made unusable: every
proxy variable points at a closed local port (and HF_HUB_OFFLINE is unset,
so only memvault's own offline rule stands between fastembed and its ~39 s
download retry loop), and, where ``unshare -rn`` works, inside a network
namespace with no interfaces at all.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import write

MEMVAULT = [sys.executable, "-c", "from memvault.cli.main import main; main()"]
#: Models that are not on this machine: a real fastembed model, and the
#: fastembed name of the default model (which fastembed would fetch from the hub).
MISSING_MODELS = ["BAAI/bge-small-en-v1.5", "sentence-transformers/all-MiniLM-L6-v2"]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unshare_works() -> bool:
    if not shutil.which("unshare"):
        return False
    r = subprocess.run(["unshare", "-rn", "true"], capture_output=True)
    return r.returncode == 0


def offline_env(home: Path, model: str) -> dict[str, str]:
    proxy = f"http://127.0.0.1:{closed_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMVAULT_", "HF_", "HTTP", "HTTPS", "ALL_PROXY"))}
    env.update(
        MEMVAULT_HOME=str(home), MEMVAULT_CONFIG=str(home / "none.toml"), MEMVAULT_EMBEDDING_MODEL=model,
        HTTPS_PROXY=proxy, HTTP_PROXY=proxy, ALL_PROXY=proxy, https_proxy=proxy, http_proxy=proxy,
        NO_PROXY="", HOME=str(home),
    )
    return env


@pytest.fixture
def small_vault(vault: Path) -> Path:
    write(vault, "Alpha.md", "# Alpha\nAlpha retries with exponential backoff.\n")
    write(vault, "Memory/semantic/m-1.md", "---\nid: m-1\ntype: semantic\n---\nDeploys retry with backoff on Fridays.\n")
    return vault


#: What "at once" means here: a wait on the network (fastembed's download retry
#: loop takes ~39 s; a TCP connect timeout, tens of seconds) is far above it,
#: while a loaded 2-core CI runner can stretch an ordinary command's ~1 s to
#: five. How fast the commands are is measured in bench/, not asserted here.
NO_NETWORK_WAIT_S = 20.0


def run(cmd: list[str], env: dict[str, str], netns: bool) -> tuple[subprocess.CompletedProcess[str], float]:
    full = (["unshare", "-rn"] if netns else []) + cmd
    start = time.monotonic()
    r = subprocess.run(full, capture_output=True, text=True, env=env, timeout=60)
    return r, time.monotonic() - start


@pytest.mark.parametrize(
    ("model", "netns"),
    [(MISSING_MODELS[0], False), (MISSING_MODELS[1], True)],
    ids=["closed-proxy", "no-network-namespace"],
)
def test_every_command_answers_promptly_with_one_notice(small_vault: Path, tmp_path: Path, model: str, netns: bool) -> None:
    if netns and not unshare_works():
        pytest.skip("unshare -rn is not available here")
    env = offline_env(tmp_path / "home", model)
    v = ["--vault", str(small_vault)]
    commands = [
        (v + ["sync"], "added 2"),
        (v + ["search", "backoff"], "Alpha"),
        (v + ["search", "backoff", "--mode", "semantic"], "Alpha"),
        (v + ["search", "backoff", "--mode", "hybrid", "--json"], '"title": "Alpha"'),
        (v + ["context", "backoff retry"], "Deploys retry with backoff"),
        (v + ["sync"], "nothing changed"),
    ]
    for args, expected in commands:
        r, seconds = run(MEMVAULT + args, env, netns)
        assert r.returncode == 0, (args, r.stderr)
        assert seconds < NO_NETWORK_WAIT_S, (args, seconds)
        assert expected in r.stdout, (args, r.stdout, r.stderr)
        notices = [line for line in r.stderr.splitlines() if line.startswith("notice:")]
        assert len(notices) == 1, (args, r.stderr)
        assert model in notices[0] and "memvault model pull" in notices[0]
        assert "Traceback" not in r.stderr and "huggingface" not in r.stderr.lower()
    assert not any((tmp_path / "home" / "fastembed").rglob("*.onnx"))  # nothing was downloaded


def test_background_worker_gives_up_at_once_offline(small_vault: Path, tmp_path: Path) -> None:
    env = offline_env(tmp_path / "home", MISSING_MODELS[0])
    code = (
        "import time, sys\n"
        "from memvault.store.memory_store import MemoryStore\n"
        "from memvault.daemon.embedding_service import EmbeddingService\n"
        f"v = MemoryStore.open({str(small_vault)!r}); v.sync()\n"
        "w = EmbeddingService(v, poll_interval=0.05); t = time.monotonic(); w.start()\n"
        "while not w.status()['unavailable'] and time.monotonic() - t < 30: time.sleep(0.02)\n"
        "w.stop(); print('UNAVAILABLE', round(time.monotonic() - t, 2), w.status()['unavailable'])\n"
    )
    r, seconds = run([sys.executable, "-c", code], env, False)
    assert r.returncode == 0, r.stderr
    assert "UNAVAILABLE" in r.stdout and "not available offline" in r.stdout
    assert seconds < NO_NETWORK_WAIT_S, (seconds, r.stdout)


def test_loading_the_model_leaves_no_telemetry_traces(tmp_path: Path) -> None:
    """onnxruntime's telemetry is off: nothing in ~/.cache/Microsoft, no /tmp/.ses,
    so no session for it to report over the network later."""
    home = tmp_path / "home"
    home.mkdir()
    code = (
        "from pathlib import Path; from memvault.store.embedding.model import load_embedder, resolve_model; "
        f"print(load_embedder(resolve_model('default'), Path({str(home / 'mv')!r})).embed(['a text']).shape)"
    )
    cmd = [sys.executable, "-c", code]
    trace = tmp_path / "trace.txt"
    if shutil.which("strace"):
        cmd = ["strace", "-f", "-qq", "-e", "trace=openat,connect", "-o", str(trace), *cmd]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORT_")}
    r = subprocess.run(cmd, env={**env, "HOME": str(home)}, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "(1, 384)" in r.stdout, r.stderr
    assert not (home / ".cache").exists()
    if trace.exists():
        calls = trace.read_text()
        assert "/.ses" not in calls and "Microsoft" not in calls
        assert "AF_INET" not in calls
