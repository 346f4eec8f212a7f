"""Benchmark of the safety_monitor node on a full-HD camera stream, against a bare subscriber in the same run.

A publisher process sends 1920x1080 rgb8 images at 30 Hz plus a Detection2DArray with the same stamp. Two
subjects receive the same stream in turn: (1) a bare subscriber that only takes the raw image and detection
messages (reads the stamp, nothing else), (2) the installed ``safety_monitor`` node (zero-copy deserialization,
stamp pairing, contrast + plausibility + stop rule, publishing). For each: achieved rate, drop rate, latency
median/p95 (bare: image stamp -> callback; monitor: image stamp -> its monitor_results message received by
this process) and CPU per frame from /proc (utime+stime of the subject process over the window; also the
median over 1 s sub-windows, which a neighbour's burst on the shared machine disturbs less).
``--compare-opencv-threads N`` runs the node a second time with ``opencv_threads: N`` (-1: OpenCV's default pool);
``--compare-executor`` runs it a second time with ``executor: single_threaded`` (the default is ``events``), and
``--bare-events`` measures a second bare subscriber spun by rclpy's EventsExecutor (the node's executor), so the
node's ratio is printed against both bare subscribers. The load average (1/5/15 min) is printed at start and end.
``--compressed`` streams sensor_msgs/CompressedImage (JPEG, ``--jpeg-quality``) on /bench/image/compressed: the bare
subscriber then deserializes and decodes each JPEG (OpenCV), the node runs with ``image_transport: compressed``.
Fast DDS runs with config/fastdds_loopback_shm.xml (64 MB shared memory, UDP on loopback only).

    .venv/bin/python benchmarks/bench_nodes.py [--seconds 8] [--width 1920 --height 1080 --rate 30]
        [--compare-opencv-threads -1] [--compare-executor] [--bare-events] [--compressed --jpeg-quality 90]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def _env() -> dict[str, str]:
    env = dict(os.environ)
    profile = str(ROOT / "config" / "fastdds_loopback_shm.xml")
    env["FASTDDS_DEFAULT_PROFILES_FILE"] = profile  # Kilted (Fast DDS 3); Jazzy reads FASTRTPS_...
    env.pop("FASTRTPS_DEFAULT_PROFILES_FILE", None)
    env.pop("ROS_AUTOMATIC_DISCOVERY_RANGE", None)  # it would replace the profile's transports
    env.setdefault("ROS_DOMAIN_ID", str(random.SystemRandom().randint(120, 200)))
    env.setdefault("ROS_LOG_DIR", tempfile.mkdtemp(prefix="bench-nodes-log-"))
    return env


# ----------------------------------------------------------------------------- roles (child processes)


def scene_image(width: int, height: int):
    """A camera-like frame (sky/road gradients, blocks, mild sensor noise): JPEG sizes like real ones, unlike
    uniform noise, which JPEG cannot compress."""
    import cv2
    import numpy as np

    rng = np.random.default_rng(0)
    y = np.linspace(0.0, 1.0, height)[:, None, None]
    img = (np.array([90, 140, 220]) * (1 - y) + np.array([70, 70, 75]) * y) * np.ones((1, width, 1))
    for _ in range(60):
        x0, y0 = int(rng.integers(0, width)), int(rng.integers(height // 4, height))
        w, h = int(rng.integers(20, width // 6)), int(rng.integers(20, height // 4))
        cv2.rectangle(img, (x0, y0), (x0 + w, y0 + h), [int(c) for c in rng.integers(0, 256, 3)], -1)
    img += rng.normal(0.0, 6.0, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def run_publisher(width: int, height: int, rate: float, compressed: bool = False, quality: int = 90) -> None:
    import numpy as np
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from sensor_msgs.msg import CompressedImage, Image
    from vision_msgs.msg import Detection2DArray

    from perception_safety.core.types import Box, Detection
    from perception_safety.io.image_codec import encode_jpeg
    from perception_safety.ros import convert
    from perception_safety.ros.memory import keep_frame_buffers
    from perception_safety.ros.qos import input_qos

    keep_frame_buffers()  # as the node does: no per-frame mmap/page faults stealing the shared cores
    rclpy.init()
    node = rclpy.create_node("bench_camera")
    if compressed:
        pub_img = node.create_publisher(CompressedImage, "/bench/image/compressed", input_qos(1))
        msg = CompressedImage(header=convert.header_msg(0, "camera"), format="rgb8; jpeg compressed bgr8",
                              data=encode_jpeg(scene_image(width, height), quality))
    else:
        pub_img = node.create_publisher(Image, "/bench/image", input_qos(1))
        img = np.random.default_rng(0).integers(0, 256, size=(height, width, 3), dtype=np.uint8)
        msg = convert.image_msg(img, 0)
    pub_det = node.create_publisher(Detection2DArray, "/bench/detections", input_qos(5))
    dets = [Detection(Box(100.0 + 40 * i, 300.0, 180.0 + 40 * i, 500.0), "car", 0.8) for i in range(5)]
    period = 1.0 / rate
    k = 0
    start = time.monotonic()
    try:
        while rclpy.ok():
            stamp = time.time_ns()
            msg.header.stamp = convert.time_msg(stamp)
            pub_img.publish(msg)
            pub_det.publish(convert.detection_array_msg(dets, stamp))
            k += 1
            delay = start + k * period - time.monotonic()
            if delay > 0:
                time.sleep(delay)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        rclpy.try_shutdown()


def run_bare(out_path: str, depth: int = 5, compressed: bool = False, events: bool = False) -> None:
    """Raw subscriptions only; records (receive ns, image stamp ns) per image. With ``compressed`` each JPEG is
    deserialized and decoded (what any consumer of a compressed stream must do at least). Spun by ``rclpy.spin``
    (the SingleThreadedExecutor), or with ``events`` by rclpy's EventsExecutor.

    With the node's malloc setting (`keep_frame_buffers`): without it the bare subscriber alternates between
    ~5 ms and ~18 ms CPU per frame (4 500 page faults per frame) from one start to the next.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from sensor_msgs.msg import CompressedImage, Image
    from vision_msgs.msg import Detection2DArray

    from perception_safety.io.image_codec import decode
    from perception_safety.ros import convert
    from perception_safety.ros.memory import keep_frame_buffers
    from perception_safety.ros.qos import input_qos

    keep_frame_buffers()
    rclpy.init()
    node = rclpy.create_node("bench_bare")
    seen: list[tuple[int, int]] = []

    def on_image(raw: bytes) -> None:
        now = time.time_ns()
        sec, nsec = struct.unpack_from("<iI", raw, 4)  # CDR: 4-byte encapsulation header, then header.stamp
        if compressed:
            decode(convert.decode_cdr(raw, "sensor_msgs/msg/CompressedImage", "/bench/image/compressed").data)
        if not seen:
            Path(out_path + ".ready").touch()
        seen.append((now, sec * 1_000_000_000 + nsec))

    if compressed:
        node.create_subscription(CompressedImage, "/bench/image/compressed", on_image, input_qos(depth), raw=True)
    else:
        node.create_subscription(Image, "/bench/image", on_image, input_qos(depth), raw=True)
    node.create_subscription(Detection2DArray, "/bench/detections", lambda raw: None, input_qos(depth), raw=True)
    try:
        if events:
            from rclpy.experimental import EventsExecutor

            executor = EventsExecutor()
            executor.add_node(node)
            while rclpy.ok():  # in slices, as the node's runner spins (its spin() busy-loops: 100 % of a core)
                executor.spin_once(timeout_sec=0.1)
        else:
            rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        Path(out_path).write_text(json.dumps(seen))
        rclpy.try_shutdown()


# ----------------------------------------------------------------------------- measurement


def _stats(samples: list[tuple[int, int]], t0: int, t1: int, rate: float, cpu: float,
           ticks: list[tuple[int, float]]) -> dict[str, float]:
    """Window statistics; ``ticks`` are (time ns, CPU s) readings about 1 s apart for the per-second median."""
    import numpy as np

    window = [(r, s) for r, s in samples if t0 <= s < t1]
    lat = np.array([(r - s) / 1e6 for r, s in window]) if window else np.array([np.nan])
    seconds = (t1 - t0) / 1e9
    n = len(window)
    return {
        "frames": n,
        "rate_hz": n / seconds,
        "drop_pct": max(0.0, 100.0 * (1.0 - n / (rate * seconds))),
        "latency_median_ms": float(np.median(lat)),
        "latency_p95_ms": float(np.percentile(lat, 95)),
        "cpu_ms_per_frame": 1000.0 * cpu / max(n, 1),
        "cpu_ms_frame_med1s": _median_per_second(window, ticks),
        "cpu_pct_core": 100.0 * cpu / seconds,
    }


def _median_per_second(window: list[tuple[int, int]], ticks: list[tuple[int, float]]) -> float:
    """Median over ~1 s sub-windows of CPU ms per frame: robust to a neighbour's burst in one second."""
    import numpy as np

    stamps = np.array(sorted(s for _, s in window), dtype=np.int64)
    per = []
    for (ta, ca), (tb, cb) in itertools.pairwise(ticks):
        n = int(np.searchsorted(stamps, tb) - np.searchsorted(stamps, ta))
        if n:
            per.append(1000.0 * (cb - ca) / n)
    return float(np.median(per)) if per else float("nan")


def in_process_costs(width: int, height: int, repeats: int = 30) -> dict[str, float]:
    """Median CPU ms per frame of the node's work without DDS: CDR decode, + image conversion, + monitors."""
    import cv2
    import numpy as np
    from rclpy.serialization import serialize_message

    from perception_safety.core.types import Box, Detection, Frame
    from perception_safety.monitors.config import MonitorsConfig
    from perception_safety.ros import convert
    from perception_safety.ros.safety_monitor_node import MonitorSuite, SafetyMonitorParams

    cv2.setNumThreads(SafetyMonitorParams().opencv_threads)  # as the node sets it
    img = np.random.default_rng(0).integers(0, 256, size=(height, width, 3), dtype=np.uint8)
    raw_img = serialize_message(convert.image_msg(img, 1))
    dets = tuple(Detection(Box(100.0 + 40 * i, 300.0, 180.0 + 40 * i, 500.0), "car", 0.8) for i in range(5))
    raw_det = serialize_message(convert.detection_array_msg(dets, 1))
    suite = MonitorSuite(MonitorsConfig())

    def timed(fn) -> float:
        t = []
        for _ in range(repeats):
            t0 = time.process_time()
            fn()
            t.append(time.process_time() - t0)
        return 1000.0 * float(np.median(t))

    def decode():
        convert.decode_cdr(raw_img, "sensor_msgs/msg/Image", "/i")
        convert.decode_cdr(raw_det, "vision_msgs/msg/Detection2DArray", "/d")

    def convert_all():
        m = convert.decode_cdr(raw_img, "sensor_msgs/msg/Image", "/i")
        d = convert.decode_cdr(raw_det, "vision_msgs/msg/Detection2DArray", "/d")
        return Frame(1, convert.detections_from_msg(d), image=convert.image_from_msg(m))

    def full():
        results, _ = suite.evaluate(convert_all())
        convert.diagnostic_array_msg([convert.result_status(r) for r in results], 1)

    return {"decode": timed(decode), "decode+convert": timed(convert_all), "decode+convert+monitors": timed(full)}


def _measure(proc: subprocess.Popen, ready: Path, warmup: float,
             seconds: float) -> tuple[int, int, float, list[tuple[int, float]]]:
    """CPU seconds of ``proc`` over a window that starts ``warmup`` s after its first message (``ready`` exists)."""
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(warmup)
    c0, t0 = _cpu_seconds(proc.pid), time.time_ns()
    ticks = [(t0, c0)]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(min(1.0, max(0.0, end - time.monotonic())))
        ticks.append((time.time_ns(), _cpu_seconds(proc.pid)))
    t1, c1 = ticks[-1]
    return t0, t1, c1 - c0, ticks


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def _measure_node(a: argparse.Namespace, env: dict[str, str], opencv_threads: int | None,
                  executor: str | None = None) -> dict[str, float]:
    """Start the installed safety_monitor on the bench topics; stats of its monitor_results over the window."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray

    from perception_safety.ros.convert import stamp_to_ns
    from perception_safety.ros.qos import output_qos

    params = Path(tempfile.mkdtemp(prefix="bench-nodes-")) / "params.yaml"
    extra = "" if opencv_threads is None else f"    opencv_threads: {opencv_threads}\n"
    if a.compressed:
        extra += "    image_transport: compressed\n"
    if executor is not None:
        extra += f"    executor: {executor}\n"
    params.write_text("safety_monitor:\n  ros__parameters:\n    topics: {image: /bench/image, "
                      f"detections: /bench/detections}}\n    qos: {{input_depth: {a.input_depth}}}\n{extra}")
    monitor = subprocess.Popen([str(BIN / "safety_monitor"), "--ros-args", "-r", "__node:=safety_monitor",
                                "--params-file", str(params), "-r", "/camera/camera_info:=/bench/camera_info"],
                               env=env)
    node = rclpy.create_node("bench_probe")
    got: list[tuple[int, int]] = []
    node.create_subscription(DiagnosticArray, "/safety_monitor/monitor_results",
                             lambda m: got.append((time.time_ns(), stamp_to_ns(m.header.stamp))), output_qos(100))
    deadline = time.monotonic() + 60
    while not got and time.monotonic() < deadline:  # the window starts `warmup` s after the first result
        rclpy.spin_once(node, timeout_sec=0.01)
    end = time.monotonic() + a.warmup + a.seconds + 0.5
    c0 = t0 = c1 = t1 = None
    ticks: list[tuple[int, float]] = []
    next_tick = end - a.seconds - 0.5
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.01)
        now = time.monotonic()
        if c1 is None and now >= next_tick:
            ticks.append((time.time_ns(), _cpu_seconds(monitor.pid)))
            next_tick = min(next_tick + 1.0, end - 0.5)
            if c0 is None:
                t0, c0 = ticks[0]
            elif now >= end - 0.5:
                t1, c1 = ticks[-1]
    _stop(monitor)
    node.destroy_node()
    return _stats(got, t0, t1, a.rate, c1 - c0, ticks)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--role", choices=["main", "publisher", "bare"], default="main")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--warmup", type=float, default=2.0, help="seconds after the subject's first message")
    ap.add_argument("--width", type=int, default=1920)
    ap.add_argument("--height", type=int, default=1080)
    ap.add_argument("--rate", type=float, default=30.0)
    ap.add_argument("--input-depth", type=int, default=5, help="safety_monitor qos.input_depth (and the bare one's)")
    ap.add_argument("--compare-opencv-threads", type=int, default=None, metavar="N",
                    help="also run the node with opencv_threads N (after the default one), in the same run")
    ap.add_argument("--compare-executor", action="store_true",
                    help="also run the node with executor single_threaded (after the default one), in the same run")
    ap.add_argument("--bare-events", action="store_true", help="also measure a bare subscriber on the EventsExecutor")
    ap.add_argument("--compressed", action="store_true", help="stream CompressedImage (JPEG) instead of raw rgb8")
    ap.add_argument("--jpeg-quality", type=int, default=90)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    if a.role == "publisher":
        run_publisher(a.width, a.height, a.rate, a.compressed, a.jpeg_quality)
        return 0
    if a.role == "bare":
        run_bare(a.out, a.input_depth, a.compressed, a.bare_events)
        return 0
    load_start = os.getloadavg()

    env = _env()
    os.environ.update({k: v for k, v in env.items() if k not in os.environ or os.environ[k] != v})
    os.environ.pop("ROS_AUTOMATIC_DISCOVERY_RANGE", None)
    me = [sys.executable, str(Path(__file__).resolve())]
    size = ["--width", str(a.width), "--height", str(a.height), "--rate", str(a.rate)]
    if a.compressed:
        size += ["--compressed", "--jpeg-quality", str(a.jpeg_quality)]
    publisher = subprocess.Popen([*me, "--role", "publisher", *size], env=env)
    results: dict[str, dict[str, float]] = {}
    try:
        time.sleep(a.warmup)  # the camera runs steadily before either subject starts
        # 1) bare subscriber(s)
        for name, flags in (("bare subscriber", []), ("bare, events executor", ["--bare-events"])):
            if flags and not a.bare_events:
                continue
            with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
                out = f.name
            bare = subprocess.Popen([*me, "--role", "bare", "--out", out, "--input-depth", str(a.input_depth),
                                     *(["--compressed"] if a.compressed else []), *flags], env=env)
            t0, t1, cpu, ticks = _measure(bare, Path(out + ".ready"), a.warmup, a.seconds)
            _stop(bare)
            results[name] = _stats([tuple(x) for x in json.loads(Path(out).read_text())], t0, t1, a.rate, cpu, ticks)

        # 2) safety_monitor node, results received here (then optionally with another opencv_threads)
        import rclpy

        rclpy.init()
        try:
            results["safety_monitor node"] = _measure_node(a, env, None)
            if a.compare_opencv_threads is not None:
                n = a.compare_opencv_threads
                results[f"node, opencv_threads {n}"] = _measure_node(a, env, n)
            if a.compare_executor:
                results["node, single_threaded"] = _measure_node(a, env, None, "single_threaded")
        finally:
            rclpy.try_shutdown()
    finally:
        _stop(publisher)

    costs = in_process_costs(a.width, a.height)
    if a.compressed:
        from perception_safety.io.image_codec import decode, encode_jpeg

        payload = encode_jpeg(scene_image(a.width, a.height), a.jpeg_quality)
        t = []
        for _ in range(20):
            t0 = time.process_time()
            decode(payload)
            t.append(time.process_time() - t0)
        costs[f"jpeg decode ({len(payload) // 1024} KB)"] = 1000.0 * sorted(t)[len(t) // 2]
    bases = [name for name in results if name.startswith("bare")]
    kind = f"JPEG q{a.jpeg_quality} CompressedImage" if a.compressed else "rgb8"
    print(f"{a.width}x{a.height} {kind} at {a.rate:g} Hz + Detection2DArray(5), {a.seconds:g} s window "
          f"(from {a.warmup:g} s after the first message), Fast DDS profile config/fastdds_loopback_shm.xml")
    keys = ["rate_hz", "drop_pct", "latency_median_ms", "latency_p95_ms", "cpu_ms_per_frame", "cpu_ms_frame_med1s",
            "cpu_pct_core"]
    print(f"{'subject':<26}" + "".join(f"{k:>20}" for k in keys))
    for name, r in results.items():
        print(f"{name:<26}" + "".join(f"{r[k]:>20.2f}" for k in keys))
    for name, mon in results.items():
        for bname in ([] if name in bases else bases):
            base = results[bname]
            # drop rate: a ratio against ~0 % is meaningless; show the difference in percentage points instead
            cells = [f"{mon[k] - base[k]:>+19.2f}p" if k == "drop_pct" else
                     f"{(mon[k] / base[k] if base[k] else float('nan')):>20.2f}" for k in keys]
            label = ("node" if name == "safety_monitor node" else name.split(", ")[1]) + (
                "/bare" if bname == "bare subscriber" else "/bare ev")
            print(f"{label:<26}" + "".join(cells))
    print("in-process CPU per frame, no DDS (median ms): " + ", ".join(f"{k} {v:.2f}" for k, v in costs.items()))
    print("load average 1/5/15 min: start " + " / ".join(f"{x:.2f}" for x in load_start) + ", end "
          + " / ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
