"""Observation models ``μ_k(·, x_e)`` from column-normalised confusion matrices (eqs. 5, 8, 9).

Class-labeled (Definition 4): the true environment is a tuple of object classes; an observation is a
tuple of predicted classes, one per object, with probability ``Π_i μ_k(y_i, x_i)``.
Proposition-labeled (Definition 3): the true environment is one set of propositions (a column of the
proposition matrix); an observation is a predicted set with probability ``μ_k(P_i, P_j)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

import numpy as np

from perception_safety.verification.builder import Observation, ObservationModel
from perception_safety.verification.errors import VerificationError


def _as_matrices(probs: np.ndarray, labels: Sequence[str], source: str) -> np.ndarray:
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim == 2:
        p = p[None]
    n = len(labels)
    if p.ndim != 3 or p.shape[1:] != (n, n):
        raise VerificationError(f"{source}: expected matrices of shape (bins, {n}, {n}) for labels {list(labels)}, "
                                f"got {p.shape}")
    return p


def _index(labels: Sequence[str], label: str, kind: str, source: str) -> int:
    if label in labels:
        return list(labels).index(label)
    wanted = frozenset(x.strip() for x in label.split(","))
    for i, lab in enumerate(labels):
        if frozenset(lab.split(",")) == wanted:
            return i
    raise VerificationError(f"{source}: true environment label {label!r} is not a {kind} label {list(labels)}")


def outcome_probs(p: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """``[..., bin, outcome]``: each outcome's probability, the product over its cells ``(pred, true)`` of
    ``p[..., bin, pred, true]`` (eq. 9; one cell per outcome for proposition labels, eq. 6).

    Leading axes of ``p`` (e.g. posterior draws) are kept.
    """
    out = p[..., cells[:, 0, 0], cells[:, 0, 1]].copy()
    for f in range(1, cells.shape[1]):
        out *= p[..., cells[:, f, 0], cells[:, f, 1]]
    return out


def class_cells(labels: Sequence[str], true_env: Sequence[str], source: str = "class-labeled matrices"
                ) -> tuple[tuple[Observation, ...], np.ndarray]:
    """Definition 4: outcomes = one predicted class per true object; ``cells[o, i] = (pred_i, true_i)``."""
    if not true_env:
        raise VerificationError(f"{source}: the class-labeled true environment needs at least one object")
    cols = [_index(labels, lab, "class", source) for lab in true_env]
    preds = list(product(range(len(labels)), repeat=len(cols)))
    cells = np.array([[(i, j) for i, j in zip(pr, cols, strict=True)] for pr in preds], dtype=np.int64)
    names = tuple(tuple(labels[i] for i in pr) for pr in preds)
    return names, cells


def prop_cells(labels: Sequence[str], true_env: str, empty_label: str = "empty",
               source: str = "proposition-labeled matrices") -> tuple[tuple[Observation, ...], np.ndarray]:
    """Definition 3: outcomes = the predicted sets of the true set's column; ``cells[o, 0] = (o, true)``."""
    j = _index(labels, true_env, "proposition", source)
    names = tuple(() if lab == empty_label else tuple(x.strip() for x in lab.split(",")) for lab in labels)
    cells = np.array([[(i, j)] for i in range(len(labels))], dtype=np.int64)
    return names, cells


def as_bin_edges(bin_edges: Sequence[tuple[float, float]] | None) -> tuple[tuple[float, float], ...] | None:
    """Bin edges as ``(lo, hi)`` float pairs; ``None`` (pooled) stays ``None``."""
    return None if bin_edges is None else tuple((float(a), float(b)) for a, b in bin_edges)


def class_observations(
    probs: np.ndarray,
    labels: Sequence[str],
    true_env: Sequence[str],
    bin_edges: Sequence[tuple[float, float]] | None = None,
    source: str = "class-labeled matrices",
) -> ObservationModel:
    """``probs[bin, pred, true]`` = μ_k(pred, true) (or ``[pred, true]`` pooled with ``bin_edges=None``)."""
    p = _as_matrices(probs, labels, source)
    names, cells = class_cells(labels, true_env, source)
    return ObservationModel(names, outcome_probs(p, cells), as_bin_edges(bin_edges), source)


def prop_observations(
    probs: np.ndarray,
    labels: Sequence[str],
    true_env: str,
    bin_edges: Sequence[tuple[float, float]] | None = None,
    empty_label: str = "empty",
    source: str = "proposition-labeled matrices",
) -> ObservationModel:
    """``probs[bin, pred, true]`` over 2^P labels such as ``"ped,obs"``; ``empty_label`` is the empty set."""
    p = _as_matrices(probs, labels, source)
    names, cells = prop_cells(labels, true_env, empty_label, source)
    return ObservationModel(names, outcome_probs(p, cells), as_bin_edges(bin_edges), source)
