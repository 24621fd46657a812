"""`memvault model pull` and `memvault model status`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import write

from memvault.cli.main import cli


def run(vault: Path, *args: str):
    return CliRunner().invoke(cli, ["--vault", str(vault), *args])


def test_pull_of_the_bundled_model_verifies_it(vault: Path, memvault_env: Path) -> None:
    r = run(vault, "model", "pull")
    assert r.exit_code == 0, r.output
    assert "bundled and verified" in r.output
    folder = memvault_env / "models" / "all-MiniLM-L6-v2-onnx-int8"
    assert (folder / "model.onnx").exists() and (folder / "tokenizer.json").exists()


def test_pull_with_vectors_off_is_an_error(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDING_MODEL", "none")
    r = run(vault, "model", "pull")
    assert r.exit_code == 1 and "vectors are turned off" in r.output and "Traceback" not in r.output


def test_pull_of_an_unknown_model_says_so(vault: Path) -> None:
    r = run(vault, "model", "pull", "no-such/model-xyz")
    assert r.exit_code == 1 and "no-such/model-xyz" in r.output and "not a fastembed text model" in r.output


def test_status_counts_chunks_and_vectors(vault: Path) -> None:
    write(vault, "a.md", "A note about sourdough bread and its starter.")
    assert run(vault, "sync", "--no-embed").exit_code == 0
    before = json.loads(run(vault, "model", "status", "--json").stdout)
    assert before["model"] == "default" and before["embedded"] == 0 and before["queued"] == 1
    r = run(vault, "sync")
    assert r.exit_code == 0
    # One summary line, the embedding included.
    assert r.stdout.count("\n") == 1 and "nothing changed" in r.stdout and "embedded 1 texts" in r.stdout
    after = json.loads(run(vault, "model", "status", "--json").stdout)
    assert after["embedded"] == after["chunks"] == 1 and after["queued"] == 0 and after["unavailable"] is None
    r = run(vault, "model", "status")
    assert r.exit_code == 0 and "all-MiniLM-L6-v2" in r.output


def test_pull_without_a_network_fails_at_once(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket
    import time

    with socket.socket() as s:  # a port nothing listens on: the "proxy" refuses at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{port}")
    start = time.monotonic()
    r = run(vault, "model", "pull", "BAAI/bge-small-en-v1.5")
    assert r.exit_code == 1 and "cannot reach proxy 127.0.0.1" in r.output and "Traceback" not in r.output
    assert time.monotonic() - start < 10  # not huggingface_hub's ~40 s of retries
