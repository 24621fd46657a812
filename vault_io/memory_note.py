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
    ---
    Prefers dark mode in every editor.

    ## Related
    - [[Editor setup]]

Reading and writing are inverse: ``read_memory(render_memory(doc)) == doc``.
Rewriting an existing note changes only the managed keys whose values
changed and the body when the content or links changed; keys a person
added, comments and key order stay as they were.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from .fm_edit import dump_key, edit_frontmatter

#: Front-matter keys memvault owns on a memory note, in the order it writes them.
MANAGED_KEYS: tuple[str, ...] = (
    "id", "type", "scope", "tags", "strength", "created", "updated", "source", "supersedes",
)
RELATED_HEADING = "## Related"

_RELATED_RE = re.compile(r"^##[ \t]+Related[ \t]*$", re.M | re.I)
_RELATED_ITEM_RE = re.compile(r"^[ \t]*[-*+][ \t]+!?\[\[([^\[\]\n]+)\]\][ \t]*$")
_WIKILINK_RE = re.compile(r"\[\[([^\[\]\n]+)\]\]")

# Characters that cannot be in a file name, or that break Obsidian links
# to it ([[ ]], #heading, ^block, |alias) or Markdown around it.
_UNSAFE_CHARS = re.compile(r'[\\/:*?"<>|#^\[\]`%{}\x00-\x1f\x7f]')
_SLUG_WORDS = 8
_SLUG_MAX_BYTES = 120  # well under the 255-byte name limit with the id and ".md"


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

    def managed_values(self) -> dict[str, Any]:
        """The front-matter values memvault writes (None = key absent)."""
        return {
            "id": self.id,
            "type": self.type,
            "scope": self.scope,
            "tags": list(self.tags),
            "strength": self.strength,
            "created": self.created or None,
            "updated": self.updated or None,
            "source": self.source or None,
            "supersedes": self.supersedes,
        }


def related_section(body: str) -> tuple[int, list[str]] | None:
    """Where a trailing ``## Related`` section of link items starts in
    ``body`` (character offset), and its link targets; None if there is none.

    Only a section at the very end that holds nothing but ``- [[link]]``
    items (and blank lines) counts: a person's own "Related" heading with
    prose under it stays part of the content.
    """
    matches = list(_RELATED_RE.finditer(body))
    if not matches:
        return None
    m = matches[-1]
    related: list[str] = []
    for line in body[m.end() :].split("\n"):
        if not line.strip():
            continue
        item = _RELATED_ITEM_RE.match(line)
        if item is None:
            return None
        related.append(item.group(1))
    return m.start(), related


def split_related(body: str) -> tuple[str, list[str]]:
    """(content, related link targets) of a memory note's body."""
    found = related_section(body)
    if found is None:
        return body.strip("\n"), []
    start, related = found
    return body[:start].strip("\n"), related


def render_body(content: str, related: list[str], newline: str = "\n") -> str:
    """The body of a memory note: content, then the Related section if any."""
    text = content.strip("\n") + "\n"
    if related:
        text += "\n" + RELATED_HEADING + "\n" + "".join(f"- [[{r}]]\n" for r in related)
    return text.replace("\n", newline) if newline != "\n" else text


def render_memory(doc: MemoryDoc, existing: str | None = None) -> str:
    """The note text for ``doc``; with ``existing``, a minimal edit of it."""
    values = doc.managed_values()
    if existing is None:
        head = "".join(dump_key(k, v) for k, v in values.items() if v is not None)
        return f"---\n{head}---\n{render_body(doc.content, doc.related)}"
    text = edit_frontmatter(
        existing,
        {k: v for k, v in values.items() if v is not None},
        [k for k, v in values.items() if v is None],
    )
    head, body = _split_head(text)
    newline = "\r\n" if "\r\n" in head else "\n"
    old_content, old_related = split_related(body.replace("\r\n", "\n"))
    if old_content == doc.content.strip("\n") and old_related == doc.related:
        return text
    return head + render_body(doc.content, doc.related, newline)


def _split_head(text: str) -> tuple[str, str]:
    """(front-matter block including both fences, body) of a note with front-matter."""
    lines = text.splitlines(keepends=True)
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip(" \t") == "---":
            return "".join(lines[: i + 1]), "".join(lines[i + 1 :])
    return "", text


def slugify(content: str) -> str:
    """A readable, safe file-name stem from the first words of ``content``.

    NFC, lower case, no path separators, control characters or characters
    that break Obsidian links, no leading dots, at most a few words and
    ``_SLUG_MAX_BYTES`` bytes; ``"memory"`` when nothing usable is left.
    """
    text = unicodedata.normalize("NFC", content)
    text = _WIKILINK_RE.sub(lambda m: m.group(1).split("|")[-1], text)
    text = _UNSAFE_CHARS.sub(" ", text).lower()
    words = [w.strip(".,;!'()&+=~$@") for w in text.split()]
    slug = "-".join(w for w in words if w)
    slug = "-".join(slug.split("-")[:_SLUG_WORDS]) if slug else ""
    encoded = slug.encode("utf-8")[:_SLUG_MAX_BYTES]
    slug = encoded.decode("utf-8", "ignore").strip("-. ")
    slug = unicodedata.normalize("NFC", slug)
    return slug or "memory"


def memory_filename(content: str, short_id: str) -> str:
    """``<slug>-<short id>.md``: the file name of a new memory note."""
    safe_id = _UNSAFE_CHARS.sub("", short_id).strip(".") or "x"
    return f"{slugify(content)}-{safe_id[:16]}.md"


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

    return MemoryDoc(
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
    )
