"""Which import format a file is, when ``memvault import PATH`` names none.

Every format's own check (:mod:`.precheck`: the files its importer reads, and
the shape of the first item, line or header of each) is asked whether it
takes ``path``; so a file is taken for a format exactly when ``memvault
import FORMAT PATH`` would accept it. Only cheap looks: the first element of
a JSON array, the first line, the first 64 KiB; never a whole file (a
ChatGPT export can be gigabytes). Exactly one format takes it: that one.
None, or more than one (an empty JSON array is both a ChatGPT export and a
mem0 dump; a folder of notes and CSV files is both): refused in one line
naming the candidates, so the person names the format. A guess is never made.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from memvault.store.flows.importers import precheck
from memvault.store.flows.importers.stream import ImportFormatError, Member, iter_array
from memvault.vault_io.errors import MemvaultError

#: The formats tried, in the order a refusal names them (``jsonl`` is ``json``'s reader).
CANDIDATES = ("json", "chatgpt", "claude", "mem0", "mcp-memory", "csv", "markdown")
_HEAD = 1 << 16
#: The header of memvault's export (a document's first key, or the first line of jsonl).
_EXPORT_RE = re.compile(r'"format"\s*:\s*"memvault-export"')


class AmbiguousFormat(ImportFormatError):
    """A file no format, or more than one, takes (nothing is imported)."""


def detect(path: Path) -> str:
    """The one format that takes ``path`` (module docstring); :class:`AmbiguousFormat` otherwise."""
    taken = [fmt for fmt in CANDIDATES if _takes(fmt, path)]
    if len(taken) == 1:
        return taken[0]
    if not taken:
        raise AmbiguousFormat(f"{path} is in no format memvault imports ({', '.join(CANDIDATES)}): "
                              "name the format, memvault import FORMAT PATH")
    raise AmbiguousFormat(f"{path} could be {' or '.join(taken)}: name the format, "
                          f"memvault import {taken[0]} PATH")


def _takes(fmt: str, path: Path) -> bool:
    """Whether the format's importer would take ``path``."""
    try:
        found = precheck._files(fmt, path)
        if not found:
            return False
        given = path.is_file() and not precheck._is_zip(path)
        if fmt == "markdown":
            return not given or path.name.lower().endswith((".md", ".markdown"))
        if fmt == "json":
            return len(found) == 1 and _export_head(found[0])
        test: Callable[[Member, Path], bool] = _mem0 if fmt == "mem0" else precheck._SHAPES[fmt]
        return all(test(member, path) for member in found)
    except (MemvaultError, OSError, UnicodeDecodeError, ValueError):
        return False


def _head(member: Member) -> str:
    with member.opener() as fh:
        return bytes(fh.read(_HEAD)).decode("utf-8-sig", "replace")


def _export_head(member: Member) -> bool:
    """memvault's own export: its header (the document's or the first line) says so."""
    head = _head(member).lstrip()
    return head.startswith("{") and _EXPORT_RE.search(head[:4096]) is not None


def _mem0(member: Member, path: Path) -> bool:
    """A mem0 dump, from its start: ``{"results": [...]}`` (or ``memories``), or
    an array whose first object has ``memory`` (or ``text``) text."""
    head = _head(member).lstrip()
    if head.startswith("{"):
        return any(f'"{k}"' in head[:4096] for k in ("results", "memories"))
    with member.opener() as fh:
        for item in iter_array(fh, member.name):
            return isinstance(item, dict) and isinstance(item.get("memory", item.get("text")), str)
    return True  # an empty array: a dump with nothing in it (and a ChatGPT export too: ambiguous)
