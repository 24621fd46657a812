"""`context --pinned`: relevant memories marked `pinned: true` come first,
the rest keep their order; without the flag nothing moves. (The option is
the walk in docs/architecture.md: a query field, the retriever, one flag.)"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from test_context import MESSAGE, own_vault  # noqa: F401  (fixture)

from memvault.cli.main import cli
from memvault.store.memory_store import MemoryStore


def relevant_ids(root: Path, *flags: str) -> list[str]:
    r = CliRunner().invoke(cli, ["--vault", str(root), "context", MESSAGE, "--json", "--no-record", *flags])
    assert r.exit_code == 0, r.output
    return [i["id"] for i in json.loads(r.stdout)["items"] if i.get("type") != "identity"]


def pin(root: Path, memory_id: str) -> None:
    store = MemoryStore.open(str(root))
    try:
        path = root / store.read(memory_id).path
    finally:
        store.close()
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    path.write_text("---\npinned: true\n" + text[4:], encoding="utf-8")
    assert CliRunner().invoke(cli, ["--vault", str(root), "sync", "--no-embed"]).exit_code == 0


def test_a_pinned_memory_comes_first_only_when_asked(own_vault: Path) -> None:  # noqa: F811
    before = relevant_ids(own_vault)
    memories = [i for i in before if not i.startswith("f-")]
    assert len(before) >= 2 and memories, before
    last = memories[-1]
    pin(own_vault, last)
    assert relevant_ids(own_vault) == before  # the flag off: nothing moves
    lifted = relevant_ids(own_vault, "--pinned")
    assert lifted[0] == last
    assert [i for i in lifted if i != last] == [i for i in before if i != last]
