"""Draw docs/pcd_models.png: the Gaussian and the hurdle PCD model on known-answer synthetic data.

Run: ``.venv/bin/python tools/pcd_models_figure.py [--out docs/pcd_models.png]``. Data: a logistic detection curve
(50 % at 120 m, scale 10 m) times Gaussian scores N(0.75, 0.05), 2000 samples (`evaluation.pcd.synthetic`). Left and
middle: each model's fit (samples, mean, ±σ, change points, p_det). Right: P(y > 0.5 | x) of both models against the
analytic curve, with p_t = 0.5 and the PCDs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy.special import ndtr

from perception_safety.evaluation.pcd.compute import PCDConfig, PCDResult, compute_pcd, probability_grid
from perception_safety.evaluation.pcd.synthetic import HurdleTruth, hurdle_samples


def draw_fit(ax, result: PCDResult, title: str) -> None:
    """One model's fit on a matplotlib axes (this docs figure keeps matplotlib; the report draws its own SVG,
    `report.pcd_plots`): samples, zeros apart, mean with ±σ band, p_det, change points, y_t and the PCD."""
    x, f, s = result.x, result.fitted, result.sigma
    hit = result.y > 0 if result.p_det is not None else np.ones(x.size, dtype=bool)
    ax.scatter(x[hit], result.y[hit], s=8, alpha=0.45, color="tab:orange", label="IoU × confidence", rasterized=True)
    if not hit.all():
        ax.scatter(x[~hit], result.y[~hit], s=8, alpha=0.3, color="grey", marker="|", label="missed (y = 0)")
    ax.fill_between(x, f - s, f + s, color="tab:blue", alpha=0.15, label="±σ (per segment)")
    what = "detected scores" if result.p_det is not None else "P-spline"
    ax.plot(x, f, color="navy", linestyle="--", linewidth=1.8, label=f"{what} mean (λ={result.spline.lam:g})")
    if result.p_det is not None:
        ax.plot(x, result.p_det, color="purple", linewidth=1.5, label="p_det(x) (logistic P-spline)")
    for i, cp in enumerate(result.change_points.distances):
        ax.axvline(cp, color="tab:green", linestyle="-.", linewidth=1.2, label="change point" if i == 0 else None)
    ax.axhline(result.y_t, color="sienna", linestyle=":", linewidth=1.2, label=f"y_t = {result.y_t:g}")
    ax.axvline(result.pcd, color="red", linestyle=":", linewidth=2.0, label=f"PCD = {result.pcd:.1f} m")
    ax.set_xlabel("distance (m)")
    ax.set_ylabel("IoU × confidence")
    ax.set_title(title)
    ax.grid(True, linestyle="--", alpha=0.3)
    ax.legend(fontsize=7, loc="best")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("docs/pcd_models.png"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    truth = HurdleTruth()
    x, y, _ = hurdle_samples(2000, args.seed, truth)
    gauss = compute_pcd(x, y, PCDConfig(model="gaussian"))
    hurdle = compute_pcd(x, y, PCDConfig(model="hurdle"))
    fig = Figure(figsize=(17.0, 4.8), layout="constrained")
    axes = fig.subplots(1, 3)
    draw_fit(axes[0], gauss, f"Gaussian model (eq. 9): {len(gauss.change_points.distances)} change points")
    draw_fit(axes[1], hurdle, f"hurdle model: {len(hurdle.change_points.distances)} change points")
    ax = axes[2]
    grid = np.linspace(truth.x_min, truth.x_max, 400)
    ax.plot(
        grid,
        truth.p_det(grid) * ndtr((truth.mu - 0.5) / truth.sd),
        color="black",
        linewidth=2.5,
        label=f"analytic, PCD = {truth.pcd(0.5, 0.5):.1f} m",
    )
    for res, colour in ((gauss, "tab:orange"), (hurdle, "tab:purple")):
        p = probability_grid(res, np.array([0.5]))[0]
        ax.plot(
            res.x, p, color=colour, linewidth=1.4, label=f"{res.model}, PCD = {res.pcd:.1f} m, mPCD = {res.mpcd:.1f} m"
        )
    ax.axhline(0.5, color="sienna", linestyle=":", label="p_t = 0.5")
    ax.set_xlabel("distance (m)")
    ax.set_ylabel("P(y > 0.5 | x)")
    ax.set_title(
        f"P(y > y_t | x) at y_t = 0.5 (analytic mPCD = {truth.grid(gauss.grid_y_t, gauss.grid_p_t).mean():.1f} m)"
    )
    ax.grid(True, linestyle="--", alpha=0.3)
    ax.legend(fontsize=7)
    FigureCanvasAgg(fig)
    fig.savefig(args.out, dpi=90)
    print(
        f"wrote {args.out}: gaussian PCD {gauss.pcd:.1f} m mPCD {gauss.mpcd:.1f} m; "
        f"hurdle PCD {hurdle.pcd:.1f} m mPCD {hurdle.mpcd:.1f} m"
    )


if __name__ == "__main__":
    main()
