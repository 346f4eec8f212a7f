"""Choosing an operating point: the requirements it must meet by its simultaneous bounds (``rh_sys<=0.05``: the
upper bound of RH_sys at most 0.05; ``sg>=0.1``: the lower bound of SG at least 0.1) and the objective among those
that do, by the objective's point value (``availability``: the smallest AC, ``safety``: the largest SG; the
guarantee is the requirements' bounds, the objective only ranks the points that meet them); the Pareto front of
the trade-off (SG up, AC down)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from perception_safety.pipeline.tuning.grid import TuningError

METRICS = {"sg": "SG", "rh": "RH", "ac": "AC", "sg_sys": "SG_sys", "rh_sys": "RH_sys", "ac_sys": "AC_sys"}
_PATTERN = re.compile(r"^\s*([a-z_]+)\s*(<=|>=)\s*([-+0-9.eE]+)\s*$")


@dataclass(frozen=True)
class TuningRequirement:
    """``metric <= bound`` (its upper bound must be at most) or ``metric >= bound`` (its lower bound at least)."""

    metric: str
    op: str
    bound: float

    @property
    def text(self) -> str:
        return f"{self.metric} {self.op} {self.bound:g}"

    def margin(self, row: dict[str, Any]) -> float | None:
        """How far the point's bound is inside (>= 0) or outside (< 0) the requirement; None: not computed."""
        fig = figure(row, self.metric)
        if fig is None:
            return None
        side = fig.get("upper") if self.op == "<=" else fig.get("lower")
        if side is None:
            return None
        return self.bound - side if self.op == "<=" else side - self.bound


def parse_requirement(text: str) -> TuningRequirement:
    m = _PATTERN.match(text.lower())
    if not m or m.group(1) not in METRICS:
        raise TuningError(f"--require {text!r}: expected METRIC<=VALUE or METRIC>=VALUE with METRIC one of "
                          f"{', '.join(METRICS)}")
    try:
        bound = float(m.group(3))
    except ValueError:
        raise TuningError(f"--require {text!r}: {m.group(3)!r} is not a number") from None
    low = -1.0 if m.group(1).endswith("_sys") else 0.0  # SG_sys, RH_sys: differences of two probabilities
    if not low <= bound <= 1.0:
        raise TuningError(f"--require {text!r}: {m.group(1)} lies in [{low:g}, 1], so a bound of {bound:g} is always "
                          "or never met")
    return TuningRequirement(METRICS[m.group(1)], m.group(2), bound)


def figure(row: dict[str, Any], metric: str) -> dict[str, Any] | None:
    """The ``{value, lower, upper}`` of a metric in a tuning row (E1 or system)."""
    part = row.get("system", {}) if metric.endswith("_sys") else row.get("e1", {})
    fig = part.get(metric)
    return fig if isinstance(fig, dict) and fig.get("value") is not None else None


OBJECTIVES = {"availability": ("AC", min), "safety": ("SG", max), "availability_sys": ("AC_sys", min),
              "safety_sys": ("SG_sys", max)}


def choose(rows: Sequence[dict[str, Any]], requirements: Sequence[TuningRequirement], objective: str
           ) -> dict[str, Any]:
    """The chosen point (index), every point's margins, or why none qualifies and by how much the nearest misses."""
    if objective not in OBJECTIVES:
        raise TuningError(f"--maximise {objective!r}: expected one of {', '.join(OBJECTIVES)}")
    metric, best = OBJECTIVES[objective]
    margins = [[r.margin(row) for r in requirements] for row in rows]
    ok = [i for i, m in enumerate(margins) if all(x is not None and x >= 0 for x in m)]
    out: dict[str, Any] = {"requirements": [r.text for r in requirements], "objective": objective,
                           "objective_bound": f"{'smallest' if best is min else 'largest'} {metric}",
                           "margins": margins}
    scored = [(i, (figure(rows[i], metric) or {}).get("value")) for i in ok]
    scored = [(i, v) for i, v in scored if v is not None]
    if scored:
        pick = best(scored, key=lambda t: t[1])
        out.update(chosen=pick[0], objective_value=pick[1])
        return out
    worst = [min((x if x is not None else float("-inf")) for x in m) if m else float("-inf") for m in margins]
    nearest = max(range(len(rows)), key=lambda i: worst[i]) if rows else None
    out.update(chosen=None, nearest=nearest, nearest_miss=None if nearest is None else -worst[nearest])
    return out


def pareto_front(rows: Sequence[dict[str, Any]], gain: str = "SG", cost: str = "AC") -> list[int]:
    """Points no other point beats on both axes (higher ``gain``, lower ``cost`` point values)."""
    pts = [(i, (figure(r, gain) or {}).get("value"), (figure(r, cost) or {}).get("value")) for i, r in enumerate(rows)]
    pts = [(i, g, c) for i, g, c in pts if g is not None and c is not None]
    front = []
    for i, g, c in pts:
        dominated = any((g2 >= g and c2 <= c) and (g2 > g or c2 < c) for _, g2, c2 in pts)
        if not dominated:
            front.append(i)
    return front
