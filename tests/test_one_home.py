"""Issue 24 item 5: a concept with one home gives the values its copies gave."""

from __future__ import annotations

import hashlib

from memvault.store.index.classify import content_key, memory_key


def test_memory_key_is_the_content_key_of_its_normalised_text() -> None:
    # The values the two copies gave (traces.content_key and import keys are stored: they must not move).
    old_memory = hashlib.sha256("semantic\x00user\x00likes green tea".encode()).hexdigest()
    assert memory_key("semantic", "user", "  Likes  GREEN\ttea \n") == old_memory
    seed = "\x00".join(["a", "", "3"])
    assert content_key("a", None, 3) == "sha256:" + hashlib.sha256(seed.encode("utf-8")).hexdigest()
    assert memory_key("semantic", "user", "x") == content_key("semantic", "user", "x")[len("sha256:"):]


def test_a_memory_version_is_computed_in_one_place(tmp_path) -> None:
    """show, list and read give the version the update guard checks."""
    from helpers import opened

    from memvault.store.memories.rows import current_version, current_versions

    with opened(tmp_path) as s:
        m = s.add("Green tea in the morning", type_="preference")
        assert s.update(m.id, content="Green tea in the morning and at noon").version == 2
        con = s.read_con()
        assert current_version(con, m.id) == 2 == current_versions(con, [m.id, m.id])[m.id]
        assert [i.version for i in s.list().items if i.id == m.id] == [2] == [s.read(m.id).version]
        assert current_versions(con, ["m-gone"]) == {"m-gone": 1}


def test_client_entries_start_the_command_service_install_starts(tmp_path, monkeypatch) -> None:
    """One memvault_executable for the client installers and the systemd unit; none is an error, not argv[0]."""
    import sys

    import pytest

    from memvault.cli.clients.client_config import ClientConfigError, server_entry
    from memvault.store.location import memvault_executable

    assert server_entry("cursor", tmp_path)["command"] == str(memvault_executable())
    (tmp_path / "bin").mkdir()
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setattr(sys, "argv", ["-c"])
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert memvault_executable() is None
    with pytest.raises(ClientConfigError, match="cannot find the memvault executable"):
        server_entry("cursor", tmp_path)


def test_the_parsed_note_carries_the_blocks_a_scan_finds() -> None:
    """What the parser hands on is what scanning the body again finds, carried or not."""
    import pickle
    from pathlib import Path

    from memvault.vault_io.blocks import scan_blocks
    from memvault.vault_io.mask import mask_markdown
    from memvault.vault_io.parser import parse_note, structure_start

    root = Path(__file__).parent / "fixtures" / "corpora"
    paths = sorted(root.rglob("*.md"))
    assert len(paths) > 20
    for path in paths:
        rel, data = "/".join(path.relative_to(root).parts[1:]), path.read_bytes()
        note, bare = parse_note(rel, data), parse_note(rel, data, keep_blocks=False)
        assert "structure" in note.__dict__ and "structure" not in bare.__dict__ and note == bare
        fresh = tuple(scan_blocks(note.body, headings_from=structure_start(note)))
        assert note.structure == fresh == bare.structure, rel
        assert note.masked.text == mask_markdown(note.body).text == bare.masked.text
        assert pickle.loads(pickle.dumps(note)).structure == fresh


def test_a_source_note_is_scanned_once_for_parse_and_facts(monkeypatch) -> None:
    """Parsing and segmenting a note run the block scanner once (issue 24: it ran per step)."""
    import memvault.vault_io.blocks as blocks
    import memvault.vault_io.parser as parser
    import memvault.vault_io.segment as segment
    from memvault.vault_io.facts import extract_facts

    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return blocks.scan_blocks(*args, **kwargs)

    monkeypatch.setattr(parser, "scan_blocks", counted)
    monkeypatch.setattr(segment, "scan_blocks", counted)
    text = "---\ntags: [facts]\n---\n# Trip\n\n- We flew to Lisbon on 3 May.\n- The hotel was by the river. ^h\n\nIt rained.\n"
    note = parser.parse_note("Trip.md", text.encode())
    facts = extract_facts(note, "n-1").facts
    assert calls == [1] and facts
    # the same facts as from a note that has to be scanned again
    bare = parser.parse_note("Trip.md", text.encode())
    del bare.__dict__["structure"], bare.__dict__["masked"]
    assert [f.text for f in extract_facts(bare, "n-1").facts] == [f.text for f in facts] and len(calls) == 2
