"""Small episode configs for the sim tests: 320x180 camera, a crossing within 2 s, monitor regions scaled to it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

SCALE = 0.25  # 320x180 instead of 1280x720

TINY_EPISODES = {
    "seed": 3,
    "scenario": {
        "frames": 40,
        "pedestrian": {"x": 16.0, "y_start": -2.6, "start_time": 0.3},
        "parked_cars": [{"x": 10.0, "y": -3.0}, {"x": 21.5, "y": -3.0}],
        "camera": {"width": 320, "height": 180},
    },
    "record": {"bags": True, "images": "compressed", "jpeg_quality": 90},
    "monitors_file": "monitors.yaml",
}


def _region(left: float, top: float, width: float, height: float) -> dict[str, object]:
    return {"units": "px", "left": left * SCALE, "top": top * SCALE, "width": width * SCALE,
            "height": height * SCALE, "image_size": [320, 180]}


TINY_MONITORS = {
    "monitors": {
        "plausibility": {
            "danger_region": _region(385, 470, 510, 250),
            "warning_region": _region(274, 468, 733, 252),
            "nearby_margin_px": 10.0,
            "association_distance_px": 15.0,
            "max_jump_px_per_frame": 40.0,
            "px_image_size": [320, 180],
        },
        "stop_region": {"region": _region(274, 468, 733, 252)},
    }
}


def write_tiny_config(folder: Path, **episodes_overrides) -> Path:
    """episodes.yaml + monitors.yaml for a tiny sweep; returns the episodes config path."""
    folder.mkdir(parents=True, exist_ok=True)
    section = dict(TINY_EPISODES)
    section.update(episodes_overrides)
    (folder / "monitors.yaml").write_text(yaml.safe_dump(TINY_MONITORS), encoding="utf-8")
    path = folder / "episodes.yaml"
    path.write_text(yaml.safe_dump({"episodes": section}), encoding="utf-8")
    return path


@pytest.fixture
def tiny_config(tmp_path: Path) -> Path:
    return write_tiny_config(
        tmp_path / "cfg",
        perturbations=[{"name": "brightness", "levels": [5]}, {"name": "smoke", "levels": [5]}],
        include_clean=True,
    )
