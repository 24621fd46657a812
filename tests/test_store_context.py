"""A room of the store runs on a bare StoreContext (a plain connection, no
MemoryStore): what it is given is all it uses."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import apsw
import pytest

from memvault.store import location
from memvault.store.consolidation.run import plan_for
from memvault.store.context import NoIndexError, StoreContext
from memvault.store.db.connection import connect
from memvault.store.index.doctor import diagnose
from memvault.store.memory_store import MemoryStore


@pytest.fixture
def vault(tmp_path: Path, memvault_env: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "Plans.md").write_text("# Plans\nShip the billing service on Friday.\n", encoding="utf-8")
    store = MemoryStore.open(str(root))
    try:
        store.sync()
        store.add("Prefers green tea in the morning.", "semantic")
        store.add("Prefers green tea in the morning, no sugar.", "semantic")
    finally:
        store.close()
    return root


def test_rooms_run_on_a_context_without_the_facade(vault: Path) -> None:
    store = MemoryStore.open(str(vault))
    try:
        through_the_facade = (plan_for(store.ctx, date(2026, 11, 1)).id, [f.as_dict() for f in diagnose(store.ctx)])
    finally:
        store.close()
    con = connect(store.data_dir / location.INDEX_FILE, state=store.data_dir / location.STATE_FILE)
    try:
        ctx = StoreContext(vault, store.settings, store.data_dir, lambda: con)
        assert ctx.read_con() is con and ctx.name == "vault"
        findings = diagnose(ctx)
        assert [f for f in findings if not f.warning] == []
        assert (plan_for(ctx, date(2026, 11, 1)).id, [f.as_dict() for f in findings]) == through_the_facade
    finally:
        con.close()


def test_a_context_without_an_index_refuses_to_read(tmp_path: Path, memvault_env: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    store = MemoryStore.open(str(root))

    def never() -> apsw.Connection:
        raise AssertionError("a read before any index must not connect")

    ctx = StoreContext(root, store.settings, store.data_dir, never)
    with pytest.raises(NoIndexError, match="has no index yet"):
        ctx.read_con()
