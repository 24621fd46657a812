"""The browse answers (:mod:`memvault.store.answers.browse`): the JSON each
gives is the JSON ``--json`` and the MCP tools have always printed (keys,
their order, which are null and which left out), and it reads back as the
same answer."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import opened, write

from memvault.store.answers.browse.history import MemoryVersion
from memvault.store.answers.browse.listing import ListedTrace, TracePage

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


HEAD_KEYS = ["id", "kind", "type", "title", "path", "uri", "status", "tags", "created", "updated", "source",
             "scope", "strength"]
PROFILE = "---\nmemory: source\n---\n# Profile\n\n## Habits\n- Drinks coffee black, no sugar\n"


def test_show_and_read_of_a_note_a_memory_a_fact_and_a_turn(vault: Path, tmp_path: Path) -> None:
    write(vault, "Notes/Editors.md", "---\nowner: Jo\n---\n# Editors\n\nSee [[Profile]].\n\n## Setup\nInstall it.\n")
    write(vault, "Profile.md", PROFILE)
    transcript = tmp_path / "chat.jsonl"
    transcript.write_text("".join(json.dumps({"role": r, "name": n, "content": t, "timestamp": "2023-05-08T13:56:00Z"})
                                  + "\n" for r, n, t in [("user", "Ana", "I ran a race."), ("assistant", "Bo", "Nice.")]))
    with opened(vault) as store:
        store.sync()
        memory = store.add("Ships on Fridays", "semantic")
        store.update(memory.id, content="Ships on Thursdays")
        session = store.ingest(str(transcript)).path
        fact = store.facts("Profile.md").facts[0].id
        answers = {
            "note": store.show("Notes/Editors.md"), "section": store.read("Notes/Editors.md", "Setup"),
            "memory": store.read(memory.id), "fact": store.read(fact), "turn": store.read(f"{session}#^t2"),
            "shown turn": store.show(f"{session}#^t2"),
        }
    for answer in answers.values():
        assert type(answer).from_json(json.loads(json.dumps(answer.to_json()))) == answer
    data = {name: a.to_json() for name, a in answers.items()}
    assert list(data["note"]) == [*HEAD_KEYS, "metadata", "parse_error", "content", "links"]
    assert data["note"]["links"] == 1 and data["note"]["metadata"]["frontmatter"] == {"owner": "Jo"}
    assert list(data["section"]) == [*HEAD_KEYS, "parse_error", "content", "properties", "heading", "links",
                                     "backlinks"]
    assert data["section"]["content"] == "Install it." and data["section"]["uri"].endswith("%23Setup")
    assert list(data["memory"]) == [*HEAD_KEYS, "parse_error", "content", "version", "supersedes", "links",
                                    "backlinks"]
    assert data["memory"]["version"] == 2 and data["memory"]["supersedes"] == f"{memory.id}.v1"
    assert list(data["fact"]) == [*HEAD_KEYS, "parse_error", "content", "source_path", "anchor", "heading_path",
                                  "lines", "source_uri", "links", "backlinks"]
    assert data["fact"]["source_path"] == "Profile.md" and data["fact"]["uri"].endswith("%23Habits")
    assert list(data["turn"])[-4:] == ["anchor", "ref", "speaker", "at"] and data["turn"]["speaker"] == "Bo"
    assert data["turn"]["content"] == "2023-05-08 13:56 Bo: Nice." and data["turn"]["ref"] == f"{session}#^t2"
    assert list(data["shown turn"]) == [*list(data["note"]), "anchor", "ref", "speaker", "at"]


def test_history_gives_each_version_then_the_merged(vault: Path) -> None:
    with opened(vault) as store:
        kept = store.add("Prefers dark mode", "preference", tags=["ui"])
        other = store.add("Likes the dark theme in editors", "preference")
        store.update(kept.id, content="Prefers dark mode everywhere")
        store.merge([kept.id, other.id])
        versions = store.history(kept.id)
    data = [v.to_json() for v in versions]
    assert all(list(d) == ["id", "status", "reason", "type", "updated", "content", "tags"] for d in data)
    assert [d["id"] for d in data][-1] == other.id and data[-1]["reason"] == f"merged into {kept.id}"
    assert data[0]["reason"] is None and data[0]["tags"] == ["ui"]
    assert [MemoryVersion.from_json(json.loads(json.dumps(d))) for d in data] == versions


LINK_KEYS = ["kind", "target", "anchor", "display", "property", "line", "status", "target_path", "target_id"]


def test_links_both_ways_and_the_stats(vault: Path) -> None:
    write(vault, "Notes/Editors.md", "# Editors\n\nSee [[Deploy#Setup|the steps]], [[Nowhere]] and ![[diagram.png]].\n")
    write(vault, "Deploy.md", "---\nup: '[[Editors]]'\n---\n# Deploy\n\n## Setup\nMake it.\n")
    write(vault, "diagram.png", b"\x89PNG\r\n\x1a\n")
    write(vault, "Broken.md", "---\ntags: [a\n---\nbroken front matter\n")
    with opened(vault) as store:
        store.sync()
        out = [link.to_json() for link in store.links("Notes/Editors.md")]
        into = [link.to_json() for link in store.backlinks("Notes/Editors.md")]
        embedded = store.backlinks("diagram.png")
        read = store.read("Notes/Editors.md")
        counts = store.stats(parse_errors=True)
        plain = store.stats()
    assert all(list(d) == LINK_KEYS for d in out)
    assert [(d["target"], d["anchor"], d["display"], d["status"]) for d in out] == [
        ("Deploy", "Setup", "the steps", "resolved"), ("Nowhere", None, None, "unresolved"),
        ("diagram.png", None, None, "resolved")]
    assert [list(d) for d in into] == [["source_id", "source_path", "source_title", *LINK_KEYS]]
    assert into[0]["source_path"] == "Deploy.md" and into[0]["property"] == "up"
    assert embedded[0].source_path == "Notes/Editors.md" and embedded[0].link.target_id is None
    assert read.to_json()["links"] == out and read.to_json()["backlinks"] == into
    assert [type(b).from_json(b.to_json()) for b in embedded] == embedded  # the link part is read back
    data = counts.to_json()
    assert list(data)[-4:] == ["index_path", "index_bytes", "vault", "parse_error_list"] and data["vault"] == str(vault)
    assert data["parse_error_list"] == [{"path": "Broken.md", "error": data["parse_error_list"][0]["error"]}]
    assert counts.parse_errors == 1 and counts.links_unresolved == 1 and "parse_error_list" not in plain.to_json()
    for answer in (counts, plain, read, *embedded):
        assert type(answer).from_json(json.loads(json.dumps(answer.to_json()))) == answer


FACT_KEYS = ["id", "type", "status", "reason", "text", "heading_path", "block_id", "anchor", "lines", "source_uri",
             "segment", "context", "due", "tags", "links", "created", "updated"]


def test_the_facts_of_a_source_note(vault: Path) -> None:
    write(vault, "Profile.md", "---\nmemory: source\n---\n# Profile\n\n- Lives in [[Lisbon]] ^home\n"
                               "- [ ] Renew the passport 📅 2026-12-01\n")
    with opened(vault) as store:
        store.sync()
        answer = store.facts("Profile.md")
        unindexed = store.facts("Nowhere.md")
    assert (answer.path, answer.indexed, unindexed.indexed, unindexed.facts) == ("Profile.md", True, False, ())
    home, task = (f.to_json() for f in answer.facts)
    assert list(home) == FACT_KEYS and list(task) == FACT_KEYS  # every key, null when empty
    assert (home["anchor"], home["lines"], home["links"], home["due"]) == ("^home", [6, 6], ["Lisbon"], None)
    assert (task["segment"], task["due"], task["context"]) == ("task", "2026-12-01", None)
    for one in (answer, unindexed, *answer.facts):
        assert type(one).from_json(json.loads(json.dumps(one.to_json()))) == one
