"""The expressions of an Obsidian base (filters, formulas, summaries), read
the way Obsidian reads them, so that a mistake is named before Obsidian
shows an empty view.

The language (help.obsidian.md/bases/syntax, /bases/functions) is a small
JavaScript-like one: literals (``"text"``, ``'text'``, ``3.5``, ``/re/g``,
``[a, b]``, ``{"k": v}``), names (``status``, ``note.x``, ``file.mtime``,
``formula.total``, ``this``), member and index access, calls, ``!`` and
unary ``-``, ``* / %``, ``+ -``, comparisons and ``&& ||``.
:func:`check_expression` parses one with a recursive-descent parser and
says the first problem in one line: a string left open, a bracket left
open or closed without an opening one, a function Bases does not have
(a global such as ``iff(...)`` or a method such as ``file.inFoldr(...)``,
with the closest known name), or a ``formula.X`` naming no formula of the
base. A property name is never judged: any front-matter key may exist.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection
from dataclasses import dataclass

#: Functions called without a value (help.obsidian.md/bases/functions, "Global").
GLOBAL_FUNCTIONS = frozenset({
    "date", "duration", "escapeHTML", "file", "html", "icon", "if", "image", "link", "list", "max", "min",
    "now", "number", "random", "today",
})
#: Global functions of the first Bases versions (1.9 betas), still in vaults of that time.
LEGACY_GLOBALS = frozenset({
    "abs", "ceil", "concat", "contains", "containsAll", "containsAny", "containsNone", "date", "dateAfter",
    "dateBefore", "dateDiff", "dateEquals", "dateModify", "dateNotEquals", "dateOnOrAfter", "dateOnOrBefore",
    "day", "empty", "flat", "floor", "hour", "inFolder", "index", "join", "len", "linksTo", "minute", "month",
    "not", "notEmpty", "round", "second", "slice", "taggedWith", "time", "title", "trim", "unique", "year",
})
#: Methods of any type (any, date, string, number, list, link, file, object, regular expression), and the
#: aggregates a summary formula applies to its ``values`` (``values.mean().round(3)``).
METHODS = frozenset({
    "isTruthy", "isType", "toString",
    "date", "format", "time", "relative", "isEmpty",
    "contains", "containsAll", "containsAny", "endsWith", "lower", "replace", "repeat", "reverse", "slice",
    "split", "startsWith", "title", "trim",
    "abs", "ceil", "floor", "round", "toFixed",
    "filter", "flat", "join", "map", "reduce", "sort", "unique",
    "asFile", "linksTo",
    "asLink", "hasLink", "hasProperty", "hasTag", "inFolder",
    "keys", "values",
    "matches",
    "mean", "median", "stddev", "sum", "min", "max",
})
#: Methods of the first Bases versions (``file.taggedWith``, ``"name".icon()``).
LEGACY_METHODS = frozenset({"taggedWith", "icon"})

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>\d+(?:\.\d+)?)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<open_string>["'])
  | (?P<name>[A-Za-z_$][\w$]*)
  | (?P<op>&&|\|\||==|!=|>=|<=|[-+*/%<>!(),.\[\]{}:])
""", re.VERBOSE | re.DOTALL)
_REGEX = re.compile(r"/(?:[^/\\\n]|\\.)+/[a-z]*")
_CLOSERS = {"(": ")", "[": "]", "{": "}"}


class ExpressionError(ValueError):
    """The first problem of an expression, in one line."""


@dataclass(frozen=True)
class _Tok:
    kind: str  # number, string, regex, name, op, end
    text: str
    at: int  # 0-based offset in the expression


def _tokens(text: str) -> list[_Tok]:
    """The tokens of ``text``; a ``/`` where a value is expected opens a regular expression."""
    out: list[_Tok] = []
    i = 0
    while i < len(text):
        value_expected = not out or (out[-1].kind == "op" and out[-1].text not in (")", "]", "}"))
        if text[i] == "/" and value_expected:
            m = _REGEX.match(text, i)
            if m is None:
                raise ExpressionError(f"a regular expression left open at column {i + 1}")
            out.append(_Tok("regex", m.group(), i))
            i = m.end()
            continue
        m = _TOKEN.match(text, i)
        if m is None:
            raise ExpressionError(f"unexpected {text[i]!r} at column {i + 1}")
        kind = m.lastgroup or ""
        if kind == "open_string":
            raise ExpressionError(f"a string left open at column {i + 1} (no closing {text[i]})")
        if kind != "space":
            out.append(_Tok(kind, m.group(), i))
        i = m.end()
    out.append(_Tok("end", "", len(text)))
    return out


class _Parser:
    """Recursive descent over the tokens; each level is one precedence level."""

    _LEVELS: tuple[tuple[str, ...], ...] = (("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="), ("+", "-"),
                                            ("*", "/", "%"))

    def __init__(self, text: str, formulas: Collection[str] | None, strict: bool) -> None:
        self.toks = _tokens(text)
        self.i = 0
        self.formulas = formulas
        self.globals = GLOBAL_FUNCTIONS if strict else GLOBAL_FUNCTIONS | LEGACY_GLOBALS
        self.methods = METHODS if strict else METHODS | LEGACY_METHODS
        self.open: list[_Tok] = []  # brackets opened and not yet closed, for "left open" messages

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def is_op(self, *ops: str) -> bool:
        return self.tok.kind == "op" and self.tok.text in ops

    def unexpected(self) -> ExpressionError:
        tok = self.tok
        if tok.kind == "end":
            if self.open:
                first = self.open[-1]
                return ExpressionError(f"{first.text!r} at column {first.at + 1} is never closed")
            return ExpressionError("it ends where a value is expected")
        if tok.kind == "op" and tok.text in (")", "]", "}") and not self.open:
            return ExpressionError(f"{tok.text!r} at column {tok.at + 1} closes nothing")
        return ExpressionError(f"unexpected {tok.text!r} at column {tok.at + 1}")

    def expect(self, closer: str) -> None:
        if not self.is_op(closer):
            raise self.unexpected()
        self.take()
        self.open.pop()

    def parse(self) -> None:
        self.binary(0)
        if self.tok.kind != "end":
            raise self.unexpected()

    def binary(self, level: int) -> None:
        if level == len(self._LEVELS):
            self.unary()
            return
        self.binary(level + 1)
        while self.is_op(*self._LEVELS[level]):
            self.take()
            self.binary(level + 1)

    def unary(self) -> None:
        while self.is_op("!", "-", "+"):
            self.take()
        self.postfix()

    def postfix(self) -> None:
        called = self.primary()
        while True:
            if self.is_op("."):
                self.take()
                if self.tok.kind != "name":
                    raise self.unexpected()
                name = self.take()
                if self.is_op("("):
                    self.check_function(name.text, self.methods, method=True)
                    self.arguments(")")
                elif called == "formula":
                    self.check_formula(name.text)
                called = None
            elif self.is_op("["):
                self.open.append(self.take())
                self.binary(0)
                self.expect("]")
                called = None
            elif self.is_op("("):
                raise ExpressionError(f"only a function can be called ('(' at column {self.tok.at + 1})")
            else:
                return

    def primary(self) -> str | None:
        """A literal, a name, a call of a global function or a bracketed group;
        the name when it is one that a ``.`` may follow (formula.X is checked)."""
        tok = self.tok
        if tok.kind in ("number", "string", "regex"):
            self.take()
            return None
        if tok.kind == "name":
            self.take()
            if self.is_op("("):
                self.check_function(tok.text, self.globals, method=False)
                self.arguments(")")
                return None
            return tok.text
        if self.is_op("("):
            self.open.append(self.take())
            self.binary(0)
            self.expect(")")
            return None
        if self.is_op("["):
            self.arguments("]")
            return None
        if self.is_op("{"):
            self.object()
            return None
        raise self.unexpected()

    def arguments(self, closer: str) -> None:
        """``( a, b )`` or ``[ a, b ]``, the opener being the current token."""
        self.open.append(self.take())
        if not self.is_op(closer):
            self.binary(0)
            while self.is_op(","):
                self.take()
                self.binary(0)
        self.expect(closer)

    def object(self) -> None:
        self.open.append(self.take())
        while not self.is_op("}"):
            if self.tok.kind not in ("string", "name"):
                raise self.unexpected()
            self.take()
            if not self.is_op(":"):
                raise self.unexpected()
            self.take()
            self.binary(0)
            if not self.is_op(","):
                break
            self.take()
        self.expect("}")

    def check_function(self, name: str, known: frozenset[str], method: bool) -> None:
        if name in known:
            return
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f" (did you mean {close[0]}()?)" if close else ""
        kind = "method" if method else "function"
        raise ExpressionError(f"Bases has no {kind} {name}(){hint}")

    def check_formula(self, name: str) -> None:
        if self.formulas is not None and name not in self.formulas:
            raise ExpressionError(unknown_formula(name, self.formulas))


def unknown_formula(name: str, formulas: Collection[str]) -> str:
    """The line for ``formula.<name>`` where the base defines no such formula."""
    close = difflib.get_close_matches(name, sorted(formulas), n=1)
    hint = f" (did you mean formula.{close[0]}?)" if close else ""
    return f"formula.{name} names no formula of this base{hint}"


def check_expression(text: str, formulas: Collection[str] | None = None, *, strict: bool = True) -> str | None:
    """The first problem of Bases expression ``text`` in one line, or None
    when Obsidian can read it. ``formulas``: the base's formula names
    (``formula.X`` must be one; None: not checked). ``strict=False`` also
    takes the functions the first Bases versions had (``not(...)``,
    ``empty(...)``)."""
    try:
        _Parser(text, formulas, strict).parse()
    except ExpressionError as exc:
        return str(exc)
    except RecursionError:  # brackets nested thousands deep
        return "it nests too deeply to read"
    return None
