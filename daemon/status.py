"""The daemon's live state, published for ``memvault status``.

The running daemon keeps a small JSON file in the vault's data dir
(``daemon.json``): its pid and start time, watch mode, queue length, last
batch and rescan. It replaces the file atomically (temp file + ``os.replace``)
so a reader never sees half of it, and at most about once a second, only when
something changed. A reader trusts the file only while the daemon lock is
held: a daemon that was killed leaves the file behind, and then it is stale.

Status reads only the data dir, so it also answers while the vault folder is
gone (an unmounted disk) and the daemon waits for it to come back.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.store.serving import is_locked, read_holder

if TYPE_CHECKING:
    from memvault.store.hosted import SyncSummary
    from memvault.store.memory_store import MemoryStore

#: The daemon's logger: its summaries read as the runner's own lines.
log = logging.getLogger("memvault.daemon")

STATE_FILE = "daemon.json"


def state_path(data_dir: Path) -> Path:
    """The daemon state file of the vault whose data dir is ``data_dir``."""
    return data_dir / STATE_FILE


def write_state(data_dir: Path, state: dict[str, Any]) -> None:
    """Atomically replace the state file with ``state``."""
    fd, tmp = tempfile.mkstemp(prefix=".daemon-", suffix=".json.tmp", dir=data_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(state, fh, ensure_ascii=False)
            fh.write("\n")
        os.replace(tmp, state_path(data_dir))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_state(data_dir: Path) -> dict[str, Any] | None:
    """The published state, or None when absent or unreadable."""
    try:
        data = json.loads(state_path(data_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def vault_status(store: "MemoryStore") -> dict[str, Any]:
    """Everything ``memvault status`` reports about one vault.

    ``running`` comes from the lock (the only reliable witness); the rest of
    the daemon fields come from its state file when the lock is held, and are
    None otherwise. Index counts come from :meth:`MemoryStore.stats`,
    passed through whole (including ``conflicts`` once the store has it).
    """
    data_dir = store.data_dir
    missing = not store.root.is_dir()
    running = is_locked(data_dir)
    state = read_state(data_dir) if running else None
    holder = read_holder(data_dir) if running else None
    if state is not None and holder is not None and state.get("pid") != holder.pid:
        state = None  # left by an earlier daemon that died before the current one published
    out: dict[str, Any] = {
        "vault": str(store.root),
        "vault_missing": missing,
        "running": running,
        "pid": holder.pid if holder else None,
        "since": holder.started if holder else None,
        "mode": state.get("mode") if state else None,
        "queue": state.get("queue") if state else None,
        "last_batch": state.get("last_batch") if state else None,
        "last_rescan": state.get("last_rescan") if state else None,
        "failures": state.get("failures") if state else None,
        "embedding": state.get("embedding") if state else None,
        "services": state.get("services") if state else None,
        "query_socket": state.get("query_socket") if state else None,
        "last_sync": None,
        "conflicts": None,
        "index": None,
    }
    if store.has_index():
        counts = store.stats().to_json()
        counts.pop("vault", None)
        out["index"] = counts
        out["last_sync"] = counts.get("last_sync")
        # "conflicts" counts the list beside it (open: memvault's whose copy is still in
        # the vault, and sync tools' copies); every one memvault ever recorded is apart.
        out["conflict_list"] = [c.to_json() for c in store.conflicts()]
        out["conflicts"] = len(out["conflict_list"])
        out["conflicts_recorded"] = counts.get("conflicts", 0)
        # One number for open conflicts wherever it is read: the index counts
        # say the same as the top level (what memvault ever recorded is apart).
        counts["conflicts"] = out["conflicts"]
        counts["conflicts_recorded"] = out["conflicts_recorded"]
        counts["conflicts_from_sync"] = sum(1 for c in out["conflict_list"] if c.get("kind") == "sync")
        out["contradictions"] = len(store.contradictions())
        # The latest consolidation run (the daemon's first one included): what
        # it did, and what it proposes (a later run of any kind supersedes it).
        latest = store.consolidation_runs(limit=1)
        out["consolidation"] = latest[0] if latest else None
        # Keys two live memories hold (a keyed fact added on two devices, a copied note).
        out["key_clashes"] = [{**c.to_json(), "detail": c.detail} for c in store.key_clashes()]
        out["pending_writes"] = store.pending_writes()  # memory notes not written yet
        # `memvault pause`: what an agent's session says is not stored meanwhile.
        out["paused"] = [{**p.to_json(), "detail": p.describe()} for p in store.pauses()]
    return out


def vault_without_folder(vault_arg: str | None) -> "MemoryStore | None":
    """The selected vault when its folder is missing but memvault has data for
    it (an index or a daemon lock): enough for ``status`` to report on.

    None when the folder exists (any other problem with it stands) or
    memvault never knew this vault.
    """
    from memvault.store.memory_store import MemoryStore
    from memvault.store.settings import load_settings

    settings = load_settings({"vault": vault_arg})
    if not settings.vault.strip():
        return None
    root = Path(os.path.expanduser(settings.vault)).absolute()
    if os.path.lexists(root):
        return None
    store = MemoryStore(root, settings)
    return store if store.data_dir.is_dir() else None


def iso_now() -> str:
    """Local time with its offset, as the state file shows times."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def log_summary(what: str, summary: "SyncSummary", checked: int | None) -> None:
    """Log what a full sync (``checked`` None) or a batch of ``checked`` paths did:
    warnings always, a quiet batch only at debug level."""
    for line in summary.warnings:
        log.warning("%s", line)
    for line in summary.parse_errors:
        log.warning("parse error: %s", line)
    changed = summary.added + summary.updated + summary.moved + summary.deleted
    if checked is None:
        level = logging.INFO if changed or what == "full sync" else logging.DEBUG
        log.log(level, "%s: %d added, %d updated, %d moved, %d deleted in %.2fs",
                what, summary.added, summary.updated, summary.moved, summary.deleted, summary.seconds)
    elif changed:
        log.info("indexed %d changed paths in %.2fs", changed, summary.seconds)
    else:
        log.debug("checked %d paths: nothing changed (%.2fs)", checked, summary.seconds)
