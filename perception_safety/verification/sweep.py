"""Satisfaction probability vs initial speed for each max speed, variant and true environment (Fig. 8).

Variants: ``class`` / ``prop`` use the pooled (canonical) matrices, ``*_by_distance`` the
distance-parametrised ones. One chain per (variant, environment, V); Storm returns ``P(s ⊨ φ)`` for
every state, read at the initial states ``(1, v0)`` (Proposition 1).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.safe_io import atomic_open, write_text
from perception_safety.verification.config import VerificationConfig
from perception_safety.verification.controllers import resolve_controller
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.export import export_drn, export_prism_explicit
from perception_safety.verification.memory import ObservationRuns
from perception_safety.verification.specs import resolve_specs
from perception_safety.verification.storm_batch import run_all, run_alone
from perception_safety.verification.sweep_chain import ChainDone, Combo, chain_steps

FORMAT = "perception_safety.verification/1"


@dataclass(frozen=True)
class SweepResult:
    """``results``: one record per (variant, true_env, spec, max_speed, initial_speed) with ``probability``,
    ``lower``/``upper`` (interval chain, None when off or not computable) and ``posterior_*``; ``chains``:
    sizes/times; ``warnings``: what the numbers cannot be read without.
    """

    results: tuple[dict[str, Any], ...]
    chains: tuple[dict[str, Any], ...]
    specs: dict[str, str]
    warnings: tuple[str, ...] = ()


def run_sweep(
    confusion: DistanceConfusion,
    cfg: VerificationConfig,
    export_dir: str | Path | None = None,
    name: str | None = None,
    episodes: Sequence[DistanceConfusion] = (),
    observation_runs: Mapping[tuple[str, str], ObservationRuns] | None = None,
) -> SweepResult:
    """Every configured (variant, true env, max speed): build, check every spec, collect P(s0 ⊨ φ).

    ``name`` (e.g. the matrices' file path) prefixes error messages; ``export_dir`` receives the chains
    when ``cfg.export`` asks for them; ``episodes`` (each episode's matrices) make the episode the unit of the
    bounds and the posterior (rows then carry ``clusters`` and ``status``) and give each episode its own chain
    (rows then carry ``episode_mean``/``episode_lower``/``episode_upper``, `per_episode`); ``observation_runs``
    (per (variant, true env), the pedestrian column's consecutive observations) test the chain's independence assumption
    (`memory_check`: rows then carry ``independence`` and, with runs of misses, the memory chain's ``memory_*``).
    The first error met (in variant, environment, max speed order) is raised.
    """
    specs = resolve_specs(cfg.specs, cfg.custom_specs)
    for env_name in cfg.true_envs:
        if not env_name:
            raise VerificationError("true_envs: empty environment name")
    pairs = [(variant, env_name) for variant in cfg.variants for env_name in cfg.true_envs]
    swept = sweep_combinations(confusion, cfg, pairs, export_dir, name, episodes, observation_runs)
    for one in swept:
        if isinstance(one, VerificationError):
            raise one
    return merge([one for one in swept if isinstance(one, SweepResult)], specs)


def sweep_combinations(
    confusion: DistanceConfusion, cfg: VerificationConfig, pairs: Sequence[tuple[str, str]],
    export_dir: str | Path | None = None, name: str | None = None, episodes: Sequence[DistanceConfusion] = (),
    observation_runs: Mapping[tuple[str, str], ObservationRuns] | None = None, together: bool = True,
) -> list[SweepResult | VerificationError]:
    """Each ``(variant, true env)`` of ``pairs`` swept over the max speeds, all chains' Storm checks answered together
    (`storm_batch.run_all`; ``together=False``: each check on its own chain, one after the other, the same numbers);
    per pair its result, or the first error its setup or its chains (by max speed) met — what sweeping it alone
    gives. Chains before that error are exported, as they would have been."""
    resolved: dict[str, Any] = {}

    def once(key: str, make: Callable[[], Any]) -> Any:
        """The specs or the controller, resolved (a policy file read, a Python controller imported) for the first
        pair that needs them; their error, if any, is every such pair's."""
        if key not in resolved:
            try:
                resolved[key] = make()
            except VerificationError as exc:
                resolved[key] = exc
        if isinstance(resolved[key], VerificationError):
            raise resolved[key]
        return resolved[key]

    plans: list[list[Any] | VerificationError] = []
    for variant, env_name in pairs:
        try:
            specs = once("specs", lambda: resolve_specs(cfg.specs, cfg.custom_specs))
            if not env_name:
                raise VerificationError("true_envs: empty environment name")
            combo = Combo.make(confusion, cfg, variant, env_name, specs,
                               once("controller", lambda: resolve_controller(cfg.controller)), name, episodes,
                               observation_runs)
        except VerificationError as exc:
            plans.append(exc)
            continue
        plans.append([chain_steps(combo, V) for V in cfg.max_speeds])
    computations = [steps for plan in plans if not isinstance(plan, VerificationError) for steps in plan]
    outcomes = iter(run_all(computations) if together else [run_alone(steps) for steps in computations])
    out: list[SweepResult | VerificationError] = []
    for plan, (variant, env_name) in zip(plans, pairs, strict=True):
        if isinstance(plan, VerificationError):
            out.append(plan)
            continue
        done = [next(outcomes) for _ in plan]
        result: list[ChainDone] = []
        error: VerificationError | None = None
        for V, o in zip(cfg.max_speeds, done, strict=True):
            if o.error is not None:
                if not isinstance(o.error, VerificationError):
                    raise o.error
                error = o.error
                break
            result.append(o.value)
            if export_dir is not None and cfg.export != "none":
                stem = Path(export_dir) / f"{variant}_{env_name}_V{V}"
                if cfg.export in ("drn", "both"):
                    export_drn(o.value.chain, stem.with_suffix(".drn"))
                if cfg.export in ("prism", "both"):
                    export_prism_explicit(o.value.chain, stem)
        out.append(error if error is not None else merge_chains(result, resolved["specs"]))
    return out


def merge_chains(done: Sequence[ChainDone], specs: dict[str, str]) -> SweepResult:
    """The chains' rows, records and warnings (each once, first seen first) as one result."""
    return SweepResult(tuple(r for d in done for r in d.rows), tuple(d.record for d in done), specs,
                       tuple(dict.fromkeys(w for d in done for w in d.warnings)))


def merge(results: Sequence[SweepResult], specs: dict[str, str]) -> SweepResult:
    """Several sweeps' results in order (warnings each once, first seen first)."""
    return SweepResult(tuple(r for one in results for r in one.results),
                       tuple(c for one in results for c in one.chains), specs,
                       tuple(dict.fromkeys(w for one in results for w in one.warnings)))


def to_json_dict(sweep: SweepResult, matrices: str, confusion: DistanceConfusion,
                 cfg: VerificationConfig) -> dict[str, Any]:
    """The ``verification.json`` document."""
    return {
        "format": FORMAT,
        "matrices": matrices,
        "matrices_source": confusion.source,
        "orientation": "observation probabilities are column-normalised cm[pred, true] = P(pred | true)",
        "model": "car-pedestrian (DESIGN.md): N = V(V+1)/2 + 4, k = V(V+1)/2 + 1, crosswalk k + 1 unless configured",
        "controller": resolve_controller(cfg.controller).name,
        "specs": sweep.specs,
        "bounds": bounds_description(cfg),
        "config": cfg.model_dump(by_alias=True),
        "results": list(sweep.results),
        "chains": list(sweep.chains),
        "warnings": list(sweep.warnings),
    }


def bounds_description(cfg: VerificationConfig) -> dict[str, Any]:
    """What ``lower``/``upper`` and ``posterior_*`` mean, for readers of verification.json (docs/verification.md)."""
    return {
        "posterior": {**cfg.posterior.model_dump(), "description": (
            "per confusion column and bin: " + ("P(hit) ~ Beta(hit + prior, rest + prior) (Jeffreys on the diagonal "
                                               "cell vs the rest), the rest split by Dirichlet(rest counts + prior)"
                                               if cfg.posterior.method == "split" else "Dirichlet(counts + prior)")
            + "; with episodes/tracks, counts over the column's design effect x the Korn-Graubard factor; whole "
            "matrices drawn (columns shared by all states); equal-tailed credible interval of P(phi) over the draws; "
            "posterior_* rounded to the decimal of posterior_mc_error (Monte-Carlo standard error of the interval "
            "ends and the mean)")},
        "enabled": cfg.bounds.enabled,
        "alpha": cfg.alpha,
        "method": "interval DTMC: per bin and true column, two-sided Clopper-Pearson interval of each P(obs | env) "
                  "at 1 - alpha/M (M = cells of the used columns x the bins the chain decides in, Bonferroni), so "
                  "every interval of one chain, hence every lower/upper of that chain (all specs, all initial "
                  "speeds), holds jointly at 1 - alpha; transition interval = sum over observations with the same "
                  "controller successor, capped at 1; lower/upper = Storm IDTMC MINIMIZE/MAXIMIZE",
        "simultaneous_level": f"1 - alpha = {1 - cfg.alpha:g} per chain (variant, true_env, max_speed); each "
                              "chain's decision_bins and per_interval_alpha are in chains[]",
    }


def write_json(path: str | Path, document: dict[str, Any]) -> Path:
    path = Path(path)
    write_text(path, json.dumps(document, indent=1) + "\n")
    return path


KEY_COLUMNS = ("variant", "true_env", "spec", "max_speed", "initial_speed")
VALUE_COLUMNS = ("probability", "lower", "upper", "posterior_lower", "posterior_upper", "posterior_mean",
                 "posterior_mc_error", "episode_mean", "episode_lower", "episode_upper")
OPTIONAL = ("posterior", "episode")


def write_csv(path: str | Path, results: tuple[dict[str, Any], ...]) -> Path:
    """``variant,true_env,spec,max_speed,initial_speed,probability,lower,upper,posterior_*,episode_*`` (17
    significant digits; an empty cell where a bound was not computed; posterior and per-episode columns only when
    computed)."""
    path = Path(path)
    cols = [c for c in VALUE_COLUMNS if not c.startswith(OPTIONAL) or any(c in r for r in results)]
    with atomic_open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([*KEY_COLUMNS, *cols])
        for r in results:
            vals = [r.get(c) for c in cols]
            w.writerow([*(r[c] for c in KEY_COLUMNS), *("" if v is None else f"{v:.17g}" for v in vals)])
    return path
