"""Where an index lives: a private folder per vault in the user data dir.

The index is a derived cache, so it never goes inside the vault (Obsidian
Sync, git and backups would copy it). ``MEMVAULT_HOME`` moves the whole data
dir, which tests and benchmarks use to stay out of the real home.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

try:  # CPython's built-in SHA-256: hashlib loads OpenSSL, ~5 ms of a per-turn hook's start
    from _sha2 import sha256  # Python >= 3.12
except ImportError:
    try:
        from _sha256 import sha256  # Python 3.11
    except ImportError:  # a build without them
        from hashlib import sha256

INDEX_FILE = "index.db"
#: The durable state beside it (see memvault.store.db.state_schema).
STATE_FILE = "state.db"


def user_dir(kind: str) -> Path:
    """memvault's per-user ``"data"`` or ``"config"`` folder for this platform.

    On Linux this is the XDG base directory (what platformdirs returns too),
    computed here because importing platformdirs costs a short-lived CLI
    process ~15 ms; other platforms ask platformdirs.
    """
    if sys.platform.startswith("linux"):
        var, fallback = ("XDG_DATA_HOME", "~/.local/share") if kind == "data" else ("XDG_CONFIG_HOME", "~/.config")
        base = os.environ.get(var, "").strip()
        return Path(base if os.path.isabs(base) else os.path.expanduser(fallback)) / "memvault"
    import platformdirs

    getter = platformdirs.user_data_dir if kind == "data" else platformdirs.user_config_dir
    return Path(getter("memvault", appauthor=False))


def data_home() -> Path:
    """memvault's data dir: ``$MEMVAULT_HOME`` or the platform's user data dir."""
    env = os.environ.get("MEMVAULT_HOME")
    if env:
        return Path(env).expanduser()
    return user_dir("data")


def vault_data_dir(vault_root: Path) -> Path:
    """The folder holding the index (and lock, socket) of one vault.

    Named after the vault folder for people looking around, plus a hash of
    its real path so two vaults called ``Notes`` never share an index.
    """
    real = os.path.realpath(vault_root)
    digest = sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(real).name).strip("-.")[:40] or "vault"
    return data_home() / "vaults" / f"{name}-{digest}"


def make_private_dirs(path: Path) -> Path:
    """Create ``path`` and every missing folder above it owner-only (0700).
    Folders that exist are left as they are: ``~/.local/share``, or a
    ``MEMVAULT_HOME`` the person made, is not memvault's to change."""
    missing = []
    folder = path
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
    return path


def ensure_private_dir(path: Path) -> Path:
    """A vault's data dir (or another folder of memvault's own), owner-only
    (0700) even when it exists; every folder memvault has to create on the
    way to it is made 0700 too (:func:`make_private_dirs`)."""
    make_private_dirs(path)
    os.chmod(path, 0o700)
    return path


def ensure_data_home() -> Path:
    """memvault's data home, created owner-only (0700) with every missing
    folder above it when it is not there yet (whichever process runs first:
    a hook, the CLI, the MCP server, the daemon); one that exists is left as
    it is."""
    return make_private_dirs(data_home())


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (symlinks resolved)."""
    real, base = os.path.realpath(path), os.path.realpath(folder)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def index_path(vault_root: Path) -> Path:
    """The index database file of the vault at ``vault_root``."""
    return vault_data_dir(vault_root) / INDEX_FILE


def memvault_executable() -> Path | None:
    """The absolute path (symlinks resolved) of the ``memvault`` command for
    another process to start later (the systemd unit, an MCP client, a
    hook): the running one (``argv[0]`` when it is ``memvault``), else the
    one installed beside this Python (its venv), else the one on PATH; None
    when there is none. The one answer for ``service install`` and the
    client installers, so both start the install that wrote them."""
    import shutil

    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    beside = Path(sys.executable).parent / "memvault" if sys.executable else None
    for candidate in (argv0 if argv0 is not None and argv0.name == "memvault" else None, beside):
        if candidate is not None and candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate.resolve()
    found = shutil.which("memvault")
    return Path(found).resolve() if found else None
