"""CPU seconds of the confusion counts `evaluate`'s map makes per episode, matched once (`MatchedRows`) against the
former path (every selection matched again), in the same run, on copies of the demo's perception bags.

Per episode the map counts: all frames, each verdict (no alarm / alarm), each ego-speed band, each object-size
band, and matches once more for the observation sequences. Former path: ``add_batch`` of the batch and of
``select_frames`` / ``select_objects`` of it, plus one ``match_batch``; now: ``MatchedRows.of`` the batch and of its
band-grouped boxes, each selection counted by ``add_rows``. The demo's bags are read once; every copy is its own
batch object (episode renamed). The counts of both paths are compared (must be equal). Best of ``--repeat``.

Usage: python benchmarks/bench_confusion_rows.py --demo /work/demo_out [--copies 16] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import perception_safety.pipeline.bag_pass as bag_pass
from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator, match_batch
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.config import ClassMapper, ConfusionConfig
from perception_safety.evaluation.confusion.rows import MatchedRows
from perception_safety.evaluation.confusion.subset import select_frames, select_objects
from perception_safety.evaluation.ground_truth_screen import screen_frames
from perception_safety.evaluation.pcd.sample_table import size_bands
from perception_safety.io.bag import BagReadReport
from perception_safety.io.bag_inputs import select_bags
from perception_safety.pipeline.evaluate import read_options
from perception_safety.pipeline.evaluate_config import load_evaluate_config


@dataclass(frozen=True)
class Episode:
    """One episode's batch and the selections the map counts."""

    batch: FrameBatch
    frame_masks: list[np.ndarray]
    """Each verdict's and each ego-speed band's frames."""
    det_band: np.ndarray
    gt_band: np.ndarray
    bands: list[int]


def episode(frames: list, verdicts: list | None, name: str, cfg) -> Episode:
    """The batch and selections as `evaluate.episode_parts` makes them."""
    frames, _ = screen_frames(frames, cfg.confusion.iou_threshold)
    batch = FrameBatch.from_frames(frames, ClassMapper(cfg.confusion)).with_episode(name)
    masks = []
    if verdicts is not None:
        v = np.array([-1 if x is None else int(x) for x in verdicts])
        masks += [v == 0, v == 1]
    speeds = np.array([f.ego.speed if f.ego is not None else np.nan for f in frames])
    index = np.where(np.isnan(speeds), -1, size_bands(speeds, cfg.evaluate.speed_bands_mps))
    masks += [index == k for k in np.unique(index)]
    edges = cfg.evaluate.size_bands_px
    gt = size_bands(batch.gt_boxes[:, 3] - batch.gt_boxes[:, 1], edges)
    det = size_bands(batch.det_boxes[:, 3] - batch.det_boxes[:, 1], edges)
    present = sorted(k for k in set(gt.tolist()) | set(det.tolist()) if 0 <= k < len(edges))
    return Episode(batch, masks, det, gt, present)


def former(ep: Episode, cfg: ConfusionConfig) -> list[ConfusionAccumulator]:
    out = [ConfusionAccumulator(cfg).add_batch(ep.batch)]
    out += [ConfusionAccumulator(cfg).add_batch(select_frames(ep.batch, m)) for m in ep.frame_masks]
    out += [ConfusionAccumulator(cfg).add_batch(select_objects(ep.batch, ep.gt_band == k, ep.det_band == k))
            for k in ep.bands]  # fmt: skip
    match_batch(ep.batch, cfg.iou_threshold, cfg.class_aware, cfg.matching, cfg.centre_distance_m)  # observations
    return out


def matched_once(ep: Episode, cfg: ConfusionConfig) -> list[ConfusionAccumulator]:
    rows = MatchedRows.of(ep.batch, cfg)
    out = [ConfusionAccumulator(cfg).add_rows(rows)]
    out += [ConfusionAccumulator(cfg).add_rows(rows.select_frames(m)) for m in ep.frame_masks]
    by_band = MatchedRows.of(ep.batch, cfg, (ep.det_band, ep.gt_band))
    out += [ConfusionAccumulator(cfg).add_rows(by_band.select_band(k)) for k in ep.bands]
    return out


def cpu(fn: Callable[[], object]) -> tuple[float, object]:
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--demo", type=Path, required=True)
    ap.add_argument("--copies", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    cfg, _ = load_evaluate_config(Path(__file__).resolve().parents[1] / "config" / "demo.yaml")
    found = [b for b in select_bags([args.demo / "episodes" / "bags"]) if b.path.name == "perception"]
    opts = read_options(cfg)
    eps = []
    for b in found:
        inp = bag_pass.MapInput(str(b.path), b.kind, dict(b.conditions), b.messages, b.topics)
        for e in bag_pass.read_episodes(inp, opts, BagReadReport()):
            eps += [episode(list(e.frames), e.verdicts, f"{e.episode}-copy{c}", cfg) for c in range(args.copies)]
    ccfg = cfg.confusion
    calls = sum(1 + len(e.frame_masks) + len(e.bands) for e in eps)
    best = {"former": np.inf, "matched once": np.inf}
    for _ in range(args.repeat):
        for name, fn in (("former", former), ("matched once", matched_once)):
            s, out = cpu(lambda fn=fn: [fn(e, ccfg) for e in eps])
            best[name] = min(best[name], s)
            if name == "former":
                want = out
            else:  # the same counts, every selection
                for a_list, b_list in zip(out, want, strict=True):  # type: ignore[arg-type]
                    for a, b in zip(a_list, b_list, strict=True):
                        ra, rb = a.result(), b.result()
                        assert ra.report == rb.report
                        for k in ("class_cm", "prop_cm", "class_cm_pooled", "prop_cm_pooled"):
                            assert np.array_equal(getattr(ra, k), getattr(rb, k)), k
    frames = sum(e.batch.n_frames for e in eps)
    print(f"{len(eps)} episodes ({args.copies} copies of {len(found)} demo bags), {frames} frames, {calls} counted "
          f"selections; best of {args.repeat}; load " + " / ".join(f"{v:.1f}" for v in os.getloadavg()))
    for name, s in best.items():
        print(f"  {name:<14}{s:7.3f} CPU s  ({1e3 * s / calls:.3f} ms per selection)")
    print(f"  ratio (matched once / former): {best['matched once'] / best['former']:.2f}; counts identical")


if __name__ == "__main__":
    main()
