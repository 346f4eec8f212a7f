"""The runtime monitor inside the chain: observation = (detector observation, monitor verdict) (issue 14).

From the joint counts ``n(o, alarm)`` per distance bin and true environment (`VerdictSplit`) three observation
models of the same frames: ``f`` (the verdict summed out: the monitor is ignored), ``f + m`` (each outcome
with and without `ALARM_TAG`; the controller takes the fail-safe action on an alarm) and ``f*`` (perfect
perception: the observation is the truth). Class-labeled environments with several objects use
``μ(y, a | x) = P(a | x_1) Π_i P(y_i | x_i, a)`` (the verdict is per frame, the counts per object: objects are
taken as independent given the verdict); proposition-labeled and one-object environments are exact.
"""

from __future__ import annotations

from itertools import product

import numpy as np

from perception_safety.evaluation.confusion.by_verdict import VerdictSplit
from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.evaluation.intervals import bonferroni, clopper_pearson
from perception_safety.verification.builder import ObservationModel
from perception_safety.verification.config import TrueEnvConfig
from perception_safety.verification.controllers.base import ALARM_TAG
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.observations import _index


def _edges(dc: DistanceConfusion, pooled: bool, beyond_last_bin: str) -> tuple[tuple[float, float], ...] | None:
    if pooled:
        return None
    edges = list(dc.bin_edges)
    if beyond_last_bin == "last_bin":
        edges[-1] = (edges[-1][0], float("inf"))
    return tuple(edges)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(np.broadcast(num, den).shape)
    np.divide(num, den, out=out, where=den > 0)
    return out


def env_columns(dc: DistanceConfusion, variant: str, env: TrueEnvConfig) -> tuple[str, list[int]]:
    """The matrix kind of ``variant`` and the true-label column(s) of ``env`` in it."""
    kind = "class" if variant.startswith("class") else "prop"
    labels = dc.labels(kind)
    wanted = env.class_objects if kind == "class" else [env.prop]
    return kind, [_index(labels, lab, kind, dc.source or "matrices") for lab in wanted]


def verdict_column_counts(split: VerdictSplit, variant: str, env: TrueEnvConfig) -> np.ndarray:
    """``n[bin, verdict]`` (verdict 0 = no alarm, 1 = alarm) of the environment's first column (the one whose
    counts decide ``P(alarm | bin, x_e)``); one row when the variant is pooled."""
    kind, cols = env_columns(split.no_alarm, variant, env)
    pooled = not variant.endswith("_by_distance")
    n = [np.asarray(dc.counts(kind, pooled))[..., :, cols[0]].sum(axis=-1) for dc in (split.no_alarm, split.alarm)]
    return np.atleast_2d(np.stack(n, axis=-1))


def _cp(k: np.ndarray, n: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    return clopper_pearson(k, np.broadcast_to(n, np.shape(k)), alpha)


def joint_observations(
    split: VerdictSplit, variant: str, env: TrueEnvConfig, beyond_last_bin: str = "error", source: str = "",
    alpha: float | None = None, n_bins: int | None = None,
) -> ObservationModel:
    """``μ_k((y, a), x_e)`` for ``f + m``: outcomes ``y`` (no alarm) then ``y + (ALARM_TAG,)`` (alarm).

    With ``alpha``, Clopper–Pearson intervals holding jointly at ``1 − alpha`` (Bonferroni over the cells
    estimated — the ``2 × labels`` cells of the joint column, or for several class objects the two ``P(a | x_1)``
    and the ``2 × objects × labels`` conditionals, whose interval product bounds each outcome — times the
    ``n_bins`` bins the chain decides in; default every bin).
    """
    dc0 = split.no_alarm
    kind, cols = env_columns(dc0, variant, env)
    pooled = not variant.endswith("_by_distance")
    n = np.stack([np.asarray(dc.counts(kind, pooled), dtype=np.float64) for dc in (split.no_alarm, split.alarm)])
    if pooled:
        n = n[:, None]
    labels = dc0.labels(kind)  # n[a, bin, pred, true]
    bins_split = n.shape[1] if n_bins is None else max(1, int(n_bins))
    first = n[:, :, :, cols[0]]  # [a, bin, pred]
    total = first.sum(axis=(0, 2))  # [bin]
    lower = upper = None
    if kind == "prop" or len(cols) == 1:
        if kind == "prop":
            names = [() if lab == dc0.empty_label else tuple(x.strip() for x in lab.split(",")) for lab in labels]
        else:
            names = [(lab,) for lab in labels]
        probs = np.concatenate([_ratio(first[a], total[:, None]) for a in (0, 1)], axis=1)
        if alpha is not None:
            lo, hi = _cp(first, total[None, :, None], bonferroni(alpha, 2 * len(labels) * bins_split))
            lower, upper = np.concatenate([lo[0], lo[1]], axis=1), np.concatenate([hi[0], hi[1]], axis=1)
    else:
        combos = list(product(range(len(labels)), repeat=len(cols)))
        names = [tuple(labels[i] for i in c) for c in combos]
        level = None if alpha is None else bonferroni(alpha, (2 + 2 * len(cols) * len(labels)) * bins_split)
        n_a = first.sum(axis=2)  # [a, bin]
        factors = [(_ratio(n_a, total[None]), *(_cp(n_a, total[None], level) if level else (None, None)))]
        per_a: list[list[np.ndarray]] = [[], [], []]
        for a in (0, 1):
            cond = []
            for c in cols:
                k = n[a, :, :, c]
                tot = k.sum(axis=1, keepdims=True)
                cond.append((_ratio(k, tot), *(_cp(k, tot, level) if level else (None, None))))
            for which in range(3 if level else 1):
                out = np.repeat(factors[0][which][a][:, None], len(combos), axis=1)
                for o, preds in enumerate(combos):
                    for i, y in enumerate(preds):
                        out[:, o] *= cond[i][which][:, y]
                per_a[which].append(out)
        probs = np.concatenate(per_a[0], axis=1)
        if level:
            lower, upper = np.concatenate(per_a[1], axis=1), np.concatenate(per_a[2], axis=1)
    outcomes = (*[tuple(y) for y in names], *[(*y, ALARM_TAG) for y in names])
    return ObservationModel(outcomes, probs, _edges(dc0, pooled, beyond_last_bin), source or f"{variant} + monitor",
                            lower, upper)


def perfect_observations(dc: DistanceConfusion, variant: str, env: TrueEnvConfig) -> ObservationModel:
    """``f*``: the observation equals the true environment with probability 1 at every distance."""
    if variant.startswith("class"):
        truth: tuple[str, ...] = tuple(env.class_objects)
    else:
        truth = () if env.prop == dc.empty_label else tuple(x.strip() for x in env.prop.split(","))
    return ObservationModel((truth,), np.ones((1, 1)), None, f"{variant} ground truth (f*)")


def check_split(split: VerdictSplit) -> None:
    """The two halves must describe the same matrices (bins, labels)."""
    for attr in ("bin_edges", "class_labels", "prop_labels"):
        if getattr(split.no_alarm, attr) != getattr(split.alarm, attr):
            raise VerificationError(f"verdict split: {attr} differ between the alarm and no-alarm counts")
