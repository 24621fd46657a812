"""`memvault service install/uninstall`: the user unit, systemctl present or not."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memvault.cli.main import cli
from memvault.daemon import systemd as service
from memvault.store.location import data_home

REPO = Path(__file__).resolve().parent.parent
MEMVAULT_EXE = Path(sys.executable).parent / "memvault"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


@pytest.fixture
def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """XDG_CONFIG_HOME in tmp, and a PATH holding only ``bin`` (no systemctl)."""
    config = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    return config


def fake_systemctl(bin_dir: Path, code: int = 0, stderr: str = "") -> Path:
    """A systemctl that logs its arguments and exits with ``code``."""
    log = bin_dir / "systemctl.log"
    script = bin_dir / "systemctl"
    script.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\n' + (f'echo "{stderr}" >&2\n' if stderr else "") + f"exit {code}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return log


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def exe() -> str:
    if not MEMVAULT_EXE.exists():
        pytest.skip(f"no memvault executable at {MEMVAULT_EXE}")
    return str(MEMVAULT_EXE)


def test_committed_template_is_the_one_rendered() -> None:
    assert (REPO / "systemd" / "memvault.service").read_text(encoding="utf-8") == service.TEMPLATE


def test_install_without_systemctl_writes_the_unit_and_says_what_to_run(vault: Path, user_config: Path) -> None:
    code, out = invoke("--vault", str(vault), "service", "install", "--enable", "--exec", exe())
    assert code == 0, out
    unit = user_config / "systemd" / "user" / "memvault.service"
    text = unit.read_text()
    assert f"ExecStart={exe()} --vault {vault} daemon" in text
    assert f"Environment=MEMVAULT_HOME={os.environ['MEMVAULT_HOME']}" in text
    assert f"ReadWritePaths={vault} {data_home()}" in text  # the model folder lives there too
    for setting in ("Type=notify", "WatchdogSec=60", "Restart=on-failure", "NoNewPrivileges=yes", "UMask=0077",
                    "PrivateTmp=yes", "ProtectSystem=strict", "RestrictAddressFamilies=AF_UNIX"):
        assert setting in text.splitlines()
    assert "@" not in text.replace("@...@", "")  # every placeholder filled
    assert f"wrote {unit}" in out
    assert "systemctl not found" in out
    assert "systemctl --user daemon-reload" in out and "systemctl --user enable --now memvault.service" in out
    assert data_home().is_dir()  # ReadWritePaths= must exist

    code, out = invoke("service", "uninstall")
    assert code == 0, out
    assert not unit.exists() and f"removed {unit}" in out
    assert "systemctl --user disable --now memvault.service" in out
    code, out = invoke("service", "uninstall")
    assert code == 0 and "nothing to remove" in out


def test_llm_extractor_lets_the_service_reach_its_endpoint(
    vault: Path, user_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMVAULT_EXTRACTOR", "llm")
    code, out = invoke("--vault", str(vault), "service", "install", "--exec", exe())
    assert code == 0, out
    text = (user_config / "systemd" / "user" / "memvault.service").read_text()
    assert "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6" in text.splitlines()


def test_install_and_uninstall_run_systemctl(vault: Path, user_config: Path, tmp_path: Path) -> None:
    log = fake_systemctl(tmp_path / "bin")
    code, out = invoke("--vault", str(vault), "service", "install", "--enable", "--exec", exe())
    assert code == 0, out
    assert log.read_text().splitlines() == ["--user daemon-reload", "--user enable --now memvault.service"]
    assert "ran `systemctl --user enable --now memvault.service`" in out
    code, out = invoke("service", "uninstall")
    assert code == 0, out
    assert log.read_text().splitlines()[2:] == ["--user disable --now memvault.service", "--user daemon-reload"]


def test_install_without_a_user_bus(vault: Path, user_config: Path, tmp_path: Path) -> None:
    fake_systemctl(tmp_path / "bin", code=1, stderr="Failed to connect to bus: No medium found")
    code, out = invoke("--vault", str(vault), "service", "install", "--exec", exe())
    assert code == 0, out  # the unit was written; the rest is for the user to run
    assert "Failed to connect to bus" in out and "systemctl --user daemon-reload" in out
    assert (user_config / "systemd" / "user" / "memvault.service").exists()


def no_memvault_beside_python(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """This Python as if installed where no memvault command sits beside it."""
    (tmp_path / "python-only").mkdir()
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python-only" / "python"))


def test_executable_found_on_path(vault: Path, user_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_memvault_beside_python(monkeypatch, tmp_path)
    fake = tmp_path / "bin" / "memvault"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    code, out = invoke("--vault", str(vault), "service", "install")
    assert code == 0, out
    assert f"ExecStart={fake.resolve()} --vault" in (user_config / "systemd" / "user" / "memvault.service").read_text()


def test_no_executable_is_an_error(vault: Path, user_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_memvault_beside_python(monkeypatch, tmp_path)
    code, out = invoke("--vault", str(vault), "service", "install")
    assert code == 1 and "cannot find the memvault executable" in out


def test_the_memvault_beside_this_python_wins_over_path(vault: Path, user_config: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The unit starts the install that wrote it (as the MCP client entries do), not another on PATH."""
    from memvault.store.location import memvault_executable

    venv = tmp_path / "venv-bin"
    venv.mkdir()
    mine = venv / "memvault"
    mine.write_text("#!/bin/sh\n")
    mine.chmod(0o755)
    other = tmp_path / "bin" / "memvault"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(venv / "python"))
    assert memvault_executable() == mine.resolve()
    code, out = invoke("--vault", str(vault), "service", "install")
    assert code == 0, out
    assert f"ExecStart={mine.resolve()} --vault" in (user_config / "systemd" / "user" / "memvault.service").read_text()


def test_quoting_of_odd_paths() -> None:
    assert service.quote("/plain/path") == "/plain/path"
    assert service.quote("/with space/50%") == '"/with space/50%%"'
    assert service.quote('/a"b') == '"/a\\"b"'
    assert service.quote("/cost$HOME", exec_arg=True) == "/cost$$HOME"


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize(("name", "network"), [("vault", False), ("My Vault 100%", False), ("vault", True)])
def test_rendered_unit_passes_systemd_analyze_verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, network: bool
) -> None:
    root = tmp_path / name
    root.mkdir()
    monkeypatch.setenv("MEMVAULT_CONFIG", str(tmp_path / "my config.toml"))
    text = service.render(Path(exe()), root, data_home(), service.carried_env(), network=network)
    unit = tmp_path / "memvault.service"
    unit.write_text(text)
    # `--user` needs a runtime dir to set up its (offline) manager; the
    # container has no user session, so give it a private one.
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    proc = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", "--user", str(unit)],
        env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "", proc.stderr  # no warnings either


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
def test_verify_catches_a_bad_unit(tmp_path: Path) -> None:
    # The check above can fail: a unit pointing at a missing binary does.
    unit = tmp_path / "memvault.service"
    unit.write_text(service.render(tmp_path / "no-such-memvault", tmp_path, tmp_path))
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    proc = subprocess.run([SYSTEMD_ANALYZE, "verify", "--user", str(unit)],
                          env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)}, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "no-such-memvault" in proc.stderr
