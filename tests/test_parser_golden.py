"""Golden-file tests: real notes in, the reviewed ParsedNote out.

Each note under ``tests/fixtures/corpora/<vault>/`` is parsed with its
vault-relative path and compared with ``tests/golden/parser/<name>.json``:
the ParsedNote as JSON, with ``body`` replaced by its sha256 to keep the
files small.  The golden files are the spec and were reviewed by hand.

To regenerate them after a deliberate change of rules (and then review the
diff line by line before committing)::

    MEMVAULT_UPDATE_GOLDEN=1 pytest tests/test_parser_golden.py
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from memvault.vault_io.parser import parse_note

FIXTURES = Path(__file__).parent / "fixtures" / "corpora"
GOLDEN = Path(__file__).parent / "golden" / "parser"
UPDATE = os.environ.get("MEMVAULT_UPDATE_GOLDEN") == "1"

# (vault folder, vault-relative path): what each one is here for.
CASES = [
    # heavy front-matter, links in properties, an emoji tag "0🌲", a quote
    ("kepano-obsidian", "Notes/Evergreen notes turn ideas into objects that you can manipulate.md"),
    # aliases as a list, links in properties, no body at all
    ("kepano-obsidian", "References/The Legend of Zelda Breath of the Wild.md"),
    # invalid YAML ("created: {{date}}"): whole file indexed as body
    ("kepano-obsidian", "Templates/Book Template.md"),
    # invalid YAML plus an embed of a Bases view, ![[Meetings.base#Person]]
    ("kepano-obsidian", "Templates/People Template.md"),
    # valid front-matter, aliases, tags, ![[Daily.base#Monthly]]
    ("kepano-obsidian", "Templates/Monthly Note Template.md"),
    # tasks, no final newline
    ("kepano-obsidian", "Notes/Minimal Theme.md"),
    # date property, body links on the first body line
    ("kepano-obsidian", "Notes/2023-09-12 Meeting with Steph.md"),
    # many headings, ordered and unordered lists
    ("kepano-obsidian", "References/Brown butter nectarine tart.md"),
    # a tags property and a lone embed of a whole base, ![[Books.base]]
    ("kepano-obsidian", "Categories/Books.md"),
    # callouts, [[X#^block|alias]] to its own block id, Markdown links to URLs
    ("vaultofknowledge", "06. Collected Knowledge/Quantum Mechanics.md"),
    # [[#Heading|alias]] and [[Note#Heading|alias]]
    ("vaultofknowledge", "06. Collected Knowledge/Desktop Environment Showcase.md"),
    # [[X##^id|alias]], a heading carrying a block id, emoji folder names
    (
        "vaultofknowledge",
        "07. Miscellaneous/🏛️ Studying Social Problems/🌀️ Religious Discourse/"
        "Arguments against religion.md",
    ),
    # "^videos" alone on its line between a heading and a list, inline math
    ("vaultofknowledge", "06. Collected Knowledge/Magnetic Monopoles.md"),
    # CRLF line endings, |alias links
    (
        "vaultofknowledge",
        "04. Organized Knowledge - Old Format/Creativity and Arts/Colour Theory/"
        "Colour Modelling/Colour Spaces/Munsell Colour System.md",
    ),
    # backticks in the file name
    ("vaultofknowledge", "About `We are Good People`.md"),
    # quotes in the file name, plain prose
    ("vaultofknowledge", "'In the pre-Muhammadian era'.md"),
    # a callout, inline code spans
    ("vaultofknowledge", "Loop Devices.md"),
    # tasks nested with tabs, headings of four levels
    ("vaultofknowledge", "01. Personal/Project Ideas/Blacklight OS.md"),
    # inline tags at the end of the note, blockquotes
    ("vaultofknowledge", "Literature vs Code.md"),
    # hand-written: UTF-8 BOM + CRLF, and every construct the parser knows
    ("handwritten", "BOM and CRLF sampler.md"),
    # hand-written: [[Note.md]], [[/Folder/Note]], [[Note#H1#H2]], [[image.png]]
    # as a link, |300 on an image, inline math, indented code, an HTML block,
    # a colour code in a code span
    ("handwritten", "Link forms sampler.md"),
    # hand-written: `aliases: - @x`, invalid YAML, indexed as raw text
    ("handwritten", "Invalid aliases.md"),
]


def golden_name(vault: str, rel: str) -> str:
    """A portable file name for one case's golden JSON."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{vault}__{rel[:-3]}").strip("_")
    return f"{stem}.json"


def as_golden(note: Any) -> dict[str, Any]:
    """The ParsedNote as the JSON the golden files hold (body -> sha256)."""
    data = dataclasses.asdict(note)
    body = data.pop("body")
    if data.get("undecodable") is None:  # every fixture is clean UTF-8: the golden files leave it out
        data.pop("undecodable", None)
    data["body_sha256"] = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return json.loads(json.dumps(data, ensure_ascii=False))


def test_golden_names_are_unique() -> None:
    names = [golden_name(vault, rel) for vault, rel in CASES]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize(("vault", "rel"), CASES, ids=[rel for _, rel in CASES])
def test_parse_matches_golden(vault: str, rel: str) -> None:
    data = (FIXTURES / vault / rel).read_bytes()
    actual = as_golden(parse_note(rel, data))
    golden = GOLDEN / golden_name(vault, rel)
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(json.dumps(actual, ensure_ascii=False, indent=2) + "\n", "utf-8")
    assert golden.exists(), f"no golden file {golden.name}; run with MEMVAULT_UPDATE_GOLDEN=1"
    assert actual == json.loads(golden.read_text("utf-8"))


def test_fixtures_are_byte_copies_of_the_shared_corpora() -> None:
    """The copied notes must stay byte-identical to the vaults they came from."""
    shared = Path(__file__).resolve().parents[2] / "shared" / "corpora"
    if not shared.is_dir():
        pytest.skip("shared corpora not present")
    for vault, rel in CASES:
        if vault == "handwritten":
            continue
        assert (FIXTURES / vault / rel).read_bytes() == (shared / vault / rel).read_bytes(), rel


def test_every_fixture_note_has_a_case() -> None:
    """A note copied into the fixtures but left out of CASES is a forgotten test."""
    listed = {(vault, rel) for vault, rel in CASES}
    for path in FIXTURES.rglob("*.md"):
        rel_to_fixtures = path.relative_to(FIXTURES)
        vault, rel = rel_to_fixtures.parts[0], "/".join(rel_to_fixtures.parts[1:])
        if rel in ("LICENSE.md", "README.md") or vault == "README.md":
            continue
        assert (vault, rel) in listed, f"{vault}/{rel} has no golden case"


def test_bom_crlf_sampler_parses_like_its_lf_twin() -> None:
    """The hand-written BOM+CRLF note and its plain LF twin give the same note."""
    rel = "BOM and CRLF sampler.md"
    raw = (FIXTURES / "handwritten" / rel).read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw
    twin = raw[3:].replace(b"\r\n", b"\n")
    a, b = parse_note(rel, raw), parse_note(rel, twin)
    assert (a.bom, a.crlf) == (True, True) and (b.bom, b.crlf) == (False, False)
    assert dataclasses.replace(a, hash=b.hash, bom=False, crlf=False) == b
