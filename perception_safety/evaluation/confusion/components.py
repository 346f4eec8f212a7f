"""Exact matchings of the small connected components of an admissible-pair graph (the batch matching's middle
path): components found by vectorised min-label propagation, every subset of a component's pairs enumerated at once.
"""

from __future__ import annotations

import numpy as np


def component_labels(a: np.ndarray, b: np.ndarray, n_nodes: int) -> np.ndarray:
    """Connected component of every node of an undirected graph with edges ``(a[k], b[k])``: the smallest node
    index of its component. Min-label hooking of roots with full pointer jumping, a few rounds of array passes
    (no sparse-matrix set-up, which costs ~1 ms per call on the small graphs of one episode)."""
    label = np.arange(n_nodes, dtype=np.int64)
    while True:
        la, lb = label.take(a), label.take(b)
        differ = np.flatnonzero(la != lb)
        if len(differ) == 0:
            return label
        la, lb = la.take(differ), lb.take(differ)
        low = np.minimum(la, lb)
        np.minimum.at(label, la, low)  # hook each root under the smaller root it touches
        np.minimum.at(label, lb, low)
        while True:  # pointer jumping: every node points at its root
            up = label.take(label)
            if np.array_equal(up, label):
                break
            label = up


MAX_COMPONENT_EDGES = 6
_MASKS = (np.arange(1 << MAX_COMPONENT_EDGES)[:, None] >> np.arange(MAX_COMPONENT_EDGES)[None, :]) & 1 == 1
_PAIRS = np.array([(i, j) for i in range(MAX_COMPONENT_EDGES) for j in range(i + 1, MAX_COMPONENT_EDGES)])
_PAIR_MASKS = (_MASKS[:, _PAIRS[:, 0]] & _MASKS[:, _PAIRS[:, 1]]).astype(np.float64)
_TIE = 1e-9  # best and runner-up matchings closer than this go to `match_boxes`


def small_component_matchings(
    ed: np.ndarray, eg: np.ndarray, ew: np.ndarray, n_det: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact maximum-weight matchings of the small connected components of an admissible-pair graph.

    Every subset of a component's (at most ``MAX_COMPONENT_EDGES``) pairs is enumerated at once.
    Returns ``(chosen, unresolved)`` edge masks and, per edge, its component label.
    """
    m = len(ed)
    nodes, inv = np.unique(np.concatenate([ed, eg + n_det]), return_inverse=True)
    a, b = inv[:m], inv[m:]
    comp = component_labels(a, b, len(nodes)).take(a)
    size = np.bincount(comp)
    chosen = np.zeros(m, dtype=bool)
    unresolved = size[comp] > MAX_COMPONENT_EDGES
    small = np.flatnonzero(~unresolved)
    if len(small) == 0:
        return chosen, unresolved, comp
    order = small[np.argsort(comp[small], kind="stable")]
    c = comp[order]
    _, row, counts = np.unique(c, return_inverse=True, return_counts=True)
    slot = np.arange(len(order)) - np.repeat(np.cumsum(counts) - counts, counts)
    n_rows, e = len(counts), MAX_COMPONENT_EDGES
    edge = np.full((n_rows, e), -1, dtype=np.int64)
    edge[row, slot] = order
    present = edge >= 0
    safe = np.where(present, edge, 0)
    d, g = np.where(present, ed[safe], -1), np.where(present, eg[safe], -2)
    w = np.where(present, ew[safe], 0.0)
    i, j = _PAIRS[:, 0], _PAIRS[:, 1]
    clash = present[:, i] & present[:, j] & ((d[:, i] == d[:, j]) | (g[:, i] == g[:, j]))
    invalid = (clash.astype(np.float64) @ _PAIR_MASKS.T > 0) | ((~present).astype(np.float64) @ _MASKS.T > 0)
    total = np.where(invalid, -1.0, w @ _MASKS.T)
    best = np.argmax(total, axis=1)
    top2 = np.partition(total, -2, axis=1)[:, -2:]
    tie = top2[:, 1] - top2[:, 0] <= _TIE
    pick = _MASKS[best] & present & ~tie[:, None]
    chosen[edge[pick]] = True
    unresolved[edge[present & tie[:, None]]] = True
    return chosen, unresolved, comp


