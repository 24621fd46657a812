"""memvault.store."""
