"""YAML front-matter: finding it, loading it safely, and reading Obsidian's keys.

Obsidian's rule for front-matter is narrow: the very first line of the file
is ``---`` and a later line is ``---`` (trailing spaces allowed on both; the
YAML ``...`` end marker does not count).  Anything else is body text.

Loading refuses what an index must not trust: more than ``max_bytes`` of
YAML, anchors and aliases (the "billion laughs" expansion), and absurd
nesting (libyaml's composer recurses in C and crashes the interpreter on
tens of thousands of nested ``[``).  What loads is converted to plain JSON
values, so ``ParsedNote.frontmatter`` can always be stored as JSON.
"""

from __future__ import annotations

import base64
import datetime as _dt
import math
import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.vault_io.errors import MemvaultError
from memvault.vault_io.markdown import normalise_tag, wikilink
from memvault.vault_io.syntax import WIKILINK_RE

if TYPE_CHECKING:
    import yaml

    from memvault.vault_io.note import Link

DEFAULT_MAX_BYTES = 65536
MAX_DEPTH = 100  # nesting levels; real front-matter uses two or three


@cache
def _loader() -> type:
    """The safe YAML loader, libyaml's C one when it is there. PyYAML is
    imported on first use: a keyword search reads notes' sections through
    this module (:func:`frontmatter_end`) but never loads YAML."""
    import yaml

    return yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader


_OPEN_RE = re.compile(r"---[ \t]*(?:\n|$)")
_CLOSE_RE = re.compile(r"^---[ \t]*$", re.M)
# A top-level key at column 0: plain, "double" or 'single' quoted.  A plain
# key is taken up to its first ":" (possessive "*+", so a long line without a
# colon costs one scan, not one per character); blanks before ":" are trimmed.
_KEY_RE = re.compile(
    r"^(?:\"((?:[^\"\\\n]|\\.)*)\"|'((?:[^'\n]|'')*)'|([^\s#'\"\[\]{}|>,&*!%@`?:-][^\n:]*+))"
    r"[ \t]*:(?=[ \t]|$)",
    re.M,
)
_QUOTED_RE = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\n]|'')*'")
_SPLIT_TAGS_RE = re.compile(r"[,\s]+")
_COMPACT_RE = re.compile(r"(?:[ \t]*[-?](?:[ \t]+|$))*")


class FrontmatterError(MemvaultError):
    """Front-matter that cannot be used; the message says why (and where)."""


def split_frontmatter(text: str) -> tuple[str | None, str, int]:
    """Split LF-normalised ``text`` into (YAML text or None, body, body line).

    The body line is the 1-based file line on which the body starts.  When
    there is no front-matter the whole text is the body, starting at line 1.
    """
    opening = _OPEN_RE.match(text)
    if opening is None or not opening.group().endswith("\n"):
        return None, text, 1
    closing = _CLOSE_RE.search(text, opening.end())
    if closing is None:
        return None, text, 1
    yaml_end = max(closing.start() - 1, opening.end())  # drop the newline before ---
    yaml_text = text[opening.end() : yaml_end]
    body_start = closing.end() + 1 if closing.end() < len(text) else closing.end()
    body_line = text.count("\n", 0, closing.start()) + 2
    return yaml_text, text[body_start:], body_line


def frontmatter_end(text: str) -> int:
    """How many lines a front-matter block at the very start of ``text``
    takes (0 if there is none).  A parsed note's body starts with one only
    when its YAML did not load (the body is then the whole file)."""
    yaml_text, _, body_line = split_frontmatter(text)
    return body_line - 1 if yaml_text is not None else 0


def load_frontmatter(
    yaml_text: str, *, max_bytes: int = DEFAULT_MAX_BYTES, first_line: int = 2
) -> dict[str, Any]:
    """Load front-matter YAML into a JSON-safe dict.

    ``first_line`` is the file line of the first YAML line (2, after the
    opening ``---``), so error messages name file lines.  Raises
    :class:`FrontmatterError` for invalid YAML, a top level that is not a
    mapping, anchors or aliases, too much nesting, or more than ``max_bytes``.
    An empty front-matter gives ``{}``.
    """
    if len(yaml_text) * 4 > max_bytes:  # cheap gate: UTF-8 is at most 4 bytes a char
        size = len(yaml_text.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise FrontmatterError(
                f"front-matter is {size} bytes, over the limit of {max_bytes}"
            )
    if not yaml_text.strip():
        return {}
    import yaml  # loaded by _loader() below: see there

    try:
        _refuse_deep_nesting(yaml_text)  # first: libyaml is slow on deep nesting
        if "&" in yaml_text or "*" in yaml_text:
            _refuse_anchors(yaml_text, first_line)
        data = yaml.load(yaml_text, Loader=_loader())  # a safe loader (C when libyaml is there)
    except FrontmatterError:
        raise
    except yaml.MarkedYAMLError as exc:
        raise FrontmatterError(_yaml_message(exc, first_line)) from None
    except Exception as exc:  # YAMLError, and e.g. ValueError for 2023-02-30
        raise FrontmatterError(f"invalid YAML front-matter: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontmatterError(
            f"front-matter is a {_yaml_type(data)}, not a mapping of properties"
        )
    return {_json_key(key): to_json(value) for key, value in data.items()}


def file_frontmatter_id(path: Path, head: int | None = None) -> str | None:
    """The ``id`` in the front-matter of the file at ``path`` (None when it is
    absent, not text-like, or the file or its YAML cannot be read). ``head``:
    read only that many bytes (the front-matter opens a note)."""
    try:
        with open(path, "rb") as fh:
            text = fh.read(-1 if head is None else head).decode("utf-8", "replace")
    except OSError:
        return None
    yaml_text, _, _ = split_frontmatter(text.lstrip("\ufeff").replace("\r\n", "\n"))
    if yaml_text is None:
        return None
    try:
        value = load_frontmatter(yaml_text).get("id")
    except FrontmatterError:
        return None
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def _yaml_message(exc: yaml.MarkedYAMLError, first_line: int) -> str:
    """A one-line message for a YAML error, naming the file line."""
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or exc.context or "invalid YAML"
    if exc.context and exc.problem:
        problem = f"{exc.context}: {exc.problem}"
    if mark is None:
        return f"invalid YAML front-matter: {problem}"
    return f"invalid YAML front-matter at line {mark.line + first_line}: {problem}"


def _refuse_anchors(yaml_text: str, first_line: int) -> None:
    """Raise if the YAML defines an anchor or uses an alias."""
    import yaml  # see _loader()

    for event in yaml.parse(yaml_text, Loader=_loader()):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            line = event.start_mark.line + first_line if event.start_mark else first_line
            raise FrontmatterError(
                f"YAML anchors and aliases are not allowed in front-matter (line {line})"
            )


def _refuse_deep_nesting(yaml_text: str) -> None:
    """Raise if the YAML may nest deeper than :data:`MAX_DEPTH`.

    Indentation alone cannot nest deeply within the size limit, so only flow
    brackets and compact ``- - -`` / ``? ? ?`` entries are counted, with
    quoted strings (``"[[Note]]"``) left out.  The exact count only runs when
    a cheap upper bound is over the limit.
    """
    bound = (
        yaml_text.count("[") + yaml_text.count("{")
        + yaml_text.count("- ") + yaml_text.count("? ")
        + yaml_text.count("-\t") + yaml_text.count("?\t")
    )
    if bound <= MAX_DEPTH:
        return
    unquoted = _QUOTED_RE.sub("", yaml_text)
    depth = brackets = 0
    for ch in re.findall(r"[\[\]{}]", unquoted):
        depth = depth + 1 if ch in "[{" else max(depth - 1, 0)
        brackets = max(brackets, depth)
    compact = 0
    for line in unquoted.split("\n"):
        indicators = _COMPACT_RE.match(line)
        compact = max(compact, len(indicators.group().split()) if indicators else 0)
    deepest = brackets + compact
    if deepest > MAX_DEPTH:
        raise FrontmatterError(f"front-matter nests deeper than {MAX_DEPTH} levels")


def _yaml_type(value: object) -> str:
    """The YAML name of a loaded value's type, for messages."""
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def _json_key(key: object) -> str:
    """A mapping key as JSON wants it: a string, spelled as YAML spells it."""
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, (_dt.date, _dt.datetime)):
        return key.isoformat()
    if isinstance(key, float):
        return str(to_json(key))
    return str(key)


def to_json(value: Any) -> Any:
    """``value`` with every YAML-only type turned into a JSON value.

    Dates and datetimes become ISO strings, sets lists (sorted, so the
    result does not depend on hash order), binary data base64 text, NaN
    and infinities their YAML spelling, and mapping keys strings.
    """
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    if isinstance(value, dict):
        return {_json_key(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((to_json(v) for v in value), key=lambda v: (type(v).__name__, str(v)))
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


# --------------------------------------------------------------------------
# Obsidian's keys
# --------------------------------------------------------------------------


def key_lines(yaml_text: str, first_line: int = 2) -> dict[str, int]:
    """File line of each top-level key of ``yaml_text`` (a cheap regex scan).

    Keys are matched at column 0 only; for a key written twice the last one
    wins, as it does in the loaded mapping.
    """
    lines: dict[str, int] = {}
    if not yaml_text:
        return lines
    line = 0
    last = 0
    for m in _KEY_RE.finditer(yaml_text):
        line += yaml_text.count("\n", last, m.start())
        last = m.start()
        if m.group(1) is not None:
            key = m.group(1)
        elif m.group(2) is not None:
            key = m.group(2).replace("''", "'")
        else:
            key = m.group(3).rstrip(" \t")
        lines[key] = line + first_line
    return lines


def _entries(frontmatter: dict[str, Any], pattern: str) -> list[Any]:
    """Values of the keys matching ``pattern`` (case-insensitive), in order."""
    regex = re.compile(pattern, re.I)
    return [value for key, value in frontmatter.items() if regex.fullmatch(key)]


def frontmatter_title(frontmatter: dict[str, Any]) -> str | None:
    """The ``title`` property, if it is a non-empty scalar: YAML reads
    ``title: 1984`` as a number and ``title: 2024-01-05`` as a date, which
    are still titles."""
    title = frontmatter.get("title")
    if isinstance(title, bool) or title is None or isinstance(title, (list, dict)):
        return None
    text = str(title).strip()
    return text or None


def frontmatter_aliases(frontmatter: dict[str, Any]) -> list[str]:
    """``aliases`` / ``alias``: a list, or a comma-separated string.

    Only strings count; each is stripped, blanks dropped, duplicates dropped.
    """
    found: list[str] = []
    for value in _entries(frontmatter, "alias(?:es)?"):
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list):
            continue
        for item in items:
            if isinstance(item, str) and item.strip() and item.strip() not in found:
                found.append(item.strip())
    return found


def frontmatter_tags(frontmatter: dict[str, Any]) -> list[str]:
    """``tags`` / ``tag``: a list, or a string of tags split by commas or spaces.

    A leading ``#`` is optional.  Entries that are not valid Obsidian tags
    (``1984``, ``c++``) are dropped; numbers count as their text.
    """
    found: list[str] = []
    for value in _entries(frontmatter, "tags?"):
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                item = str(item)
            if not isinstance(item, str):
                continue
            for word in _SPLIT_TAGS_RE.split(item):
                tag = normalise_tag(word[1:] if word.startswith("#") else word)
                if tag is not None:
                    found.append(tag)
    return found


def frontmatter_links(frontmatter: dict[str, Any], lines: dict[str, int]) -> list[Link]:
    """Links written in property values, as ``kind="property"`` links.

    Every ``[[...]]`` inside a string at any depth counts, and so does the
    unquoted form ``key: [[X]]`` / ``- [[X]]``, which YAML loads as a list
    holding the one-element list ``["X"]``.
    """
    from memvault.vault_io.note import Link  # here: the note model is not wanted by every reader of this module

    links: list[Link] = []
    for key, value in frontmatter.items():
        line = lines.get(key, 1)
        for embed, inner in _link_texts(value, in_list=False):
            raw = wikilink(0, embed, inner)
            if raw is not None:
                links.append(
                    Link(
                        target=raw.target,
                        kind="property",
                        subpath=raw.subpath,
                        display=raw.display,
                        size=raw.size,
                        line=line,
                        prop=key,
                    )
                )
    return links


def _link_texts(value: Any, in_list: bool) -> list[tuple[bool, str]]:
    """(embed?, text between the brackets) of every link inside ``value``."""
    found: list[tuple[bool, str]] = []
    stack: list[tuple[Any, bool]] = [(value, in_list)]
    while stack:  # explicit stack: no recursion limit to hit
        item, inside_list = stack.pop()
        if isinstance(item, str):
            if "[[" in item:
                found.extend(
                    (m.start() > 0 and item[m.start() - 1] == "!", m.group(1))
                    for m in WIKILINK_RE.finditer(item)
                )
        elif isinstance(item, list):
            if inside_list and len(item) == 1 and isinstance(item[0], str) and "[[" not in item[0]:
                found.append((False, item[0]))  # [[X]] written without quotes
            else:
                stack.extend((child, True) for child in reversed(item))
        elif isinstance(item, dict):
            stack.extend((child, False) for child in reversed(list(item.values())))
    return found
