"""dedup's cosines are the same figures whether numpy is loaded or not
(an `add` process compares a small block in plain Python to skip importing it)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from memvault.store.consolidation import dedup

DIMS = 384  # the bundled model's


def blob(values: list[float]) -> bytes:
    return np.asarray(values, dtype=np.float16).tobytes()


def test_plain_and_numpy_cosines_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    # Unit-ish vectors as the model gives, some close to the query (the similarities that matter).
    query = rng.normal(size=DIMS)
    block = [query + rng.normal(size=DIMS) * scale for scale in rng.uniform(0.05, 3.0, size=300)]
    blobs, q = [blob(list(v / np.linalg.norm(v))) for v in block], blob(list(query / np.linalg.norm(query)))
    with_numpy = dedup._cosines(blobs, q)
    monkeypatch.delitem(sys.modules, "numpy")  # the plain path: as in a process that never imported it
    plain = dedup._cosines(blobs, q)
    assert len(plain) == len(with_numpy) == len(block)
    # Rounded to 3 places both ways: equal, or one step apart where a value sits on a rounding edge.
    assert all(abs(a - b) <= 0.0011 for a, b in zip(plain, with_numpy))
    assert sum(a != b for a, b in zip(plain, with_numpy)) <= 3


def test_a_zero_vector_is_not_similar_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    q = blob([1.0] + [0.0] * (DIMS - 1))
    blobs = [blob([0.0] * DIMS), blob([1.0] + [0.0] * (DIMS - 1))]
    assert dedup._cosines(blobs, q) == [0.0, 1.0]
    monkeypatch.delitem(sys.modules, "numpy")
    assert dedup._cosines(blobs, q) == [0.0, 1.0]
