"""Safety Gain, Residual Hazard and Availability Cost of a runtime monitor (Guerin et al., SG/RH/AC paper).

Estimates (eq. 7-9) over n samples of the safety returns ``S`` and mission returns ``M`` of three
systems, the perception ``f``, the monitored ``(f, m_f)`` and the ground truth ``f*``::

    SG = mean(S_fm - S_f)     RH = mean(S_f* - S_fm)     AC = mean(M_f - M_fm)

and SG + RH = mean(S_f* - S_f), the hazard of ``f`` (eq. 6). Modules, one idea each: ``estimates`` (eq. 7-9
and the classification form, eq. 10-13), ``e1`` (scheme E1 "detect ML errors", eq. 14-15), ``e2`` (scheme E2
"prevent accidents", eq. 16-17), ``alignment`` (the three rollouts of an episode), ``report`` (the JSON document
and the words that explain a 0), ``config``.
"""

from perception_safety.evaluation.returns.alignment import Aligned, align
from perception_safety.evaluation.returns.config import E1Config, E2Config, ReturnsConfig, ReturnsError
from perception_safety.evaluation.returns.e1 import E1Result, e1_episode, e1_metrics, frame_has_error
from perception_safety.evaluation.returns.e2 import (
    HORIZON_META_KEYS,
    E2Episode,
    E2Result,
    e2_episode,
    e2_metrics,
    e2_rollout_returns,
)
from perception_safety.evaluation.returns.estimates import (
    BinaryCounts,
    Returns,
    SafetyMetrics,
    binary_counts,
    classification_returns,
    mean_metrics,
    safety_metrics,
)
from perception_safety.evaluation.returns.report import LOGGED_CONFIG_KEY, explain, logged_config, returns_report

__all__ = [
    "HORIZON_META_KEYS",
    "LOGGED_CONFIG_KEY",
    "Aligned",
    "BinaryCounts",
    "E1Config",
    "E1Result",
    "E2Config",
    "E2Episode",
    "E2Result",
    "Returns",
    "ReturnsConfig",
    "ReturnsError",
    "SafetyMetrics",
    "align",
    "binary_counts",
    "classification_returns",
    "e1_episode",
    "e1_metrics",
    "e2_episode",
    "e2_metrics",
    "e2_rollout_returns",
    "explain",
    "frame_has_error",
    "logged_config",
    "mean_metrics",
    "returns_report",
    "safety_metrics",
]
