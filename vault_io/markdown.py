"""Inline scanners for Obsidian-flavoured Markdown: links, embeds and tags,
each a plain regex (from :mod:`.syntax`) over the masked text (:mod:`.mask`).
Headings and block ids are read off the blocks (:mod:`.blocks`).

All functions here work on LF-normalised text (no ``\\r``) and return
offsets *within the text they were given*; :mod:`vault_io.parser` turns
them into file line numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote

from memvault.vault_io.errors import UsageError
from memvault.vault_io.syntax import MD_LINK_RE, SCHEME_RE, TAG_BODY_RE, TAG_RE, WIKILINK_RE

_SIZE_RE = re.compile(r"\d+(?:x\d+)?")

IMAGE_EXTENSIONS = frozenset({"png", "jpg", "jpeg", "gif", "bmp", "svg", "webp", "avif"})


@dataclass(slots=True)
class RawLink:
    """A link found in text, before it is turned into a :class:`~vault_io.note.Link`
    (short-lived, so not frozen: a frozen dataclass is four times slower to
    make, and a note holds many links)."""

    offset: int  # where the link starts in the scanned text
    embed: bool
    target: str
    subpath: str | None
    display: str | None
    size: str | None
    markdown: bool


def is_image(target: str) -> bool:
    """Whether ``target`` names an image Obsidian would show at a given size."""
    dot = target.rfind(".")
    return dot >= 0 and target[dot + 1 :].lower() in IMAGE_EXTENSIONS


def _split_size(target: str, embed: bool, label: str | None) -> tuple[str | None, str | None]:
    """Split an embed label into (display, size).

    Only image embeds take a size, written ``100`` or ``100x200`` after the
    last ``|``; anything else after ``|`` stays display text.
    """
    if not embed or label is None or not is_image(target):
        return label, None
    head, bar, tail = label.rpartition("|")
    if _SIZE_RE.fullmatch(tail.strip()):
        display = head.strip() if bar else ""
        return (display or None), tail.strip()
    return label, None


def split_wikilink(inner: str) -> tuple[str, str | None, str | None]:
    """Split the text between ``[[`` and ``]]`` into (target, subpath, display).

    ``Note#H1#H2|alias`` gives ``("Note", "H1#H2", "alias")``.  A backslash
    before the pipe (``[[Note\\|alias]]``, how tables escape it) is dropped.
    """
    display: str | None = None
    bar = inner.find("|")
    if bar >= 0:
        display = inner[bar + 1 :].strip() or None
        inner = inner[:bar]
        if inner.endswith("\\"):
            inner = inner[:-1]
    target, _, subpath = inner.partition("#")
    return target.strip(), clean_subpath(subpath), display


def clean_subpath(subpath: str) -> str | None:
    """``subpath`` with blank ``#`` segments dropped, or None if nothing is left.

    Obsidian reads ``Note##^id`` as ``Note#^id`` and ``#H1# H2`` as ``H1#H2``.
    """
    if "#" not in subpath:
        return subpath.strip() or None
    return "#".join(part.strip() for part in subpath.split("#") if part.strip()) or None


def wikilink(offset: int, embed: bool, inner: str) -> RawLink | None:
    """The link a ``[[inner]]`` stands for, or None if it names nothing."""
    if "|" not in inner and "#" not in inner:  # the common [[Note]]: nothing to split
        target = inner.strip()
        return RawLink(offset, embed, target, None, None, None, False) if target else None
    target, subpath, display = split_wikilink(inner)
    if not target and not subpath:
        return None
    display, size = _split_size(target, embed, display)
    return RawLink(offset, embed, target, subpath, display, size, False)


def find_wikilinks(scan: str, source: str) -> tuple[list[RawLink], list[tuple[int, int]]]:
    """All ``[[...]]`` and ``![[...]]`` in ``scan`` (masked text).

    The link text is read from ``source`` (the unmasked text at the same
    offsets).  Also returns every matched span, so callers can blank them
    before looking for tags.
    """
    links: list[RawLink] = []
    spans: list[tuple[int, int]] = []
    for m in WIKILINK_RE.finditer(scan):
        start = m.start()
        embed = start > 0 and scan[start - 1] == "!"
        if embed:
            start -= 1
        spans.append((start, m.end()))
        link = wikilink(start, embed, source[m.start(1) : m.end(1)])
        if link is not None:
            links.append(link)
    return links, spans


def _markdown_link(offset: int, embed: bool, label: str, dest: str) -> RawLink | None:
    """The vault link a Markdown link stands for, or None for URLs and blanks."""
    dest = dest.strip()
    if not dest or SCHEME_RE.match(dest):
        return None
    path, _, fragment = dest.partition("#")
    target = unquote(path).strip()
    subpath = clean_subpath(unquote(fragment))
    if not target and not subpath:
        return None
    display, size = _split_size(target, embed, label.strip() or None)
    return RawLink(offset, embed, target, subpath, display, size, True)


def find_markdown_links(scan: str, source: str) -> tuple[list[RawLink], list[tuple[int, int]]]:
    """All ``[text](dest)`` and ``![alt](dest)`` in ``scan`` that point into the vault.

    URLs with a scheme (``https:``, ``obsidian:``, ``mailto:``...) are not vault
    links; ``(#Heading)`` is a link to a heading of the same note.  A link
    nested in another's text (``[![img](a.png)](Note.md)``) is found too.
    Returns the links and every matched span.
    """
    links: list[RawLink] = []
    spans: list[tuple[int, int]] = []
    for m in MD_LINK_RE.finditer(scan):
        start = m.start()
        embed = start > 0 and scan[start - 1] == "!"
        if embed:
            start -= 1
        spans.append((start, m.end()))
        label_start, label_end = m.span(1)
        label = source[label_start:label_end]
        if "](" in label:
            inner, _ = find_markdown_links(scan[:label_end], source[:label_end])
            links.extend(link for link in inner if link.offset >= label_start)
        group = 2 if m.group(2) is not None else 3
        dest = source[m.start(group) : m.end(group)]
        link = _markdown_link(start, embed, label, dest)
        if link is not None:
            links.append(link)
    links.sort(key=lambda link: link.offset)
    return links, spans


# --------------------------------------------------------------------------
# Tags
# --------------------------------------------------------------------------

def normalise_tag(raw: str) -> str | None:
    """``raw`` (without ``#``) as a tag, or None if Obsidian would not take it.

    A tag must be made of tag characters only, loses a trailing ``/``, and
    must hold at least one character that is not a digit (``1984`` is not a
    tag, ``y1984`` and ``2024/05`` are).
    """
    if not TAG_BODY_RE.fullmatch(raw):
        return None
    tag = raw.rstrip("/")
    if not tag or tag.isdigit() or not tag.strip("0123456789"):
        return None
    return tag


def check_tag(raw: str) -> str:
    """``raw`` (an optional leading ``#``) as the tag Obsidian reads, or a
    :class:`UsageError` naming it: a tag Obsidian would not read would be
    written and then silently be no tag at all."""
    text = raw.strip()
    tag = normalise_tag(text[1:] if text.startswith("#") else text)
    if tag is None:
        raise UsageError(f"{raw!r} is not a tag: Obsidian tags hold letters, digits, '_', '-' and '/' "
                         "(no spaces or punctuation) and not only digits")
    return tag


def find_tags(scan: str, source: str) -> list[str]:
    """Inline ``#tags`` of ``scan`` (masked text with links blanked), in order.

    A ``#`` starts a tag only at the start of a line or after whitespace in
    the *source* text, so ``a#b``, ``(#b)`` and ``**#b**`` are not tags,
    nor is ``` `x`#b ``` although its code span is blank in ``scan``.
    """
    tags: list[str] = []
    for m in TAG_RE.finditer(scan):
        start = m.start()
        if start and not source[start - 1].isspace():
            continue
        tag = normalise_tag(m.group(1))
        if tag is not None:
            tags.append(tag)
    return tags


# --------------------------------------------------------------------------
# Links as read
# --------------------------------------------------------------------------


def _wikilink_as_read(m: re.Match[str]) -> str:
    inner = m.group(1)
    if "|" not in inner and "#" not in inner:
        return inner.strip()
    target, _, display = split_wikilink(inner)
    return display or target


def _label(m: re.Match[str]) -> str:
    return m.group(1)


def links_as_read(text: str) -> str:
    """``text`` with every link and embed as a reader sees it:
    ``[[Note#Part|shown]]`` as "shown", ``[[Note#Part]]`` as "Note",
    ``![label](dest)`` as "label" (a link to a part of the same note,
    ``[[#Part]]``, as nothing)."""
    if "[" not in text:
        return text
    if "[[" in text:
        text = _replace(text, WIKILINK_RE, _wikilink_as_read)
    if "](" in text:
        text = _replace(text, MD_LINK_RE, _label)
    return text


def _replace(text: str, regex: re.Pattern[str], shown: Callable[[re.Match[str]], str]) -> str:
    """``text`` with every match of ``regex`` (and the "!" of an embed before
    it) replaced by ``shown(match)``.  A loop rather than ``regex.sub`` with
    an optional "!" in front: that would cost the engine its fast search for
    the literal "[" at the start of the pattern."""
    pieces: list[str] = []
    last = 0
    for m in regex.finditer(text):
        start = m.start()
        if start > last and text[start - 1] == "!":
            start -= 1
        pieces.append(text[last:start])
        pieces.append(shown(m))
        last = m.end()
    if not pieces:
        return text
    pieces.append(text[last:])
    return "".join(pieces)
