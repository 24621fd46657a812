"""What a remote MCP client (``memvault mcp --http``) is told of the server
machine's paths: vault-relative ones, or nothing.

A client over HTTP may sit on another machine (another person's, with the
token): the absolute paths of the server's files are none of its business.
Every answer of an HTTP server (tool results, resources, the prompt, and
every error) passes :class:`PathHider`: the vault's folder as a prefix is
taken off (a vault-relative path is left), the folder alone becomes the
vault's name, memvault's data dir becomes ``<memvault data>`` and the
home folder ``~``; an error (memvault's own words) says ``<path>`` for any
other absolute path it names (``leads outside the vault (to <path>)``).
A stdio server runs beside its client, on its machine: it is told as it is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: An absolute path in an error: a "/" that starts a word (not a URL's, not "and/or").
_ABSOLUTE_RE = re.compile(r"(?<![\w:/.~<>\-])/[^\s'\"`()\[\]{}<>,;]+")
#: What may not follow a folder for it to be that folder (``/x/Notes`` is not in ``/x/Notes2``).
_NAME_GOES_ON = r"(?![\w.\-])"


class PathHider:
    """Rewrites what an HTTP client is told (module docstring)."""

    def __init__(self, vault: Path, vault_name: str, data_home: Path, home: Path | None) -> None:
        rules: list[tuple[str, str]] = []
        for folder, inside, alone in ((vault, "", vault_name), (data_home, "<memvault data>/", "<memvault data>"),
                                      (home, "~/", "~")):
            if folder is None:
                continue
            for form in dict.fromkeys((os.fspath(folder), os.path.realpath(folder))):
                form = form.rstrip("/")
                if len(form) > 1:
                    rules += [(form + "/", inside), (form, alone)]
        rules.sort(key=lambda r: -len(r[0]))  # the vault inside the home: the longer prefix first
        self._rules = [(re.compile(re.escape(prefix) + ("" if prefix.endswith("/") else _NAME_GOES_ON)), shown)
                       for prefix, shown in rules]

    def text(self, value: str) -> str:
        """``value`` with the server's folders said as the module docstring says."""
        if "/" not in value:
            return value
        for pattern, shown in self._rules:
            value = pattern.sub(shown.replace("\\", "\\\\"), value)
        return value

    def error(self, message: str) -> str:
        """An error message: :meth:`text`, then ``<path>`` for any other absolute path."""
        return _ABSOLUTE_RE.sub("<path>", self.text(message))

    def tree(self, value: Any) -> Any:
        """A JSON value with :meth:`text` applied to every string in it (keys too)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.tree(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.tree(v) for v in value]
        return value

    def result(self, result: Any) -> Any:
        """A tool's answer (a ``CallToolResult``: its text and structured content)."""
        update: dict[str, Any] = {}
        if isinstance(getattr(result, "content", None), list):
            update["content"] = self.texts(result.content)
        if getattr(result, "structured_content", None) is not None:
            update["structured_content"] = self.tree(result.structured_content)
        return result.model_copy(update=update) if update and hasattr(result, "model_copy") else result

    def prompt(self, result: Any) -> Any:
        """A prompt's messages (``GetPromptResult``)."""
        messages = getattr(result, "messages", None)
        if not isinstance(messages, list) or not hasattr(result, "model_copy"):
            return result
        return result.model_copy(update={"messages": [
            m.model_copy(update={"content": self.texts([m.content])[0]}) for m in messages]})

    def texts(self, items: Iterable[Any]) -> list[Any]:
        """Content items (the SDK's text contents, or resource contents) with their text rewritten."""
        out = []
        for item in items:
            for field in ("text", "content"):
                value = getattr(item, field, None)
                if isinstance(value, str):
                    item = item.model_copy(update={field: self.text(value)}) if hasattr(item, "model_copy") \
                        else _replaced(item, field, self.text(value))
            out.append(item)
        return out


def _replaced(item: Any, field: str, value: str) -> Any:
    """A dataclass (the SDK's ReadResourceContents) with ``field`` replaced."""
    import dataclasses

    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return dataclasses.replace(item, **{field: value})
    return item


def for_store(store: Any) -> PathHider:
    """The hider for a server of ``store``'s vault on this machine."""
    from memvault.store.location import data_home

    try:
        home: Path | None = Path.home()
    except RuntimeError:  # no home folder to name
        home = None
    return PathHider(store.root, store.name, data_home(), home)
