"""The read of `evaluate`'s map against the bare rosbags read of the same bags (issue 27, target 1).

On ``--copies`` copies of the demo's perception bags (``DIR/episodes/bags/*/perception``; copies as
`bench_evaluate.py --demo` makes them), in one run, CPU seconds of this process (best of ``--repeat``):
- baseline: rosbags' Reader opens every bag and deserialises every message of its non-image topics (the
  denominator of target 1, as `bench_evaluate.py` measures it);
- rosbags storage alone: the same messages read by rosbags' Reader, not deserialised;
- our storage alone: `io.bag.storage.open_bag` (metadata.yaml parsed with libyaml, MCAP through its chunk
  indexes) yielding the same messages;
- the map's read: `io.bag.read_frames` as `evaluate` calls it (demo config topics and tolerance, no images, the
  verdict's alarm from the monitor results in the same pass): frames assembled, values checked, Frame objects built;
- the same read with the field-selective CDR readers switched off (rosbags' deserialiser for every message).
Every row includes opening the bags and parsing metadata.yaml once per bag (the parse cache is cleared).

Usage: python benchmarks/bench_read.py --demo /work/demo_out [--copies 16] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from perception_safety.io.bag import BagReadReport, StatusRecords, decode, read_frames
from perception_safety.io.bag import storage as bag_storage
from perception_safety.io.typestore import ros2_typestore
from perception_safety.pipeline.evaluate_config import load_evaluate_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evaluate import demo_copies, read_non_image  # the copies and the baseline of target 1


def our_storage(bags: list[Path]) -> int:
    n = 0
    for bag in bags:
        with bag_storage.open_bag(bag) as b:
            assert not b.note, b.note
            for _ in b.messages([c for c in b.connections if "Image" not in c.msgtype]):
                n += 1
    return n


def verdict_records(cfg) -> StatusRecords:
    """What the map collects from the monitor's statuses: the verdict's alarm alone (all results on a checkout
    older than `StatusRecords.alarm_of`, for before/after runs with PYTHONPATH)."""
    try:
        return StatusRecords(alarm_of=cfg.verification.monitor_loop.status)
    except TypeError:
        return StatusRecords()


def map_read(bags: list[Path], cfg) -> int:
    """`read_frames` as the map calls it (`pipeline.evaluate` ReadOptions: no images, monitor results)."""
    n = 0
    for bag in bags:
        report, statuses = BagReadReport(), verdict_records(cfg)
        n += len(list(read_frames(bag, cfg.bags.topics, cfg.bags.tolerance_ns, False, report, statuses)))
        assert not report.notes, report.notes
    return n


def cpu_best(fn: Callable[[], int], repeat: int) -> tuple[float, float, int]:
    """Best CPU and wall seconds of ``repeat`` runs (the metadata cache cleared before each) and the count."""
    cpu, wall, count = [], [], 0
    for _ in range(repeat):
        bag_storage._parsed.cache_clear()
        c, w = time.process_time(), time.perf_counter()
        count = fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), min(wall), count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--demo", type=Path, required=True)
    ap.add_argument("--copies", type=int, default=16)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    cfg, _ = load_evaluate_config(Path(__file__).resolve().parents[1] / "config" / "demo.yaml")
    with tempfile.TemporaryDirectory(prefix="bench_read_") as tmp:
        bags = demo_copies(args.demo, args.copies, Path(tmp))
        ros2_typestore()
        map_read(bags[:1], cfg)  # imports and type store built outside the timings
        read_non_image(bags[:1])
        fast = dict(decode.FAST)

        def slow_map_read() -> int:
            decode.FAST.clear()
            try:
                return map_read(bags, cfg)
            finally:
                decode.FAST.update(fast)

        rows = [
            ("baseline: rosbags read + deserialise, non-image topics", lambda: read_non_image(bags)),
            ("rosbags storage alone (no deserialisation)", lambda: read_non_image(bags, deserialise=False)),
            ("our storage alone (no deserialisation)", lambda: our_storage(bags)),
            ("map read: read_frames (frames, checks, monitor results)", lambda: map_read(bags, cfg)),
            ("map read with rosbags' deserialiser for every message", slow_map_read),
        ]
        load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
        print(f"{len(bags)} bags ({args.copies} copies of {len(bags) // args.copies}), best of {args.repeat}; "
              f"load at start {load}")
        results = []
        for name, fn in rows:
            cpu, wall, count = cpu_best(fn, args.repeat)
            results.append((name, cpu, wall, count))
        base = results[0][1]
        print(f"{'':<58}{'CPU s':>8}{'wall s':>8}{'÷ base':>8}{'count':>8}")
        for name, cpu, wall, count in results:
            print(f"{name:<58}{cpu:8.3f}{wall:8.3f}{cpu / base:8.2f}{count:8d}")
        print("count: messages (storage rows and the baseline) or frames (map rows); "
              f"load at end {' / '.join(f'{v:.1f}' for v in os.getloadavg())}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
