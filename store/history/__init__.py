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
