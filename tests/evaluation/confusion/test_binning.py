"""`bin_index` equals numpy's binary search (``searchsorted(edges, v, side="right") - 1``) on every kind of value."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.evaluation.confusion.binning import bin_index

EDGES = [
    [10.0 * i for i in range(11)],  # the default: even
    [0.0, 1.0, 5.0, 30.0, 31.0, 200.0],  # uneven
    [5.0, 10.0],  # one bin
    [0.1 * i for i in range(11)],  # even but not exactly representable
    [-3.0, -1.0, 0.5, 1e9],  # one huge bin
]


@pytest.mark.parametrize("edges", EDGES)
def test_bin_index_equals_searchsorted(edges: list[float]) -> None:
    e = np.asarray(edges)
    rng = np.random.default_rng(3)
    values = np.concatenate(
        [
            rng.uniform(e[0] - 5, e[-1] + 5, 20_000),
            e,  # exactly on an edge: the bin that starts there
            np.nextafter(e, -np.inf),
            np.nextafter(e, np.inf),
            [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e300],
        ]
    )
    rng.shuffle(values)
    got = bin_index(values, e)
    assert got.dtype == np.int64
    assert got.tolist() == (np.searchsorted(e, values, side="right") - 1).tolist()


def test_bin_index_of_nothing() -> None:
    assert bin_index(np.zeros(0), np.array([0.0, 1.0])).tolist() == []
