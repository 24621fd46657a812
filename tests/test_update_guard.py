"""The version guard of `update`: random interleavings of an agent (read, then update with
the version it read) and a person editing the note in Obsidian. An update based on what
the agent read never supersedes an edit it did not see."""

from __future__ import annotations

from pathlib import Path

from helpers import opened
from hypothesis import given, settings
from hypothesis import strategies as st

from memvault.store.memories.guard import VersionConflict

STEPS = st.lists(st.sampled_from(["read", "edit", "update"]), min_size=1, max_size=10)


@settings(max_examples=15)
@given(steps=STEPS)
def test_an_update_never_supersedes_an_edit_it_did_not_see(tmp_path_factory, steps: list[str]) -> None:
    root: Path = tmp_path_factory.mktemp("vault")
    with opened(root) as store:
        memory = store.add("Ships on Mondays", "semantic")
        note = root / memory.path
        seen = store.read(memory.id)  # what the agent last read (the index, as it is)
        edited_since_read = False
        imported: list[str] = []  # edits memvault had a chance to see (an edit overwritten unseen is not)
        pending: str | None = None  # an edit no sync has read yet
        for n, step in enumerate(steps):
            if step == "read":
                seen = store.read(memory.id)
                edited_since_read = pending is not None  # the index does not show it yet
            elif step == "edit":
                text = f"Ships on day {n} after the person's edit number {len(imported)}"
                head, _, _ = note.read_text().rstrip("\n").rpartition("\n")  # the body is its last line
                note.write_text(f"{head}\n{text}\n")
                edited_since_read = True
                if n % 2:  # a daemon saw it at once
                    store.sync_paths([memory.path])
                    imported.append(text)
                    pending = None
                else:
                    pending = text
            else:
                if pending is not None:  # the update reads the note first
                    imported.append(pending)
                    pending = None
                try:
                    store.update(memory.id, content=f"Agent change {n}", expect_version=seen.version)
                except VersionConflict as exc:
                    assert edited_since_read
                    assert exc.current["content"] == store.show(memory.id).content
                    continue
                assert not edited_since_read
                # What the update replaced is exactly what the agent had read.
                assert store.history(memory.id)[1].content == seen.content
                seen = store.read(memory.id)
        store.sync()
        imported += [pending] if pending else []
        contents = [v.content for v in store.history(memory.id)]
        assert all(e in contents for e in imported)  # no edit of the person is lost
