"""History in the vault: what only memvault knows, shared by every device.

Each device appends the rows it changed in the shared tables of
``state.db`` (versions, forgets, fact history and forgets, merges,
consolidation runs and actions, contradictions, links, import keys) to a
log of its own inside the vault (:mod:`.logfile`); every device reads every
device's log and keeps, for each row, the record that is last in one total
order, so the result does not depend on the order the files were seen in
(:mod:`.replicate`). ``state.db`` is thus a cache of the logs: a new
machine, or a lost data dir, gets the whole history back from the vault.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import apsw


def has_queued(con: "apsw.Connection") -> bool:
    """Whether this device has changes queued for its log
    (``state.history_pending``). Every command asks at its end, so it lives
    here, apart from :mod:`.replicate` and what that imports."""
    from memvault.store.db.rows import scalar

    return bool(scalar(con, "SELECT EXISTS (SELECT 1 FROM state.history_pending)"))

