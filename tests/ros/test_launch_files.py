"""Launch files: structure checked with stand-in launch modules (launch/launch_ros are not on PyPI), and a real
LaunchService run where launch_ros is importable (a ROS 2 install)."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
LAUNCH_FILES = sorted((ROOT / "launch").glob("*.launch.py"))


class _Action:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration:
    def __init__(self, name: str, default: Any = None) -> None:
        self.name, self.default = name, default


class _LaunchDescription:
    def __init__(self, entities: list[Any]) -> None:
        self.entities = list(entities)


class Node(_Action):
    pass


class DeclareLaunchArgument(_Action):
    pass


def _stub_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    def module(name: str, **attrs: Any) -> None:
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, m)

    module("launch", LaunchDescription=_LaunchDescription)
    module("launch.actions", DeclareLaunchArgument=DeclareLaunchArgument, SetEnvironmentVariable=_Action)
    module("launch.conditions", IfCondition=_Action, UnlessCondition=_Action)
    module("launch.substitutions", LaunchConfiguration=_LaunchConfiguration)
    module("launch_ros")
    module("launch_ros.actions", Node=Node)
    module("ament_index_python")
    module("ament_index_python.packages", get_package_share_directory=lambda pkg: str(ROOT))


def _load(path: Path, monkeypatch: pytest.MonkeyPatch) -> _LaunchDescription:
    _stub_modules(monkeypatch)
    spec = importlib.util.spec_from_file_location(f"launch_under_test_{path.stem.replace('.', '_')}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.generate_launch_description()


def _resolve(value: Any, args: dict[str, str]) -> Any:
    if isinstance(value, _LaunchConfiguration):
        return args[value.name]
    if isinstance(value, list):
        return "".join(_resolve(v, args) for v in value)
    if isinstance(value, dict):
        return {k: _resolve(v, args) for k, v in value.items()}
    return value


def _console_scripts() -> dict[str, str]:
    text = (ROOT / "setup.py").read_text()
    return dict(re.findall(r'"([\w-]+)\s*=\s*([\w.]+:\w+)"', text))


def _models() -> dict[str, Any]:
    from perception_safety.ros.bbsl_monitor_node import BBSLMonitorParams
    from perception_safety.ros.carla_ground_truth_node import GroundTruthParams
    from perception_safety.ros.returns_logger_node import ReturnsLoggerParams
    from perception_safety.ros.safety_monitor_node import SafetyMonitorParams

    return {"safety_monitor": SafetyMonitorParams, "bbsl_monitor": BBSLMonitorParams,
            "returns_logger": ReturnsLoggerParams, "carla_ground_truth": GroundTruthParams}


def _nodes(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Node], dict[str, str]]:
    ld = _load(path, monkeypatch)
    args = {a.args[0]: a.kwargs["default_value"] for a in ld.entities if isinstance(a, DeclareLaunchArgument)}
    return [e for e in ld.entities if isinstance(e, Node)], args


def test_every_launch_file_is_present():
    assert {p.name for p in LAUNCH_FILES} >= {"monitors.launch.py", "monitors_bbsl.launch.py", "carla.launch.py"}


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_nodes_use_console_scripts_and_valid_parameter_files(path, monkeypatch, tmp_path):
    from perception_safety.ros.params import flatten, unflatten

    nodes, args = _nodes(path, monkeypatch)
    assert nodes
    scripts, models = _console_scripts(), _models()
    monkeypatch.chdir(tmp_path)  # relative spec paths must resolve in the package share, not the checkout cwd
    for node in nodes:
        kw = node.kwargs
        assert kw["package"] == "perception_safety"
        exe, name = kw["executable"], kw["name"]
        assert exe in scripts, f"{exe} is not a console script in setup.py"
        module, func = scripts[exe].split(":")
        assert callable(getattr(importlib.import_module(module), func))
        flat: dict[str, Any] = {}
        for item in kw["parameters"]:
            item = _resolve(item, args)
            if isinstance(item, dict):
                flat.update(item)
                continue
            doc = yaml.safe_load(Path(item).read_text())
            assert list(doc) == [name], f"{item}: top-level key must be the node name {name!r}"
            flat.update(flatten(doc[name]["ros__parameters"]))
        config = models[exe].model_validate(unflatten(flat))  # extra="forbid": unknown keys fail here
        if exe == "bbsl_monitor":
            from perception_safety.ros.bbsl_monitor_node import SpecSet

            assert SpecSet(config).specs  # the shipped specs parse and bind with the shipped bbsl config
        defaults = set(flatten(models[exe]().topics.model_dump()).values())
        for src, dst in kw.get("remappings", []):
            assert src in defaults, f"{path.name}: remapping {src} matches no default topic of {exe}"
            assert _resolve(dst, args).startswith("/")


def test_carla_launch_uses_the_bridge_topic_names(monkeypatch):
    nodes, args = _nodes(ROOT / "launch" / "carla.launch.py", monkeypatch)
    remaps = {n.kwargs["name"]: {s: _resolve(d, args) for s, d in n.kwargs["remappings"]} for n in nodes}
    assert remaps["safety_monitor"]["/camera/image_raw"] == "/carla/ego_vehicle/rgb_front/image"
    assert remaps["returns_logger"]["/ego/odometry"] == "/carla/ego_vehicle/odometry"
    args["role_name"] = "hero"
    remaps = {n.kwargs["name"]: {s: _resolve(d, args) for s, d in n.kwargs["remappings"]} for n in nodes}
    assert remaps["safety_monitor"]["/camera/image_raw"] == "/carla/hero/rgb_front/image"
    assert remaps["returns_logger"]["/ego/odometry"] == "/carla/hero/odometry"
    assert remaps["carla_ground_truth"]["/carla/ego_vehicle/rgb_front/image"] == "/carla/hero/rgb_front/image"
    assert remaps["carla_ground_truth"]["/scenario/ground_truth"] == args["ground_truth_topic"]
    assert {n.kwargs["name"] for n in nodes} == {"safety_monitor", "bbsl_monitor", "returns_logger",
                                                 "carla_ground_truth"}


@pytest.mark.ros
def test_monitors_launch_file_runs_in_a_real_launch_service(ros_client, ros_tools):
    launch = pytest.importorskip("launch")
    if not hasattr(launch, "LaunchService"):
        pytest.skip("the importable 'launch' is not ROS 2 launch")
    pytest.importorskip("launch_ros")
    import threading

    from diagnostic_msgs.msg import DiagnosticArray
    from launch.launch_description_sources import PythonLaunchDescriptionSource

    diag = ros_client.collect(DiagnosticArray, "/diagnostics")
    ls = launch.LaunchService()
    ls.include_launch_description(launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(ROOT / "launch" / "monitors.launch.py"))))
    thread = threading.Thread(target=ls.run, daemon=True)
    thread.start()
    try:
        assert ros_tools.wait_until(lambda: any(s.name.startswith("safety_monitor: ") for a in list(diag)
                                                for s in a.status), timeout=30)
    finally:
        ls.shutdown()
        thread.join(timeout=15)
