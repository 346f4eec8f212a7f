"""The episode engine: runs the three aligned rollouts of one episode (nothing written).

On the builtin backend the rollouts advance in lockstep and share every frame whose world state and control
history coincide (rendering, perturbation and detection run once per distinct state); on CARLA they run one
after another on the server. Each frame is judged by ``judging.judge``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from perception_safety.io.image_codec import jpeg_roundtrip
from perception_safety.monitors.composite import build_runtime_monitor
from perception_safety.monitors.config import MonitorsConfig
from perception_safety.monitors.perturbations import frame_seed, perturb
from perception_safety.sim.builtin import BuiltinBackend
from perception_safety.sim.config import EpisodesConfig
from perception_safety.sim.detector_adapter import ImageDetectorAdapter, build_image_detector, frame_detector
from perception_safety.sim.detector_model import DetectorModel, ground_truth_detections
from perception_safety.sim.render import Renderer, SceneTextures
from perception_safety.sim.scenario import Backend, Control, Observation, ScenarioConfig
from perception_safety.sim.sweep.judging import judge
from perception_safety.sim.sweep.planning import CLEAN, EpisodeRunError, EpisodeSpec
from perception_safety.sim.sweep.rollout import GROUND_TRUTH, MONITORED, PERCEPTION, ROLLOUTS, Rollout, StageTimes


class EpisodeEngine:
    """Runs episodes in one process; keeps the renderer, detector and monitor configs between episodes."""

    def __init__(self, cfg: EpisodesConfig, backend: str = "builtin", monitors: MonitorsConfig | None = None) -> None:
        if backend not in ("builtin", "carla"):
            raise EpisodeRunError(f"--backend: expected 'builtin' or 'carla', got {backend!r}")
        self.cfg = cfg
        self.backend_name = backend
        self.monitors = monitors or MonitorsConfig()
        self._renderers: dict[str, Renderer] = {}
        self._carla: Any = None
        self._image_detector: ImageDetectorAdapter | None = None  # episodes.detector.kind hog/onnx, built once
        self.times = StageTimes()

    # -- backends ---------------------------------------------------------------------------------
    def _renderer(self, scen: ScenarioConfig) -> Renderer:
        key = scen.model_dump_json() + str(self.cfg.builtin.texture_seed)
        if key not in self._renderers:
            self._renderers[key] = Renderer(
                scen, SceneTextures(scen, self.cfg.builtin.texture_seed), self.cfg.builtin.background_cache
            )
        return self._renderers[key]

    def _builtin(self, scen: ScenarioConfig) -> BuiltinBackend:
        return BuiltinBackend(scen, self.cfg.builtin, renderer=self._renderer(scen))

    def close(self) -> None:
        if self._carla is not None:
            self._carla.close()
            self._carla = None

    # -- one episode ------------------------------------------------------------------------------
    def run(self, spec: EpisodeSpec) -> tuple[dict[str, Rollout], StageTimes]:
        """The three rollouts of one episode (nothing written)."""
        times = StageTimes()
        if self._image_detector is None and self.cfg.detector.kind != "simulated":
            self._image_detector = build_image_detector(self.cfg.detector)
        det = frame_detector(self.cfg.detector, self._image_detector, _focal(spec.scenario),
                             (spec.scenario.camera.width, spec.scenario.camera.height))
        rollouts = {r: Rollout(r, build_runtime_monitor(self.monitors)) for r in ROLLOUTS}
        if self.backend_name == "builtin":
            self._run_lockstep(spec, rollouts, det, times)
        else:
            self._run_sequential(spec, rollouts, det, times)
        self.times.add(times)
        return rollouts, times

    def _perturbed(self, spec: EpisodeSpec, obs: Observation) -> np.ndarray:
        if spec.perturbation == CLEAN or spec.level == 0:
            return obs.image
        return perturb(obs.image, spec.perturbation, spec.level, frame_seed(spec.seed, obs.index, spec.perturbation))

    def _run_lockstep(
        self, spec: EpisodeSpec, rollouts: dict[str, Rollout], det: DetectorModel, times: StageTimes
    ) -> None:
        scen = spec.scenario
        backends = {r: self._builtin(scen) for r in ROLLOUTS}
        t0 = time.perf_counter()
        first = backends[PERCEPTION].reset(spec.seed)
        for r in (MONITORED, GROUND_TRUTH):
            backends[r].sync_from(backends[PERCEPTION])
        times.render += time.perf_counter() - t0
        obs = dict.fromkeys(ROLLOUTS, first)
        controls: dict[str, Control] = {}
        for t in range(scen.frames):
            live = [r for r in ROLLOUTS if not rollouts[r].done]
            if not live:
                break
            if t > 0:
                # one simulation step per distinct (world state, control)
                t0 = time.perf_counter()
                cache: dict[tuple[Any, Control], tuple[Observation, BuiltinBackend]] = {}
                for r in live:
                    key = (backends[r].state, controls[r])
                    if key not in cache:
                        cache[key] = (backends[r].step(controls[r]), backends[r])
                    else:
                        backends[r].sync_from(cache[key][1])
                    obs[r] = cache[key][0]
                times.render += time.perf_counter() - t0
            perturbed: dict[int, np.ndarray] = {}
            camera: dict[int, tuple[np.ndarray, bytes | None]] = {}
            detections: dict[int, Any] = {}
            for r in live:
                o = obs[r]
                t0 = time.perf_counter()
                if id(o) not in perturbed:
                    perturbed[id(o)] = self._perturbed(spec, o)
                    times.perturbed += 1
                img = perturbed[id(o)]
                t1 = time.perf_counter()
                times.perturb += t1 - t0
                if id(o) not in camera:
                    camera[id(o)] = self._camera(img, times)
                t1 = time.perf_counter()
                if r == GROUND_TRUTH:
                    dets = ground_truth_detections(o.ground_truth)
                else:
                    if id(o) not in detections:
                        detections[id(o)] = det.detect(o.ground_truth, o.image, img, spec.seed, o.index)
                    dets = detections[id(o)]
                times.detect += time.perf_counter() - t1
                controls[r] = judge(self.cfg, self.monitors, spec, rollouts[r], o, *camera[id(o)], dets, times)
            times.frames += 1

    def _run_sequential(
        self, spec: EpisodeSpec, rollouts: dict[str, Rollout], det: DetectorModel, times: StageTimes
    ) -> None:
        if self._carla is None:
            from perception_safety.sim.carla_backend import CarlaBackend

            self._carla = CarlaBackend(spec.scenario, self.cfg.carla)
        backend: Backend = self._carla
        backend.cfg = spec.scenario  # type: ignore[attr-defined]
        for r in ROLLOUTS:
            roll = rollouts[r]
            t0 = time.perf_counter()
            o = backend.reset(spec.seed)
            times.render += time.perf_counter() - t0
            control = Control.DRIVE
            for t in range(spec.scenario.frames):
                if t > 0:
                    t0 = time.perf_counter()
                    o = backend.step(control)
                    times.render += time.perf_counter() - t0
                t0 = time.perf_counter()
                img = self._perturbed(spec, o)
                times.perturbed += 1
                times.perturb += time.perf_counter() - t0
                seen, payload = self._camera(img, times)
                t1 = time.perf_counter()
                dets = (
                    ground_truth_detections(o.ground_truth)
                    if r == GROUND_TRUTH
                    else det.detect(o.ground_truth, o.image, img, spec.seed, o.index)
                )
                times.detect += time.perf_counter() - t1
                control = judge(self.cfg, self.monitors, spec, roll, o, seen, payload, dets, times)
                times.frames += 1
                if roll.done:
                    break

    def _camera(self, img: np.ndarray, times: StageTimes) -> tuple[np.ndarray, bytes | None]:
        """The image the monitors see and its recorded JPEG: with ``record.images: compressed`` the decoded
        JPEG (what a node receiving the bag's CompressedImage sees), else the image itself."""
        if self.cfg.record.images != "compressed":
            return img, None
        t0 = time.perf_counter()
        payload, seen = jpeg_roundtrip(img, self.cfg.record.jpeg_quality)
        times.record += time.perf_counter() - t0
        return seen, payload



def _focal(scen: ScenarioConfig) -> float:
    from perception_safety.sim.camera import Intrinsics

    return Intrinsics.from_fov(scen.camera.width, scen.camera.height, scen.camera.fov_deg).fx
