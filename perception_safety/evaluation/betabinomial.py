"""Profile-likelihood interval of a proportion under the beta-binomial model (episodes with unknown correlation).

Per-cluster successes ``y_i`` of ``m_i`` are beta-binomial: each cluster draws its own rate from
``Beta(μθ, (1-μ)θ)`` (mean ``μ``, intra-cluster correlation ``1/(1+θ)``). The interval for ``μ`` holds every
value whose profile log-likelihood (maximised over ``θ``, from independent frames ``θ → ∞`` to all-or-nothing
episodes ``θ → 0``) lies within ``c/2`` of the maximum, with ``c = t²_{k-1, α/2}`` (the F(1, k-1) calibration
of the likelihood-ratio test for ``k`` clusters, wider than the asymptotic ``χ²₁`` when clusters are few).

Why: the design-effect interval (`clustered`) estimates the correlation from the spread between episodes, and
when a rare failure comes as whole bad episodes that the sample happens not to contain, there is no spread to
see (all or nearly all episodes perfect) and the interval is as narrow as for independent frames. The profile
likelihood keeps the all-or-nothing explanation of the same data: ``k`` perfect episodes bound ``μ`` below only
by ``exp(-c / 2k)``, like ``k`` independent looks. Coverage: docs/confusion-matrices.md.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import gammaln, stdtrit, xlogy

_THETA = np.logspace(-3, 5, 25)[:, None]
"""Beta precision ``θ`` searched (ICC 0.999 to 1e-5, a third of a decade apart, the peak refined by a parabola);
``θ → ∞`` (independent frames) and ``θ → 0`` (all-or-nothing clusters) are added exactly."""
_EPS = 1e-9
_BISECTIONS = 16
_SECANTS = 3
_TREE = 2


def _profile(mu: np.ndarray, y: np.ndarray, m: np.ndarray, w: np.ndarray, const: np.ndarray) -> np.ndarray:
    """Profile log-likelihood (constant terms dropped) at each ``mu`` for distinct cluster counts ``(y, m)`` × ``w``.

    ``const`` is the ``μ``-free part per ``θ``: ``Σ w (lnΓ(θ) - lnΓ(m + θ))`` (`_constant`). The maximum over the
    log-θ grid is refined by evaluating the likelihood exactly at the vertex of the parabola through the best grid
    point and its neighbours (the grid alone can miss the peak by ~0.05 in log-likelihood).
    """
    values = _loglik(mu, _THETA[None, :, 0], y, m, w) + const
    j = np.clip(np.argmax(values, axis=-1), 1, values.shape[-1] - 2)
    rows = np.arange(values.shape[0])
    left, mid, right = values[rows, j - 1], values[rows, j], values[rows, j + 1]
    curve = left - 2 * mid + right
    with np.errstate(invalid="ignore", divide="ignore"):
        shift = np.where(curve < 0, np.clip((left - right) / (2 * curve), -1.0, 1.0), 0.0)
    log_t = np.log(_THETA[:, 0])
    theta = np.exp(log_t[j] + shift * (log_t[1] - log_t[0]))[:, None]
    vertex = _loglik(mu, theta, y, m, w)[:, 0] + (w * (gammaln(theta) - gammaln(m + theta))).sum(-1)
    best = np.maximum(values.max(axis=-1), vertex)
    mu2 = mu[:, None]
    best = np.maximum(best, (w * (xlogy(y, mu2) + xlogy(m - y, 1 - mu2))).sum(-1))  # θ → ∞: binomial frames
    if np.all((y == 0) | (y == m)):  # θ → 0: each cluster all or nothing (only possible for such data)
        whole = (y == m).astype(np.float64)
        best = np.maximum(best, (w * (xlogy(whole, mu2) + xlogy(1 - whole, 1 - mu2))).sum(-1))
    return best


def _loglik(mu: np.ndarray, theta: np.ndarray, y: np.ndarray, m: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``[mu, theta]``: the μ-dependent part of the beta-binomial log-likelihood; ``theta`` is ``[1 or mu, T]``."""
    a = mu[:, None, None] * theta[:, :, None]
    b = (1 - mu)[:, None, None] * theta[:, :, None]
    return (w * (gammaln(y + a) + gammaln(m - y + b) - gammaln(a) - gammaln(b))).sum(-1)


def _constant(m: np.ndarray, w: np.ndarray) -> np.ndarray:
    return (w * (gammaln(_THETA) - gammaln(m + _THETA))).sum(-1)


@lru_cache(maxsize=1024)
def cutoff(clusters: int, alpha: float) -> float:
    """Deviance cut-off ``t²_{k-1, α/2}`` (``inf`` for fewer than two clusters: nothing is excluded)."""
    return float(stdtrit(clusters - 1, 1 - alpha / 2) ** 2) if clusters > 1 else float("inf")


def profile_interval(
    successes: ArrayLike, trials: ArrayLike, alpha: float = 0.05, within: tuple[float, float] | None = None
) -> tuple[float, float]:
    """``(lower, upper)`` for the mean rate of per-cluster counts (clusters with no trials are ignored).

    With ``within = (lo, hi)`` (an interval already known, e.g. Korn-Graubard's) the result is the hull of both,
    and an end is searched only where the likelihood set reaches beyond ``within`` (the usual case needs no search).
    The interval depends only on the distinct ``(successes, trials)`` pairs and how often each occurs, so equal
    counts (the same cell read by several analyses) are solved once (`_pairs_interval`, a bounded cache).
    """
    y = np.asarray(successes, dtype=np.float64).ravel()
    m = np.asarray(trials, dtype=np.float64).ravel()
    keep = m > 0
    y, m = y[keep], m[keep]
    if not np.isfinite(cutoff(len(m), alpha)):
        return 0.0, 1.0
    pairs, w = np.unique(np.stack([y, m], axis=1), axis=0, return_counts=True)
    given = None if within is None else (float(within[0]), float(within[1]))
    return _pairs_interval(pairs.tobytes(), w.astype(np.float64).tobytes(), len(m), float(alpha), given)


@lru_cache(maxsize=4096)
def _pairs_interval(pairs_bytes: bytes, w_bytes: bytes, clusters: int, alpha: float,
                    within: tuple[float, float] | None) -> tuple[float, float]:
    """`profile_interval` of the distinct pairs ``(y, m)`` (rows of ``pairs_bytes``) occurring ``w`` times."""
    pairs = np.frombuffer(pairs_bytes, dtype=np.float64).reshape(-1, 2)
    y, m, w = pairs[:, 0], pairs[:, 1], np.frombuffer(w_bytes, dtype=np.float64)
    c = cutoff(clusters, alpha)
    p = float((w * y).sum() / (w * m).sum())
    const = _constant(m, w)

    def deviance(mu: np.ndarray) -> np.ndarray:
        return 2 * (best - _profile(mu, y, m, w, const))

    best, mle = _maximum(y, m, w, const, p)
    given = np.array([p, p]) if within is None else np.asarray(within, dtype=np.float64)
    start = np.clip(given, _EPS, 1 - _EPS)
    ends = np.array([_EPS, 1 - _EPS])
    reach = deviance(np.r_[start, ends]) <= c  # the set holds the start points? the ends of [0, 1]?
    inside = np.where(reach[:2], start, mle)
    out = np.where(reach[:2], ends, start) if within is not None else ends.copy()
    search = ~reach[2:] & (reach[:2] | (within is None))
    if search.any():
        inside, out = _crossing(deviance, c, inside, out)
    lower = 0.0 if reach[2] else float(inside[0]) if search[0] else float(given[0])
    upper = 1.0 if reach[3] else float(inside[1]) if search[1] else float(given[1])
    return min(lower, p), max(upper, p)


def _crossing(deviance, c: float, inside: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where ``deviance`` crosses ``c`` between ``inside`` (below c) and ``out`` (above), both ends at once:
    bisection, then regula falsi steps on the smooth deviance (precision ~1e-9 in ~20 evaluations).

    The bisection runs `_TREE` steps per call of ``deviance``: every midpoint those steps could visit (a binary
    tree, each midpoint computed as the step-by-step bisection computes it) is evaluated at once, then the path is
    followed; the deviance of a point does not depend on the other points evaluated with it, so the result is the
    step-by-step bisection's, bit for bit, in half the calls."""
    for done in range(0, _BISECTIONS, _TREE):
        inside, out = _bisect_tree(deviance, c, inside, out, min(_TREE, _BISECTIONS - done))
    both = deviance(np.r_[inside, out])
    d_in, d_out = both[:inside.size], both[inside.size:]
    for _ in range(_SECANTS):
        with np.errstate(invalid="ignore", divide="ignore"):
            frac = np.clip((c - d_in) / (d_out - d_in), 0.0, 1.0)
        mid = np.where(np.isfinite(frac), inside + frac * (out - inside), 0.5 * (inside + out))
        d = deviance(mid)
        ok = d <= c
        inside, d_in = np.where(ok, mid, inside), np.where(ok, d, d_in)
        out, d_out = np.where(ok, out, mid), np.where(ok, d_out, d)
    return inside, out


def _bisect_tree(deviance, c: float, inside: np.ndarray, out: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` bisection steps (``mid = (out + inside) / 2``; ``inside = mid`` where the deviance at ``mid`` is
    within ``c``, else ``out = mid``) from one evaluation of the ``2^steps − 1`` midpoints they could visit
    (`_TREE` = 2 steps per call: deeper trees evaluate more points than they save calls)."""
    ins, outs, mids = inside[:, None], out[:, None], []
    for _ in range(steps):  # level j holds 2^j brackets per end; child 2i: mid was inside, 2i + 1: it was out
        mid = 0.5 * (outs + ins)
        mids.append(mid)
        ins = np.stack([mid, ins], axis=-1).reshape(mid.shape[0], -1)
        outs = np.stack([outs, mid], axis=-1).reshape(mid.shape[0], -1)
    ok = deviance(np.concatenate(mids, axis=1).ravel()).reshape(inside.size, -1) <= c
    node = np.zeros(inside.size, dtype=np.int64)
    first = 0
    for j in range(steps):
        node = 2 * node + ~ok[np.arange(inside.size), first + node]
        first += 2**j
    return ins[np.arange(inside.size), node], outs[np.arange(inside.size), node]


def _maximum(y: np.ndarray, m: np.ndarray, w: np.ndarray, const: np.ndarray, p: float) -> tuple[float, float]:
    """``(max profile log-likelihood, its μ)``: a coarse grid, then finer local grids around the best point."""
    grid = np.clip(np.r_[np.linspace(_EPS, 1 - _EPS, 21), p], _EPS, 1 - _EPS)
    values = _profile(grid, y, m, w, const)
    best, mle = float(values.max()), float(grid[np.argmax(values)])
    step = 0.05
    for _ in range(4):
        local = np.clip(np.linspace(mle - step, mle + step, 9), _EPS, 1 - _EPS)
        v = _profile(local, y, m, w, const)
        if v.max() > best:
            best, mle = float(v.max()), float(local[np.argmax(v)])
        step /= 4
    return best, mle
