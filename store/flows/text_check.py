"""Is a file given to an importer or to ``ingest`` UTF-8 text at all?

Every format memvault reads in (JSON, JSONL, CSV, Markdown) is text, and
JSON must be UTF-8 (RFC 8259). The readers decode leniently (a stray byte
becomes U+FFFD rather than failing a whole import), which turned a binary
file into a hundred error lines and a Latin-1 file into mojibake in notes
and their file names. So the input is checked before anything is written:
a binary file, UTF-16/32 text, or text in a legacy 8-bit encoding is refused
in one line naming the file. A legacy encoding is not guessed: Latin-1,
Windows-1252 and the other 8-bit code pages decode the same bytes to
different letters, and no test tells them apart reliably.
"""

from __future__ import annotations

import codecs
import itertools
from collections.abc import Callable, Iterable
from typing import IO, Any

from memvault.vault_io.errors import MemvaultError

CHUNK = 1 << 20
#: Byte-order marks of the encodings that are not UTF-8 (longest first: UTF-32 LE starts like UTF-16 LE).
_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
         (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))
#: Leading bytes of binary formats people hand over by mistake.
_MAGIC = ((b"PK\x03\x04", "a zip archive"), (b"\x1f\x8b", "a gzip file"), (b"%PDF", "a PDF"),
          (b"SQLite format 3\x00", "an SQLite database"), (b"\x89PNG", "a PNG image"),
          (b"\xff\xd8\xff", "a JPEG image"))
#: Control bytes that text holds (tab, newline, form feed, carriage return, escape).
_TEXT_CONTROLS = set(b"\t\n\x0b\x0c\r\x1b")


class NotTextError(MemvaultError):
    """An input that is not UTF-8 text (exit 1, like any file of the wrong shape)."""


def check_stream(stream: IO[bytes], name: str, expected: str) -> None:
    """Read ``stream`` to its end and refuse it unless it is UTF-8 text."""
    check_chunks(iter(lambda: stream.read(CHUNK), b""), name, expected)


def check_opener(opener: Callable[[], Any], name: str, expected: str) -> None:
    """:func:`check_stream` on a fresh stream from ``opener`` (a file or a zip member)."""
    with opener() as fh:
        check_stream(fh, name, expected)


def check_chunks(chunks: Iterable[bytes], name: str, expected: str) -> None:
    """Refuse the bytes ``chunks`` yields (in order) unless they are UTF-8
    text: one :class:`NotTextError` naming ``name`` and saying what it is."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    line = 1
    for n, chunk in enumerate(itertools.chain(chunks, [b""])):
        if n == 0:
            _check_head(chunk, name, expected)
        try:
            decoder.decode(chunk, final=not chunk)  # the empty chunk last: a character cut off at the end fails
        except UnicodeDecodeError as exc:
            # exc.object is this chunk behind any partial character the last one ended in
            where = line + exc.object.count(b"\n", 0, exc.start)
            raise NotTextError(
                f"{name} is not UTF-8 text (byte 0x{exc.object[exc.start]:02X} on line {where}; perhaps Latin-1 or "
                f"Windows-1252): save it as UTF-8 and try again") from None
        line += chunk.count(b"\n")


def _check_head(head: bytes, name: str, expected: str) -> None:
    """Refuse what the first bytes already show: another encoding, a binary file."""
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            raise NotTextError(f"{name} is {encoding} text, not UTF-8: save it as UTF-8 and try again")
    for magic, what in _MAGIC:
        if head.startswith(magic):
            raise NotTextError(f"{name} is {what}, not {expected}")
    sample = head[:8192]
    controls = sum(1 for b in sample if b < 0x20 and b not in _TEXT_CONTROLS)
    if b"\x00" in sample or controls > len(sample) // 20:
        raise NotTextError(f"{name} is a binary file, not {expected}")
