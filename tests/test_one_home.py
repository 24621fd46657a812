"""Issue 24 item 5: a concept with one home gives the values its copies gave."""

from __future__ import annotations

import hashlib

from memvault.store.index.classify import content_key, memory_key


def test_memory_key_is_the_content_key_of_its_normalised_text() -> None:
    # The values the two copies gave (traces.content_key and import keys are stored: they must not move).
    old_memory = hashlib.sha256("semantic\x00user\x00likes green tea".encode()).hexdigest()
    assert memory_key("semantic", "user", "  Likes  GREEN\ttea \n") == old_memory
    seed = "\x00".join(["a", "", "3"])
    assert content_key("a", None, 3) == "sha256:" + hashlib.sha256(seed.encode("utf-8")).hexdigest()
    assert memory_key("semantic", "user", "x") == content_key("semantic", "user", "x")[len("sha256:"):]
