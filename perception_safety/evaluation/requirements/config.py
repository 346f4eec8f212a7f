"""The ``requirements:`` config section: one entry per number a release must meet (pydantic models).

Each entry names a metric (``verification``, ``recall``, ``precision``, ``ap``, ``pcd``, ``returns``, ``bbsl``),
selectors that pick the number in the results, which value of it to compare (``bound: point`` = the
estimate, ``lower`` / ``upper`` = its interval bound) and a threshold (``at_least`` or ``at_most``).
Names are checked against the rest of the config by `check_names` so that a typo is a config error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Bound = Literal["lower", "upper", "point"]


class RequirementBase(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True, populate_by_name=True)

    id: str = ""
    """Optional short name shown in the verdict table (default: built from the selectors)."""
    bound: Bound = "point"
    """Which value is compared: the estimate (point) or the lower/upper end of its interval."""
    at_least: float | None = None
    at_most: float | None = None

    @model_validator(mode="after")
    def _one_threshold(self) -> RequirementBase:
        if (self.at_least is None) == (self.at_most is None):
            raise ValueError("give exactly one of at_least / at_most")
        return self

    @property
    def threshold(self) -> tuple[str, float]:
        """``(">=", x)`` or ``("<=", x)``."""
        return (">=", self.at_least) if self.at_least is not None else ("<=", float(self.at_most))  # type: ignore[return-value]

    def selectors(self) -> dict[str, object]:
        """The fields that pick the number (everything but id, bound and the threshold), as given in the config."""
        skip = {"id", "bound", "at_least", "at_most", "metric"}
        given = self.model_dump(by_alias=True, exclude_unset=True)
        return {k: v for k, v in given.items() if k not in skip and v is not None}

    def label(self) -> str:
        if self.id:
            return self.id
        sel = ", ".join(f"{k}={v}" for k, v in self.selectors().items())
        return f"{self.metric}({sel})"  # type: ignore[attr-defined]


class VerificationRequirement(RequirementBase):
    """P(φ) of the Markov-chain verification; unset selectors = the worst matching row (min for at_least)."""

    metric: Literal["verification"]
    spec: str
    variant: str | None = None
    true_env: str | None = None
    initial_speed: int | None = Field(None, ge=0)
    max_speed: int | None = Field(None, ge=1)


class ClassSpanRequirement(RequirementBase):
    """A number of one evaluation class (``class``), pooled or over a distance span (``distance: [lo, hi]``)."""

    class_: str = Field(alias="class")
    distance: tuple[float, float] | None = None
    """``[lo, hi]`` metres; both must be bin edges. Omitted = pooled."""

    @field_validator("distance")
    @classmethod
    def _ordered(cls, v: tuple[float, float] | None) -> tuple[float, float] | None:
        if v is not None and not v[0] < v[1]:
            raise ValueError(f"distance must be [lo, hi] with lo < hi, got {list(v)}")
        return v


class RateRequirement(ClassSpanRequirement):
    """Recall or precision of one evaluation class over a union of whole bins (``distance``) or pooled."""

    metric: Literal["recall", "precision"]


class APRequirement(ClassSpanRequirement):
    """COCO-style AP (``name: ap``), AP50 or AP75 of one evaluation class, pooled or in one distance bin
    (``distance`` = exactly one bin: AP is not summed over bins); bounds from the episode bootstrap."""

    metric: Literal["ap"]
    name: Literal["ap", "ap50", "ap75"] = "ap"


class PCDRequirement(RequirementBase):
    """PCD at (y_t, p_t) (default: the configured pcd.y_t / pcd.p_t) or mPCD of one target, in metres."""

    metric: Literal["pcd"]
    target: str
    name: Literal["pcd", "mpcd"] = "pcd"
    y_t: float | None = None
    p_t: float | None = None


class ReturnsRequirement(RequirementBase):
    """SG / RH / AC (or the hazard of f) under scheme E1 or E2, averaged over frames or episodes."""

    metric: Literal["returns"]
    scheme: Literal["e1", "e2"]
    name: Literal["sg", "rh", "ac", "hazard_f"]
    average: Literal["frames", "episodes"] = "frames"

    @field_validator("scheme", "name", mode="before")
    @classmethod
    def _lower(cls, v: object) -> object:
        return v.lower() if isinstance(v, str) else v


class BBSLRequirement(RequirementBase):
    """T/(T+F) of a BBSL spec (``pass_rate``) or of an IoU baseline (``iou_0.6``), Clopper-Pearson bounds."""

    metric: Literal["bbsl"]
    spec: str
    name: str = "pass_rate"


Requirement = Annotated[
    VerificationRequirement | RateRequirement | APRequirement | PCDRequirement | ReturnsRequirement | BBSLRequirement,
    Field(discriminator="metric"),
]


@dataclass(frozen=True)
class KnownNames:
    """What the rest of the config defines, to check a requirement's selectors against."""

    specs: Sequence[str] = ()
    variants: Sequence[str] = ()
    true_envs: Sequence[str] = ()
    max_speeds: Sequence[int] = ()
    classes: Sequence[str] = ()
    bin_edges: Sequence[float] = ()
    pcd_targets: Sequence[str] = ()
    pcd_y_t: Sequence[float] = ()
    pcd_p_t: Sequence[float] = ()
    bbsl_specs: Sequence[str] = ()
    bbsl_names: Sequence[str] = ()


def _unknown(value: object, known: Sequence[object], what: str) -> str | None:
    if value is None or value in known:
        return None
    return f"unknown {what} {value!r}; known: {', '.join(map(str, known)) or '(none configured)'}"


def check_names(reqs: Sequence[RequirementBase], known: KnownNames) -> list[tuple[str, str]]:
    """``(dotted key, problem)`` for every selector naming something the config does not define."""
    out: list[tuple[str, str]] = []

    def add(i: int, key: str, problem: str | None) -> None:
        if problem:
            out.append((f"requirements.{i}.{key}", problem))

    for i, r in enumerate(reqs):
        if isinstance(r, VerificationRequirement):
            add(i, "spec", _unknown(r.spec, known.specs, "spec"))
            add(i, "variant", _unknown(r.variant, known.variants, "variant"))
            add(i, "true_env", _unknown(r.true_env, known.true_envs, "true environment"))
            add(i, "max_speed", _unknown(r.max_speed, known.max_speeds, "max speed"))
            top = max(known.max_speeds, default=0) if r.max_speed is None else r.max_speed
            if r.initial_speed is not None and r.initial_speed > top:
                add(i, "initial_speed", f"initial speed {r.initial_speed} exceeds the max speed {top}")
        elif isinstance(r, RateRequirement):
            add(i, "class", _unknown(r.class_, known.classes, "class"))
            if r.distance is not None:
                for end in r.distance:
                    add(i, "distance", _unknown(end, known.bin_edges, "bin edge"))
        elif isinstance(r, APRequirement):
            add(i, "class", _unknown(r.class_, known.classes, "class"))
            edges = list(known.bin_edges)
            if r.distance is not None and tuple(r.distance) not in set(pairwise(edges)):
                add(i, "distance", f"AP is per bin: {list(r.distance)} is not one bin of the edges {edges}")
        elif isinstance(r, PCDRequirement):
            add(i, "target", _unknown(r.target, known.pcd_targets, "PCD target"))
            add(i, "y_t", _unknown(r.y_t, known.pcd_y_t, "y_t (not on the PCD grid)"))
            add(i, "p_t", _unknown(r.p_t, known.pcd_p_t, "p_t (not on the PCD grid)"))
        elif isinstance(r, BBSLRequirement):
            add(i, "spec", _unknown(r.spec, known.bbsl_specs, "BBSL spec"))
            add(i, "name", _unknown(r.name, known.bbsl_names, "BBSL rate"))
    return out
