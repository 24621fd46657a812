"""Reading import files: a JSON array item by item, zips and folders.

A ChatGPT export's ``conversations.json`` can be gigabytes: it is never
loaded whole. :func:`iter_array` reads a top-level JSON array in chunks and
decodes one element at a time with the standard library's C scanner
(``json.JSONDecoder.raw_decode``), so memory stays bounded by the largest
single conversation, not the file.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from memvault.vault_io import json_input
from memvault.vault_io.confine import is_inside
from memvault.vault_io.errors import MemvaultError, UsageError

CHUNK = 1 << 20
_WS = " \t\r\n"
_DECODER = json.JSONDecoder()


class ImportFormatError(MemvaultError):
    """A file that is not what the format expects (names the file and why)."""


@dataclass(frozen=True)
class Member:
    """One file to read: on disk, or inside a zip."""

    name: str  # as shown in messages: "export.zip:conversations-001.json"
    opener: Callable[[], Any]  # a context manager of a binary stream
    size: int


def sniff(head: bytes, name: str, expected: str = "JSON") -> None:
    """Refuse an HTML page or a zip where JSON is expected, with a clear message."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"PK\x03\x04"):
        raise ImportFormatError(f"{name} is a zip archive, not {expected}")
    if text[:1] == b"<":
        raise ImportFormatError(f"{name} looks like HTML, not {expected} (chat.html is not the export's data)")


def iter_array(
    stream: IO[bytes], name: str, progress: Callable[[int], None] | None = None, chunk: int = CHUNK
) -> Iterator[Any]:
    """The elements of the JSON array ``stream`` holds, one at a time.

    ``progress(bytes_read)`` is called as the file is read. A file that is
    not a JSON array, or whose JSON breaks, raises :class:`ImportFormatError`
    naming the file and the element (elements before it were yielded).
    """
    decoder = codecs.getincrementaldecoder("utf-8-sig")("replace")
    buf = ""
    pos = 0
    eof = False
    read = 0

    def more(size: int) -> bool:
        nonlocal buf, pos, eof, read
        data = stream.read(size)
        if not data:
            eof = True
            buf = buf[pos:] + decoder.decode(b"", final=True)
            pos = 0
            return False
        read += len(data)
        if progress is not None:
            progress(read)
        buf = buf[pos:] + decoder.decode(data)
        pos = 0
        return True

    def skip_ws() -> None:
        nonlocal pos
        while True:
            while pos < len(buf) and buf[pos] in _WS:
                pos += 1
            if pos < len(buf) or eof or not more(chunk):
                return

    first = stream.read(64)
    sniff(first, name)
    read = len(first)
    buf = decoder.decode(first)
    skip_ws()
    if pos >= len(buf) or buf[pos] != "[":
        raise ImportFormatError(f"{name} is not a JSON array (it should start with '[')")
    pos += 1
    index = 0
    while True:
        skip_ws()
        if pos < len(buf) and buf[pos] == "]":
            return
        if index:
            if pos >= len(buf) or buf[pos] != ",":
                raise ImportFormatError(f"{name}: expected ',' or ']' after item {index - 1}")
            pos += 1
            skip_ws()
        size = chunk
        while True:
            try:
                value, end = json_input.raw_decode(_DECODER, buf, pos)
                if end < len(buf) or eof or isinstance(value, (dict, list, str)) or not more(size):
                    break  # a bare number at the end of what is read may go on: read on
                continue
            except json_input.TooDeep as exc:  # reading more would not help
                raise ImportFormatError(f"{name}: item {index} is not valid JSON ({exc.msg})") from None
            except json.JSONDecodeError as exc:
                # Most likely the element runs past what is read so far: read
                # more (twice as much each time, so a huge element costs a few
                # decodes, not one per chunk) until the file ends.
                if eof or not more(size):
                    raise ImportFormatError(f"{name}: item {index} is not valid JSON ({exc.msg})") from None
                size *= 2
        pos = end
        yield value
        index += 1


def members(path: Path, wanted: Callable[[str], bool]) -> list[Member]:
    """The files to read from ``path`` (a file, a folder, or a zip), those
    whose relative path (POSIX) ``wanted`` accepts, in name order; macOS
    metadata (``__MACOSX/``, ``._*``) is skipped, and so is a file of a
    folder that leads out of it (:func:`outside`). A file given directly is
    read whatever its name."""
    if not path.exists():
        raise UsageError(f"{path} does not exist")
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and _usable(p.relative_to(path).as_posix(), wanted))
        away = {name for name, _ in outside(path)}
        return [Member(str(p), _file_opener(p), p.stat().st_size) for p in found if str(p) not in away]
    with path.open("rb") as fh:
        is_zip = fh.read(4) == b"PK\x03\x04"
    if not is_zip:
        return [Member(str(path), _file_opener(path), path.stat().st_size)]
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise ImportFormatError(f"{path} is not a readable zip: {exc}") from None
    infos = sorted((i for i in archive.infolist() if not i.is_dir() and _usable(i.filename, wanted)),
                   key=lambda i: i.filename)
    return [Member(f"{path.name}:{i.filename}", _zip_opener(path, i.filename), i.file_size) for i in infos]


def outside(path: Path) -> list[tuple[str, str]]:
    """(name, real path) of each file of folder ``path`` that a symlink leads
    out of the folder (``env.md -> /proc/self/environ``, ``key.md ->
    ~/.ssh/id_ed25519``): never read, as a vault never reads one (a shared
    or synced folder carries symlinks). Empty for a file or a zip."""
    if not path.is_dir():
        return []
    root = os.path.realpath(path)
    found = []
    for p in sorted(path.rglob("*")):
        if p.is_symlink() or p.is_file():
            real = os.path.realpath(p)
            if not is_inside(root, real) and os.path.isfile(real):
                found.append((str(p), real))
    return found


def _usable(rel: str, wanted: Callable[[str], bool]) -> bool:
    parts = PurePosixPath(rel).parts
    if "__MACOSX" in parts or parts[-1].startswith("._"):
        return False
    return wanted(rel)


def _file_opener(path: Path) -> Callable[[], IO[bytes]]:
    return lambda: path.open("rb")


def _zip_opener(path: Path, member: str) -> Callable[[], Any]:
    @contextlib.contextmanager
    def opener() -> Iterator[IO[bytes]]:
        with zipfile.ZipFile(path) as archive, archive.open(member) as fh:
            yield fh

    return opener


def read_json(member: Member) -> Any:
    """A whole (small) JSON file."""
    with member.opener() as fh:
        data = fh.read()
    sniff(data[:64], member.name)
    try:
        return json_input.loads(data.decode("utf-8-sig", "replace"))
    except ValueError as exc:
        raise ImportFormatError(f"{member.name} is not valid JSON ({exc})") from None
