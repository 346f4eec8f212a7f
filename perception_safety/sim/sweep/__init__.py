"""The episode sweep: scenario x perturbation x intensity, three aligned rollouts each, SG/RH/AC (E1, E2).

For every episode the three rollouts of the SG/RH/AC paper (Section III-B) run with identical seeds:
``perception`` (f: the simulated detector drives the stop rule), ``monitored`` (f with m_f: a monitor
alarm also brakes) and ``ground_truth`` (f*: ground truth drives the stop rule). The runtime monitor is
evaluated and logged in all three; it acts only in ``monitored``.

One episode passes through the stages in this order, one module each:
``planning`` (which episodes, ids, seeds, the sweep's fingerprint) -> ``engine`` (the rollouts, in lockstep on
the builtin backend) -> ``judging`` (monitor, stop rule, brake latch per frame; ``rollout`` holds the state they
share) -> ``recording`` (episode log and bags, atomically) -> ``run`` (executors, resume) -> ``summary``
(SG/RH/AC into results.json).
"""

from perception_safety.sim.sweep.engine import EpisodeEngine
from perception_safety.sim.sweep.planning import (
    CLEAN,
    SWEEP_CONFIG_FILE,
    EpisodeRunError,
    EpisodeSpec,
    check_sweep_fingerprint,
    monitors_for,
    plan_episodes,
    sweep_fingerprint,
)
from perception_safety.sim.sweep.recording import (
    BAGS_DIR,
    LOGS_DIR,
    bag_conditions,
    episode_log_path,
    episode_meta,
    inside,
    write_episode,
)
from perception_safety.sim.sweep.rollout import GROUND_TRUTH, MONITORED, PERCEPTION, Rollout, StageTimes
from perception_safety.sim.sweep.run import SweepReport, run_sweep
from perception_safety.sim.sweep.summary import RESULTS_FILE, summarize

__all__ = [
    "BAGS_DIR",
    "CLEAN",
    "GROUND_TRUTH",
    "LOGS_DIR",
    "MONITORED",
    "PERCEPTION",
    "RESULTS_FILE",
    "SWEEP_CONFIG_FILE",
    "EpisodeEngine",
    "EpisodeRunError",
    "EpisodeSpec",
    "Rollout",
    "StageTimes",
    "SweepReport",
    "bag_conditions",
    "check_sweep_fingerprint",
    "episode_log_path",
    "episode_meta",
    "inside",
    "monitors_for",
    "plan_episodes",
    "run_sweep",
    "summarize",
    "sweep_fingerprint",
    "write_episode",
]
