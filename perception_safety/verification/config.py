"""Pydantic config of the ``verification`` section (config/verification.yaml)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, field_validator

Variant = Literal["class", "class_by_distance", "prop", "prop_by_distance"]
VARIANTS: tuple[str, ...] = ("class", "class_by_distance", "prop", "prop_by_distance")


class GeometryConfig(BaseModel):
    """Road geometry; ``null`` cells follow the reference geometry for each max speed V."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    cell_length_m: PositiveFloat = 1.0
    road_cells: int | None = Field(default=None, ge=1, description="N; null = V(V+1)/2 + 4")
    stop_cell: int | None = Field(default=None, ge=1, description="k; null = V(V+1)/2 + 1")
    crosswalk_offset: int = Field(default=1, description="crosswalk cell = k + offset")
    initial_cell: int = Field(default=1, ge=1)


class TrueEnvConfig(BaseModel):
    """One true environment: its objects for class-labeled matrices, its proposition set for 2^P ones."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", populate_by_name=True)

    class_objects: list[str] = Field(alias="class", min_length=1)
    prop: str


def _default_envs() -> dict[str, TrueEnvConfig]:
    return {
        "ped": TrueEnvConfig(class_objects=["ped"], prop="ped"),
        "obs": TrueEnvConfig(class_objects=["obs"], prop="obs"),
        "empty": TrueEnvConfig(class_objects=["empty"], prop="empty"),
    }


class PolicyChoice(BaseModel):
    """``controller: {policy: FILE}``: a policy table (CSV/JSON), relative paths from the working directory."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    policy: str = Field(min_length=1)


class PythonChoice(BaseModel):
    """``controller: {python: module:function}``: a vectorised callable ``(x, v, kind, geometry) -> (x', v')``."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    python: str = Field(min_length=3, pattern=r"^[^:]+:[^:]+$")
    time_limit_s: float = Field(default=1.0, gt=0, le=3600, description="time limit of one call; a timeout is an "
                                "error, never a result")


ControllerChoice = Literal["braking_rule", "paper_modes"] | PolicyChoice | PythonChoice


class MonitorLoopConfig(BaseModel):
    """The runtime monitor in the chain: joint (observation, verdict) counts and the model-checked SG/RH/AC."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    status: str = Field(default="monitor", min_length=1, description="name of the verdict's status in the bags")
    fail_safe: Literal["brake", "stop_now"] = "brake"
    emergency_deceleration: int | None = Field(default=None, ge=1, description="stop_now: null = stop in one step")
    variants: list[Variant] = Field(default_factory=lambda: ["prop_by_distance"], min_length=1)
    hazard_spec: str = 'P=? [F "past_k"]'
    hazard_envs: list[str] = Field(default_factory=lambda: ["ped"], min_length=1)
    mission_loss_spec: str = 'P=? [F ("stopped" & !"at_end")]'
    mission_loss_envs: list[str] = Field(default_factory=lambda: ["obs", "empty"], min_length=1)


class PlotConfig(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    true_env: str = "ped"
    spec: str = "phi"
    log_scale: bool = False
    step_s: PositiveFloat | None = None
    """Seconds per model step; when given, Fig. 8 also shows speeds in m/s (= cells/step × cell_length_m / step_s)."""


class BoundsConfig(BaseModel):
    """Interval DTMC bounds (Clopper–Pearson per column, Storm IDTMC MINIMIZE/MAXIMIZE)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    enabled: bool = True
    cyclic_horizon: int = Field(default=10_000, ge=1, description="bounded-until steps when the chain has cycles")


class PosteriorConfig(BaseModel):
    """Posterior per confusion column; Monte Carlo credible interval of P(φ) (docs/verification.md)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    enabled: bool = True
    method: Literal["split", "dirichlet"] = Field(
        default="split", description="split: Beta(prior, prior) on the hit (diagonal) vs the rest, Dirichlet within "
        "the rest; dirichlet: Dirichlet(prior) over the whole column (pulls P(hit) towards 1/M)")
    draws: int = Field(default=1000, ge=10, le=1_000_000)
    prior: PositiveFloat = Field(default=0.5, description="concentration per cell (0.5 = Jeffreys)")
    level: float = Field(default=0.95, gt=0, lt=1, description="equal-tailed credible level")
    seed: int = 0


class VerificationConfig(BaseModel):
    """Sweep of the car–pedestrian chain over max speeds, initial speeds, variants, environments, specs."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid")

    max_speeds: list[int] = Field(default_factory=lambda: list(range(1, 11)), min_length=1)
    initial_speeds: list[int] | None = Field(default=None, description="null = 1..V for each max speed V")
    variants: list[Variant] = Field(default_factory=lambda: list(VARIANTS), min_length=1)
    true_envs: dict[str, TrueEnvConfig] = Field(default_factory=_default_envs, min_length=1)
    specs: list[str] = Field(default_factory=lambda: ["stop_at_k", "phi1", "phi2", "phi3", "phi"], min_length=1)
    custom_specs: dict[str, str] = Field(default_factory=dict)
    pedestrian_label: str = "ped"
    controller: ControllerChoice = "braking_rule"
    monitor_loop: MonitorLoopConfig = Field(default_factory=MonitorLoopConfig)
    geometry: GeometryConfig = Field(default_factory=GeometryConfig)
    beyond_last_bin: Literal["error", "last_bin"] = "error"
    export: Literal["none", "drn", "prism", "both"] = "none"
    plot: PlotConfig = Field(default_factory=PlotConfig)
    alpha: float = Field(default=0.05, gt=0, lt=1, description="interval chain: joint level 1 - alpha per chain "
                         "(Clopper-Pearson per cell at alpha/M, M = cells x decision bins)")
    bounds: BoundsConfig = Field(default_factory=BoundsConfig)
    posterior: PosteriorConfig = Field(default_factory=PosteriorConfig)

    @field_validator("max_speeds", "initial_speeds")
    @classmethod
    def _non_negative(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and any(x < 0 for x in v):
            raise ValueError("speeds must be >= 0")
        return v
