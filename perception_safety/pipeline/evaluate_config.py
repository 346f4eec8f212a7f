"""The ``evaluate`` configuration: one YAML file whose sections are the analyses' own configs."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from perception_safety.bbsl.config import BBSLConfig
from perception_safety.evaluation.confusion.config import ConfusionConfig
from perception_safety.evaluation.detection_ap.config import DetectionAPConfig
from perception_safety.evaluation.pcd.config import PCDConfig
from perception_safety.evaluation.requirements.config import KnownNames, Requirement, check_names
from perception_safety.evaluation.returns import ReturnsConfig
from perception_safety.executors.config import ExecutorConfig
from perception_safety.io.bag import BagConfig
from perception_safety.io.config import ConfigError, load_yaml, model_from_mapping, quote_value
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.verification.config import VerificationConfig

STOP_REGION_SPEC = "stop_region"

Analysis = Literal["confusion", "detection_ap", "pcd", "verification", "bbsl", "returns"]
ALL_ANALYSES: tuple[Analysis, ...] = ("confusion", "detection_ap", "pcd", "verification", "bbsl", "returns")


class PCDTarget(BaseModel):
    """One PCD curve: which ground-truth objects are the target (by dataset class and/or track id)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    name: str
    class_id: str | None = None
    track_id: str | None = None
    iou_threshold: float = Field(0.0, ge=0.0, le=1.0)
    class_aware: bool = False


class EvaluateSection(BaseModel):
    """Section ``evaluate``: which analyses run, and the PCD targets."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    analyses: list[Analysis] = Field(default_factory=lambda: list(ALL_ANALYSES))
    pcd_targets: list[PCDTarget] = Field(
        default_factory=lambda: [PCDTarget(name="pedestrian", class_id="pedestrian")], min_length=1
    )
    bbsl_specs: list[str] = Field(default_factory=lambda: [STOP_REGION_SPEC])
    """BBSL specs to test: file paths (relative ones from the config file's folder) or ``stop_region``,
    the emergency-braking rule of ``monitors.stop_region`` as BBSL (its bindings come from that section)."""
    breakdowns: list[str] = Field(default_factory=list)
    """Frame attributes to split the confusion and PCD analyses (and SG/RH/AC, by episode meta) by: bag
    conditions (``perturbation``, ``level``, ``episode``, ``scenario``, ``weather``, ... from the bag's metadata
    custom_data or its ``conditions.yaml``), ``ego_speed_band`` (bands of ``speed_bands_mps``, per frame) and
    ``object_size_band`` (bands of ``size_bands_px``, the box height, per object)."""
    speed_bands_mps: list[float] = Field(default_factory=lambda: [0.0, 2.0, 5.0, 10.0, 20.0], min_length=2)
    """Edges of the ego-speed bands in m/s (half-open [lo, hi)); faster frames form '>= last'."""
    size_bands_px: list[float] = Field(default_factory=lambda: [0.0, 25.0, 50.0, 100.0, 200.0], min_length=2)
    """Edges of the object-size bands: box height in pixels (half-open [lo, hi)); taller boxes form '>= last'."""
    warn_unmapped_fraction: float = Field(0.05, ge=0.0, le=1.0)
    """Warn when more than this fraction of ground-truth or detection labels map to no confusion class."""
    warn_box_overflow_px: float = Field(2.0, ge=0.0)
    """Warn when boxes extend more than this many pixels beyond ``bbsl.image_size`` (wrong image size)."""
    evidence_per_cell: int = Field(20, ge=0, le=1000)
    """Frame references kept per confusion cell, failure kind and alarm (the most informative; 0 = none)."""

    @field_validator("speed_bands_mps", "size_bands_px")
    @classmethod
    def _increasing(cls, edges: list[float]) -> list[float]:
        """Band edges must rise: a frame or box belongs to one band (unsorted edges would give overlapping ones)."""
        for a, b in pairwise(edges):
            if not b > a:
                raise ValueError(f"band edges must be strictly increasing, got {a:g} then {b:g}")
        return edges


class TuningSection(BaseModel):
    """Section ``tuning``: `tune-monitor` inside `evaluate` on the same inputs (docs/monitor-tuning.md)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    params: list[str] = Field(min_length=1)
    """Numeric monitor parameters, e.g. ``monitors.contrast.threshold``."""
    values: list[str] = Field(min_length=1)
    """One value list per parameter: ``"a,b,c"`` or ``"start:stop:n"``."""
    require: list[str] = Field(default_factory=list)
    """Requirements on bounds, e.g. ``"rh_sys<=0.05"``."""
    maximise: Literal["availability", "safety", "availability_sys", "safety_sys"] = "availability"
    speed: int | None = Field(default=None, ge=1)
    initial_speed: int | None = Field(default=None, ge=0)
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)


class ModelCheckSection(BaseModel):
    """Section ``model_check``: are these inputs consistent with the model of a previous `evaluate`?"""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    model: str
    """The previous run's ``--out`` folder (results.json, partials/); relative to the config file's folder."""
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)


class EvaluateConfig(BaseModel):
    """All sections `evaluate` reads; each is validated by its analysis' own model."""

    model_config = ConfigDict(allow_inf_nan=False, extra="ignore", frozen=True)

    evaluate: EvaluateSection = EvaluateSection()
    bags: BagConfig = BagConfig()
    confusion: ConfusionConfig = ConfusionConfig()
    detection_ap: DetectionAPConfig = DetectionAPConfig()
    pcd: PCDConfig = PCDConfig()
    verification: VerificationConfig = VerificationConfig()
    bbsl: BBSLConfig = BBSLConfig(image_size=(1280.0, 720.0), target_classes=["pedestrian", "person"])
    monitors: MonitorsConfig = MonitorsConfig()
    returns: ReturnsConfig = ReturnsConfig()
    requirements: list[Requirement] = Field(default_factory=list)
    """What the numbers must meet (docs/requirements.md); `evaluate --check` exits 3 unless all pass."""
    tuning: TuningSection | None = None
    """Monitor operating points on the same inputs (`tune-monitor`), in the report when given."""
    model_check: ModelCheckSection | None = None
    """Check these inputs against a previous run's confusion model (`validate-model`), in the report when given."""
    executor: ExecutorConfig = ExecutorConfig()
    """Where the map runs (``--executor``, ``--jobs``, ``--ray-address`` override it)."""
    base_dir: str = "."
    """Folder that relative spec paths are resolved against (set to the config file's folder on load)."""

    @property
    def image_boxes(self) -> bool:
        """False for 3D object lists (``confusion.matching: centre_distance``): their boxes are bird's-eye-view
        footprints in metres, so image-region analyses (BBSL's specs) do not apply."""
        return self.confusion.matching != "centre_distance"


def load_evaluate_config(path: str | Path | None) -> tuple[EvaluateConfig, str]:
    """The validated config and its exact text (for the report); ``None`` gives the defaults."""
    if path is None:
        return EvaluateConfig(), "# defaults (no --config given)\n"
    data = load_yaml(path)
    _check_evaluate_sections(data, path)
    data["base_dir"] = str(Path(path).resolve().parent)
    cfg = model_from_mapping(data, EvaluateConfig, str(path))
    check_requirement_names(cfg, str(path))
    return cfg, Path(path).read_text(encoding="utf-8")


def known_names(cfg: EvaluateConfig) -> KnownNames:
    """Specs, variants, classes, bin edges, targets ... that the config defines (for requirement selectors)."""
    v, p = cfg.verification, cfg.pcd
    return KnownNames(
        specs=[*v.specs, *v.custom_specs],
        variants=list(v.variants),
        true_envs=list(v.true_envs),
        max_speeds=list(v.max_speeds),
        classes=list(cfg.confusion.classes),
        bin_edges=list(cfg.confusion.bin_edges),
        pcd_targets=[t.name for t in cfg.evaluate.pcd_targets],
        pcd_y_t=sorted({p.y_t, *p.grid_y_t}),
        pcd_p_t=sorted({p.p_t, *p.grid_p_t}),
        bbsl_specs=list(cfg.evaluate.bbsl_specs),
        bbsl_names=["pass_rate", *(f"iou_{t:g}" for t in cfg.bbsl.iou_thresholds)],
    )


def check_requirement_names(cfg: EvaluateConfig, source: str) -> None:
    """Raise `ConfigError` naming ``source`` and the key of every requirement selector the config lacks."""
    problems = check_names(cfg.requirements, known_names(cfg))
    first: dict[str, int] = {}
    for i, r in enumerate(cfg.requirements):  # verdicts, the gate and `compare` key requirements by their label
        j = first.setdefault(r.label(), i)
        if j != i:
            what = "id" if r.id else "requirement (same metric and selectors; give each an 'id')"
            problems.append((f"requirements.{i}", f"duplicate {what} {r.label()!r}: also requirements.{j}"))
    if problems:
        raise ConfigError("\n".join(f"{source}: {key}: {msg}" for key, msg in problems))


def _check_evaluate_sections(data: dict, path: str | Path) -> None:
    """Every top-level key of the one-file config must be a section `evaluate` or the demo reads."""
    import difflib

    known = sorted((set(EvaluateConfig.model_fields) - {"base_dir"}) | {"episodes"})
    problems = []
    for key in data:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6) if isinstance(key, str) else []
        hint = f"did you mean '{close[0]}'?" if close else f"known sections: {', '.join(known)}"
        problems.append(f"{path}: {quote_value(key)}: unknown section; {hint}")
    if problems:
        raise ConfigError("\n".join(problems))
