"""TOML (Codex's ``config.toml``) changed by a line edit of one table, every other byte kept.

No format-preserving TOML library fits: ``tomlkit`` drops the comment line
that introduces the table after the one it removes or replaces. So the file
is read as lines by a small scanner (:func:`lines_of`) that knows TOML's
strings (one-line and multi-line, basic and literal), comments and values
spanning lines (arrays), and so finds the real table headers; a change
replaces or removes the lines of one table and its sub-tables:

- a table's lines run from its header to its last line that is not blank
  or a comment: blank and comment lines before the next header stay (they
  introduce what follows);
- comment lines inside the table stay too (written above its new lines,
  or left where they were when the table goes); a comment at the end of one
  of its key lines goes with that line;
- a table that is replaced is written where it was (where its first part
  was, if its sub-tables are elsewhere); a new one is appended.

The caller checks the result with a real TOML reader (``tomllib``): the
edited document must equal the original with only that table changed.
"""

from __future__ import annotations

import json
import re
from typing import Any

_BARE = re.compile(r"[A-Za-z0-9_-]+")


class TomlEditError(ValueError):
    """The text cannot be scanned (a header or string the scanner does not understand)."""


def key(name: str) -> str:
    """``name`` as a TOML key: bare when it can be, else quoted."""
    return name if _BARE.fullmatch(name) else json.dumps(name, ensure_ascii=False)


def value(v: Any) -> str:
    """``v`` (str, bool, int, float, list, dict) as a one-line TOML value."""
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    return json.dumps(str(v), ensure_ascii=False)  # a TOML basic string is JSON-compatible


def render(path: tuple[str, ...], entry: dict[str, Any]) -> str:
    """The table ``[path]`` holding ``entry``, one key a line."""
    return f"[{'.'.join(key(p) for p in path)}]\n" + "".join(f"{key(k)} = {value(v)}\n" for k, v in entry.items())


def _close(line: str, pos: int, quote: str) -> int:
    """The offset in ``line`` after the string delimiter ``quote`` (one or three
    quote characters) that closes a string whose content starts at ``pos``, or -1."""
    j = pos
    while j < len(line):
        if quote[0] == '"' and line[j] == "\\":
            j += 2
        elif line.startswith(quote, j):
            end = j + len(quote)
            if len(quote) == 3:  # up to two quotes of content just before the closing three
                while end < len(line) and line[end] == quote[0] and end - j < 5:
                    end += 1
            return end
        else:
            j += 1
    return -1


def _header(line: str) -> tuple[str, ...]:
    """The key path of a table header line (``[a.b]``, ``[[a."b c"]]``, a comment after it)."""
    i = line.index("[")
    double = line.startswith("[[", i)
    j = i + (2 if double else 1)
    parts: list[str] = []
    while True:
        while j < len(line) and line[j] in " \t":
            j += 1
        if j < len(line) and line[j] in "\"'":
            end = _close(line, j + 1, line[j])
            if end < 0:
                raise TomlEditError(f"cannot read the table header {line.strip()!r}")
            raw = line[j:end]
            parts.append(json.loads(raw) if raw[0] == '"' else raw[1:-1])
            j = end
        else:
            m = _BARE.match(line, j)
            if m is None:
                raise TomlEditError(f"cannot read the table header {line.strip()!r}")
            parts.append(m.group())
            j = m.end()
        while j < len(line) and line[j] in " \t":
            j += 1
        if j < len(line) and line[j] == ".":
            j += 1
            continue
        close = "]]" if double else "]"
        rest = line[j + len(close):].strip()
        if not line.startswith(close, j) or (rest and not rest.startswith("#")):
            raise TomlEditError(f"cannot read the table header {line.strip()!r}")
        return tuple(parts)


#: A line (with its newline), its kind and, for a header, its key path.
Line = tuple[str, str, "tuple[str, ...] | None"]


def lines_of(text: str) -> list[Line]:
    """Each line (with its newline) as (text, kind, header path): kind is
    ``header``, ``blank``, ``comment`` (a comment alone), ``value`` (a key
    line) or ``inside`` (a line that starts inside a multi-line string or a
    value spanning lines)."""
    out: list[Line] = []
    depth = 0  # open [ and { of a value
    string = ""  # the delimiter of the multi-line string a line starts in
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        pos = 0
        if string or depth > 0:
            kind = "inside"
        elif not stripped:
            out.append((line, "blank", None))
            continue
        elif stripped.startswith("#"):
            out.append((line, "comment", None))
            continue
        elif stripped.startswith("["):
            out.append((line, "header", _header(line)))
            continue
        else:
            kind = "value"
        if string:
            pos = _close(line, 0, string)
            if pos < 0:
                out.append((line, kind, None))
                continue
            string = ""
        while pos < len(line):
            c = line[pos]
            if c == "#":
                break
            if c in "\"'":
                quote = c * 3 if line.startswith(c * 3, pos) else c
                end = _close(line, pos + len(quote), quote)
                if end < 0:
                    if len(quote) == 1:
                        raise TomlEditError(f"unterminated string in {stripped[:60]!r}")
                    string = quote
                    break
                pos = end
                continue
            if c in "[{":
                depth += 1
            elif c in "]}":
                depth -= 1
            pos += 1
        out.append((line, kind, None))
    if string:
        raise TomlEditError("unterminated multi-line string")
    return out


def _spans(text: str, path: tuple[str, ...]) -> tuple[list[Line], list[tuple[int, int]]]:
    """The lines, and the (first, last + 1) line ranges of ``[path]`` and its sub-tables."""
    lines = lines_of(text)
    spans: list[tuple[int, int]] = []
    k = 0
    while k < len(lines):
        _, kind, p = lines[k]
        if kind == "header" and p is not None and p[: len(path)] == path:
            last, m = k, k + 1
            while m < len(lines) and lines[m][1] != "header":
                if lines[m][1] in ("value", "inside"):
                    last = m
                m += 1
            spans.append((k, last + 1))
            k = m
        else:
            k += 1
    return lines, spans


def remove_table(text: str, path: tuple[str, ...]) -> tuple[str, bool]:
    """``text`` without ``[path]`` and its sub-tables (their comment lines
    stay), and whether there was one."""
    lines, spans = _spans(text, path)
    drop = {k for first, stop in spans for k in range(first, stop) if lines[k][1] != "comment"}
    return "".join(line for k, (line, _, _) in enumerate(lines) if k not in drop), bool(spans)


def set_table(text: str, path: tuple[str, ...], entry: dict[str, Any]) -> str:
    """``text`` with ``[path]`` (and its sub-tables) replaced by ``entry``'s
    table where it was (its comment lines above it), or appended after a blank line."""
    newline = "\r\n" if "\r\n" in text else "\n"  # the file's own line ending
    block = render(path, entry).replace("\n", newline)
    lines, spans = _spans(text, path)
    if not spans:
        return (text.rstrip("\r\n") + newline * 2 if text.strip() else "") + block
    inside = {k for first, stop in spans for k in range(first, stop)}
    comments = [lines[k][0] for k in sorted(inside) if lines[k][1] == "comment"]
    out: list[str] = []
    for k, (line, _, _) in enumerate(lines):
        if k == spans[0][0]:
            out.extend(comments)
            out.append(block)
        if k not in inside:
            out.append(line)
    return "".join(out)


def set_key(text: str, table: tuple[str, ...], name: str, v: Any) -> str:
    """``text`` with ``name = v`` in ``[table]``: its line replaced where the
    key is (a comment after it goes with the old value), else added after
    the table's last key line, else the table appended after a blank line.
    Only that line changes; the caller checks the result with ``tomllib``."""
    newline = "\r\n" if "\r\n" in text else "\n"
    line = f"{key(name)} = {value(v)}{newline}"
    lines, spans = _spans(text, table)
    own = [(first, stop) for first, stop in spans if lines[first][2] == table]
    if not own:
        return (text.rstrip("\r\n") + newline * 2 if text.strip() else "") + render(table, {name: v}).replace(
            "\n", newline)
    first, stop = own[0]
    assign = re.compile(r"\s*(?:" + re.escape(name) + "|" + re.escape(json.dumps(name)) + r")\s*=")
    out = [entry[0] for entry in lines]
    for k in range(first + 1, stop):
        if lines[k][1] == "value" and assign.match(lines[k][0]):
            indent = lines[k][0][: len(lines[k][0]) - len(lines[k][0].lstrip())]
            out[k] = indent + line
            return "".join(out)
    last = out[stop - 1]
    if not last.endswith("\n"):
        out[stop - 1] = last + newline
    out.insert(stop, line)
    return "".join(out)
