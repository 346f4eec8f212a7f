"""Draw docs/img/monitor_regions.png: the shipped stop rule on three cameras, and how far the paper's rectangle reaches.

Run: ``.venv/bin/python tools/regions_figure.py [--out docs/img/monitor_regions.png]``. Top row: the demo's camera
(1280x720, 90 deg HFOV, 1.6 m high), a KITTI-like camera (1242x375, fx 721.5, 1.65 m) and a 4:3 camera (640x480,
90 deg HFOV, 1.6 m), each with the paper's warning rectangle as fractions of the image (orange; dashed: the ground line
its top row sees), config/monitors.yaml's ground corridor (|y| <= 1.5 m, 0..25 m; blue) projected with the camera's
intrinsics and mounting, ground lines every 5 m, and pedestrians at known positions (numbered as in the bottom panel;
filled: the shipped rule, rectangle or corridor, stops). Each title says whether the rectangle alone would pass the
coverage check. Bottom: the corridor from above with the distance the rectangle reaches on each camera.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Polygon, Rectangle

from perception_safety.core.camera import Intrinsics
from perception_safety.core.types import Box, Detection, Frame
from perception_safety.io.config import load_model
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.monitors.regions.ground import GroundCamera
from perception_safety.monitors.regions.resolve import CameraInUse, RegionError
from perception_safety.monitors.stop_region import StopRegionMonitor, stop_geometry

REPO = Path(__file__).resolve().parents[1]
PEDESTRIANS = [(8.0, 1.0), (20.0, -1.0), (8.4, -1.8), (30.0, 0.0), (14.0, 4.5)]
CAMERAS = [
    ("demo 1280x720, HFOV 90 deg, 1.6 m", Intrinsics.from_fov(1280, 720, 90.0), 1.6, "tab:green"),
    ("KITTI-like 1242x375, fx 721.5, 1.65 m", Intrinsics(721.5377, 721.5377, 609.5593, 172.854, 1242, 375), 1.65,
     "tab:purple"),
    ("4:3 640x480, HFOV 90 deg, 1.6 m", Intrinsics.from_fov(640, 480, 90.0), 1.6, "tab:brown"),
]


def _mounted(shipped: MonitorsConfig, height: float) -> MonitorsConfig:
    return shipped.model_copy(update={"camera": shipped.camera.model_copy(update={"height_m": height})})


def _ped_box(k: Intrinsics, height: float, x: float, y: float) -> Box:
    u0, u1 = k.cx - k.fx * (y + 0.3) / x, k.cx - k.fx * (y - 0.3) / x
    v0, v1 = k.cy + k.fy * (height - 1.7) / x, min(k.cy + k.fy * height / x, k.height)
    return Box(u0, v0, u1, v1)


def _camera_panel(ax, title: str, k: Intrinsics, height: float, shipped: MonitorsConfig) -> float:
    """Draw one camera; returns the distance the rectangle's top row sees."""
    cfg = _mounted(shipped, height)
    cam = CameraInUse(k.size, k)
    placed = stop_geometry(cfg.stop_region, cfg.camera, cam)
    assert placed.rect is not None and placed.corridor is not None
    rule = StopRegionMonitor(cfg.stop_region, cfg.camera)
    ground = GroundCamera(k, height)
    ax.add_patch(Rectangle((0, 0), k.width, k.height, facecolor="0.93", edgecolor="0.3"))
    horizon = ground.horizon_row()
    ax.add_patch(Rectangle((0, horizon), k.width, k.height - horizon, facecolor="0.82", edgecolor="none"))
    for x in (5, 10, 15, 20, 25):
        u, v, _ = ground.to_pixels(np.array([x, x]), np.array([12.0, -12.0]))
        ax.plot(u, v, color="0.6", lw=0.6)
        if v[0] < k.height and x in (5, 10, 25):
            ax.annotate(f"{x} m", (k.width - 4, v[0] - 1), fontsize=6, color="0.3", va="bottom", ha="right")
    x0, y0, x1, y1 = placed.rect
    reach = float(ground.to_ground(np.array([k.cx]), np.array([y0]))[0][0])
    ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor="none", edgecolor="tab:orange", lw=1.8,
                           label="paper's rectangle (fractions)"))
    ax.plot([0, k.width], [y0, y0], color="tab:orange", ls="--", lw=0.9)
    ax.annotate(f"reaches {reach:.1f} m", (4, y0 - 2), fontsize=6.5, color="tab:orange", va="bottom")
    ax.add_patch(Polygon(placed.corridor.outline(), closed=True, facecolor="tab:blue", alpha=0.25,
                         edgecolor="tab:blue", lw=1.5, label="ground corridor 1.5 m, 0-25 m"))
    for n, (x, y) in enumerate(PEDESTRIANS, 1):
        box = _ped_box(k, height, x, y)
        stops = rule.update(Frame(1, detections=(Detection(box, "person", 0.9),), camera=k)).alarm
        ax.add_patch(Rectangle((box.x_min, box.y_min), box.width, box.height, facecolor="tab:red" if stops else "none",
                               edgecolor="tab:red", lw=1.2))
        ax.annotate(str(n), ((box.x_min + box.x_max) / 2, box.y_min - 2), fontsize=7, color="tab:red", ha="center",
                    va="bottom")
    rect_only = cfg.stop_region.model_copy(update={"rule": "region"})
    try:
        stop_geometry(rect_only, cfg.camera, cam)
        verdict = "rectangle alone covers the corridor"
    except RegionError:
        verdict = f"rectangle alone: refused ({reach:.1f} m < 25 m)"
    ax.set_xlim(0, k.width)
    ax.set_ylim(k.height, 0)
    ax.set_aspect("equal")
    ax.set_title(f"{title}\n{verdict}", fontsize=8.5)
    ax.tick_params(labelsize=6)
    return reach


def _top_view(ax, reaches: list[tuple[str, float, str]], shipped: MonitorsConfig) -> None:
    c = shipped.stop_region.corridor
    assert c is not None
    ax.add_patch(Rectangle((c.near_m, -c.half_width_m), c.far_m - c.near_m, 2 * c.half_width_m, facecolor="tab:blue",
                           alpha=0.2, edgecolor="tab:blue", lw=1.5, label="shipped corridor |y| <= 1.5 m, 0-25 m"))
    for title, reach, colour in reaches:
        ax.axvline(reach, color=colour, ls="--", lw=1.2, label=f"rectangle's top row, {title.split(',')[0]}: "
                   f"{reach:.1f} m")
    for n, (x, y) in enumerate(PEDESTRIANS, 1):
        ax.plot([x], [y], "o", color="tab:red", ms=4)
        ax.annotate(f"{n}: ({x:g}, {y:g})", (x + 0.3, y + 0.25), fontsize=7, color="tab:red")
    ax.plot([0], [0], "^", color="k", ms=7, label="camera (ground point)")
    ax.set_xlim(-1, 34)
    ax.set_ylim(-6, 6)
    ax.set_xlabel("x forward (m)", fontsize=8)
    ax.set_ylabel("y left (m)", fontsize=8)
    ax.set_title("from above: the corridor the stop rule must protect, and how far the rectangle reaches", fontsize=9)
    ax.legend(fontsize=6.5, loc="lower right")
    ax.tick_params(labelsize=7)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("docs/img/monitor_regions.png"))
    args = parser.parse_args()
    shipped = load_model(REPO / "config" / "monitors.yaml", MonitorsConfig, "monitors")
    fig = Figure(figsize=(12, 6.6), dpi=110)
    grid = fig.add_gridspec(2, 3, height_ratios=[1.0, 1.0])
    reaches = []
    for i, (title, k, h, colour) in enumerate(CAMERAS):
        reaches.append((title, _camera_panel(fig.add_subplot(grid[0, i]), title, k, h, shipped), colour))
    fig.axes[0].legend(fontsize=6, loc="upper left")
    _top_view(fig.add_subplot(grid[1, :]), reaches, shipped)
    fig.tight_layout()
    FigureCanvasAgg(fig)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
