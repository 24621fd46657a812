"""JSON from outside memvault read so that deep nesting is a parse error.

Import files, transcripts, client configs, a hook's stdin and the frames of
the daemon's socket and the MCP server come from elsewhere. Python's
``json`` recurses once per nesting level: ``[[[[...]]]]`` a few thousand
deep (a few KB) raises :class:`RecursionError`, which no ``except
ValueError`` catches, so it became a traceback (or a dead socket handler).
:func:`loads` raises :class:`TooDeep` instead: a
:class:`json.JSONDecodeError` (so a :class:`ValueError`), caught where a
malformed document already is and said in one line.
"""

from __future__ import annotations

import json
from typing import Any

MESSAGE = "it nests too deeply to read"


class TooDeep(json.JSONDecodeError):
    """JSON nested deeper than Python's parser recurses."""

    def __init__(self, doc: str) -> None:
        # Not JSONDecodeError's "msg: line 1 column 1 (char 0)": no position is known.
        ValueError.__init__(self, MESSAGE)
        self.msg, self.doc, self.pos, self.lineno, self.colno = MESSAGE, doc, 0, 1, 1

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.doc,)


def loads(data: str | bytes | bytearray) -> Any:
    """``json.loads(data)``; :class:`TooDeep` (a ``ValueError``) for nesting
    deeper than the parser can follow."""
    try:
        return json.loads(data)
    except RecursionError:
        raise TooDeep("") from None


def raw_decode(decoder: json.JSONDecoder, text: str, pos: int) -> tuple[Any, int]:
    """``decoder.raw_decode(text, pos)`` (a streamed array's item), with :class:`TooDeep` as in :func:`loads`."""
    try:
        return decoder.raw_decode(text, pos)
    except RecursionError:
        raise TooDeep("") from None
