"""Builtin backend: rendered frames keep the contrast monitor quiet when clear and alarm under fog; ground truth."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.core.types import Frame
from perception_safety.monitors.config import ContrastConfig
from perception_safety.monitors.contrast import ContrastMonitor
from perception_safety.monitors.perturbations import perturb
from perception_safety.sim.builtin import BuiltinBackend
from perception_safety.sim.scenario import Control, ParkedCarConfig, PedestrianConfig, ScenarioConfig


@pytest.fixture(scope="module")
def default_backend() -> BuiltinBackend:
    return BuiltinBackend(ScenarioConfig())


def _luma_row_variance(img: np.ndarray) -> float:
    """Independent statistic: 8-bit luma, population variance of each row, mean over rows."""
    luma = np.round(img[..., 0] * 0.299 + img[..., 1] * 0.587 + img[..., 2] * 0.114)
    return float(luma.var(axis=1).mean())


def test_clear_frames_are_textured_enough_and_fog_makes_the_monitor_alarm(default_backend: BuiltinBackend) -> None:
    b = default_backend
    obs = b.reset(0)
    images = [obs.image]
    for _ in range(80):
        obs = b.step(Control.DRIVE)
        if obs.index % 40 == 0:
            images.append(obs.image)
    monitor = ContrastMonitor(ContrastConfig())
    for img in images:
        assert img.shape == (720, 1280, 3) and img.dtype == np.uint8
        assert _luma_row_variance(img) > 1580.0
        assert not monitor.update(Frame(0, image=img)).alarm
    foggy = perturb(images[-1], "fog", 4, seed=1)
    assert _luma_row_variance(foggy) < 1580.0
    assert monitor.update(Frame(0, image=foggy)).alarm


def test_rendering_is_deterministic() -> None:
    cfg = ScenarioConfig(camera={"width": 160, "height": 90})
    a, b = BuiltinBackend(cfg), BuiltinBackend(cfg)
    oa, ob = a.reset(0), b.reset(5)
    for _ in range(3):
        oa, ob = a.step(Control.DRIVE), b.step(Control.DRIVE)
    assert oa.image.tobytes() == ob.image.tobytes()
    assert oa.ground_truth == ob.ground_truth


def _standing(ped_x: float, cars: tuple[ParkedCarConfig, ...]) -> ScenarioConfig:
    return ScenarioConfig(
        camera={"width": 640, "height": 360},
        pedestrian=PedestrianConfig(x=ped_x, y_start=0.0, y_end=5.0, start_time=100.0),
        parked_cars=cars,
    )


def test_visible_pedestrian_box_is_its_projected_3d_box() -> None:
    obs = BuiltinBackend(_standing(20.0, ())).reset(0)
    peds = [g for g in obs.ground_truth if g.class_id == "pedestrian"]
    assert len(peds) == 1
    g = peds[0]
    # hand projection (f = 320, c = (320, 180)); camera 1.5 m ahead of the ego centre, 1.6 m high.
    # Near face at 20 - 0.25 - 1.5 = 18.25 m: half-width 0.2 m (depth axis is y), height 0..1.8 m.
    near = 20.0 - 0.25 - 1.5
    assert g.box.x_min == pytest.approx(320 - 320 * 0.2 / near)
    assert g.box.x_max == pytest.approx(320 + 320 * 0.2 / near)
    assert g.box.y_min == pytest.approx(180 - 320 * (1.8 - 1.6) / near)
    assert g.box.y_max == pytest.approx(180 + 320 * 1.6 / near)
    assert g.position == pytest.approx((20.0, 0.0, 0.9))
    assert g.distance == pytest.approx(np.hypot(20.0, 0.9))


def test_pedestrian_hidden_behind_a_car_is_not_ground_truth() -> None:
    blocker = ParkedCarConfig(x=10.0, y=0.0, length=4.0, width=2.5, height=2.5)
    obs = BuiltinBackend(_standing(20.0, (blocker,))).reset(0)
    classes = [g.class_id for g in obs.ground_truth]
    assert classes == ["car"]
