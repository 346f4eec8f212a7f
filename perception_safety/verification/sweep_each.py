"""The sweep one (true environment, variant) at a time: a combination the matrices cannot support is skipped.

A true environment whose column holds no samples (e.g. ``obs`` on data with pedestrians only) has no observation
distribution, so its chain cannot be built (`VerificationError`). `evaluate` and `verify` both check every other
combination and name each skipped one with the reason, instead of failing the whole sweep.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.verification.config import VerificationConfig
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.memory import ObservationRuns
from perception_safety.verification.sweep import SweepResult, run_sweep


def sweep_each(
    confusion: DistanceConfusion,
    cfg: VerificationConfig,
    export_dir: Path | None,
    name: str,
    episodes: Sequence[DistanceConfusion] = (),
    observation_runs: Mapping[tuple[str, str], ObservationRuns] | None = None,
) -> tuple[SweepResult, dict[str, str]]:
    """All combinations that can be checked (their results, chains and warnings merged, in config order) and
    ``{"env/variant": reason}`` for those that cannot; ``episodes`` and ``observation_runs`` as `run_sweep`
    takes them."""
    results, chains, warnings, specs, skipped = [], [], [], {}, {}
    for env_name, env in cfg.true_envs.items():
        for variant in cfg.variants:
            one_cfg = cfg.model_copy(update={"true_envs": {env_name: env}, "variants": [variant]})
            try:
                one = run_sweep(confusion, one_cfg, export_dir, name, episodes, observation_runs)
            except VerificationError as exc:
                skipped[f"{env_name}/{variant}"] = str(exc)
                continue
            results += one.results
            chains += one.chains
            specs = one.specs
            warnings += [w for w in one.warnings if w not in warnings]
    return SweepResult(tuple(results), tuple(chains), specs, tuple(warnings)), skipped
