"""The project an agent's session works in: its scope, and whether it wants memory at all.

A session (a hook's ``cwd``, the folder an MCP server was started in) works
in a project: the folder's git root (the nearest folder upwards holding a
``.git`` folder or file: a worktree, a submodule), else the folder itself.
Its **scope** is the project folder's name, the scope memories of the
project carry (``memvault add --scope``); a ``.memvault`` file in the
project can name it instead, and can turn memory off for the project::

    # .memvault (in the project, beside .git; read, never written)
    scope: billing-api
    memory: off

The nearest ``.memvault`` from the working folder up to the project root
counts. It is read as ``key: value`` lines (``#`` comments; at most
:data:`MARKER_MAX` bytes; other keys ignored), never as YAML, whose ``off``
would be a boolean. ``memory: off`` (or ``false``, ``no``, ``none``): the
hooks and the MCP server store nothing for sessions of the project and
recall nothing into them (see :mod:`memvault.store.pause`).

Read without the store: hooks call :func:`project_at` in their own process.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: The file a project uses to name its scope or turn memory off.
MARKER = ".memvault"
#: Most bytes of a marker file read (a marker is a few lines).
MARKER_MAX = 4096
#: Values of ``memory:`` that turn memory off (as a session note's ``memory``:
#: :data:`memvault.vault_io.session_note.MEMORY_OFF`, not imported: hooks read this module).
OFF = frozenset({"off", "false", "no", "none", "0", "disabled"})


@dataclass(frozen=True)
class Project:
    """The project a session works in."""

    #: The git root (else the working folder).
    root: Path
    #: The scope its memories carry: the marker's ``scope``, else the root's name.
    scope: str
    #: The marker file says ``memory: off``.
    memory_off: bool = False
    #: The marker file read (None: none).
    marker: Path | None = None


def read_marker(path: Path) -> dict[str, str]:
    """The ``key: value`` lines of a marker file (module docstring); {} when unreadable."""
    try:
        with path.open("rb") as fh:
            data = fh.read(MARKER_MAX)
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in data.decode("utf-8", "replace").splitlines():
        text = line.split("#", 1)[0].strip()
        key, colon, value = text.partition(":")
        if colon and key.strip():
            out[key.strip().lower()] = value.strip().strip("'\"").strip()
    return out


def _root(folder: Path) -> Path:
    """The nearest folder from ``folder`` up holding ``.git``, else ``folder``."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def project_at(folder: str | Path | None) -> Project | None:
    """The project of a working folder (None: no folder given, or not one)."""
    if not folder:
        return None
    start = Path(folder).expanduser()
    try:
        start = start.resolve()
        if not start.is_dir():
            return None
    except OSError:
        return None
    root = _root(start)
    marker: Path | None = None
    for candidate in (start, *start.parents):
        if (candidate / MARKER).is_file():
            marker = candidate / MARKER
            break
        if candidate == root:
            break
    values = read_marker(marker) if marker is not None else {}
    scope = " ".join(values.get("scope", "").split()) or root.name or str(root)
    return Project(root, scope[:200], values.get("memory", "").lower() in OFF, marker)
