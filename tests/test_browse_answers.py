"""The browse answers (:mod:`memvault.store.browse_answers`): the JSON each
gives is the JSON ``--json`` and the MCP tools have always printed (keys,
their order, which are null and which left out), and it reads back as the
same answer."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import opened, write

from memvault.store.browse_answers import ListedTrace, TracePage

ITEM_KEYS = ["id", "kind", "type", "title", "path", "uri", "status", "tags", "scope", "strength", "created",
             "updated", "source", "preview"]


def test_a_page_of_list_and_recent(vault: Path) -> None:
    write(vault, "Notes/Editors.md", "---\ntags: [tools, ui/dark]\n---\n# Editors\n\nThe team uses a dark theme.\n")
    with opened(vault) as store:
        store.sync()
        made = store.add("Prefers a dark editor theme " + "and more words " * 20, "preference", tags=["ui"])
        first = store.list(what="all", sort="title", limit=1)
        rest = store.list(what="all", sort="title", cursor=first.next_cursor)
        recent = store.recent(what="all")
    assert isinstance(first, TracePage) and first.total == 2 and first.next_cursor
    assert rest.next_cursor is None and [i.kind for i in first.items + rest.items] == ["note", "memory"]
    note, memory = first.items[0].to_json(), rest.items[0].to_json()
    assert list(note) == ITEM_KEYS and note["tags"] == ["tools", "ui/dark"] and note["scope"] is None
    assert list(memory) == [*ITEM_KEYS, "version"] and memory["version"] == 1 and memory["id"] == made.id
    assert memory["preview"].endswith("…") and len(memory["preview"]) == 201
    assert list(rest.to_json()) == ["items", "total", "next_cursor"] and rest.to_json()["next_cursor"] is None
    assert {i.id for i in recent.items} == {made.id, note["id"]}
    for page in (first, rest, recent):
        assert TracePage.from_json(json.loads(json.dumps(page.to_json()))) == page


def test_a_listed_trace_leaves_out_only_a_missing_version() -> None:
    item = ListedTrace("n-1", "note", "note", "T", None, None, "active", (), None, None, "c", "u", None, "")
    assert list(item.to_json()) == ITEM_KEYS and item.to_json()["tags"] == []
