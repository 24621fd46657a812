"""The tool list an agent keeps in its context, said once and plainly.

Every tool's name, description, input schema and annotations sit in an
agent's context for the whole session, so ``tools/list`` says each thing
once. The SDK writes what pydantic gives: a ``title`` per property (the
property's own name, capitalised), an ``anyOf`` with ``null`` and a
``"default": null`` for every optional argument, the docstring's
indentation, and every annotation hint even where it says what the
protocol assumes. :func:`compact_tool` drops exactly that:

- titles pydantic made from the names;
- the ``null`` alternative and ``"default": null`` of an optional argument
  (it is not in ``required``: a client leaves it out; the server still
  accepts an explicit null); the rest stay ``anyOf``, never a list of
  types, which some model APIs refuse;
- the string alternative of a list of strings (tags, types, links, ids):
  the server still takes one comma-separated string, as it takes the
  aliases models guess, but lists one form (a list);
- annotation hints equal to the protocol's defaults (``readOnlyHint``
  false, ``destructiveHint`` true, ``idempotentHint`` false,
  ``openWorldHint`` true), and ``destructiveHint``/``idempotentHint`` of a
  read-only tool, which the protocol says mean nothing there;
- the docstring's line breaks and indentation.

The schema the server checks arguments against is the SDK's, untouched; only
what is listed is compacted. tests/test_mcp_server.py checks the list with
the SDK's own client (every tool and argument still there, under 6,000
characters).
"""

from __future__ import annotations

from typing import Any

from mcp.types import Tool, ToolAnnotations

#: The protocol's default of each annotation hint (a hint equal to it says nothing).
HINT_DEFAULTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
#: Hints the protocol reads only when a tool is not read-only.
WRITE_HINTS = ("destructiveHint", "idempotentHint")


def _is_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema == {"type": "null"}


#: A list of strings; the server also takes one comma-separated string for it (clients.mcp_reads.as_list).
STRINGS = {"type": "array", "items": {"type": "string"}}


def compact_property(prop: dict[str, Any], required: bool) -> dict[str, Any]:
    """One argument's schema without its generated title; an optional one
    without its null alternative (and a null default): a single one left is
    the schema itself, a string or a list of strings is listed as the list
    (its one canonical form, as an alias is left unlisted), more stay ``anyOf``."""
    out = {k: v for k, v in prop.items() if k != "title"}
    branches = out.get("anyOf")
    if isinstance(branches, list) and not required:
        if out.get("default", 0) is None:
            del out["default"]
        branches = [b for b in branches if not _is_null(b)]
    if isinstance(branches, list) and len(branches) == 2 and {"type": "string"} in branches and STRINGS in branches:
        branches = [STRINGS]
    if isinstance(branches, list):
        del out["anyOf"]
        if len(branches) == 1 and isinstance(branches[0], dict):
            out = {**branches[0], **out}
        else:
            out["anyOf"] = branches
    return out


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema as it is listed: the SDK's, each property compacted."""
    out = {k: v for k, v in schema.items() if k != "title"}
    props = out.get("properties")
    required = set(out.get("required") or ())
    if isinstance(props, dict):
        out["properties"] = {name: compact_property(p, name in required) if isinstance(p, dict) else p
                             for name, p in props.items()}
    return out


def compact_annotations(hints: dict[str, Any]) -> dict[str, Any]:
    """Annotation hints that say something the protocol's defaults do not."""
    read_only = hints.get("readOnlyHint") is True
    return {k: v for k, v in hints.items()
            if v is not None and HINT_DEFAULTS.get(k) != v and not (read_only and k in WRITE_HINTS)}


def one_paragraph(text: str | None) -> str | None:
    """A docstring as one line: its breaks and indentation are layout, not meaning."""
    return " ".join(text.split()) if text else text


def compact_tool(tool: Tool) -> Tool:
    """``tool`` as ``tools/list`` gives it: the same name and arguments, said once."""
    hints = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
    kept = compact_annotations(hints)
    return tool.model_copy(update={
        "description": one_paragraph(tool.description),
        "input_schema": compact_schema(tool.input_schema),
        "annotations": ToolAnnotations.model_validate(kept) if kept else None,
    })
