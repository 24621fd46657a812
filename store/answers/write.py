"""What a store-side change answers: :class:`WriteResult`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class WriteResult:
    """What a store-side change did (``add``, ``update``, ``forget``, ...):
    :meth:`as_dict` for ``--json``, MCP and the daemon's socket, read back by
    :meth:`from_dict`."""

    id: str
    action: str  # added | duplicate_of | updated | unchanged | forgotten | restored | reverted | discarded
    path: str | None = None
    conflict: str | None = None
    conflict_path: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: The memory's version after the change (None when not looked up).
    version: int | None = None
    #: Secrets replaced by ``[redacted]`` in the content given.
    redacted: int = 0
    #: For ``duplicate_of``: why the new memory was taken for the existing one.
    reason: str | None = None
    #: For ``added``: live memories the new one resembles (``Similar.as_dict`` each), closest first.
    similar_to: list[dict[str, object]] | None = None
    #: The key the memory holds, for a keyed write (:mod:`~memvault.store.memories.keys`).
    key: str | None = None
    #: For ``added`` and ``updated`` claims: live claims the new text contradicts
    #: (``{id, text, kind}``; flagged at once, the new text the newer: :mod:`...consolidation.at_write`).
    contradicts: list[dict[str, object]] | None = None

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form for ``--json`` output."""
        data: dict[str, object] = {
            "id": self.id, "action": self.action, "path": self.path,
            "conflict": self.conflict, "conflict_path": self.conflict_path, "warnings": self.warnings,
        }
        if self.version is not None:
            data["version"] = self.version
        if self.redacted:
            data["redacted"] = self.redacted
        if self.action == "duplicate_of":
            data.update(duplicate_of=self.id, reason=self.reason)
        if self.similar_to is not None:
            data["similar_to"] = self.similar_to
        if self.key is not None:
            data["key"] = self.key
        if self.contradicts is not None:
            data["contradicts"] = self.contradicts
        return data

    @classmethod
    def from_dict(cls, data: object) -> "WriteResult":
        """The result :meth:`as_dict` gave (another process's: the daemon's);
        ValueError when ``data`` is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not isinstance(data.get("action"), str):
            raise ValueError("not a write result")
        kinds: dict[str, tuple[type, ...]] = {
            "path": (str, type(None)), "conflict": (str, type(None)), "conflict_path": (str, type(None)),
            "warnings": (list,), "version": (int, type(None)), "redacted": (int,), "reason": (str, type(None)),
            "similar_to": (list, type(None)), "key": (str, type(None)), "contradicts": (list, type(None)),
        }
        fields = {k: data[k] for k in kinds if k in data}
        if any(not isinstance(v, kinds[k]) for k, v in fields.items()):
            raise ValueError("not a write result")
        return cls(data["id"], data["action"], **fields)


@dataclass
class ScopeForgotten:
    """What ``forget --all --scope S`` did: the backup written first, the
    memories forgotten (each restorable), and any that could not be."""

    scope: str
    #: The backup of the durable state written before anything was forgotten
    #: (``memvault restore-backup`` takes it).
    backup: str
    forgotten: list[str] = field(default_factory=list)
    #: (memory id, why) of those left as they were.
    failed: list[tuple[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form for ``--json``."""
        return {"scope": self.scope, "backup": self.backup, "forgotten": len(self.forgotten),
                "ids": list(self.forgotten), "failed": [{"id": i, "error": why} for i, why in self.failed]}
