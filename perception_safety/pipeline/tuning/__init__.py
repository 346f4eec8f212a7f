"""`perception-safety tune-monitor`: a monitor's operating points from recorded rollouts (SG/RH/AC paper: a
monitor is chosen at an operating point; a stricter threshold raises safety gain and availability cost together).

``grid`` (the points) -> ``sweep`` (one pass over the bags, every frame judged at every point by the node's own
objects) -> ``metrics`` (E1 and the monitored Markov chain per point, simultaneous bounds) -> ``select``
(requirements, objective, Pareto front) -> ``report`` (tuning.json, curves, page, monitors.tuned.yaml).
"""

from perception_safety.pipeline.tuning.run import TuningRequest, run_tuning

__all__ = ["TuningRequest", "run_tuning"]
