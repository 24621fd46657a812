"""The texts of a memvault export, made fit for this vault before they are written.

An export file is hostile input like any other: whatever a record's texts
hold lands in the vault (notes, memory notes, conflict copies, and the
history log that carries versions and reasons to every device), and no
credential may land in any file under the vault. So each text a record
writes as a new file or a durable row is redacted
(:func:`~memvault.vault_io.secrets.redact`), a tag or a key holding a
credential is left out (a name, not text to keep), a path holding one is
written under its redacted name, and each ``related`` link is checked to
read back as itself from the note's Related section
(:func:`~memvault.vault_io.memory_note.check_related`): a link that would
not (``x]]\\n---\\nevil: 1``) is left out, the memory still written.
A person's bytes already in the vault are never touched: these run only on
what the importer writes new.

:class:`ExportTexts` counts what it redacted and says what it left out, for
the import's report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memvault.store.flows.memories import redacted_tree
from memvault.vault_io.errors import UsageError
from memvault.vault_io.memory_note import check_related
from memvault.vault_io.secrets import REDACTED, redact

#: What a credential in a file name becomes (no brackets: Obsidian's links cannot name ``[`` or ``]``).
NAME_REDACTED = "redacted"


@dataclass
class ExportTexts:
    """Redacts an export's texts, counting them (``redacted``) and listing
    what was left out (``warnings``)."""

    redacted: int = 0
    warnings: list[str] = field(default_factory=list)

    def text(self, value: str) -> str:
        """``value`` with every credential redacted."""
        out, n = redact(value)
        self.redacted += n
        return out

    def optional(self, value: Any) -> Any:
        """:meth:`text` for a string (a reason, a why); anything else as it is."""
        return self.text(value) if isinstance(value, str) else value

    def tree(self, data: dict[str, Any]) -> dict[str, Any]:
        """Front-matter with every credential redacted (a key names its value: ``api_key: x``)."""
        out, n = redacted_tree(data)
        self.redacted += n
        return out

    def json_tree(self, data: Any) -> Any:
        """Any JSON value (a consolidation action's detail or undo data, a
        run's summary) with every string redacted; a dict's key names its
        value, as in front-matter."""
        if data is None:
            return None
        out, n = redacted_tree({"": data})
        self.redacted += n
        return out[""]

    def names(self, values: list[Any], what: str) -> list[Any]:
        """Tags (or other names) without the ones holding a credential."""
        kept = [v for v in values if not (isinstance(v, str) and redact(v)[1])]
        if len(kept) < len(values):
            self.redacted += len(values) - len(kept)
            self.warnings.append(f"{what}: {len(values) - len(kept)} tag(s) holding a credential left out")
        return kept

    def key(self, value: Any, what: str) -> Any:
        """A keyed memory's key, or None when it holds a credential."""
        if isinstance(value, str) and redact(value)[1]:
            self.redacted += 1
            self.warnings.append(f"{what}: its key holds a credential; written without it")
            return None
        return value

    def path(self, rel: str) -> str:
        """A vault path with each part holding a credential renamed (its extension kept)."""
        parts = []
        for part in rel.split("/"):
            stem, dot, ext = part.rpartition(".") if "." in part.lstrip(".") else (part, "", "")
            new, n = redact(stem)
            if n:
                self.redacted += n
                part = new.replace(REDACTED, NAME_REDACTED) + dot + ext
            parts.append(part)
        return "/".join(parts)

    def related(self, links: Any, what: str) -> list[str]:
        """The memory's ``related`` links: each one that reads back as itself
        and names no credential; one that does not is left out, said once."""
        out: list[str] = []
        for link in links if isinstance(links, list) else []:
            try:
                checked = check_related([link]) if isinstance(link, str) else None
            except UsageError:
                checked = None
            if checked is None:
                shown = repr(link)[:60]
                self.warnings.append(f"{what}: related link {shown} cannot be written as a link; left out")
            elif checked and redact(checked[0])[1]:
                self.redacted += 1
                self.warnings.append(f"{what}: a related link naming a credential left out")
            else:
                out += checked
        return out

    def trace(self, trace: Any) -> Any:
        """A trace snapshot (an earlier version, a retired fact) with its
        content, title and front-matter redacted and tags holding a credential
        left out; anything not a snapshot as it is."""
        if not isinstance(trace, dict):
            return trace
        out = dict(trace)
        for name in ("content", "title", "reason"):
            if name in out:
                out[name] = self.optional(out[name])
        if isinstance(out.get("tags"), list):
            out["tags"] = self.names(out["tags"], f"version {out.get('id')}")
        meta = out.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("frontmatter"), dict):
            out["metadata"] = {**meta, "frontmatter": self.tree(meta["frontmatter"])}
        return out

