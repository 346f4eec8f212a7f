"""What one PCD evaluation produced (`PCDResult`) and its bootstrap interval (`PCDInterval`), with their
JSON form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perception_safety.evaluation.pcd.changepoints import ChangePoints
from perception_safety.evaluation.pcd.diagnostics import FitCheck, PCDWarning
from perception_safety.evaluation.pcd.logistic import LogisticFit
from perception_safety.evaluation.pcd.pspline import PSplineFit
from perception_safety.evaluation.pcd.segments import Segment


@dataclass(frozen=True)
class PCDInterval:
    """Bootstrap percentile intervals (see `bootstrap.bootstrap_pcd`): resampled whole groups, seeded."""

    n_boot: int
    n_ok: int
    unit: str
    n_groups: int
    level: float
    seed: int
    pcd_ci: tuple[float, float]
    mpcd_ci: tuple[float, float]
    grid_lo: np.ndarray
    grid_hi: np.ndarray
    cell_width_m: float = 0.0  # > 0: the resamples' distances were pooled in cells of this width (`cells.py`)

    def to_dict(self) -> dict[str, Any]:
        return {
            "resample_distances": "exact" if self.cell_width_m == 0 else
            f"pooled in cells of {self.cell_width_m:.3g} m (the estimate on distances rounded to the cell means)",
            "n_boot": self.n_boot,
            "n_ok": self.n_ok,
            "unit": self.unit,
            "n_groups": self.n_groups,
            "level": self.level,
            "seed": self.seed,
            "method": "percentile bootstrap over whole resampling units (model fixed to the full-data choice)",
        }


@dataclass(frozen=True)
class PCDResult:
    """Everything one PCD evaluation produced (distances in metres).

    ``fitted``/``sigma`` are the score model's mean and sigma at every sample distance (hurdle: of the detected
    scores, evaluated at all distances); ``p_det`` the detection probability there (None for the Gaussian model).
    """

    method: str
    x: np.ndarray
    y: np.ndarray
    fitted: np.ndarray
    sigma: np.ndarray  # per sample
    spline: PSplineFit
    change_points: ChangePoints
    segments: tuple[Segment, ...]
    y_t: float
    p_t: float
    pcd: float
    grid_y_t: tuple[float, ...]
    grid_p_t: tuple[float, ...]
    grid: np.ndarray  # rows y_t, columns p_t
    grid_reached: np.ndarray  # False where no sample met the probability threshold (PCD reported as 0)
    notes: tuple[str, ...] = field(default=())
    model: str = "gaussian"
    model_choice: str = ""
    p_det: np.ndarray | None = None
    logistic: LogisticFit | None = None
    warnings: tuple[PCDWarning, ...] = field(default=())
    fit_check: FitCheck | None = None
    interval: PCDInterval | None = None

    @property
    def mpcd(self) -> float:
        """Mean PCD over the (y_t, p_t) grid."""
        return float(np.mean(self.grid))

    @property
    def n_zero(self) -> int:
        """Samples with y = 0 (target missed)."""
        return int(np.count_nonzero(self.y == 0))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no per-sample arrays)."""
        grid: dict[str, Any] = {
            "y_t": list(self.grid_y_t),
            "p_t": list(self.grid_p_t),
            "pcd": self.grid.tolist(),
            "reached": self.grid_reached.tolist(),
        }
        out: dict[str, Any] = {
            "method": self.method,
            "model": self.model,
            "model_choice": self.model_choice,
            "n": int(self.x.size),
            "n_zero": self.n_zero,
            "zero_share": self.n_zero / max(int(self.x.size), 1),
            "distance_range_m": [float(self.x[0]), float(self.x[-1])],
            "lambda": self.spline.lam,
            "edf": self.spline.edf,
            "change_points": list(self.change_points.distances),
            "segments": [{"lo_m": s.lo_m, "hi_m": s.hi_m, "n": s.n, "sigma": s.sigma} for s in self.segments],
            "pcd": {"y_t": self.y_t, "p_t": self.p_t, "value": self.pcd},
            "grid": grid,
            "mpcd": self.mpcd,
            "mpcd_definition": "arithmetic mean of grid.pcd over all (y_t, p_t) cells; "
            "a cell where no sample meets the threshold counts as 0 m",
            "notes": list(self.notes),
            "warnings": [{"code": w.code, "message": w.message} for w in self.warnings],
        }
        if self.logistic is not None:
            lf = self.logistic
            out["p_det"] = {"lambda": lf.lam, "edf": lf.edf, "deviance": lf.deviance, "converged": lf.converged}
        if self.fit_check is not None:
            fc = self.fit_check
            out["mean_fit_check"] = {"chi2": fc.chi2, "bins": fc.df, "p_value": fc.p_value}
        if self.interval is not None:
            iv = self.interval
            out["pcd_ci"] = list(iv.pcd_ci)
            out["mpcd_ci"] = list(iv.mpcd_ci)
            out["pcd"]["lower"], out["pcd"]["upper"] = iv.pcd_ci
            grid["lower"] = iv.grid_lo.tolist()
            grid["upper"] = iv.grid_hi.tolist()
            out["bootstrap"] = iv.to_dict()
        return out
