"""JSON with comments (JSONC), read, and changed without losing the comments.

VS Code's ``mcp.json`` (like its settings) is JSONC: ``//`` and ``/* */``
comments and trailing commas are allowed, and people use them. Such a file
is read by blanking its comments and trailing commas with spaces
(:func:`blank`): every other character keeps its offset, so a member found
in the blanked text is at the same place in the original, and a change is
made as a text edit of the original (:func:`set_member`,
:func:`remove_member`) that leaves every comment outside the changed member
where it was.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from memvault.vault_io import json_input

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


class JsoncError(ValueError):
    """Text that is not JSON even with its comments and trailing commas blanked."""


def blank(text: str) -> str:
    """``text`` with comments (outside strings) and trailing commas replaced
    by spaces (newlines kept), so every other character keeps its offset."""
    return _blank(text)[0]


def _blank(text: str) -> tuple[str, list[int]]:
    """:func:`blank`, and the offsets of the trailing commas it blanked."""
    trailing: list[int] = []
    out = list(text)
    i, n = 0, len(text)
    last_comma = -1  # a comma that may turn out to be trailing
    while i < n:
        c = text[i]
        if c == '"':
            last_comma = -1
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out[i:end] = " " * (end - i)
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out[i:end] = [ch if ch in "\r\n" else " " for ch in text[i:end]]
            i = end
        else:
            if c == ",":
                last_comma = i
            elif c in "}]" and last_comma >= 0:
                out[last_comma] = " "  # a trailing comma: nothing follows it before the close
                trailing.append(last_comma)
                last_comma = -1
            elif c not in _WS:
                last_comma = -1
            i += 1
    return "".join(out), trailing


def loads(text: str) -> Any:
    """The value a JSONC text holds."""
    try:
        return json_input.loads(blank(text))
    except ValueError as exc:
        raise JsoncError(str(exc)) from None


def has_comments(text: str) -> bool:
    """Whether blanking changes ``text`` (it holds comments or trailing commas)."""
    return blank(text) != text


@dataclass
class Member:
    """One ``"key": value`` of an object, by offsets into the text."""

    key: str
    start: int  # the key's opening quote
    value_start: int
    value_end: int
    comma: int | None  # the comma after the value, if any


def members(clean: str, start: int) -> tuple[list[Member], int]:
    """The members of the object whose ``{`` is at ``start`` in the blanked
    text, and the offset of its closing ``}``."""
    if clean[start] != "{":
        raise JsoncError(f"no object at offset {start}")
    found: list[Member] = []
    i = _skip(clean, start + 1)
    while clean[i] != "}":
        key, after = _DECODER.raw_decode(clean, i)
        colon = _skip(clean, after)
        if clean[colon] != ":":
            raise JsoncError(f"expected ':' at offset {colon}")
        value_start = _skip(clean, colon + 1)
        _, value_end = _DECODER.raw_decode(clean, value_start)
        j = _skip(clean, value_end)
        comma = j if clean[j] == "," else None
        found.append(Member(key, i, value_start, value_end, comma))
        i = _skip(clean, j + 1) if comma is not None else j
    return found, i


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    if i >= len(text):
        raise JsoncError("the text ends inside an object")
    return i


def _indent_at(text: str, offset: int) -> str:
    line_start = text.rfind("\n", 0, offset) + 1
    return re.match(r"[ \t]*", text[line_start:]).group(0)  # type: ignore[union-attr]


def _render(key: str, value: Any, indent: str) -> str:
    body = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)
    return f"{json.dumps(key, ensure_ascii=False)}: {body}"


def set_member(text: str, path: tuple[str, ...], key: str, value: Any) -> str:
    """``text`` with ``key`` of the object at ``path`` (keys from the top,
    created when missing) set to ``value``; every other byte stays."""
    clean = blank(text)
    start = _skip(clean, 0)
    for depth, step in enumerate(path):
        found, _ = members(clean, start)
        hit = next((m for m in found if m.key == step), None)
        if hit is None:
            nested: Any = {key: value}
            for outer in reversed(path[depth + 1:]):
                nested = {outer: nested}
            return _insert(text, clean, start, step, nested)
        start = hit.value_start
    found, _ = members(clean, start)
    hit = next((m for m in found if m.key == key), None)
    if hit is None:
        return _insert(text, clean, start, key, value)
    indent = _indent_at(text, hit.start)
    rendered = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)
    return text[:hit.value_start] + rendered + text[hit.value_end:]


def _insert(text: str, clean: str, start: int, key: str, value: Any) -> str:
    """Add ``"key": value`` as the last member of the object at ``start``
    (on a line of its own, after any comment that ends the line before)."""
    found, close = members(clean, start)
    if found:
        last = found[-1]
        indent = _indent_at(text, last.start)
        member = _render(key, value, indent)
        trailing = next((i for i in _blank(text)[1] if last.value_end <= i < close), None)
        if trailing is not None:  # JSONC allows a comma after the last member: keep it, add after it
            after = trailing + 1
        else:
            text = text[:last.value_end] + "," + text[last.value_end:]
            clean = clean[:last.value_end] + "," + clean[last.value_end:]
            after = last.value_end + 1
        eol = text.find("\n", after)
        if eol >= 0 and not clean[after:eol].strip():
            after = eol  # only blanks or a comment follow on that line: they stay with it
        return text[:after] + "\n" + indent + member + text[after:]
    outer = _indent_at(text, start)
    indent = outer + "  "
    head = text[:close].rstrip(" \t")
    head += "" if head.endswith("\n") else "\n"
    return head + indent + _render(key, value, indent) + "\n" + outer + text[close:]


def remove_member(text: str, path: tuple[str, ...], key: str) -> str:
    """``text`` without ``key`` of the object at ``path``; every other byte stays
    (a missing key or object leaves it as it is)."""
    clean = blank(text)
    start = _skip(clean, 0)
    for step in path:
        found, _ = members(clean, start)
        hit = next((m for m in found if m.key == step), None)
        if hit is None or clean[hit.value_start] != "{":
            return text
        start = hit.value_start
    found, close = members(clean, start)
    index = next((i for i, m in enumerate(found) if m.key == key), None)
    if index is None:
        return text
    m = found[index]
    comma = m.comma if m.comma is not None else next(
        (i for i in _blank(text)[1] if m.value_end <= i < close), None)
    end = comma + 1 if comma is not None else m.value_end
    line_start = text.rfind("\n", 0, m.start) + 1
    eol = text.find("\n", end)
    if not text[line_start:m.start].strip() and eol >= 0 and not text[end:eol].strip():
        begin, end = line_start, eol + 1  # the member had its lines to itself: they go with it
    else:
        begin = m.start
    out = text[:begin] + text[end:]
    before = found[index - 1].comma if index > 0 else None
    if comma is None and before is not None:  # the member was the last: the comma before it goes too
        out = out[:before] + out[before + 1:]
    return out
