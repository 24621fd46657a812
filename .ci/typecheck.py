#!/usr/bin/env python3
"""Type-check memvault with mypy (settings in pyproject.toml: strict on
``store/`` and ``vault_io/``, the default checks on ``daemon/`` and ``cli/``).

The source folders are installed as ``memvault.*`` through ``package-dir``,
which mypy cannot follow, so this lays the package out the way it is
installed (a temporary folder of symlinks) and checks it there. Exit status
is mypy's; its cache is kept in ``.mypy_cache`` at the repository root.

    python .ci/typecheck.py            # what CI runs
    python .ci/typecheck.py store/queries/  # only the modules at these paths
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: Source folder -> the package it is installed as (pyproject.toml's package-dir).
FOLDERS = {"store": "memvault.store", "vault_io": "memvault.vault_io", "daemon": "memvault.daemon", "cli": "memvault.cli"}


def module_of(path: str) -> str:
    """The dotted module name of a source path such as ``store/db/connection.py``."""
    parts = list(Path(path).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["memvault", *parts])


def main(argv: list[str]) -> int:
    """Check every package (or the modules named by path) and return mypy's status."""
    with tempfile.TemporaryDirectory(prefix="memvault-mypy-") as tmp:
        package = Path(tmp) / "memvault"
        package.mkdir()
        (package / "__init__.py").write_text("")
        for folder in FOLDERS:
            (package / folder).symlink_to(REPO / folder, target_is_directory=True)
        targets: list[str] = []
        for path in argv or list(FOLDERS):
            targets += ["-m" if path.endswith(".py") else "-p", module_of(path) if path.endswith(".py") else FOLDERS[path.strip("/")]]
        command = [
            sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
            "--cache-dir", str(REPO / ".mypy_cache"), *targets,
        ]
        return subprocess.run(command, cwd=tmp).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
