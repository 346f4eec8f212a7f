"""Model of the ``episodes`` section (``config/episodes.yaml``): scenario, sweep, detector, backends, records."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from perception_safety.detectors.config import HOGConfig
from perception_safety.evaluation.returns import E1Config, ReturnsConfig
from perception_safety.executors.config import ExecutorConfig
from perception_safety.io.bag import BagTopics
from perception_safety.sim.builtin import BuiltinConfig
from perception_safety.sim.carla_backend import CarlaConfig
from perception_safety.sim.detector_model import DetectorModelConfig
from perception_safety.sim.scenario import ScenarioConfig


class _Strict(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)


class PerturbationSpec(_Strict):
    """One perturbation of the sweep and its intensity levels (None: every level it has)."""

    name: str
    levels: tuple[int, ...] | None = None


SAFE_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
"""Names that become parts of file names (episode ids): letters, digits, ``_ . -``; no path separators."""


class ScenarioVariant(_Strict):
    """A named variant of ``scenario``: keys given in ``overrides`` replace the base values (deep merge)."""

    name: str = Field(default="crossing", pattern=SAFE_NAME, description="part of episode ids and file names")
    overrides: dict[str, Any] = Field(default_factory=dict)


class RecordConfig(_Strict):
    """What each rollout leaves on disk besides its episode log.

    Every frame the detector saw is recorded, in the camera's own pixel frame (boxes, image and CameraInfo
    agree), so a bag replays into the nodes with the results the episode log holds. With ``images:
    compressed`` the runner's monitors run on the decoded JPEG, i.e. on exactly what a node receives.
    """

    bags: bool = True
    storage: Literal["mcap", "sqlite3"] = "mcap"
    images: Literal["compressed", "raw", "none"] = Field(
        default="compressed",
        description="compressed: sensor_msgs/CompressedImage (JPEG) on <image>/compressed; raw: sensor_msgs/Image")
    jpeg_quality: int = Field(default=90, ge=1, le=100)
    topics: BagTopics = BagTopics()

    @model_validator(mode="before")
    @classmethod
    def _refuse_subsampling(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in ("image_stride", "image_scale"):
                if key in data:
                    raise ValueError(
                        f"{key} is no longer supported: bags carry every frame in the camera's pixel frame so "
                        "they replay into the nodes with the logged results; use images: compressed (JPEG, "
                        "jpeg_quality) for size, or a smaller scenario.camera for resolution")
        return data


def _default_returns() -> ReturnsConfig:
    return ReturnsConfig(e1=E1Config(classes=("pedestrian",)))


class EpisodeDetectorConfig(DetectorModelConfig):
    """Key ``detector``: the simulated detector's model, or (``kind``) a real image detector on the perturbed image.

    ``kind: simulated`` (default) draws detections from ground truth (`DetectorModel`); ``hog`` runs OpenCV's HOG
    people detector and ``onnx`` an ONNX Runtime model described by the YAML file ``onnx_model``
    (`perception_safety.detectors`); their settings are ignored by the simulated model and vice versa.
    """

    kind: Literal["simulated", "hog", "onnx"] = "simulated"
    onnx_model: Path | None = Field(default=None, description="kind onnx: the model's YAML (relative: to this file)")
    onnx_threads: int = Field(default=1, ge=1, le=64)
    hog: HOGConfig = HOGConfig()

    @model_validator(mode="after")
    def _needs_model(self) -> EpisodeDetectorConfig:
        if self.kind == "onnx" and self.onnx_model is None:
            raise ValueError("kind onnx needs onnx_model (the YAML file describing the model)")
        return self


class EpisodesConfig(_Strict):
    """The ``episodes`` section."""

    seed: int = 0
    scenario: ScenarioConfig = ScenarioConfig()
    scenarios: tuple[ScenarioVariant, ...] = (ScenarioVariant(),)
    perturbations: tuple[PerturbationSpec, ...] | None = Field(
        default=None, description="None: every perturbation of perception_safety.monitors.perturbations, every level"
    )
    include_clean: bool = Field(default=False, description="add one unperturbed episode per scenario")
    detector: EpisodeDetectorConfig = EpisodeDetectorConfig()
    builtin: BuiltinConfig = BuiltinConfig()
    carla: CarlaConfig = CarlaConfig()
    record: RecordConfig = RecordConfig()
    returns: ReturnsConfig = Field(default_factory=_default_returns)
    monitors_file: Path | None = Field(
        default=None, description="YAML with a 'monitors' section; None: that section of this file, else defaults"
    )
    latch_brake: bool = Field(default=True, description="once braking, the ego keeps braking (emergency stop)")
    end_when_stopped: bool = Field(
        default=True, description="a rollout ends when the ego has stopped or collided (paper: the episode ends)"
    )
    executor: ExecutorConfig = Field(
        default_factory=ExecutorConfig, description="where episodes run (--executor/--jobs/--ray-address override)"
    )


def load_episodes_config(path: str | Path | None) -> EpisodesConfig:
    """Load the ``episodes`` section; a relative ``monitors_file`` is resolved against the config's folder."""
    from perception_safety.io.config import load_model

    cfg = load_model(path, EpisodesConfig, section="episodes")
    if path is not None and cfg.monitors_file is not None and not cfg.monitors_file.is_absolute():
        cfg = cfg.model_copy(update={"monitors_file": Path(path).parent / cfg.monitors_file})
    if path is not None and cfg.detector.confusion_file is not None and not cfg.detector.confusion_file.is_absolute():
        det = cfg.detector.model_copy(update={"confusion_file": Path(path).parent / cfg.detector.confusion_file})
        cfg = cfg.model_copy(update={"detector": det})
    if path is not None and cfg.detector.onnx_model is not None and not cfg.detector.onnx_model.is_absolute():
        det = cfg.detector.model_copy(update={"onnx_model": Path(path).parent / cfg.detector.onnx_model})
        cfg = cfg.model_copy(update={"detector": det})
    return cfg
