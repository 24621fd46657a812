"""The Markdown form of a memory: front-matter, content, and a Related section.

::

    ---
    id: m-3f9a0c1b2d4e
    type: semantic
    scope: user
    tags:
      - editor
    strength: 0.5
    created: '2026-11-22T03:00:00+00:00'
    updated: '2026-11-22T03:00:00+00:00'
    source: manual
    version: 1
    version_hash: 96c04425
    ---
    Prefers dark mode in every editor.

    ## Related
    - [[Editor setup]]

``version`` is the memory's version counter as memvault last wrote it and
``version_hash`` a fingerprint (:func:`text_fingerprint`) of the text, type
and tags that version had: a note whose text no longer matches its
fingerprint was edited since, and counts one version more
(:func:`note_version`). Both travel with the note, so every device reads the
same version from the same file.

Reading and writing are inverse: ``read_memory(render_memory(doc)) == doc``.
Rewriting an existing note changes only the managed keys whose values
changed (as memvault reads them: ``created: 2024-01-05`` and
``created: '2024-01-05'`` are the same value) and the body when the content
or links changed; keys a person added, comments and key order stay as they
were. A note written from scratch (a person deleted it, the store rewrites
it) gets the person's extra keys back from :attr:`MemoryDoc.extra`.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from memvault.vault_io.atomic import truncate_utf8
from memvault.vault_io.blocks import HEADING, scan_blocks
from memvault.vault_io.errors import UsageError
from memvault.vault_io.fm_edit import dump_key, edit_frontmatter
from memvault.vault_io.frontmatter import FrontmatterError, load_frontmatter, split_frontmatter
from memvault.vault_io.syntax import LIST_ITEM_RE, WIKILINK, WIKILINK_RE

#: Front-matter keys memvault owns on a memory note, in the order it writes them.
MANAGED_KEYS: tuple[str, ...] = (
    "id", "type", "scope", "key", "tags", "strength", "created", "updated", "source", "supersedes",
    "version", "version_hash",
)
RELATED_HEADING = "## Related"

# What a Related item holds after its bullet: one link (or embed), alone.
_LINK_ALONE_RE = re.compile(rf"!?{WIKILINK}[ \t]*")

# Characters that cannot be in a file name, or that break Obsidian links
# to it ([[ ]], #heading, ^block, |alias) or Markdown around it.
# Lone surrogates (from undecodable command-line bytes) would make a file
# name that is not UTF-8, which scans skip: they go too.
_UNSAFE_CHARS = re.compile(r'[\\/:*?"<>|#^\[\]`%{}\x00-\x1f\x7f\ud800-\udfff]')
_SLUG_WORDS = 8
_SLUG_MAX_BYTES = 120  # well under the 255-byte name limit with the id and ".md"
_DOTS = re.compile(r"\.{2,}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
#: Decimals of ``strength`` written to a note: recall boosts add 0.02 at a
#: time, and float sums (0.5 + 0.02 * 4 = 0.5800000000000001) are noise there.
STRENGTH_DECIMALS = 3


@dataclass
class MemoryDoc:
    """A memory as its note holds it."""

    id: str
    type: str
    content: str
    scope: str = "user"
    tags: list[str] = field(default_factory=list)
    strength: float | None = None
    created: str = ""
    updated: str = ""
    source: str = "manual"
    supersedes: str | None = None
    related: list[str] = field(default_factory=list)  # link targets, as written inside [[ ]]
    #: Front-matter keys a person added (not managed by memvault), as read.
    extra: dict[str, Any] = field(default_factory=dict)
    #: The version counter memvault last wrote (None: a note without one).
    version: int | None = None
    #: :func:`text_fingerprint` of the text, type and tags that version had.
    version_hash: str | None = None
    #: The slot a keyed fact fills (``editor.theme``), as written; None: not keyed
    #: (see :mod:`memvault.store.memories.keys`).
    key: str | None = None

    def managed_values(self) -> dict[str, Any]:
        """The front-matter values memvault writes (None = key absent)."""
        return {
            "id": self.id,
            "type": self.type,
            "scope": self.scope,
            "key": self.key or None,
            "tags": list(self.tags),
            "strength": None if self.strength is None else round(self.strength, STRENGTH_DECIMALS),
            "created": self.created or None,
            "updated": self.updated or None,
            "source": self.source or None,
            "supersedes": self.supersedes,
            "version": self.version,
            "version_hash": self.version_hash,
        }


def related_section(body: str) -> tuple[int, list[str]] | None:
    """Where a trailing ``## Related`` section of link items starts in
    ``body`` (character offset), and its link targets; None if there is none.

    Only a section at the very end that holds nothing but ``- [[link]]``
    items (and blank lines) counts: a person's own "Related" heading with
    prose under it stays part of the content.
    """
    heading = None
    for block in scan_blocks(body):
        if block.kind == HEADING and block.level == 2 and block.start == block.end and block.text.lower() == "related":
            heading = block  # the last "## Related" (ATX) heading
    if heading is None:
        return None
    lines = body.split("\n")
    related: list[str] = []
    for line in lines[heading.start + 1 :]:
        if not line.strip():
            continue
        target = _related_item(line)
        if target is None:
            return None
        related.append(target)
    return sum(len(line) + 1 for line in lines[: heading.start]), related


def _related_item(line: str) -> str | None:
    """The text inside ``[[...]]`` of a ``- [[link]]`` line, else None."""
    item = LIST_ITEM_RE.match(line)
    if item is None or item.group(2) not in ("-", "*", "+"):
        return None
    link = _LINK_ALONE_RE.fullmatch(line, item.end())
    return link.group(1) if link is not None and link.group(1) else None


def split_related(body: str) -> tuple[str, list[str]]:
    """(content, related link targets) of a memory note's body."""
    found = related_section(body)
    if found is None:
        return body.strip("\n"), []
    start, related = found
    return body[:start].strip("\n"), related


#: What a link of a Related item cannot hold: brackets end or nest the ``[[ ]]``,
#: a line break (or any control character) ends the item and starts lines of its own.
_NOT_IN_LINK_RE = re.compile(r"[\[\]\x00-\x1f\x7f-\x9f]")


def check_related(links: "list[str] | tuple[str, ...]") -> list[str]:
    """The links a person or agent gave for a new memory (``links``: a
    title or path, perhaps with ``#heading`` or ``|shown as``; blanks at
    the ends, and one ``[[ ]]`` around it, are taken off; a blank one is
    nothing), each checked to read back from the note's Related section as
    exactly itself; one that would not is a :class:`UsageError` naming
    ``links``, before anything is written."""
    out: list[str] = []
    for raw in links:
        link = raw.strip()
        if link.startswith("[[") and link.endswith("]]"):
            link = link[2:-2].strip()
        if not link:
            continue
        if _NOT_IN_LINK_RE.search(link) or split_related(render_body("x", [link]))[1] != [link]:
            shown = raw if len(raw) <= 60 else raw[:57] + "..."
            raise UsageError(f"links: {shown!r} cannot be written as a link: give a note's title or path "
                             "(no '[', ']', tab or line break)")
        out.append(link)
    return out


def render_body(content: str, related: list[str], newline: str = "\n") -> str:
    """The body of a memory note: content, then the Related section if any."""
    text = content.strip("\n") + "\n"
    if related:
        text += "\n" + RELATED_HEADING + "\n" + "".join(f"- [[{r}]]\n" for r in related)
    return text.replace("\n", newline) if newline != "\n" else text


def render_memory(doc: MemoryDoc, existing: str | None = None) -> str:
    """The note text for ``doc``; with ``existing``, a minimal edit of it.

    Without ``existing`` the note is written whole: managed keys, then the
    extra keys of ``doc.extra``. With it, the existing text is the truth for
    everything memvault does not manage (extra keys, comments, key order);
    a managed key whose value reads the same as ``doc``'s keeps its lines
    byte for byte, even when spelled differently than memvault would.
    """
    values = doc.managed_values()
    if existing is None:
        head = "".join(dump_key(k, v) for k, v in values.items() if v is not None)
        head += "".join(
            dump_key(k, _yaml_value(v)) for k, v in doc.extra.items() if k not in MANAGED_KEYS
        )
        return f"---\n{head}---\n{render_body(doc.content, doc.related)}"
    current = _current_managed(existing)
    set_keys: dict[str, Any] = {}
    remove: list[str] = []
    for key, value in values.items():
        if current is not None and current[key] == value:
            # Reads as the same value however it is spelled (or, absent, as
            # the default it would read as): keep the person's bytes.
            continue
        if value is None:
            remove.append(key)
        else:
            set_keys[key] = value
    text = edit_frontmatter(existing, set_keys, remove)
    head, body = _split_head(text)
    newline = "\r\n" if "\r\n" in head else "\n"
    old_content, old_related = split_related(body.replace("\r\n", "\n"))
    if old_content == doc.content.strip("\n") and old_related == doc.related:
        return text
    return head + render_body(doc.content, doc.related, newline)


def _current_managed(text: str) -> dict[str, Any] | None:
    """The managed values of the note ``text`` as :func:`read_memory` reads
    them (defaults for absent keys); None when its front-matter cannot be
    read (then :func:`edit_frontmatter` compares each key line by line)."""
    yaml_text, body, _ = split_frontmatter(text.lstrip("\ufeff").replace("\r\n", "\n"))
    try:
        fm = load_frontmatter(yaml_text) if yaml_text is not None else {}
    except FrontmatterError:
        return None
    return read_memory(fm, body).managed_values()


def _yaml_value(value: Any) -> Any:
    """An extra key's value as it goes back into YAML.

    Front-matter is stored as JSON, where a YAML date (``date: 2024-01-05``,
    the way Obsidian writes date properties) became a string; writing it as
    a date again keeps it a date property instead of a quoted string.
    """
    if isinstance(value, str) and _DATE.fullmatch(value):
        try:
            return _dt.date.fromisoformat(value)
        except ValueError:
            return value
    return value


def _split_head(text: str) -> tuple[str, str]:
    """(front-matter block including both fences, body) of a note with front-matter."""
    lines = text.splitlines(keepends=True)
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip(" \t") == "---":
            return "".join(lines[: i + 1]), "".join(lines[i + 1 :])
    return "", text


def text_fingerprint(content: str, type_: str, tags: list[str]) -> str:
    """8 hex digits naming a memory's text, type and tags, as a version
    counts them: whitespace the note format normalises and tag case do not
    count (a save that changes only those makes no version)."""
    text = "\n".join(line.rstrip() for line in content.strip().splitlines())
    seed = "\x00".join([text, type_, ",".join(str(t).casefold() for t in tags)])
    return hashlib.sha256(seed.encode("utf-8")).hexdigest()[:8]


def note_version(version: int | None, version_hash: str | None, fingerprint: str) -> int | None:
    """The version of a memory whose note says ``version`` and ``version_hash``
    and whose text now has ``fingerprint``: the counter, plus one when the
    text changed since memvault wrote it (an edit in the vault, or on another
    device, not counted yet). None for a note without a counter."""
    if version is None:
        return None
    return version + (0 if version_hash == fingerprint else 1)


def slugify(content: str) -> str:
    """A readable, safe file-name stem from the first words of ``content``.

    NFC, lower case, no path separators, control characters or characters
    that break Obsidian links, no leading dots and no ``..`` anywhere, at
    most a few words and ``_SLUG_MAX_BYTES`` bytes; ``"memory"`` when
    nothing usable is left.
    """
    text = unicodedata.normalize("NFC", content)
    text = WIKILINK_RE.sub(lambda m: m.group(1).split("|")[-1], text)
    text = _UNSAFE_CHARS.sub(" ", text).lower()
    words = [w.strip(".,;!'()&+=~$@") for w in text.split()]
    slug = "-".join(w for w in words if w)
    slug = "-".join(slug.split("-")[:_SLUG_WORDS]) if slug else ""
    # "a..b" is a legal name, but ".." in a name is what path checks and
    # people look for; one dot keeps "v1.2" readable.
    slug = _DOTS.sub(".", slug)
    slug = truncate_utf8(slug, _SLUG_MAX_BYTES).strip("-. ")
    slug = _DOTS.sub(".", unicodedata.normalize("NFC", slug))
    return slug or "memory"


def memory_filename(content: str, short_id: str) -> str:
    """``<slug>-<short id>.md``: the file name of a new memory note."""
    safe_id = _DOTS.sub(".", _UNSAFE_CHARS.sub("", short_id))[:16].strip(".") or "x"
    return f"{slugify(content)}-{safe_id}.md"


def read_memory(frontmatter: dict[str, Any], body: str) -> MemoryDoc:
    """The memory a note holds, from its parsed front-matter and body.

    Values are taken as written (the type is not checked here); missing or
    malformed ones fall back to the defaults, so any note reads.
    """
    content, related = split_related(body)
    tags = frontmatter.get("tags")
    if isinstance(tags, str):
        tags = [t for t in re.split(r"[,\s]+", tags) if t]
    strength = frontmatter.get("strength")
    try:
        strength = None if strength is None or isinstance(strength, bool) else min(1.0, max(0.0, float(strength)))
    except (TypeError, ValueError):
        strength = None

    def text(key: str, default: str = "") -> str:
        value = frontmatter.get(key)
        return str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else default

    version = frontmatter.get("version")
    if isinstance(version, str) and version.strip().isdigit():
        version = int(version.strip())
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        version = None
    version_hash = text("version_hash") or None
    return MemoryDoc(
        version=version,
        version_hash=version_hash,
        key=text("key") or None,
        id=text("id"),
        type=text("type"),
        content=content,
        scope=text("scope", "user") or "user",
        tags=[str(t).lstrip("#") for t in tags if isinstance(t, (str, int))] if isinstance(tags, list) else [],
        strength=strength,
        created=text("created"),
        updated=text("updated"),
        source=text("source", "vault"),
        supersedes=text("supersedes") or None,
        related=related,
        extra={k: v for k, v in frontmatter.items() if k not in MANAGED_KEYS},
    )
