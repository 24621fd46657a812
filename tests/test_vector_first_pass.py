"""The binary first pass of vector search: what it scores is exact, and the
true nearest neighbours survive it."""

from __future__ import annotations

import numpy as np
import pytest

from memvault.store.embedding import vectors as vec


def clustered(n: int, dim: int = 384, seed: int = 3) -> np.ndarray:
    """Unit vectors around a shared direction, in clusters, like sentence embeddings."""
    rng = np.random.default_rng(seed)
    shared = rng.standard_normal(dim)
    centres = rng.standard_normal((64, dim)) + 2 * shared
    m = centres[rng.integers(0, 64, n)] + 0.7 * rng.standard_normal((n, dim))
    m = m.astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


@pytest.fixture
def small_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vec, "EXACT_BELOW", 500)  # exercise the first pass on a small matrix


def test_the_first_pass_keeps_the_nearest_neighbours(small_threshold: None) -> None:
    m = clustered(6000)
    matrix = vec.VectorMatrix("k", 0, np.arange(len(m)), np.arange(len(m)), m)
    rng = np.random.default_rng(9)
    recall = []
    for i in rng.integers(0, len(m), 40):
        q = m[i] + 0.3 * rng.standard_normal(m.shape[1]).astype(np.float32) / np.sqrt(m.shape[1])
        q /= np.linalg.norm(q)
        sims = matrix.similarities(q)
        scored = sims > vec.NOT_SCORED
        assert scored.sum() == vec.rescored(len(m))
        np.testing.assert_allclose(sims[scored], (m @ q)[scored], rtol=1e-5, atol=1e-6)
        exact_top = set(np.argsort(-(m @ q))[:10])
        recall.append(len(exact_top & set(np.argsort(-sims)[:10])) / 10)
    assert np.mean(recall) >= 0.95


def test_small_matrices_are_scored_exactly_and_exact_scores_any_rows() -> None:
    m = clustered(300)
    matrix = vec.VectorMatrix("k", 0, np.arange(300), np.arange(300), m)
    q = m[7]
    np.testing.assert_allclose(matrix.similarities(q), m @ q, rtol=1e-6)
    np.testing.assert_allclose(matrix.exact(np.array([3, 9]), q), m[[3, 9]] @ q, rtol=1e-6)
