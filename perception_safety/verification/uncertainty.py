"""Per-chain uncertainty for the sweep: interval-chain bounds (Storm) and the posterior of P(φ).

Both read a spec as constrained reachability (`reach.reach_form`); a spec of another shape gets no bounds and
no posterior, and says so in a warning (never a silent number).
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from perception_safety.verification.bounds import SpecBounds, spec_bounds_steps
from perception_safety.verification.builder import AbstractSystem, ObservationModel
from perception_safety.verification.config import VerificationConfig
from perception_safety.verification.counted import CountedObservations
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.interval_chain import build_interval_chain, decision_bins
from perception_safety.verification.posterior import (
    ChainSkeleton,
    PosteriorSummary,
    chain_skeleton,
    posterior_values,
    summarise_many,
)
from perception_safety.verification.storm_batch import Steps


def unsupported(spec: str, exc: VerificationError) -> str:
    return f"spec {spec!r}: no interval bounds or posterior for this formula ({exc})"


def chain_bounds_steps(
    system: AbstractSystem, counted: CountedObservations, specs: dict[str, str], cfg: VerificationConfig, where: str,
    warnings: list[str], bins: np.ndarray | None = None,
) -> Steps[tuple[dict[str, SpecBounds], dict[str, Any]]]:
    """Interval chain + Storm bounds of every spec, as a `storm_batch` computation; unsupported specs and widened
    bounds become warnings.

    The intervals are Bonferroni-split over every cell of the used columns in every bin the chain decides in
    (`interval_chain.decision_bins`, or ``bins`` when the caller has them), so all bounds of this chain hold
    jointly at ``1 − alpha``.
    """
    if not cfg.bounds.enabled:
        return {}, {}
    if bins is None:
        bins = decision_bins(system, counted.model())
    ichain = build_interval_chain(system, counted.model(cfg.alpha, bins))
    out: dict[str, SpecBounds] = {}
    found = yield from spec_bounds_steps(ichain, specs, cfg.bounds.cyclic_horizon)
    for spec_name, b in found.items():
        if isinstance(b, VerificationError):
            warnings.append(unsupported(spec_name, b))
            continue
        if not b.exact and b.residual > 1e-9:
            warnings.append(f"{where}, spec {spec_name!r}: the chain has cycles; bounds are sound but widened by "
                            f"{b.residual:.3g} (probability mass still undecided after {b.horizon} steps)")
        out[spec_name] = b
    horizons = {name: b.horizon for name, b in out.items()}
    return out, {"interval_transitions": ichain.n_transitions, "simultaneous_level": 1 - cfg.alpha,
                 "decision_bins": [int(b) for b in bins],
                 "per_interval_alpha": counted.per_interval_alpha(cfg.alpha, bins),
                 "bounds_horizon": max(horizons.values(), default=0),
                 "bounds_exact": all(b.exact for b in out.values()),
                 "bounds_methods": sorted({b.method for b in out.values()}),
                 "bounds_residual": max((b.residual for b in out.values()), default=0.0)}


def posterior_draws(counted: CountedObservations, cfg: VerificationConfig, variant: str,
                    env_name: str) -> np.ndarray | None:
    """``[draw, bin, outcome]`` for one (variant, environment), seeded by ``posterior.seed`` and the names
    (the same draws whichever other variants or environments run beside it)."""
    if not cfg.posterior.enabled:
        return None
    key = zlib.crc32(f"{variant}/{env_name}".encode())
    rng = np.random.default_rng([cfg.posterior.seed, key])
    return counted.sample(rng, cfg.posterior.draws, cfg.posterior.prior, cfg.posterior.method, cfg.posterior.level)


def chain_posterior(
    system: AbstractSystem, obs: ObservationModel, draws: np.ndarray | None, specs: dict[str, str],
    cfg: VerificationConfig, warnings: list[str], skeleton: ChainSkeleton | None = None,
    values: dict[str, np.ndarray | VerificationError] | None = None,
) -> dict[str, PosteriorSummary]:
    """Credible interval of P(φ) at the initial states for every spec (batched absorbing-chain solves);
    ``skeleton``: `chain_skeleton(system, obs)` when the caller already has it; ``values``: the draws' P(φ) when
    the caller solved them (`per_episode.episode_chains`)."""
    if draws is None:
        return {}
    if values is None:
        values = posterior_values(skeleton or chain_skeleton(system, obs), draws, specs)
    solved = {}
    for name, v in values.items():
        if isinstance(v, VerificationError):
            warnings.append(unsupported(name, v))
        else:
            solved[name] = v
    if not solved:
        return {}
    return dict(zip(solved, summarise_many(list(solved.values()), cfg.posterior.level), strict=True))
