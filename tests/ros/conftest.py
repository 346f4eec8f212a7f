"""ROS test fixtures: loopback-only discovery, a random domain id and a temp log dir per session.

The environment is set at import, before any rclpy.init, and passed to every spawned process.
Nodes run as the installed console scripts with the arguments launch_ros would give them.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
_LOG_DIR = tempfile.mkdtemp(prefix="perception-safety-ros-log-")
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ["ROS_DOMAIN_ID"] = str(random.SystemRandom().randint(1, 101))
os.environ["ROS_LOG_DIR"] = _LOG_DIR
os.environ.pop("FASTDDS_DEFAULT_PROFILES_FILE", None)
os.environ.pop("FASTRTPS_DEFAULT_PROFILES_FILE", None)

BIN = Path(sys.executable).parent


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, period: float = 0.02) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` seconds pass; returns its last value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(period)
    return predicate()


class Client:
    """An rclpy node in the test process, spun in a background thread: publishers and collecting subscribers."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.node = rclpy.create_node(f"pstest_client_{os.getpid()}")
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.lock = threading.Lock()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._stop = False
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop:
            self.executor.spin_once(timeout_sec=0.05)

    def publisher(self, msg_type: Any, topic: str, reliable: bool = True, depth: int = 50) -> Any:
        from perception_safety.ros.qos import input_qos, output_qos

        return self.node.create_publisher(msg_type, topic, output_qos(depth) if reliable else input_qos(depth))

    def collect(self, msg_type: Any, topic: str, depth: int = 1000) -> list[Any]:
        """Subscribe reliably and append every message to the returned list."""
        from perception_safety.ros.qos import output_qos

        box: list[Any] = []

        def cb(msg: Any) -> None:
            with self.lock:
                box.append(msg)

        self.node.create_subscription(msg_type, topic, cb, output_qos(depth))
        return box

    def close(self) -> None:
        self._stop = True
        self._thread.join(timeout=2.0)
        self.executor.shutdown()
        self.node.destroy_node()


@pytest.fixture(scope="session")
def ros_client() -> Iterator[Client]:
    import rclpy

    rclpy.init()
    client = Client()
    yield client
    client.close()
    rclpy.try_shutdown()


class NodeProcess:
    """An installed node executable started as launch_ros starts it."""

    started: ClassVar[list[NodeProcess]] = []  # every process of the session (stopped at its end: `_reap`)

    def __init__(self, executable: str, name: str, params_file: Path | None = None,
                 remaps: dict[str, str] | None = None, log_dir: Path | None = None,
                 memory_limit_bytes: int | None = None, module: str | None = None) -> None:
        # ``module``: run ``python -m module`` instead of the console script (same main(), same arguments)
        head = [str(BIN / "python"), "-m", module] if module else [str(BIN / executable)]
        args = [*head, "--ros-args", "-r", f"__node:={name}"]
        if params_file is not None:
            args += ["--params-file", str(params_file)]
        for src, dst in (remaps or {}).items():
            args += ["-r", f"{src}:={dst}"]
        self.args = args
        out_dir = Path(log_dir or _LOG_DIR)
        self.out_path = out_dir / f"{name}-{os.getpid()}-{time.monotonic_ns()}.out"
        self._out = open(self.out_path, "w+b")  # noqa: SIM115 - closed in stop()
        def limit_memory() -> None:  # in the child: an address-space cap turns a memory blow-up into a failure
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_limit_bytes, memory_limit_bytes))

        self.proc = subprocess.Popen(args, env=dict(os.environ), stdout=self._out, stderr=subprocess.STDOUT,
                                     preexec_fn=limit_memory if memory_limit_bytes else None)
        NodeProcess.started.append(self)

    def output(self) -> str:
        return self.out_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, sig: int = signal.SIGINT, timeout: float = 15.0) -> int:
        """Send ``sig`` and return the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._out.close()
        return self.proc.returncode


@pytest.fixture(autouse=True, scope="session")
def _reap() -> Iterator[None]:
    """At the end of the session, a node a failed test left running is stopped (else it outlives the suite and
    loads the machine; module-scoped nodes shared by several tests are why this is not done per test)."""
    yield
    for p in NodeProcess.started:
        if p.alive():
            p.stop(signal.SIGINT, timeout=5.0)
    NodeProcess.started.clear()


@pytest.fixture
def start_node() -> Iterator[Callable[..., NodeProcess]]:
    started: list[NodeProcess] = []

    def start(*args: Any, **kwargs: Any) -> NodeProcess:
        p = NodeProcess(*args, **kwargs)
        started.append(p)
        return p

    yield start
    for p in started:
        p.stop(signal.SIGINT, timeout=5.0)


def set_parameter(client: Client, node: str, name: str, value: Any) -> Any:
    """Call ``/<node>/set_parameters`` for one parameter (bool, int, float or str); returns its SetParametersResult."""
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    if isinstance(value, bool):
        pv = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=value)
    elif isinstance(value, int):
        pv = ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=value)
    elif isinstance(value, float):
        pv = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)
    else:
        pv = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
    cli = client.node.create_client(SetParameters, f"/{node}/set_parameters")
    try:
        assert cli.wait_for_service(timeout_sec=10)
        fut = cli.call_async(SetParameters.Request(parameters=[Parameter(name=name, value=pv)]))
        assert wait_until(fut.done, timeout=10)
        return fut.result().results[0]
    finally:
        client.node.destroy_client(cli)


class Tools:
    """Helpers handed to tests (module-scoped fixtures cannot use function-scoped ones)."""

    NodeProcess = NodeProcess
    wait_until = staticmethod(wait_until)
    set_parameter = staticmethod(set_parameter)
    root = ROOT


@pytest.fixture(scope="session")
def ros_tools() -> type[Tools]:
    return Tools
