"""The ``confusion`` command's config section, apart from the command so that ``--help`` loads no pydantic."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from perception_safety.evaluation.confusion.config import ConfusionConfig


class ConfusionRunConfig(ConfusionConfig):
    """The ``confusion`` config section: the evaluation settings plus command options."""

    plots: bool = True
    dpi: int = Field(100, ge=20, le=600)
    """Unused since the heatmaps are SVG (vector, no resolution); kept so that configs naming it still load."""
    skip_bad: bool = False
    bag: dict[str, Any] = Field(default_factory=dict)
    """Topic names for bag input (fields of `perception_safety.io.bag.BagTopics`)."""
    bag_tolerance_ns: int = Field(0, ge=0)
