"""A *simulated* object detector driven by ground truth, degraded by what a perturbation does to the image.

This is not a learned detector: per visible ground-truth object it draws a detection with a
probability from a recall-by-distance curve (or the per-bin recall of a confusion-matrix file),
jitters the box, draws a confidence score, and adds occasional ghost boxes. Like a real detector's raw
output, it also produces boxes *below* its score threshold (``candidates``): a detection whose score fell
under the threshold, and, for most missed objects, a low-score box (a real detector rarely has no box at all
on a visible object); these never reach the reported detections, only PCD reads them (docs/pcd.md).
The uniform draw that decides detection is ``Phi(z_t)`` with ``z_t`` a stationary AR(1) process per object, so the
per-frame probability is as configured but misses come in runs, as a real detector's do. The image quality
``q`` in [0, 1] of the object's patch — normalised cross-correlation of the perturbed and the clean
luma times the ratio of their standard deviations (capped at 1) — scales the detection probability
by ``q^gamma``, widens the jitter, lowers the scores; the whole image's quality raises the ghost rate.
A real detector publishing on a ROS topic replaces this model.
"""

from __future__ import annotations

import math
import zlib
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from perception_safety.core.types import Box, Detection, GroundTruthObject
from perception_safety.errors import PerceptionSafetyError


class DetectorModelError(PerceptionSafetyError):
    """The detector model's recall source (curve or confusion file) is unusable."""


class RecallCurve(BaseModel):
    """Detection probability at the given distances (m), linearly interpolated, held flat outside."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    distances: tuple[float, ...] = (0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 80.0)
    recall: tuple[float, ...] = (0.97, 0.95, 0.9, 0.82, 0.7, 0.55, 0.4, 0.15)

    @model_validator(mode="after")
    def _check(self) -> RecallCurve:
        if len(self.distances) != len(self.recall) or not self.distances:
            raise ValueError("distances and recall must be non-empty and of equal length")
        if any(b <= a for a, b in zip(self.distances, self.distances[1:], strict=False)):
            raise ValueError("distances must increase strictly")
        if any(not 0.0 <= r <= 1.0 for r in self.recall):
            raise ValueError("recall values must lie in [0, 1]")
        return self


class DetectorModelConfig(BaseModel):
    """Key ``detector`` of the ``episodes`` section."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    recall_curve: RecallCurve = RecallCurve()
    confusion_file: Path | None = Field(
        default=None, description="distance-binned confusion matrices; per-bin P(pred=c | true=c) replaces the curve"
    )
    confusion_labels: dict[str, str] = Field(
        default_factory=lambda: {"pedestrian": "ped", "car": "obs"},
        description="scenario class -> class label in the confusion file",
    )
    class_map: dict[str, str] = Field(
        default_factory=dict, description="scenario class -> detector output label (identity when absent)"
    )
    min_box_height_px: float = Field(default=6.0, ge=0.0)
    jitter: float = Field(default=0.04, ge=0.0, description="std of each box edge, fraction of box size")
    score_mean: float = Field(default=0.82, ge=0.0, le=1.0)
    score_std: float = Field(default=0.08, ge=0.0)
    score_threshold: float = Field(default=0.3, ge=0.0, le=1.0, description="detections below are not reported")
    candidates: bool = Field(default=True, description="also emit sub-threshold boxes (recorded apart, read by PCD)")
    candidate_rate: float = Field(
        default=0.8, ge=0.0, le=1.0, description="share of missed objects that still get a sub-threshold box"
    )
    candidate_score_min: float = Field(
        default=0.02, ge=0.0, le=1.0, description="a missed object's box scores U(candidate_score_min, threshold)"
    )
    ghost_rate: float = Field(default=0.01, ge=0.0, description="mean ghost boxes per clean frame (Poisson)")
    ghost_class: str = "pedestrian"
    quality_gamma: float = Field(default=3.0, ge=0.0, description="detection probability is scaled by q^gamma")
    miss_correlation: float = Field(
        default=0.95, ge=0.0, lt=1.0,
        description="AR(1) coefficient per frame of the latent draw deciding detection: misses come in runs",
    )
    jitter_gain: float = Field(default=3.0, ge=0.0, description="jitter *= 1 + gain (1 - q)")
    score_drop: float = Field(default=0.5, ge=0.0, description="score mean -= drop (1 - q)")
    ghost_gain: float = Field(default=4.0, ge=0.0, description="ghost rate *= 1 + gain (1 - q_image)")
    patch_samples: int = Field(default=64, ge=4, description="patches are subsampled to about this many px a side")


def image_quality(clean: np.ndarray, perturbed: np.ndarray, box: Box | None = None, samples: int = 64) -> float:
    """q = max(0, NCC(clean, perturbed)) * min(1, std_perturbed / std_clean) on the luma of ``box``.

    1 for an unchanged patch, near 0 when the perturbation wipes out its structure. A flat clean
    patch (std < 1 grey level) gives 1 - mean|diff|/255.
    """
    h, w = clean.shape[:2]
    if box is None:
        y0, y1, x0, x1 = 0, h, 0, w
    else:
        x0, x1 = max(0, math.floor(box.x_min)), min(w, math.ceil(box.x_max))
        y0, y1 = max(0, math.floor(box.y_min)), min(h, math.ceil(box.y_max))
    if x1 <= x0 or y1 <= y0:
        return 1.0
    step = max(1, max(y1 - y0, x1 - x0) // samples)
    weights = np.array([0.299, 0.587, 0.114], dtype=np.float32)
    a = clean[y0:y1:step, x0:x1:step].astype(np.float32) @ weights
    b = perturbed[y0:y1:step, x0:x1:step].astype(np.float32) @ weights
    sa, sb = float(a.std()), float(b.std())
    if sa < 1.0:
        return float(max(0.0, 1.0 - np.abs(a - b).mean() / 255.0))
    if sb < 1e-6:
        return 0.0
    ncc = float(((a - a.mean()) * (b - b.mean())).mean() / (sa * sb))
    return max(0.0, ncc) * min(1.0, sb / sa)


class DetectorOutput(tuple):
    """The reported detections (a tuple, as before) carrying the sub-threshold ``candidates`` beside them."""

    candidates: tuple[Detection, ...] | None

    def __new__(cls, detections: tuple[Detection, ...], candidates: tuple[Detection, ...] | None = None):
        out = super().__new__(cls, detections)
        out.candidates = candidates
        return out


class DetectorModel:
    """Simulated detector ``f``: ``detect(ground_truth, clean, perturbed, seed, t)`` -> detections.

    Draws depend only on (seed, t, object track id), so aligned rollouts see the same detector
    noise on the same frame.
    """

    def __init__(self, config: DetectorModelConfig | None = None, focal_px: float = 640.0,
                 image_size: tuple[int, int] = (1280, 720)) -> None:
        self.config = config or DetectorModelConfig()
        self.focal_px = focal_px
        self.image_size = image_size
        self._bins: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._latent: dict[tuple[int, str], np.ndarray] = {}
        if self.config.confusion_file is not None:
            self._load_confusion(self.config.confusion_file)

    def _load_confusion(self, path: Path) -> None:
        from perception_safety.evaluation.confusion.io import load_matrices

        dc = load_matrices(path)
        prob = dc.probabilities("class")  # [bin, pred, true]
        lows = np.array([lo for lo, _ in dc.bin_edges])
        highs = np.array([hi for _, hi in dc.bin_edges])
        for cls, label in self.config.confusion_labels.items():
            if label not in dc.class_labels:
                raise DetectorModelError(
                    f"{path}: detector.confusion_labels.{cls}: label {label!r} not in the file's class labels "
                    f"{list(dc.class_labels)}"
                )
            i = dc.class_labels.index(label)
            recall = np.nan_to_num(prob[:, i, i], nan=0.0)
            self._bins[cls] = (np.concatenate([lows, highs[-1:]]), recall)

    def recall(self, class_id: str, distance: float) -> float:
        """Clean-image detection probability of an object of ``class_id`` at ``distance`` (m)."""
        if self._bins:
            if class_id not in self._bins:
                return 0.0
            edges, rec = self._bins[class_id]
            k = int(np.searchsorted(edges, distance, side="right")) - 1
            return float(rec[k]) if 0 <= k < len(rec) else 0.0
        c = self.config.recall_curve
        return float(np.interp(distance, c.distances, c.recall))

    def _uniform(self, seed: int, track: str, t: int) -> float:
        """U(0, 1) marginal, AR(1)-correlated over frames; depends only on (seed, track, t)."""
        key = (seed, track)
        z = self._latent.get(key)
        if z is None or t >= len(z):
            n = max(1024, 2 * (t + 1))
            rng = np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32(track.encode()), 0xA51])
            eps = rng.normal(size=n)
            rho = self.config.miss_correlation
            z = np.empty(n)
            z[0] = eps[0]
            c = math.sqrt(1.0 - rho * rho)
            for i in range(1, n):
                z[i] = rho * z[i - 1] + c * eps[i]
            self._latent[key] = z
        return 0.5 * (1.0 + math.erf(float(z[t]) / math.sqrt(2.0)))

    def detect(
        self,
        ground_truth: tuple[GroundTruthObject, ...],
        clean: np.ndarray | None,
        perturbed: np.ndarray | None,
        seed: int,
        t: int,
    ) -> DetectorOutput:
        """Reported detections (score >= threshold) with ``.candidates``: the boxes below the threshold."""
        cfg = self.config
        same = clean is None or perturbed is None or perturbed is clean
        out: list[Detection] = []
        below: list[Detection] = []
        for g in ground_truth:
            rng = np.random.default_rng([seed & 0xFFFFFFFF, t, zlib.crc32(g.track_id.encode())])
            if g.box.height < cfg.min_box_height_px:
                continue
            q = 1.0 if same else image_quality(clean, perturbed, g.box, cfg.patch_samples)
            p = self.recall(g.class_id, g.distance) * q**cfg.quality_gamma
            u = self._uniform(seed, g.track_id, t)
            noise = rng.normal(size=5)
            sigma = cfg.jitter * (1.0 + cfg.jitter_gain * (1.0 - q))
            if u >= p:
                if cfg.candidates:
                    below.extend(self._missed_candidate(g, seed, t, sigma))
                continue
            bw, bh = g.box.width, g.box.height
            x0 = g.box.x_min + noise[0] * sigma * bw
            x1 = g.box.x_max + noise[1] * sigma * bw
            y0 = g.box.y_min + noise[2] * sigma * bh
            y1 = g.box.y_max + noise[3] * sigma * bh
            box = self._clip(min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
            score = cfg.score_mean - cfg.score_drop * (1.0 - q) + cfg.score_std * noise[4]
            score = min(1.0, max(0.0, score))
            if box is None:
                continue
            if score < cfg.score_threshold:
                if cfg.candidates:
                    below.append(Detection(box, cfg.class_map.get(g.class_id, g.class_id), score))
                continue
            out.append(Detection(box, cfg.class_map.get(g.class_id, g.class_id), score))
        out.extend(self._ghosts(clean, perturbed, same, seed, t))
        return DetectorOutput(tuple(out), tuple(below) if cfg.candidates else None)

    def _missed_candidate(self, g: GroundTruthObject, seed: int, t: int, sigma: float) -> list[Detection]:
        """A missed object's low-score box (own random stream: the reported detections stay as they were)."""
        cfg = self.config
        if cfg.score_threshold <= cfg.candidate_score_min:
            return []  # nothing scores below the threshold
        rng = np.random.default_rng([seed & 0xFFFFFFFF, t, zlib.crc32(g.track_id.encode()), 0xCA4D])
        if rng.uniform() >= cfg.candidate_rate:
            return []
        noise = rng.normal(size=4) * 2.0 * sigma
        bw, bh = g.box.width, g.box.height
        x0, x1 = g.box.x_min + noise[0] * bw, g.box.x_max + noise[1] * bw
        y0, y1 = g.box.y_min + noise[2] * bh, g.box.y_max + noise[3] * bh
        box = self._clip(min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
        if box is None:
            return []
        score = float(rng.uniform(cfg.candidate_score_min, cfg.score_threshold))
        return [Detection(box, cfg.class_map.get(g.class_id, g.class_id), score)]

    def _ghosts(self, clean: np.ndarray | None, perturbed: np.ndarray | None, same: bool, seed: int, t: int
                ) -> list[Detection]:
        cfg = self.config
        if cfg.ghost_rate <= 0.0:
            return []
        q = 1.0 if same else image_quality(clean, perturbed, None, cfg.patch_samples * 2)
        rng = np.random.default_rng([seed & 0xFFFFFFFF, t, 0x6057])
        n = int(rng.poisson(cfg.ghost_rate * (1.0 + cfg.ghost_gain * (1.0 - q))))
        w_img, h_img = self.image_size
        out = []
        for _ in range(n):
            d = rng.uniform(4.0, 40.0)
            h = self.focal_px * 1.8 / d
            w = 0.4 * h
            cx = rng.uniform(0.0, w_img)
            bottom = h_img / 2.0 + self.focal_px * 1.6 / d
            box = self._clip(cx - w / 2, bottom - h, cx + w / 2, bottom)
            score = rng.uniform(cfg.score_threshold, max(cfg.score_threshold, 0.75))
            if box is not None:
                out.append(Detection(box, cfg.ghost_class, float(score)))
        return out

    def _clip(self, x0: float, y0: float, x1: float, y1: float) -> Box | None:
        w, h = self.image_size
        x0, x1 = max(0.0, x0), min(float(w), x1)
        y0, y1 = max(0.0, y0), min(float(h), y1)
        if x1 - x0 < 1.0 or y1 - y0 < 1.0:
            return None
        return Box(x0, y0, x1, y1)


def ground_truth_detections(ground_truth: tuple[GroundTruthObject, ...]) -> tuple[Detection, ...]:
    """The ideal perception f*: every visible ground-truth object, score 1."""
    return tuple(Detection(g.box, g.class_id, 1.0) for g in ground_truth)
