"""Editing front-matter a line at a time, so every other byte stays as it was.

Re-serialising a whole YAML block would reorder keys, re-quote strings and
drop comments a person wrote. Instead the block is cut into top-level key
spans (the key line plus its indented or ``- `` continuation lines) and only
the spans of the keys being set or removed are replaced. The file's BOM and
line endings (LF or CRLF) are kept, and inserted lines use the file's own
line ending.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

_FENCE = re.compile(r"---[ \t]*$")
# A top-level key: starts at column 0, is not a comment or list item, and has
# ':' followed by a space or the end of the line. Quoted keys are allowed.
_KEY_LINE = re.compile(r"""^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#\-'"][^:]*?|-[^\s:][^:]*?)[ \t]*:(?=[ \t]|\r?\n|$)""")
_LOADER: type = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader


class _IndentedDumper(yaml.SafeDumper):
    """Dump block lists indented under their key (``tags:\\n  - a``), the way
    Obsidian writes properties."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:  # noqa: FBT001
        return super().increase_indent(flow, False)


def dump_key(key: str, value: Any, newline: str = "\n") -> str:
    """One top-level key as YAML lines ending in ``newline``."""
    text = yaml.dump(
        {key: value},
        Dumper=_IndentedDumper,
        allow_unicode=True,
        default_flow_style=False,
        sort_keys=False,
        width=1 << 30,
    )
    return text.replace("\n", newline)


@dataclass
class _Block:
    """Where the front-matter sits in a file's lines."""

    start: int  # index of the first YAML line (after the opening ---)
    end: int  # index of the closing --- line
    newline: str


def _find_block(lines: list[str]) -> _Block | None:
    if not lines:
        return None
    first = lines[0].lstrip("\ufeff")
    if not (first.endswith("\n") and _FENCE.match(first.rstrip("\r\n"))):
        return None
    newline = "\r\n" if first.endswith("\r\n") else "\n"
    for i in range(1, len(lines)):
        if _FENCE.match(lines[i].rstrip("\r\n")):
            return _Block(1, i, newline)
    return None


def _key_spans(lines: list[str], block: _Block) -> dict[str, tuple[int, int]]:
    """Top-level key -> [first line, end line) within the block."""
    spans: dict[str, tuple[int, int]] = {}
    current: str | None = None
    start = block.start
    for i in range(block.start, block.end):
        m = _KEY_LINE.match(lines[i])
        if m:
            if current is not None:
                spans.setdefault(current, (start, _trim_blank_tail(lines, start, i)))
            current, start = _unquote(m.group(1)), i
    if current is not None:
        spans.setdefault(current, (start, _trim_blank_tail(lines, start, block.end)))
    return spans


def _trim_blank_tail(lines: list[str], start: int, end: int) -> int:
    # Blank lines and comments after a key's value belong to the layout, not
    # to the key: removing the key keeps them.
    while end - 1 > start and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    return end


def _unquote(key: str) -> str:
    if len(key) >= 2 and key[0] == key[-1] and key[0] in "'\"":
        try:
            loaded = yaml.load(f"{key}: 0", Loader=_LOADER)
            return str(next(iter(loaded)))
        except yaml.YAMLError:
            return key[1:-1]
    return key


def _same_value(span_text: str, key: str, value: Any) -> bool:
    try:
        loaded = yaml.load(span_text, Loader=_LOADER)
    except yaml.YAMLError:
        return False
    return isinstance(loaded, dict) and key in loaded and loaded[key] == value


def edit_frontmatter(text: str, set_keys: Mapping[str, Any] | None = None, remove: Iterable[str] = ()) -> str:
    """Return ``text`` with top-level front-matter keys set or removed.

    A key whose current value already equals the new one keeps its lines
    byte for byte; a new key is appended at the end of the block; a file
    without front-matter gets a new block at the top (after any BOM). With
    nothing to change the very same string comes back.
    """
    set_keys = dict(set_keys or {})
    remove = [k for k in remove if k not in set_keys]
    lines = text.splitlines(keepends=True)
    block = _find_block(lines)
    if block is None:
        if not set_keys:
            return text
        first_nl = text.find("\n")
        newline = "\r\n" if first_nl > 0 and text[first_nl - 1] == "\r" else "\n"
        bom = "\ufeff" if text.startswith("\ufeff") else ""
        head = "---" + newline + "".join(dump_key(k, v, newline) for k, v in set_keys.items()) + "---" + newline
        return bom + head + text[len(bom) :]
    spans = _key_spans(lines, block)
    replacements: dict[int, tuple[int, str]] = {}  # start line -> (end line, new text)
    for key in remove:
        if key in spans:
            s, e = spans[key]
            replacements[s] = (e, "")
    appended = []
    for key, value in set_keys.items():
        if key in spans:
            s, e = spans[key]
            if not _same_value("".join(lines[s:e]), key, value):
                replacements[s] = (e, dump_key(key, value, block.newline))
        else:
            appended.append(dump_key(key, value, block.newline))
    if not replacements and not appended:
        return text
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i in replacements:
            end, new = replacements[i]
            out.append(new)
            i = end
            continue
        if i == block.end and appended:
            if out and not out[-1].endswith("\n"):
                out[-1] += block.newline
            out.extend(appended)
        out.append(lines[i])
        i += 1
    return "".join(out)


def duplicate_keys(text: str) -> list[str]:
    """Top-level keys written more than once in the file's front-matter.

    YAML loaders keep the last one, but a line edit would touch the first:
    callers refuse to edit such a key rather than change the wrong line.
    """
    lines = text.splitlines(keepends=True)
    block = _find_block(lines)
    if block is None:
        return []
    seen: dict[str, int] = {}
    for i in range(block.start, block.end):
        m = _KEY_LINE.match(lines[i])
        if m:
            key = _unquote(m.group(1))
            seen[key] = seen.get(key, 0) + 1
    return [k for k, n in seen.items() if n > 1]


def frontmatter_key_order(text: str) -> list[str]:
    """The top-level keys of the file's front-matter, in file order."""
    lines = text.splitlines(keepends=True)
    block = _find_block(lines)
    return list(_key_spans(lines, block)) if block else []
