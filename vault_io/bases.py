"""Obsidian Bases files (``.base``): writing them, checking them, owning them.

A base is YAML that Obsidian reads as database views over the vault's notes
(`help.obsidian.md/bases/syntax`)::

    filters:                 # which files (a string, or one of and / or / not
      and:                   #  holding a list of strings and nested groups)
        - 'file.inFolder("Memory")'
    formulas:                # computed properties: name -> expression
      origin: 'if(source, source.split(":")[0], "vault")'
    properties:              # per-property settings: displayName
      note.scope:
        displayName: Scope
    summaries:               # named summary formulas over a column's values
      spread: 'values.max() - values.min()'
    views:                   # one or more views, the first is the default
      - type: table          # table | cards | list | map
        name: By scope
        groupBy:
          property: note.scope
          direction: ASC
        order: [file.name, note.scope]
        sort:
          - property: file.mtime
            direction: DESC
        limit: 50

:func:`dump_base` writes such data as YAML the way Obsidian does (two-space
indents, block lists), deterministically, so the same data is always the same
bytes. :func:`check_base` checks parsed YAML against the documented keys.
:func:`check_base` also reads every expression (:mod:`.bases_expr`): an unknown function, a bracket left open,
a ``formula.X`` naming no formula. :func:`stamp` and :func:`ownership` mark a file memvault wrote with a hash of
its text, in a comment on its first line, so that the mark travels with the
file (a copy of the vault, a sync to another device) and any later change by
anyone shows: memvault never overwrites a base it did not write unchanged.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from memvault.vault_io.bases_expr import check_expression, unknown_formula
from memvault.vault_io.errors import shorten

#: Top-level keys of a base (Bases syntax).
TOP_KEYS = ("filters", "formulas", "properties", "summaries", "views")
#: Top-level keys early Bases versions wrote (``display``: property -> display
#: name, before ``properties``); read in real vaults, never written by memvault.
LEGACY_TOP_KEYS = ("display",)
#: Layouts Obsidian ships (table, cards since 1.9; list, map since 1.10).
VIEW_TYPES = ("table", "cards", "list", "map")
#: Keys every view may have.
VIEW_KEYS = ("type", "name", "filters", "order", "sort", "groupBy", "limit", "summaries")
#: Settings that a layout stores in its view, beside the common keys.
LAYOUT_KEYS: dict[str, tuple[str, ...]] = {
    "table": ("columnSize", "rowHeight"),
    "cards": ("image", "imageFit", "imageAspectRatio", "cardSize"),
    "list": ("markers", "indentProperties", "separator"),
    "map": ("coordinates", "markerIcon", "markerColor", "defaultZoom", "center", "mapHeight", "mapTiles"),
}
_ALL_VIEW_KEYS = frozenset(VIEW_KEYS).union(*LAYOUT_KEYS.values())
FILTER_KEYS = ("and", "or", "not")
DIRECTIONS = ("ASC", "DESC")
#: The summaries Obsidian offers in a view's column footer; a view may also
#: name one of the base's own ``summaries``.
BUILTIN_SUMMARIES = (
    "Average", "Min", "Max", "Sum", "Range", "Median", "Stddev", "Earliest", "Latest",
    "Checked", "Unchecked", "Empty", "Filled", "Unique",
)

# A string YAML reads back as the same string when written bare: no quotes,
# colons, hashes or brackets, and not a word YAML reads as something else.
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_ ./-]*(?<![ .])")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_YAML_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "y", "n"})

#: First line of a base memvault wrote: the SHA-256 of every byte after it.
_STAMP = re.compile(rb"# memvault-views: sha256=([0-9a-f]{64})\n")


def _scalar(value: Any) -> str:
    """One scalar as YAML: bare when that reads back the same, else single-quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if not isinstance(value, str):
        raise TypeError(f"a base holds strings, numbers, lists and mappings, not {type(value).__name__}")
    if _PLAIN.fullmatch(value) and value.lower() not in _YAML_WORDS:
        return value
    if all(_quotable(ch) for ch in value):
        return "'" + value.replace("'", "''") + "'"
    # Never in memvault's own views: control characters, line breaks.
    return '"' + "".join(_escaped(ch) for ch in value) + '"'


def _quotable(ch: str) -> bool:
    """Whether YAML keeps ``ch`` as itself inside quotes: printable, and not
    one of the characters YAML 1.1 reads as a line break or a byte-order mark."""
    o = ord(ch)
    return (0x20 <= o <= 0x7E or 0xA0 <= o <= 0xD7FF or 0xE000 <= o <= 0xFFFD or o >= 0x10000) \
        and ch not in "\u2028\u2029\ufeff"


def _escaped(ch: str) -> str:
    """``ch`` inside a double-quoted YAML string."""
    if ch in '"\\':
        return "\\" + ch
    if _quotable(ch):
        return ch
    o = ord(ch)
    return f"\\x{o:02x}" if o <= 0xFF else f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}"


def _key(key: Any) -> str:
    """A mapping key: bare when safe (``note.scope``, ``file.name``), else quoted."""
    if not isinstance(key, str):
        raise TypeError(f"mapping keys in a base are strings, not {type(key).__name__}")
    if _KEY.fullmatch(key) and key.lower() not in _YAML_WORDS:
        return key
    text = _scalar(key)
    return text if text != key else "'" + key.replace("'", "''") + "'"


def _lines(value: Any, indent: int) -> list[str]:
    """The block-style lines of a mapping or list at ``indent`` spaces."""
    pad = " " * indent
    out: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(item, (Mapping, list)) and item:
                out.append(f"{pad}{_key(key)}:")
                # A list sits at its key's indent plus two, like Obsidian writes it.
                out.extend(_lines(item, indent + 2))
            else:
                out.append(f"{pad}{_key(key)}: {_inline(item)}")
        return out
    for item in value:
        if isinstance(item, (Mapping, list)) and item:
            inner = _lines(item, indent + 2)
            out.append(f"{pad}- {inner[0].lstrip()}")
            out.extend(inner[1:])
        else:
            out.append(f"{pad}- {_inline(item)}")
    return out


def _inline(value: Any) -> str:
    """A scalar, or an empty mapping or list, on its key's line."""
    if isinstance(value, Mapping):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def dump_base(data: Mapping[str, Any]) -> str:
    """``data`` as the YAML text of a base (block style, two-space indents,
    keys in the mapping's order): the same data always gives the same text,
    and ``yaml.safe_load`` reads it back equal (property-tested)."""
    return "\n".join(_lines(data, 0)) + "\n"


#: What a base nested deeper than the YAML parser (or :func:`check_base`) recurses is told.
NESTED_TOO_DEEPLY = "it nests too deeply to read"


def load_base(text: str) -> Any:
    """The YAML of a base, parsed; :class:`ValueError` (one line) if it is not YAML."""
    try:
        return yaml.safe_load(text)
    except RecursionError:  # PyYAML composes a node per nesting level, recursively
        raise ValueError(NESTED_TOO_DEEPLY) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"not valid YAML{where}: {problem}") from None


def check_base(data: Any, *, strict: bool = True) -> list[str]:
    """What in parsed base ``data`` does not follow the Bases syntax, one
    line each (empty: valid). ``strict=False`` also accepts the keys early
    Bases versions wrote (top-level ``display``, ``column`` in a sort)."""
    try:
        return _check_base(data, strict)
    except RecursionError:  # filters nest (and/or/not): checked level by level, recursively
        return [NESTED_TOO_DEEPLY]


@dataclass(frozen=True)
class _Base:
    """What checking one part of a base needs to know of the whole."""

    strict: bool
    formulas: frozenset[str]  # the formula names (formula.X must be one)

    def expression(self, text: str, where: str) -> list[str]:
        """The problem of one expression, as a line naming where it is."""
        problem = check_expression(text, self.formulas, strict=self.strict)
        return [] if problem is None else [f"{where} {shorten(text.strip(), 60)!r}: {problem}"]

    def column(self, name: Any, where: str) -> list[str]:
        """A column, sort or group name: a ``formula.X`` must name a formula."""
        if isinstance(name, str) and name.startswith("formula.") and name[8:] not in self.formulas:
            return [f"{where}: {unknown_formula(name[8:], self.formulas)}"]
        return []


def _check_base(data: Any, strict: bool) -> list[str]:
    if not isinstance(data, Mapping):
        return ["a base is a mapping of filters, formulas, properties, summaries and views"]
    problems: list[str] = []
    allowed = TOP_KEYS + (() if strict else LEGACY_TOP_KEYS)
    problems += [f"unknown top-level key {k!r}" for k in data if k not in allowed]
    formulas = data.get("formulas", {})
    base = _Base(strict, frozenset(str(k) for k in formulas) if isinstance(formulas, Mapping) else frozenset())
    if "filters" in data:
        problems += _check_filter(data["filters"], "filters", base)
    problems += _check_strings(data.get("formulas", {}), "formulas", base)
    problems += _check_strings(data.get("summaries", {}), "summaries", base)
    problems += _check_strings(data.get("display", {}), "display")
    props = data.get("properties", {})
    if not isinstance(props, Mapping):
        problems.append("properties: a mapping of property -> settings")
    else:
        for name, settings in props.items():
            problems += base.column(name, f"properties.{name}")
            if not isinstance(settings, Mapping):
                problems.append(f"properties.{name}: a mapping such as displayName: Name")
            else:
                problems += [f"properties.{name}: unknown key {k!r}" for k in settings if k != "displayName"]
                if "displayName" in settings and not isinstance(settings["displayName"], (str, int, float)):
                    problems.append(f"properties.{name}.displayName: a text")
    views = data.get("views")
    if views is None:
        return problems + ["views: missing (a base shows at least one view)"]
    if not isinstance(views, list) or not views:
        return problems + ["views: a list of one or more views"]
    custom = tuple(data.get("summaries") or {}) if isinstance(data.get("summaries"), Mapping) else ()
    for i, view in enumerate(views):
        problems += _check_view(view, f"views[{i}]", base, custom)
    return problems


def _check_strings(value: Any, where: str, base: _Base | None = None) -> list[str]:
    """A mapping of names to expression strings (``base`` given) or display strings."""
    if not isinstance(value, Mapping):
        return [f"{where}: a mapping of name -> expression"]
    problems = []
    for k, v in value.items():
        if not isinstance(v, str) or not v.strip():
            problems.append(f"{where}.{k}: an expression string, not {type(v).__name__}")
        elif base is not None:
            problems += base.expression(v, f"{where}.{k}")
    return problems


def _check_filter(value: Any, where: str, base: _Base) -> list[str]:
    """A filter: a statement string, or one of and/or/not holding a list of filters."""
    if isinstance(value, str):
        return base.expression(value, where) if value.strip() else [f"{where}: an empty filter statement"]
    if not isinstance(value, Mapping) or len(value) != 1 or next(iter(value)) not in FILTER_KEYS:
        return [f"{where}: a statement string, or a mapping with exactly one of and, or, not"]
    key, items = next(iter(value.items()))
    if not isinstance(items, list):
        return [f"{where}.{key}: a list of statements and filter groups"]
    problems: list[str] = []
    for i, item in enumerate(items):
        problems += _check_filter(item, f"{where}.{key}[{i}]", base)
    return problems


def _check_view(view: Any, where: str, base: _Base, custom: tuple[str, ...]) -> list[str]:
    """One entry of ``views``."""
    if not isinstance(view, Mapping):
        return [f"{where}: a mapping with type and name"]
    problems: list[str] = []
    kind = view.get("type")
    if kind not in VIEW_TYPES:
        problems.append(f"{where}.type: one of {', '.join(VIEW_TYPES)}, not {kind!r}")
    if not isinstance(view.get("name"), str) or not view["name"].strip():
        problems.append(f"{where}.name: missing")
    # A view keeps the settings of layouts it was switched from (a map view
    # that was a table still has its columnSize), so any layout's key is known.
    problems += [f"{where}: unknown key {k!r}" for k in view if k not in _ALL_VIEW_KEYS]
    if "filters" in view:
        problems += _check_filter(view["filters"], f"{where}.filters", base)
    order = view.get("order", [])
    if not isinstance(order, list) or not all(isinstance(p, str) for p in order):
        problems.append(f"{where}.order: a list of property names")
    else:
        problems += [p for i, name in enumerate(order) for p in base.column(name, f"{where}.order[{i}]")]
    sort = view.get("sort", [])
    if not isinstance(sort, list):
        problems.append(f"{where}.sort: a list of property and direction")
    else:
        for i, rule in enumerate(sort):
            problems += _check_ordering(rule, f"{where}.sort[{i}]", base.strict, base)
    if "groupBy" in view:
        problems += _check_ordering(view["groupBy"], f"{where}.groupBy", True, base)
    limit = view.get("limit", 1)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        problems.append(f"{where}.limit: a whole number of at least 1")
    summaries = view.get("summaries", {})
    if not isinstance(summaries, Mapping):
        problems.append(f"{where}.summaries: a mapping of property -> summary")
    else:
        problems += [f"{where}.summaries.{p}: unknown summary {s!r}"
                     for p, s in summaries.items() if s not in BUILTIN_SUMMARIES + custom]
        problems += [x for p in summaries for x in base.column(p, f"{where}.summaries.{p}")]
    return problems


def _check_ordering(rule: Any, where: str, strict: bool, base: _Base) -> list[str]:
    """A sort rule or a groupBy: a property and a direction."""
    keys = ("property", "direction") if strict else ("property", "column", "direction")
    if not isinstance(rule, Mapping) or set(rule) - set(keys):
        return [f"{where}: a mapping of property and direction"]
    problems = []
    if not isinstance(rule.get("property", rule.get("column")), str):
        problems.append(f"{where}.property: missing")
    else:
        problems += base.column(rule.get("property", rule.get("column")), f"{where}.property")
    if rule.get("direction", "ASC") not in DIRECTIONS:
        problems.append(f"{where}.direction: ASC or DESC, not {rule.get('direction')!r}")
    return problems


# -- Which note properties a base reads -------------------------------------

_STRING_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_NOTE_INDEX = re.compile(r"""(?<![\w.])note\[\s*(?:"([^"\\]+)"|'([^'\\]+)')\s*\]""")
_IDENT = re.compile(r"(?<![\w.])([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?")
# Names in an expression that are not note properties: the file and formula
# namespaces, `this`, literals, and the variables list functions bind.
_NOT_PROPERTIES = frozenset({"file", "formula", "this", "true", "false", "null", "value", "index", "acc", "values"})


def expression_properties(expression: str) -> set[str]:
    """The note (front-matter) properties an expression reads: bare names,
    ``note.X`` and ``note["X"]``, not ``file.*``, ``formula.*``, function names or text
    inside string literals."""
    found = {m.group(1) or m.group(2) for m in _NOTE_INDEX.finditer(expression)}  # note["my key"]
    text = _STRING_LITERAL.sub('""', expression)
    for m in _IDENT.finditer(text):
        name, attr = m.group(1), m.group(2)
        if text[m.end():].lstrip().startswith("(") and not attr:
            continue  # a global function: if(...), list(...), now()
        if name == "note" and attr:
            found.add(attr)
        elif name not in _NOT_PROPERTIES and name != "note":
            found.add(name)  # status, or status.contains(...): a method of the property
    return found


def _column_property(name: str) -> str | None:
    """The note property a column or sort name is (``note.x`` or bare ``x``)."""
    if name.startswith(("file.", "formula.")):
        return None
    return name.removeprefix("note.")


def _filter_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for items in value.values() for item in (items or []) for s in _filter_strings(item)]
    return []


def note_properties(data: Mapping[str, Any]) -> set[str]:
    """Every note property base ``data`` reads: in filters, formulas,
    property settings, columns, sorts, groups and summaries."""
    found: set[str] = set()
    expressions = _filter_strings(data.get("filters"))
    expressions += list((data.get("formulas") or {}).values())
    names = list(data.get("properties") or {})
    for view in data.get("views") or []:
        expressions += _filter_strings(view.get("filters"))
        names += list(view.get("order") or [])
        names += [rule.get("property", rule.get("column", "")) for rule in view.get("sort") or []]
        if "groupBy" in view:
            names.append(view["groupBy"].get("property", ""))
        names += list(view.get("summaries") or {})
    for expression in expressions:
        found |= expression_properties(expression)
    found |= {p for n in names if n and (p := _column_property(n))}
    return found


# -- Ownership: what memvault wrote, and whether anyone changed it ----------

def stamp(text: str) -> bytes:
    """``text`` as the bytes memvault writes: a first comment line holding
    the SHA-256 of everything after it."""
    body = text.encode("utf-8")
    return b"# memvault-views: sha256=" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def ownership(data: bytes) -> str:
    """``"memvault"`` if ``data`` is a base memvault wrote and nobody has
    changed since (its stamp matches the rest, byte for byte), else
    ``"changed"`` (edited, re-saved by Obsidian, or never memvault's)."""
    m = _STAMP.match(data)
    if m is not None and hashlib.sha256(data[m.end():]).hexdigest().encode() == m.group(1):
        return "memvault"
    return "changed"
