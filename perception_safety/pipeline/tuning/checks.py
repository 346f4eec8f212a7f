"""What a sweep cannot judge, said before or beside its numbers: speeds the config's chain does not cover, a
contrast sweep over frames without images, a parameter that changed no verdict, a chosen point that never alarms,
no ground truth, system figures computed at no point."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perception_safety.pipeline.tuning.grid import TuningError
from perception_safety.pipeline.tuning.sweep import EpisodeJudgements
from perception_safety.verification.config import VerificationConfig

# parameters of monitors that judge the image itself: a frame without an image gives them nothing to judge
IMAGE_MONITORS = ("monitors.contrast.",)


def check_speeds(speed: int | None, initial_speed: int | None, verification: VerificationConfig) -> None:
    """``--speed`` within 1..max(verification.max_speeds), ``--initial-speed`` within 1..V (exit 2 otherwise)."""
    top = max(verification.max_speeds)
    if speed is not None and not 1 <= speed <= top:
        raise TuningError(f"--speed {speed}: the config's chain covers speeds 1..{top} (verification.max_speeds "
                          f"{verification.max_speeds}); add the speed there to sweep it")
    V = speed if speed is not None else top
    if initial_speed is not None and not 1 <= initial_speed <= V:
        raise TuningError(f"--initial-speed {initial_speed}: must lie in 1..{V} (the chain's largest speed V)")


def check_images(params: Sequence[str], episodes: Sequence[EpisodeJudgements]) -> list[str]:
    """Error when an image monitor is swept and no frame has an image; a warning when only some frames do."""
    image_params = [p for p in params if p.startswith(IMAGE_MONITORS)]
    frames = sum(len(e.tau) for e in episodes)
    images = sum(e.images for e in episodes)
    if not image_params or images == frames:
        return []
    if images == 0:
        raise TuningError(f"--param {', '.join(image_params)}: no frame of the inputs carries an image, so the "
                          "monitor judges none and every point gives the same verdicts (check bags.topics.image)")
    return [f"{frames - images} of {frames} frames carry no image: {', '.join(image_params)} did not judge them "
            "(their verdict is the monitor's alarm_on_missing_image at every point)"]


def sweep_warnings(episodes: Sequence[EpisodeJudgements], rows: Sequence[dict[str, Any]],
                   selection: dict[str, Any]) -> list[str]:
    """What makes the sweep's answer weaker than its numbers look (on screen, in tuning.json and the report)."""
    out = []
    if not any(f.ground_truth for e in episodes for f in e.frames):
        out.append("no frame holds a ground-truth object: every detection counts as an error (tau) and no "
                   "hazard column of the chain has samples")
    if len(rows) > 1 and all(e.alarms[k] == e.alarms[0] for e in episodes for k in range(len(rows))):
        out.append("every operating point raises the same alarms on every frame: the swept parameter(s) changed no "
                   "verdict on these inputs, so the choice among the points says nothing")
    chosen = selection.get("chosen")
    if chosen is not None and rows[chosen]["e1"]["alarm_rate"] == 0.0:
        out.append(f"the chosen point {rows[chosen]['label']} never alarms on these inputs: it is the monitor "
                   "switched off in effect (SG = 0)")
    errors = [r["system"].get("error") for r in rows]
    if rows and all(errors):
        out.append(f"SG_sys/RH_sys/AC_sys computed at no point (check the verification section): {errors[0]}")
    return out
