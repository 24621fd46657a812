"""The README documents every configuration key, with its default and variable."""

from __future__ import annotations

import re
from pathlib import Path

from memvault.store.settings import KEYS

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_every_config_key_has_a_row_with_its_variable_and_meaning() -> None:
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([a-z_.]+)` \|.*$", README, re.M)}
    assert set(rows) == {k.name for k in KEYS}
    for key in KEYS:
        row = rows[key.name]
        assert f"`{key.env}`" in row and key.doc in row, row


def test_the_set_up_commands_are_the_ones_ci_runs() -> None:
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e '.[test]'" in README and "pip install -e '.[test]'" in ci
    assert "\npytest\n" in README and "\npytest\n" in ci
