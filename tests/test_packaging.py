"""The wheel holds every package: ``[tool.setuptools] packages`` in
pyproject.toml names each source folder with an ``__init__.py`` (an editable
install finds a forgotten one anyway, so only a real install would fail)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_folder_is_listed_and_every_listed_one_exists() -> None:
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = {name: Path(path) for name, path in tool["package-dir"].items()}
    found = set()
    for top, folder in folders.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            if "__pycache__" not in rel.parts:
                found.add(".".join((top, *rel.parts)))
    assert found == set(tool["packages"])
