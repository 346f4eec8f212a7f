"""The ``evaluate`` configuration: one YAML file whose sections are the analyses' own configs."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from perception_safety.evaluation.confusion_config import ConfusionConfig
from perception_safety.evaluation.pcd import PCDConfig
from perception_safety.io.bag import BagConfig
from perception_safety.io.config import load_yaml, model_from_mapping
from perception_safety.verification.config import VerificationConfig

Analysis = Literal["confusion", "pcd", "verification", "bbsl", "returns"]
ALL_ANALYSES: tuple[Analysis, ...] = ("confusion", "pcd", "verification", "bbsl", "returns")


class PCDTarget(BaseModel):
    """One PCD curve: which ground-truth objects are the target (by dataset class and/or track id)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    class_id: str | None = None
    track_id: str | None = None
    iou_threshold: float = Field(0.0, ge=0.0, le=1.0)
    class_aware: bool = False


class EvaluateSection(BaseModel):
    """Section ``evaluate``: which analyses run, and the PCD targets."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    analyses: list[Analysis] = Field(default_factory=lambda: list(ALL_ANALYSES))
    pcd_targets: list[PCDTarget] = Field(
        default_factory=lambda: [PCDTarget(name="pedestrian", class_id="pedestrian")], min_length=1
    )


class EvaluateConfig(BaseModel):
    """All sections `evaluate` reads; each is validated by its analysis' own model."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    evaluate: EvaluateSection = EvaluateSection()
    bags: BagConfig = BagConfig()
    confusion: ConfusionConfig = ConfusionConfig()
    pcd: PCDConfig = PCDConfig()
    verification: VerificationConfig = VerificationConfig()


def load_evaluate_config(path: str | Path | None) -> tuple[EvaluateConfig, str]:
    """The validated config and its exact text (for the report); ``None`` gives the defaults."""
    if path is None:
        return EvaluateConfig(), "# defaults (no --config given)\n"
    data = load_yaml(path)
    return model_from_mapping(data, EvaluateConfig, str(path)), Path(path).read_text(encoding="utf-8")
