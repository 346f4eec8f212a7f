"""``np.searchsorted`` of per-frame queries into per-frame sorted keys, in a few array passes.

The window join of `matching.candidate_pairs` sorts the objects by ``key = frame * stride + local`` (``local`` in
``(0, stride)``) and looks up two bounds per detection. A binary search over a million keys costs ~40 ns per query
(twenty unpredictable branches), although the answer lies among the few objects of the query's own frame. Here
every frame's ``(0, stride)`` is cut into ``n_buckets`` equal buckets; a cumulative count table gives, per (frame,
bucket), the position of its first key, and each query steps forward from its bucket's first key over the keys of
that bucket below it (a fraction of one on average). Buckets come from the same arithmetic for keys and queries
(``fl(fl(key - frame * stride) * n_buckets / stride)``, monotone in ``key``), so every key of an earlier bucket is
below the query and the result equals the binary search exactly; queries that would step further than
``MAX_STEPS`` (a crowd in one bucket) finish with ``np.searchsorted`` itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_STEPS = 16


@dataclass(frozen=True)
class FrameSortedKeys:
    """Keys sorted by (frame, local) with a per-(frame, bucket) table of first positions."""

    keys: np.ndarray
    """The sorted keys followed by one NaN (compares False: a query never steps past the end)."""
    table: np.ndarray
    """``table[f * n_buckets + j]``: number of keys before frame ``f``'s bucket ``j``."""
    stride: float
    n_buckets: int

    @classmethod
    def build(cls, sorted_keys: np.ndarray, key_frame: np.ndarray, n_frames: int, stride: float) -> FrameSortedKeys:
        """``key_frame``: the frame of every sorted key (non-decreasing)."""
        n = len(sorted_keys)
        n_buckets = int(min(64, max(4, 2 * -(-n // max(n_frames, 1)))))
        keys = np.empty(n + 1)
        keys[:n] = sorted_keys
        keys[n] = np.nan
        table = np.zeros(n_frames * n_buckets + 1, dtype=np.int64)
        out = cls(keys, table, float(stride), n_buckets)
        np.cumsum(np.bincount(out._bucket(sorted_keys, key_frame), minlength=n_frames * n_buckets), out=table[1:])
        return out

    def _bucket(self, values: np.ndarray, frame: np.ndarray) -> np.ndarray:
        """Global bucket index ``frame * n_buckets + j`` of each value (the same arithmetic for keys and queries)."""
        b = self.n_buckets
        with np.errstate(invalid="ignore", over="ignore"):
            local = values - frame * self.stride
            local *= b / self.stride
            np.floor(local, out=local)
            np.clip(local, 0.0, b - 1.0, out=local)  # NaN stays NaN
            local[np.isnan(local)] = 0.0
        j = local.astype(np.int64)
        j += frame * b
        return j

    def search(self, queries: np.ndarray, query_frame: np.ndarray, side: str = "left") -> np.ndarray:
        """``np.searchsorted(keys, queries, side)`` for queries that lie in their frame's ``(frame * stride,
        (frame + 1) * stride)``."""
        pos = self.table.take(self._bucket(queries, query_frame))
        below = np.less if side == "left" else np.less_equal
        active = np.flatnonzero(below(self.keys.take(pos), queries))
        for _ in range(MAX_STEPS):
            if len(active) == 0:
                return pos
            pos[active] += 1
            active = active[below(self.keys.take(pos.take(active)), queries.take(active))]
        if len(active):
            pos[active] = np.searchsorted(self.keys[:-1], queries.take(active), side=side)
        return pos
