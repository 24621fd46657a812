"""memvault.daemon."""
