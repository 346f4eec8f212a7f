"""The operating points of a monitor sweep: ``--param monitors.contrast.threshold --values 800:2400:9`` (or a list),
several ``--param`` giving their grid, each point a validated `MonitorsConfig`."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import ValidationError

from perception_safety.errors import PerceptionSafetyError
from perception_safety.monitors.config import MonitorsConfig

MAX_POINTS = 400


class TuningError(PerceptionSafetyError):
    """A parameter, a value list or a requirement of the sweep cannot be used (the message names it)."""


def parse_values(spec: str, param: str) -> list[float]:
    """``a,b,c`` (a list) or ``start:stop:n`` (n evenly spaced values, both ends included)."""
    text = spec.strip()
    try:
        if text.count(":") == 2:
            a, b, n = text.split(":")
            count = int(n)
            if not 1 <= count <= MAX_POINTS:
                raise TuningError(f"--values {spec!r} for {param}: n must lie in 1..{MAX_POINTS}")
            values = np.linspace(float(a), float(b), count).tolist()
        else:
            values = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise TuningError(f"--values {spec!r} for {param}: expected a list 'a,b,c' or 'start:stop:n'") from None
    if not values or not all(np.isfinite(values)):
        raise TuningError(f"--values {spec!r} for {param}: no finite value")
    return list(dict.fromkeys(float(v) for v in values))


@dataclass(frozen=True)
class OperatingPoint:
    """One point of the sweep: its parameter values and the monitors config they give."""

    index: int
    values: tuple[tuple[str, float], ...]
    monitors: MonitorsConfig

    @property
    def label(self) -> str:
        return ", ".join(f"{p.removeprefix('monitors.')}={v:g}" for p, v in self.values)


def _set(doc: dict[str, Any], path: Sequence[str], value: float, param: str) -> None:
    node = doc
    for key in path[:-1]:
        child = node.get(key) if isinstance(node, dict) else None
        if not isinstance(child, dict):
            raise TuningError(f"--param {param}: {key!r} is not a section of the monitors config")
        node = child
    if path[-1] not in node:
        raise TuningError(f"--param {param}: no key {path[-1]!r} (known: {', '.join(sorted(node))})")
    current = node[path[-1]]
    if current is not None and (isinstance(current, bool) or not isinstance(current, int | float)):
        raise TuningError(f"--param {param}: not a numeric parameter (its value is {current!r})")
    node[path[-1]] = int(value) if isinstance(current, int) and float(value).is_integer() else value


def operating_points(base: MonitorsConfig, params: Sequence[str], values: Sequence[str]) -> list[OperatingPoint]:
    """Every combination of the parameters' values, each validated as the node would validate it."""
    if len(params) != len(values) or not params:
        raise TuningError("give each --param its own --values (as many --values as --param)")
    repeated = sorted({p for p in params if list(params).count(p) > 1})
    if repeated:
        raise TuningError(f"--param {', '.join(repeated)} given more than once: give one --param per parameter "
                          "with all its values in one --values")
    grids = []
    for param, spec in zip(params, values, strict=True):
        path = param.split(".")
        if path[0] != "monitors" or len(path) < 3:
            raise TuningError(f"--param {param}: expected monitors.<monitor>.<parameter>, "
                              "e.g. monitors.contrast.threshold")
        grids.append(parse_values(spec, param))
    combos = list(itertools.product(*grids))
    if len(combos) > MAX_POINTS:
        raise TuningError(f"{len(combos)} operating points: at most {MAX_POINTS}")
    points = []
    for i, combo in enumerate(combos):
        doc = base.model_dump(mode="json")
        for param, v in zip(params, combo, strict=True):
            _set(doc, param.split(".")[1:], v, param)
        try:
            cfg = MonitorsConfig.model_validate(doc)
        except ValidationError as exc:
            where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
            raise TuningError(f"operating point {dict(zip(params, combo, strict=True))}: {where}") from None
        points.append(OperatingPoint(i, tuple(zip(params, combo, strict=True)), cfg))
    return points
