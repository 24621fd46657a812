"""memvault.vault_io."""
