"""Links that open a note in Obsidian."""

from __future__ import annotations

from urllib.parse import quote


def obsidian_uri(vault_name: str, path: str, anchor: str | None = None) -> str:
    """An ``obsidian://open`` link that opens ``path`` in the named vault.

    ``anchor`` is a heading (``Decisions``) or a block (``^abc123``); Obsidian
    reads it from the encoded ``#`` in the file parameter (``Note%23Heading``,
    ``Note%23%5Eblock``).
    """
    target = path + (f"#{anchor}" if anchor else "")
    return f"obsidian://open?vault={quote(vault_name, safe='')}&file={quote(target, safe='')}"
