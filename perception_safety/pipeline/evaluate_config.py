"""The ``evaluate`` configuration: one YAML file whose sections are the analyses' own configs."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from perception_safety.bbsl.config import BBSLConfig
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.evaluation.pcd.compute import PCDConfig
from perception_safety.evaluation.returns import ReturnsConfig
from perception_safety.io.bag import BagConfig
from perception_safety.io.config import load_yaml, model_from_mapping
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.verification.config import VerificationConfig

STOP_REGION_SPEC = "stop_region"

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
    bbsl_specs: list[str] = Field(default_factory=lambda: [STOP_REGION_SPEC])
    """BBSL specs to test: file paths (relative ones from the config file's folder) or ``stop_region``,
    the emergency-braking rule of ``monitors.stop_region`` as BBSL (its bindings come from that section)."""


class EvaluateConfig(BaseModel):
    """All sections `evaluate` reads; each is validated by its analysis' own model."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    evaluate: EvaluateSection = EvaluateSection()
    bags: BagConfig = BagConfig()
    confusion: ConfusionConfig = ConfusionConfig()
    pcd: PCDConfig = PCDConfig()
    verification: VerificationConfig = VerificationConfig()
    bbsl: BBSLConfig = BBSLConfig(image_size=(1280.0, 720.0), target_classes=["pedestrian", "person"])
    monitors: MonitorsConfig = MonitorsConfig()
    returns: ReturnsConfig = ReturnsConfig()
    base_dir: str = "."
    """Folder that relative spec paths are resolved against (set to the config file's folder on load)."""


def load_evaluate_config(path: str | Path | None) -> tuple[EvaluateConfig, str]:
    """The validated config and its exact text (for the report); ``None`` gives the defaults."""
    if path is None:
        return EvaluateConfig(), "# defaults (no --config given)\n"
    data = load_yaml(path)
    data["base_dir"] = str(Path(path).resolve().parent)
    return model_from_mapping(data, EvaluateConfig, str(path)), Path(path).read_text(encoding="utf-8")
