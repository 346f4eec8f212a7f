"""`component_labels` gives the partition of scipy's `connected_components` (the independent reference) on random
graphs: chains (many rounds), stars, isolated nodes, repeated edges and self-loops."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from perception_safety.evaluation.confusion.components import component_labels


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    return len(set(zip(a.tolist(), b.tolist(), strict=True))) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.mark.parametrize("seed", range(8))
def test_component_labels_equal_connected_components(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    m = int(rng.integers(0, 2 * n))
    a, b = rng.integers(0, n, m), rng.integers(0, n, m)
    if seed % 2:  # a long chain in a random order: the slowest case for label propagation
        perm = rng.permutation(n)
        a, b = np.concatenate([a, perm[:-1]]), np.concatenate([b, perm[1:]])
    label = component_labels(a, b, n)
    _, ref = connected_components(coo_matrix((np.ones(len(a)), (a, b)), shape=(n, n)), directed=False)
    assert same_partition(label, ref)
    for c in np.unique(label):  # each component is labelled by its smallest node
        assert c == np.flatnonzero(label == c).min()


def test_no_edges() -> None:
    assert component_labels(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 3).tolist() == [0, 1, 2]
