"""``memvault service``: install the daemon as a systemd user service.

The unit template lives in ``systemd/memvault.service`` in the source tree;
:data:`TEMPLATE` below is the same text (a test keeps the two equal) so an
installed package needs no data files. :func:`render` fills it in for the
vault being served, the running memvault executable and memvault's
environment; :func:`install` writes it to the user unit folder and asks
``systemctl --user`` to reload (and enable). Where systemctl is missing or
cannot reach the user manager, the unit is still written and the commands
to run are returned instead: writing the file is the part memvault owns.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from memvault.vault_io.errors import MemvaultError

UNIT_NAME = "memvault.service"

TEMPLATE = """\
# memvault daemon as a systemd *user* service: keeps the index of one
# Obsidian vault up to date while you are logged in.
#
# This is a template: `memvault service install` fills in the @...@ fields
# (the memvault executable, the vault, memvault's data dir and environment)
# and writes the result to ~/.config/systemd/user/memvault.service.
[Unit]
Description=memvault: keep the index of an Obsidian vault up to date

[Service]
Type=notify
ExecStart=@EXEC@ --vault @VAULT@ daemon
@ENVIRONMENT@
# The daemon pings every WatchdogSec/2; a hung daemon is restarted.
WatchdogSec=60
# A first index of a large vault takes a while (the daemon also asks for
# more time with EXTEND_TIMEOUT_USEC while it indexes).
TimeoutStartSec=10min
Restart=on-failure
RestartSec=5
# Sandbox: read-only system, writable only the vault (memory notes) and the
# index; private /tmp; no privilege gain; Unix sockets only (sd_notify).
NoNewPrivileges=yes
UMask=0077
PrivateTmp=yes
ProtectSystem=strict
ReadWritePaths=@VAULT@ @DATA_DIR@
RestrictAddressFamilies=AF_UNIX

[Install]
WantedBy=default.target
"""

#: Environment variables carried into the unit when set: where the index
#: and the config live must be the same for the service as for the CLI, and
#: the transcript folders the per-turn ingest accepts (see .turn_paths) the
#: same as the hooks'.
CARRIED_ENV = ("MEMVAULT_HOME", "MEMVAULT_CONFIG", "MEMVAULT_TRANSCRIPT_DIRS", "CLAUDE_CONFIG_DIR", "CODEX_HOME")


class ServiceError(MemvaultError):
    """The unit cannot be rendered or written."""


def unit_dir() -> Path:
    """The systemd user unit folder: ``$XDG_CONFIG_HOME/systemd/user``."""
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    config = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    return config / "systemd" / "user"


def unit_path() -> Path:
    """Where ``memvault service install`` writes the unit."""
    return unit_dir() / UNIT_NAME


def quote(value: str, *, exec_arg: bool = False) -> str:
    """One word for a unit file: ``%`` doubled (specifiers), ``$`` doubled in
    ExecStart (variable expansion), and double quotes around anything with
    spaces, quotes or backslashes."""
    value = value.replace("%", "%%")
    if exec_arg:
        value = value.replace("$", "$$")
    if any(c.isspace() or c in "\"'\\;" for c in value):
        value = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return value


def render(
    exe: Path, vault: Path, data_dir: Path, env: dict[str, str] | None = None, *, network: bool = False
) -> str:
    """The unit text for serving ``vault`` with ``exe``; ``env`` becomes Environment= lines.

    ``network`` lets the daemon open IP sockets (the llm fact extractor talks
    HTTP to its endpoint); otherwise it may only use Unix sockets.
    """
    lines = [f"Environment={quote(f'{k}={v}')}" for k, v in sorted((env or {}).items())]
    text = TEMPLATE.replace("@ENVIRONMENT@\n", "".join(line + "\n" for line in lines))
    if network:
        text = text.replace("RestrictAddressFamilies=AF_UNIX\n", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6\n")
    # ExecStart expands $VARIABLES, other settings do not: quote it apart.
    exec_line = f"{quote(str(exe), exec_arg=True)} --vault {quote(str(vault), exec_arg=True)}"
    text = text.replace("ExecStart=@EXEC@ --vault @VAULT@", f"ExecStart={exec_line}")
    return text.replace("@VAULT@", quote(str(vault))).replace("@DATA_DIR@", quote(str(data_dir)))


def carried_env() -> dict[str, str]:
    """The memvault variables of this environment the service must share."""
    return {k: os.environ[k] for k in CARRIED_ENV if os.environ.get(k)}


@dataclass
class Outcome:
    """What install/uninstall did, and what is left for the user to run."""

    done: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    todo: list[str] = field(default_factory=list)


def _systemctl(args: list[str], outcome: Outcome) -> bool:
    """Run ``systemctl --user ARGS``; on failure note the command for the user."""
    command = ["systemctl", "--user", *args]
    shown = " ".join(command)
    exe = shutil.which("systemctl")
    if exe is None:
        outcome.warnings.append(f"systemctl not found; run `{shown}` where systemd runs")
        outcome.todo.append(shown)
        return False
    try:
        proc = subprocess.run([exe, "--user", *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        reason = str(exc)
    else:
        if proc.returncode == 0:
            outcome.done.append(f"ran `{shown}`")
            return True
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
        reason = last[0] if last else f"exit code {proc.returncode}"
    outcome.warnings.append(f"`{shown}` failed ({reason}); run it yourself in your login session")
    outcome.todo.append(shown)
    return False


def install(exe: Path, vault: Path, data_dir: Path, *, enable: bool = False, network: bool = False) -> Outcome:
    """Write the unit for ``vault`` and reload (and with ``enable`` enable and start) it."""
    outcome = Outcome()
    path = unit_path()
    text = render(exe, vault, data_dir, carried_env(), network=network)
    existed = path.exists()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)  # ReadWritePaths= must exist
        tmp = path.with_name(f".{UNIT_NAME}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise ServiceError(f"cannot write {path}: {exc.strerror or exc}") from exc
    outcome.done.append(f"{'updated' if existed else 'wrote'} {path} (vault {vault})")
    reloaded = _systemctl(["daemon-reload"], outcome)
    if enable:
        if reloaded:
            _systemctl(["enable", "--now", UNIT_NAME], outcome)
        else:
            outcome.todo.append(f"systemctl --user enable --now {UNIT_NAME}")
    elif reloaded:
        outcome.todo.append(f"systemctl --user enable --now {UNIT_NAME}")
    return outcome


def uninstall() -> Outcome:
    """Stop and disable the service, remove its unit file, reload."""
    outcome = Outcome()
    path = unit_path()
    if not path.exists():
        outcome.done.append(f"no unit at {path}; nothing to remove")
        return outcome
    stopped = _systemctl(["disable", "--now", UNIT_NAME], outcome)
    try:
        path.unlink()
    except OSError as exc:
        raise ServiceError(f"cannot remove {path}: {exc.strerror or exc}") from exc
    outcome.done.append(f"removed {path}")
    if stopped:
        _systemctl(["daemon-reload"], outcome)
    else:
        outcome.todo.append("systemctl --user daemon-reload")
    return outcome
