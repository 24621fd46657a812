"""Golden-file tests: real notes in, the reviewed facts out.

Each note under ``tests/fixtures/facts/<vault>/`` is extracted with the id
the index would give it (derived from its path) and compared with
``tests/golden/facts/<name>.json``. The golden files are the spec of the
default extractor and were reviewed by hand.

To regenerate them after a deliberate change of rules (and then review the
diff line by line before committing)::

    MEMVAULT_UPDATE_GOLDEN=1 pytest tests/test_facts_golden.py
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from memvault.store.index.identity import derived_id
from memvault.vault_io.facts import extract_facts, source_uri
from memvault.vault_io.parser import parse_note

FIXTURES = Path(__file__).parent / "fixtures" / "facts"
GOLDEN = Path(__file__).parent / "golden" / "facts"
UPDATE = os.environ.get("MEMVAULT_UPDATE_GOLDEN") == "1"

CASES = [
    ("vaultofknowledge", "01. Personal/Daily Notes/2024-11-04.md"),
    ("vaultofknowledge", "01. Personal/Project Ideas/Blacklight OS.md"),
    ("vaultofknowledge", "06. Collected Knowledge/Tasks (from Jan 2023).md"),
    ("vaultofknowledge", "06. Collected Knowledge/Init Systems.md"),
    ("vaultofknowledge", "01. Personal/Tips/Presentation Tips.md"),
    ("kepano-obsidian", "Notes/Minimal Theme.md"),
    ("handwritten", "About me.md"),
    ("handwritten", "Project roadmap.md"),
    # Tables, tasks and callouts in one note (no note of the shared corpora
    # fits: the only one with all three is an 85 KB polemical essay).
    ("handwritten", "Kitchen renovation.md"),
]


def golden_name(vault: str, rel: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{vault}__{rel[:-3]}").strip("_")
    return f"{stem}.json"


def as_golden(rel: str, data: bytes) -> dict[str, Any]:
    note = parse_note(rel, data)
    result = extract_facts(note, derived_id(rel))  # key lines: the parser's
    return {
        "path": rel,
        "redacted": result.redacted,
        "facts": [
            {
                "id": f.id,
                "type": f.type,
                "segment": f.segment,
                "text": f.text,
                "heading_path": f.heading_path,
                "context": list(f.context),
                "block_id": f.block_id,
                "lines": [f.line_start, f.line_end],
                "due": f.due,
                "tags": list(f.tags),
                "links": [l.target + (f"#{l.subpath}" if l.subpath else "") for l in f.links],
                "source_uri": source_uri(rel, f.anchor),
            }
            for f in result.facts
        ],
    }


@pytest.mark.parametrize(("vault", "rel"), CASES, ids=[rel for _, rel in CASES])
def test_extraction_matches_golden(vault: str, rel: str) -> None:
    actual = as_golden(rel, (FIXTURES / vault / rel).read_bytes())
    golden = GOLDEN / golden_name(vault, rel)
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(json.dumps(actual, ensure_ascii=False, indent=2) + "\n", "utf-8")
    assert golden.exists(), f"no golden file {golden.name}; run with MEMVAULT_UPDATE_GOLDEN=1"
    assert actual == json.loads(golden.read_text("utf-8"))


def test_crlf_and_bom_extract_like_their_lf_twins() -> None:
    for vault, rel in CASES:
        raw = (FIXTURES / vault / rel).read_bytes()
        if b"\r\n" not in raw:
            continue
        twin = raw.removeprefix(b"\xef\xbb\xbf").replace(b"\r\n", b"\n")
        assert as_golden(rel, raw) == as_golden(rel, twin), rel


def test_fixtures_are_byte_copies_of_the_shared_corpora() -> None:
    shared = Path(__file__).resolve().parents[2] / "shared" / "corpora"
    if not shared.is_dir():
        pytest.skip("shared corpora not present")
    for vault, rel in CASES:
        if vault != "handwritten":
            assert (FIXTURES / vault / rel).read_bytes() == (shared / vault / rel).read_bytes(), rel
    assert (FIXTURES / "kepano-obsidian" / "LICENSE").read_bytes() == (shared / "kepano-obsidian" / "LICENSE").read_bytes()
    assert (FIXTURES / "vaultofknowledge" / "LICENSE.md").read_bytes() == (
        shared / "vaultofknowledge" / "LICENSE.md"
    ).read_bytes()


def test_every_fixture_note_has_a_case() -> None:
    listed = {(vault, rel) for vault, rel in CASES}
    for path in FIXTURES.rglob("*.md"):
        parts = path.relative_to(FIXTURES).parts
        if len(parts) == 1 or parts[-1] in ("LICENSE.md", "README.md"):
            continue
        assert (parts[0], "/".join(parts[1:])) in listed, path
