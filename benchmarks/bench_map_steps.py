"""CPU seconds of each call of `evaluate`'s map (after the decode) and of the reduce, on copies of the demo's bags.

The demo's perception bags (``DEMO/episodes/bags/*/perception``) are read once (`bag_pass.read_episodes` with
evaluate's read options); then every episode is mapped ``--copies`` times as a copy in its own folder would be
(source path and episode renamed): `bag_pass.run_pass` with `evaluate.episode_parts`, each of its steps timed on
its own with `time.process_time`; the partials are written as JSON text, read back (`pipeline.partials`: what a
map in worker processes costs; in-process `evaluate` reduces the partials as built) and reduced
(`evaluate.reduce_partials`). The per-copy read is not repeated in the map; in the same run, on ``--copies`` copies
of the bags (symlinked, as `bench_evaluate.py` makes them), the baseline of target 1 (rosbags' read + deserialisation
of the non-image topics) and the map's own read (`bench_read.map_read`: `read_frames` as `evaluate` calls it) are
timed, so the last line gives read + map + partial text + reduce against the bare read.

Usage: python benchmarks/bench_map_steps.py --demo /work/demo_out [--copies 16] [--out DIR]
(PYTHONPATH set to an older checkout measures that code with the same script.)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import perception_safety.evaluation.confusion.batch as batch_mod
import perception_safety.pipeline.bag_pass as bag_pass
import perception_safety.pipeline.breakdowns as breakdowns
import perception_safety.pipeline.detection_ap as detection_ap
import perception_safety.pipeline.evaluate as evaluate
import perception_safety.pipeline.evidence as evidence
import perception_safety.pipeline.observations as observations
import perception_safety.pipeline.verdicts as verdicts
from perception_safety.io.bag import BagReadReport
from perception_safety.io.bag_inputs import select_bags
from perception_safety.pipeline.evaluate_config import load_evaluate_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evaluate import demo_copies, read_non_image  # the copies and the baseline of target 1
from bench_read import map_read  # the map's read of the copies

try:
    from perception_safety.pipeline.partials import partial_text, read_partial

    READS_BACK = False  # in-process, evaluate reduces the partials as built
except ImportError:  # an older checkout on PYTHONPATH (before/after comparisons): plain JSON partials
    import json

    def partial_text(partial):
        return json.dumps(partial)

    def read_partial(text, name):
        return json.loads(text)

    READS_BACK = True

STEPS = [(evaluate, "screen_frames"), (evaluate, "confusion_part"), (evaluate, "episode_samples"),
         (evaluate, "speed_band_parts"), (evaluate, "size_band_parts"), (evaluate, "run_oracle"),
         (detection_ap, "ap_partial"), (verdicts, "verdict_part"), (observations, "observation_part"),
         (evidence, "evidence_part"), (evidence, "collect_stops"), (evidence, "collect_confusion"),
         (bag_pass, "box_extent")]
"""(module, function) of the map's steps, timed where the map calls them."""


BASELINE = "baseline: rosbags read + deserialise (copies)"
MAP_READ = "map read: read_frames (copies)"


class Clock:
    """CPU seconds per named step, summed over calls."""

    def __init__(self) -> None:
        self.s: dict[str, float] = defaultdict(float)

    def __call__(self, name: str, fn: Callable[[], Any]) -> Any:
        t = time.process_time()
        out = fn()
        self.s[name] += time.process_time() - t
        return out

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *a, **k: self(name, lambda: fn(*a, **k))


@contextmanager
def timed_steps(clock: Clock) -> Iterator[None]:
    """Every function of `STEPS` (and `FrameBatch.from_frames`) timed while inside."""
    saved = [(mod, name, getattr(mod, name)) for mod, name in STEPS if hasattr(mod, name)]
    from_frames = batch_mod.FrameBatch.__dict__["from_frames"].__func__
    for mod, name, fn in saved:
        setattr(mod, name, clock.wrap(name, fn))
    batch_mod.FrameBatch.from_frames = classmethod(lambda cls, *a: clock("FrameBatch.from_frames",
                                                                          lambda: from_frames(cls, *a)))
    try:
        yield
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)
        batch_mod.FrameBatch.from_frames = classmethod(from_frames)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--demo", type=Path, required=True)
    ap.add_argument("--copies", type=int, default=16)
    ap.add_argument("--out", type=Path, help="write the partials here (default: not written)")
    args = ap.parse_args()
    cfg, _ = load_evaluate_config(Path(__file__).resolve().parents[1] / "config" / "demo.yaml")
    found = [b for b in select_bags([args.demo / "episodes" / "bags"]) if b.path.name == "perception"]
    inputs = [bag_pass.MapInput(str(b.path), b.kind, dict(b.conditions), b.messages, b.topics) for b in found]
    opts = evaluate.read_options(cfg)
    clock = Clock()
    t = time.process_time()
    episodes = [list(bag_pass.read_episodes(i, opts, BagReadReport())) for i in inputs]
    read_once = time.process_time() - t
    texts, built = [], []
    read = bag_pass.read_episodes
    with timed_steps(clock):
        for c in range(args.copies):
            for inp, eps in zip(inputs, episodes, strict=True):
                copy = replace(inp, path=f"/tmp/copies/copy{c:02d}/bags/{Path(inp.path).parent.name}/perception")
                bag_pass.read_episodes = lambda *_a, _eps=eps, _copy=copy, _c=c: (
                    replace(e, source=_copy.path, episode=f"{e.episode}-copy{_c}") for e in _eps)
                try:
                    partial = clock("map (run_pass, after the read)", lambda copy=copy: bag_pass.run_pass(
                        copy, opts, lambda e: evaluate.episode_parts(e, cfg), cfg.bbsl.image_size,
                        cfg.evaluate.warn_box_overflow_px))
                finally:
                    bag_pass.read_episodes = read
                texts.append(clock("partial JSON text (map)", lambda partial=partial: partial_text(partial)))
                built.append(partial)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        for k, text in enumerate(texts):
            (args.out / f"{k:05d}.json").write_text(text)
    partials = clock("partials read back (workers only)",
                     lambda: [read_partial(t, str(k)) for k, t in enumerate(texts)])
    reduced = partials if READS_BACK else built  # in-process evaluate reduces the partials as built
    clock("reduce_partials", lambda: evaluate.reduce_partials(reduced, cfg))
    with tempfile.TemporaryDirectory(prefix="bench_map_steps_") as tmp:
        copies = demo_copies(args.demo, args.copies, Path(tmp))
        read_non_image(copies[:1])  # rosbags' imports and type store outside the timing
        clock(BASELINE, lambda: read_non_image(copies))
        clock(MAP_READ, lambda: map_read(copies, cfg))
    bare = clock.s[BASELINE]
    size = sum(len(t) for t in texts) / 1e6
    print(f"{len(texts)} bags ({args.copies} copies of the demo's {len(inputs)} perception bags); their read once: "
          f"{read_once:.2f} CPU s (x{args.copies} = {read_once * args.copies:.2f}); partials {size:.1f} MB; load "
          + " / ".join(f"{v:.1f}" for v in os.getloadavg()))
    for name, s in sorted(clock.s.items(), key=lambda kv: -kv[1]):
        print(f"  {name:<48}{s:8.3f} CPU s")
    steps = ["map (run_pass, after the read)", "partial JSON text (map)", "reduce_partials"]
    steps += ["partials read back (workers only)"] if READS_BACK else []
    after = sum(clock.s[k] for k in steps)
    print(f"in-process evaluate after the read ({' + '.join(steps)}): {after:.3f} CPU s")
    whole = after + clock.s[MAP_READ]
    print(f"read + map + partial text + reduce: {whole:.3f} CPU s = {whole / bare:.2f}x the bare read ({bare:.3f} "
          f"CPU s, same run); load at end {' / '.join(f'{v:.1f}' for v in os.getloadavg())}")
    _ = breakdowns  # imported so its module-level names exist before the steps are wrapped


if __name__ == "__main__":
    main()
