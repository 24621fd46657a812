"""One logging set-up (memvault.cli.logs): each role's output, and hooks.log's one writer."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault.cli import turn_hook
from memvault.cli.logs import HOOK_LOGGER, hook_log, setup_logging

LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00 (\S+) pid \d+: (.*)$")


@pytest.fixture(autouse=True)
def logging_restored() -> Iterator[None]:
    """Each role changes process-wide loggers: put them back after each test."""
    names = ("", "memvault", HOOK_LOGGER, "watchdog")
    saved = {n: (logging.getLogger(n).handlers[:], logging.getLogger(n).level, logging.getLogger(n).propagate)
             for n in names}
    yield
    for n, (handlers, level, propagate) in saved.items():
        logger = logging.getLogger(n)
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


def test_hook_lines_go_to_hooks_log_in_the_current_data_dir(memvault_env: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    hook_log("gave up after 2.10s\n(budget 2.0s); printed nothing", "prompt")
    lines = (memvault_env / "hooks.log").read_text().splitlines()
    assert len(lines) == 1 and LINE.match(lines[0]).groups() == ("prompt", "gave up after 2.10s (budget 2.0s); printed nothing")
    other = tmp_path / "other-home"
    monkeypatch.setenv("MEMVAULT_HOME", str(other))
    hook_log("no transcript_path", "session-end")
    assert "session-end" in (other / "hooks.log").read_text()
    assert len((memvault_env / "hooks.log").read_text().splitlines()) == 1


def test_hooks_log_rotates_past_its_size(memvault_env: Path) -> None:
    log = memvault_env / "hooks.log"
    log.write_text("x" * (turn_hook.LOG_MAX_BYTES + 1))
    hook_log("after the rotation", "turn")
    assert (memvault_env / "hooks.log.1").stat().st_size == turn_hook.LOG_MAX_BYTES + 1
    assert LINE.match(log.read_text().strip()).group(2) == "after the rotation"


def test_hook_lines_never_reach_stderr_nor_raise(memvault_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (memvault_env / "hooks.log").mkdir()  # cannot be written
    hook_log("lost, quietly", "prompt")
    assert capsys.readouterr() == ("", "")


def test_daemon_role_journal_prefix_under_systemd(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("JOURNAL_STREAM", "8:1234")
    setup_logging("daemon")
    logging.getLogger("memvault.daemon").info("synced\nsecond line")
    logging.getLogger("memvault.daemon").debug("not shown without -v")
    assert capsys.readouterr().err == "<6>synced\n<6>second line\n"
    monkeypatch.delenv("JOURNAL_STREAM")
    setup_logging("daemon", verbose=True)
    logging.getLogger("memvault.daemon").debug("shown with -v")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d DEBUG shown with -v\n", capsys.readouterr().err)


def test_mcp_role_keeps_a_set_up_already_there_and_clears_the_cli_one() -> None:
    root = logging.getLogger()
    before = root.handlers[:]
    setup_logging("cli")
    setup_logging("mcp")
    assert logging.getLogger("memvault").handlers == [] and logging.getLogger("memvault").propagate
    assert root.handlers == before  # pytest's capture stays (as logging.basicConfig would leave it)


def test_processes_warn_on_stderr_as_before(tmp_path: Path, memvault_env: Path) -> None:
    """`memvault` (role cli) prints a library warning as the bare message on
    stderr; `memvault mcp` (role mcp) prefixes it, on stderr, never stdout."""
    probe = ("import logging, sys; from memvault.cli.logs import setup_logging; setup_logging(sys.argv[1]); "
             "logging.getLogger('memvault.store.x').warning('careful'); logging.getLogger('memvault.x').info('quiet')")
    for role, err in (("cli", "careful\n"), ("mcp", "memvault mcp: WARNING memvault.store.x: careful\n")):
        p = subprocess.run([sys.executable, "-c", probe, role], capture_output=True, text=True, timeout=30)
        assert (p.returncode, p.stdout, p.stderr) == (0, "", err)
