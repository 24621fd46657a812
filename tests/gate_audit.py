"""Finding every write a module makes, for tests/test_gate.py.

:func:`raw_writes` reads a module's syntax tree and lists each call that
writes to the file system by itself (an ``open`` for writing, ``os.replace``,
``Path.unlink``, ``shutil.copy``...) and each import of a write primitive of
:mod:`memvault.vault_io.atomic` or :mod:`memvault.vault_io.replace`, which only
the gate calls for vault files. :class:`WriteLog` records, through Python's
audit hooks, the writes a process really makes under a folder.
"""

from __future__ import annotations

import ast
import os
import sys
import threading
from pathlib import Path
from typing import Any

#: Names a module may not import from the gate's tools (only the gate may).
PRIMITIVES = {
    "memvault.vault_io.atomic": {"atomic_write", "atomic_create", "atomic_write_many", "atomic_move", "append_lines", "atomic_stream"},
    "memvault.vault_io.replace": {"replace_if_unchanged", "remove_if_unchanged"},
}
#: Path methods that write.
PATH_WRITES = {"write_text", "write_bytes", "unlink", "rmdir", "mkdir", "touch", "symlink_to", "hardlink_to",
               "chmod"}
#: os functions that write.
OS_WRITES = {"replace", "rename", "renames", "link", "symlink", "unlink", "remove", "rmdir", "removedirs",
             "mkdir", "makedirs", "truncate", "chmod", "utime"}
SHUTIL_WRITES = {"copy", "copy2", "copyfile", "copytree", "move", "rmtree"}
TEMPFILE_WRITES = {"mkstemp", "mkdtemp", "TemporaryDirectory", "NamedTemporaryFile", "TemporaryFile"}
OPEN_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}


def _writes_mode(call: ast.Call, index: int, *, computed: bool = True) -> bool:
    """Whether the call's mode (argument ``index`` or ``mode=``) writes; a
    mode computed at run time counts as a write when ``computed``."""
    mode: ast.expr | None = call.args[index] if len(call.args) > index else None
    for kw in call.keywords:
        if kw.arg == "mode":
            mode = kw.value
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(c in mode.value for c in "wax+")
    return computed


def _call_writes(call: ast.Call) -> str | None:
    """What the call writes by itself, or None."""
    f = call.func
    if isinstance(f, ast.Name):
        if f.id == "open" and _writes_mode(call, 1):
            return "open(..., write mode)"
        return None
    if not isinstance(f, ast.Attribute):
        return None
    base = f.value.id if isinstance(f.value, ast.Name) else None
    name = f.attr
    if base == "os":
        if name == "open" and len(call.args) > 1 and OPEN_FLAGS & {
                n.attr for n in ast.walk(call.args[1]) if isinstance(n, ast.Attribute)}:
            return "os.open(..., write flags)"
        if name == "fdopen" and _writes_mode(call, 1):
            return "os.fdopen(..., write mode)"
        return f"os.{name}" if name in OS_WRITES else None
    if base == "shutil" and name in SHUTIL_WRITES:
        return f"shutil.{name}"
    if base == "tempfile" and name in TEMPFILE_WRITES:
        return f"tempfile.{name}"
    if base == "io" and name == "open" and _writes_mode(call, 1):
        return "io.open(..., write mode)"
    # x.open("w"): Path.open's first argument is the mode (a computed one is
    # some other open: a zip member's, a URL opener's, a store's).
    if name == "open" and _writes_mode(call, 0, computed=False):
        return ".open(write mode)"
    if name in PATH_WRITES:
        return f".{name}()"
    # Path.rename(target) / Path.replace(target): one argument (str.replace takes two).
    if name in ("rename", "replace") and len(call.args) == 1 and not call.keywords:
        return f".{name}(target)"
    return None


def raw_writes(path: Path, module: str) -> list[str]:
    """Each raw write and primitive import in the module at ``path``, as
    ``line: what`` strings."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            what = _call_writes(node)
            if what:
                found.append(f"{node.lineno}: {what}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            source = _absolute(node, module)
            banned = PRIMITIVES.get(source, set())
            for alias in node.names:
                if alias.name in banned:
                    found.append(f"{node.lineno}: imports {source}.{alias.name}")
                if f"{source}.{alias.name}" in PRIMITIVES:
                    found.append(f"{node.lineno}: imports the module {source}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in PRIMITIVES:
                    found.append(f"{node.lineno}: imports the module {alias.name}")
    return found


def _absolute(node: ast.ImportFrom, module: str) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".")[: -node.level]
    return ".".join([*package, *([node.module] if node.module else [])])


class WriteLog:
    """The writes this process makes under ``root`` while recording
    (Python's audit events: ``open`` for writing, ``os.rename`` (and
    ``os.replace``), ``os.remove``, ``os.mkdir``, ``os.link``,
    ``os.symlink``, ``os.truncate``), as ``(event, path)``; the audit hook
    stays installed for the process, recording only inside ``with``."""

    _installed = False
    _current: list[WriteLog] = []

    def __init__(self, root: Path) -> None:
        self.root = os.path.realpath(root)
        self.events: list[tuple[str, str]] = []
        self.thread = threading.get_ident()

    def __enter__(self) -> WriteLog:
        if not WriteLog._installed:
            sys.addaudithook(WriteLog._hook)
            WriteLog._installed = True
        WriteLog._current.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        WriteLog._current.remove(self)

    @staticmethod
    def _hook(event: str, args: tuple[Any, ...]) -> None:
        if not WriteLog._current:
            return
        paths: list[tuple[Any, Any]] = []  # (path, the folder descriptor it is relative to)
        if event == "open":
            path, mode, flags = args
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND))
            paths = [(path, "?")] if writes else []  # the event does not say which folder a name is in
        elif event in ("os.rename", "os.link"):
            paths = [(args[0], args[2]), (args[1], args[3])]
        elif event == "os.symlink":
            paths = [(args[1], args[2])]
        elif event in ("os.remove", "os.rmdir"):
            paths = [(args[0], args[1])]
        elif event == "os.mkdir":
            paths = [(args[0], args[2])]
        elif event in ("os.truncate", "os.chmod"):
            paths = [(args[0], None)]
        for log in WriteLog._current:
            if threading.get_ident() != log.thread:
                continue
            for p, folder in paths:
                if not isinstance(p, (str, bytes, os.PathLike)):
                    continue
                name = os.fsdecode(p)
                if not os.path.isabs(name) and folder == "?":
                    # A name opened in a folder held open (the gate's tools):
                    # named by itself, checked by name.
                    log.events.append((event, name))
                    continue
                if not os.path.isabs(name) and isinstance(folder, int) and folder >= 0:
                    name = os.path.join(os.readlink(f"/proc/self/fd/{folder}"), name)
                real = os.path.realpath(name)
                if real == log.root or real.startswith(log.root + "/"):
                    log.events.append((event, real))
