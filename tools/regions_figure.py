"""Draw docs/img/monitor_regions.png: the region forms of the stop rule on two cameras.

Run: ``.venv/bin/python tools/regions_figure.py [--out docs/img/monitor_regions.png]``. Top row: the demo's camera
(1280x720, 90 deg HFOV, 1.6 m high) and a KITTI-like camera (1242x375, fx 721.5, 1.65 m high), each with the paper's
warning rectangle as fractions of the image (orange), the metric ground corridor (|y| <= 1.5 m, 2..30 m; blue)
projected with the camera's intrinsics and mounting, ground lines every 5 m, and pedestrians at known positions
(numbered as in the
bottom panel; filled: the corridor rule stops, at far_m). Bottom: the corridor seen from above, its far edge from
the braking distance at several ego speeds (a = 6 m/s^2, reaction 0.5 s, margin 2 m).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Polygon, Rectangle

from perception_safety.core.camera import Intrinsics
from perception_safety.monitors.config import WARNING_REGION, CameraMount
from perception_safety.monitors.regions.forms import Braking, GroundCorridor
from perception_safety.monitors.regions.ground import GroundCamera
from perception_safety.monitors.regions.resolve import CameraInUse, corridor_for, rect_pixels

CORRIDOR = GroundCorridor(half_width_m=1.5, near_m=2.0, far_m=30.0)
PEDESTRIANS = [(8.4, -1.0), (8.4, -1.8), (25.0, 1.2), (35.0, 0.0), (14.0, 4.5)]
CAMERAS = [
    ("demo camera 1280x720, HFOV 90 deg, 1.6 m", Intrinsics.from_fov(1280, 720, 90.0), 1.6),
    ("KITTI-like 1242x375, fx 721.5, 1.65 m", Intrinsics(721.5377, 721.5377, 609.5593, 172.854, 1242, 375), 1.65),
]


def _camera_panel(ax, title: str, k: Intrinsics, height: float) -> None:
    cam = CameraInUse(k.size, k)
    mount = CameraMount(height_m=height)
    corridor = corridor_for("stop_region.corridor", CORRIDOR, cam, mount)
    ground = GroundCamera(k, height)
    ax.add_patch(Rectangle((0, 0), k.width, k.height, facecolor="0.93", edgecolor="0.3"))
    horizon = ground.horizon_row()
    ax.add_patch(Rectangle((0, horizon), k.width, k.height - horizon, facecolor="0.82", edgecolor="none"))
    for x in (5, 10, 15, 20, 30, 40):
        u, v, _ = ground.to_pixels(np.array([x, x]), np.array([12.0, -12.0]))
        ax.plot(u, v, color="0.6", lw=0.6)
        if v[0] < k.height:
            ax.annotate(f"{x} m", (5, v[0] - 2), fontsize=6, color="0.3", va="bottom", ha="left")
    x0, y0, x1, y1 = rect_pixels("warning", WARNING_REGION, cam)
    ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor="none", edgecolor="tab:orange", lw=1.8,
                           label="paper's rectangle as fractions"))
    ax.add_patch(Polygon(corridor.outline(), closed=True, facecolor="tab:blue", alpha=0.25, edgecolor="tab:blue",
                         lw=1.5, label="ground corridor 1.5 m, 2-30 m"))
    for n, (x, y) in enumerate(PEDESTRIANS, 1):
        u0, u1 = k.cx - k.fx * (y + 0.3) / x, k.cx - k.fx * (y - 0.3) / x
        v0, v1 = k.cy + k.fy * (height - 1.7) / x, min(k.cy + k.fy * height / x, k.height)
        inside = bool(corridor.inside(np.array([[u0, v0, u1, v1]]), None)[0])
        ax.add_patch(Rectangle((u0, v0), u1 - u0, v1 - v0, facecolor="tab:red" if inside else "none",
                               edgecolor="tab:red", lw=1.2))
        ax.annotate(str(n), ((u0 + u1) / 2, v0 - 3), fontsize=7, color="tab:red", ha="center", va="bottom")
    ax.set_xlim(0, k.width)
    ax.set_ylim(k.height, 0)
    ax.set_aspect("equal")
    ax.set_title(title, fontsize=9)
    ax.tick_params(labelsize=6)


def _top_view(ax) -> None:
    braking = Braking(deceleration_mps2=6.0, reaction_time_s=0.5, margin_m=2.0)
    for speed, colour in ((0.0, "tab:green"), (8.0, "tab:blue"), (14.0, "tab:purple")):
        far = braking.far(CORRIDOR.near_m, speed)
        ax.add_patch(Rectangle((CORRIDOR.near_m, -CORRIDOR.half_width_m), far - CORRIDOR.near_m,
                               2 * CORRIDOR.half_width_m, facecolor="none", edgecolor=colour, lw=1.6,
                               label=f"{speed:g} m/s: far edge {far:.1f} m"))
    ax.axvline(CORRIDOR.far_m, color="0.3", ls="--", lw=1, label=f"far_m {CORRIDOR.far_m:g} m (no ego speed)")
    for n, (x, y) in enumerate(PEDESTRIANS, 1):
        ax.plot([x], [y], "o", color="tab:red", ms=4)
        ax.annotate(f"{n}: ({x:g}, {y:g})", (x + 0.3, y + 0.25), fontsize=7, color="tab:red")
    ax.plot([0], [0], "^", color="k", ms=7, label="camera (ground point)")
    ax.set_xlim(-1, 40)
    ax.set_ylim(-6, 6)
    ax.set_xlabel("x forward (m)", fontsize=8)
    ax.set_ylabel("y left (m)", fontsize=8)
    ax.set_title("ground corridor from above: far = near + v t_r + v^2 / 2a + margin", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    ax.tick_params(labelsize=7)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("docs/img/monitor_regions.png"))
    args = parser.parse_args()
    fig = Figure(figsize=(11, 7.2), dpi=110)
    grid = fig.add_gridspec(2, 2, height_ratios=[1.25, 1])
    for i, (title, k, h) in enumerate(CAMERAS):
        _camera_panel(fig.add_subplot(grid[0, i]), title, k, h)
    fig.axes[0].legend(fontsize=7, loc="upper left")
    _top_view(fig.add_subplot(grid[1, :]))
    fig.tight_layout()
    FigureCanvasAgg(fig)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
