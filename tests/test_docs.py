"""The docs document every configuration key; the README's set-up is what CI runs; links resolve."""

from __future__ import annotations

import re
from pathlib import Path

from memvault.store.settings import KEYS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONFIG_DOC = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")


def test_every_config_key_has_a_row_with_its_variable_and_meaning() -> None:
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([a-z_.]+)` \|.*$", CONFIG_DOC, re.M)}
    assert set(rows) == {k.name for k in KEYS}
    for key in KEYS:
        row = rows[key.name]
        assert f"`{key.env}`" in row and key.doc in row, row


def test_the_set_up_commands_are_the_ones_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e '.[test]'" in README and "pip install -e '.[test]'" in ci
    # The README's test command, one line of &&-joined steps; .ci/run runs each step on a line of its own.
    test_line = "ruff check . && python .ci/typecheck.py && pytest"
    assert f"\n{test_line}\n" in README
    assert all(f"\n{step}\n" in ci for step in test_line.split(" && "))


def test_every_relative_link_of_the_docs_resolves() -> None:
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"
