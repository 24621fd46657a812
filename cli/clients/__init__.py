"""What memvault gives agent clients beside its Click commands (:mod:`memvault.cli`):
their config files edited (:mod:`.client_config`, JSONC by :mod:`.jsonc`), the
MCP server started (:mod:`.mcp_serve`, the fast stdio handshake :mod:`.mcp_boot`)
and its tidy tools (:mod:`.mcp_tidy`)."""
