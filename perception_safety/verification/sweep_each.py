"""The sweep (true environment, variant) by (true environment, variant): a combination the matrices cannot support
is skipped.

A true environment whose column holds no samples (e.g. ``obs`` on data with pedestrians only) has no observation
distribution, so its chain cannot be built (`VerificationError`). `evaluate` and `verify` both check every other
combination and name each skipped one with the reason, instead of failing the whole sweep. Every combination's
chains have their Storm checks answered together (`sweep.sweep_combinations`); each combination's outcome is the
one sweeping it alone gives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.verification.config import VerificationConfig
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.memory import ObservationRuns
from perception_safety.verification.sweep import SweepResult, merge, sweep_combinations


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
    pairs = [(variant, env_name) for env_name in cfg.true_envs for variant in cfg.variants]
    swept = sweep_combinations(confusion, cfg, pairs, export_dir, name, episodes, observation_runs)
    done, specs, skipped = [], {}, {}
    for (variant, env_name), one in zip(pairs, swept, strict=True):
        if isinstance(one, VerificationError):
            skipped[f"{env_name}/{variant}"] = str(one)
        else:
            done.append(one)
            specs = one.specs
    return merge(done, specs), skipped
