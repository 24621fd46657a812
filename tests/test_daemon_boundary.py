"""The daemon is a process: it imports the store's public modules only.

``daemon/`` hosts services the store builds (the embedding loop, the warm
retriever, the llm jobs, the consolidation runs) and calls the store's API
(``MemoryStore``, ``serving``, ``settings``, ``location``, ``hosted``: the
top-level modules of ``store/``; and the typed questions and answers,
``queries`` and ``answers``, packages of a module per kind). An import of a store
sub-package (``memvault.store.embedding.vectors``, say) is engine logic in
the daemon, or a daemon that reaches past the API: this test fails on one,
wherever it is written (module level, inside a function, under
``TYPE_CHECKING``).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STORE = REPO / "store"
DAEMON = REPO / "daemon"

#: (daemon file, imported module) -> why it is allowed. None today; an entry
#: here must say why the store's API cannot serve.
EXCEPTIONS: dict[tuple[str, str], str] = {}


#: Packages of ``store/`` that are the API's own vocabulary, not engine rooms:
#: the typed questions and answers (packages only so that a process loads
#: the kinds it asks, not every dataclass).
API_PACKAGES = ("queries", "answers")


def _is_public_store_module(name: str) -> bool:
    """Whether ``name`` is a top-level module of ``store/`` (a file, not a
    sub-package) or a module of the typed questions and answers."""
    if name.split(".")[0] in API_PACKAGES:
        return True
    return "." not in name and (STORE / f"{name}.py").is_file() and not (STORE / name).is_dir()


def store_reaches(source: str) -> list[str]:
    """Every store module ``source`` imports that is not a top-level one."""
    bad: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "memvault.store":  # from memvault.store import location, embedding
                modules = [f"memvault.store.{a.name}" for a in node.names]
            else:
                modules = [node.module]
        else:
            continue
        for module in modules:
            if module.startswith("memvault.store.") and not _is_public_store_module(module[len("memvault.store."):]):
                bad.append(module)
    return bad


def test_the_daemon_imports_only_the_stores_public_modules() -> None:
    files = sorted(DAEMON.glob("*.py"))
    assert files, "no daemon modules found"
    found = {
        (path.name, module): None
        for path in files
        for module in store_reaches(path.read_text(encoding="utf-8"))
    }
    unexplained = sorted(k for k in found if k not in EXCEPTIONS)
    assert not unexplained, f"daemon/ imports store sub-packages (use the store's API): {unexplained}"
    stale = sorted(k for k in EXCEPTIONS if k not in found)
    assert not stale, f"exceptions no longer needed: {stale}"


def test_the_check_sees_every_form_of_import() -> None:
    source = (
        "import memvault.store.embedding.vectors\n"
        "from memvault.store.index.reconcile import SyncSummary\n"
        "from memvault.store import embedding, location\n"
        "from memvault.store.memory_store import MemoryStore\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from memvault.store.retrieval.retriever import Retriever\n"
        "def f():\n"
        "    from memvault.store.facts.llm_extract import LLMCancelled\n"
    )
    assert sorted(store_reaches(source)) == sorted([
        "memvault.store.embedding.vectors",
        "memvault.store.index.reconcile",
        "memvault.store.embedding",
        "memvault.store.retrieval.retriever",
        "memvault.store.facts.llm_extract",
    ])
