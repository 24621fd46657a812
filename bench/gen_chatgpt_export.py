#!/usr/bin/env python3
"""A synthetic ChatGPT data export, for the import benchmark.

    python bench/gen_chatgpt_export.py OUT.json --conversations 5000 --messages 100000 --seed 1

Deterministic (same arguments, same bytes). Writes one ``conversations.json``
array, conversation by conversation (never held whole in memory), in the
shape of a real export (see the importer's docstring): a ``mapping`` tree
with a null root and a hidden system message, ``current_node``, per-message
``author``/``content``/``metadata``/``weight``/``recipient``. Mixed in, at
rates seen in real exports: edited prompts and regenerated answers
(abandoned branches, ~12% of conversations), null titles (~5%), missing
``create_time`` (~3%), custom instructions (~30%), reasoning (``thoughts``,
``reasoning_recap``), code sent to the python tool with its output, images
(``multimodal_text``), and first-person statements the fact extractor keeps.
Message lengths are lognormal (median ~300 characters, a few over 5,000).
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path
from typing import Any

WORDS = (
    "the a to of and in is for on with that this it be as at by from or are an not you your we can will if "
    "data file code test build deploy server client query index vault note memory search model vector python "
    "sqlite daemon config error log user time value list table key cache thread process import export script "
    "project release branch commit review docs example function class method return string number option"
).split()
STATEMENTS = [
    "I prefer {w} over {v} for this kind of work.", "I'm a {w} engineer based in {c}.",
    "Remember that the {w} server is called {v}.", "I decided to use {w} for all new projects.",
    "I'm going to migrate the {w} next week.", "My favourite editor is {w}.",
]
CITIES = ["Berlin", "Lisbon", "Oslo", "Kyoto", "Quito", "Lagos", "Perth"]


def _text(rng: random.Random, median: int = 300) -> str:
    n = max(8, int(rng.lognormvariate(math.log(median), 0.9)) // 6)
    words = [rng.choice(WORDS) for _ in range(n)]
    out, line = [], []
    for i, w in enumerate(words):
        line.append(w)
        if i % 14 == 13:
            out.append(" ".join(line).capitalize() + ".")
            line = []
    if line:
        out.append(" ".join(line).capitalize() + ".")
    return " ".join(out)


def _message(mid: str, role: str, content: dict[str, Any], t: float | None, **extra: Any) -> dict[str, Any]:
    msg = {
        "id": mid, "author": {"role": role, "name": extra.pop("name", None), "metadata": {}},
        "create_time": t, "update_time": None, "content": content, "status": "finished_successfully",
        "end_turn": role == "assistant", "weight": extra.pop("weight", 1.0),
        "metadata": extra.pop("metadata", {"model_slug": "gpt-4o", "request_id": mid[:8]}),
        "recipient": extra.pop("recipient", "all"), "channel": None,
    }
    return msg


def conversation(rng: random.Random, index: int, messages: int, start: float) -> dict[str, Any]:
    """One conversation with about ``messages`` visible messages."""
    cid = f"{rng.getrandbits(32):08x}-{index:04x}-4000-8000-{rng.getrandbits(48):012x}"
    mapping: dict[str, Any] = {}
    t = start

    def add(node_id: str, parent: str | None, message: dict[str, Any] | None) -> None:
        mapping[node_id] = {"id": node_id, "message": message, "parent": parent, "children": []}
        if parent is not None:
            mapping[parent]["children"].append(node_id)

    add("root", None, None)
    add("sys", "root", _message("sys", "system", {"content_type": "text", "parts": [""]}, None, weight=0.0,
                                metadata={"is_visually_hidden_from_conversation": True}))
    last = "sys"
    if rng.random() < 0.3:
        about = f"I am a {rng.choice(WORDS)} developer in {rng.choice(CITIES)}."
        add("ctx", last, _message("ctx", "user", {"content_type": "user_editable_context", "user_profile": about,
                                                  "user_instructions": "Be concise."}, None, metadata={
            "is_visually_hidden_from_conversation": True, "is_user_system_message": True,
            "user_context_message_data": {"about_user_message": about, "about_model_message": "Be concise."}}))
        last = "ctx"
    n = 0
    while n < messages:
        t += rng.uniform(5, 120)
        uid = f"u{n}"
        text = _text(rng, 200)
        if rng.random() < 0.15:
            text += " " + rng.choice(STATEMENTS).format(w=rng.choice(WORDS), v=rng.choice(WORDS), c=rng.choice(CITIES))
        if rng.random() < 0.04:
            content = {"content_type": "multimodal_text", "parts": [
                {"content_type": "image_asset_pointer", "asset_pointer": f"file-service://file-{uid}{index}",
                 "size_bytes": 40000, "width": 800, "height": 600, "fovea": None, "metadata": None}, text]}
        else:
            content = {"content_type": "text", "parts": [text]}
        add(uid, last, _message(uid, "user", content, t))
        last, n = uid, n + 1
        if rng.random() < 0.06:  # an abandoned regeneration of the answer
            add(f"x{n}", last, _message(f"x{n}", "assistant", {"content_type": "text", "parts": [_text(rng)]}, t + 1))
        if rng.random() < 0.1:
            add(f"r{n}", last, _message(f"r{n}", "assistant", {"content_type": "thoughts", "thoughts": [
                {"summary": "Thinking", "content": _text(rng, 400), "chunks": [], "finished": True}]}, t + 2, weight=0.0))
            last = f"r{n}"
        if rng.random() < 0.08 and n < messages:
            add(f"c{n}", last, _message(f"c{n}", "assistant", {"content_type": "code", "language": "python",
                                                               "text": "print(sum(range(10)))"}, t + 3, recipient="python"))
            add(f"o{n}", f"c{n}", _message(f"o{n}", "tool", {"content_type": "execution_output", "text": "45"},
                                           t + 4, name="python"))
            last, n = f"o{n}", n + 2
        aid = f"a{n}"
        add(aid, last, _message(aid, "assistant", {"content_type": "text", "parts": [_text(rng, 450)]}, t + 5))
        last, n = aid, n + 1
    title: str | None = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))).capitalize()
    if rng.random() < 0.05:
        title = None
    create: float | None = start
    if rng.random() < 0.03:
        create = None
    return {
        "title": title, "create_time": create, "update_time": t, "mapping": mapping, "moderation_results": [],
        "current_node": last, "plugin_ids": None, "conversation_id": cid, "conversation_template_id": None,
        "gizmo_id": None, "is_archived": False, "safe_urls": [], "default_model_slug": "gpt-4o", "id": cid,
    }


def generate(out: Path, conversations: int, messages: int, seed: int) -> dict[str, int]:
    """Write the export; returns its counts."""
    rng = random.Random(seed)
    per = messages / conversations
    start = 1_700_000_000.0
    out.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with out.open("w", encoding="utf-8") as fh:
        fh.write("[")
        for i in range(conversations):
            want = max(2, round(rng.gauss(per, per / 3)))
            conv = conversation(rng, i, want, start + i * 3600)
            written += sum(1 for node in conv["mapping"].values() if node["message"] is not None)
            fh.write(("," if i else "") + "\n" + json.dumps(conv, ensure_ascii=False))
        fh.write("\n]\n")
    return {"conversations": conversations, "messages": written, "bytes": out.stat().st_size}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--conversations", type=int, default=5000)
    parser.add_argument("--messages", type=int, default=100000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(json.dumps(generate(args.out, args.conversations, args.messages, args.seed)))


if __name__ == "__main__":
    main()
