"""Which DDS transport the package's nodes use, and making the one that carries 1080p frames the default.

Fast DDS's built-in shared-memory segment (512 KB) cannot carry a 6.2 MB 1080p rgb8 frame: on the built-in
transports `safety_monitor` received 0.3-2 of 30 images/s (FINDINGS §5) while its /diagnostics said OK (issue 19
item 1). ``config/fastdds_loopback_shm.xml`` (64 MB segment, UDP on loopback only) carried 30 Hz without loss.
So the nodes started by the package (`run_nodes`: the console scripts, the launch files, ``perception-safety
online``) and ``perception-safety replay`` set it as the Fast DDS default profile unless the environment already
names a profile, and the nodes report on /diagnostics what is in use.

``PERCEPTION_SAFETY_DDS_PROFILE`` overrides: a path to another profile, or ``builtin`` for Fast DDS's built-in
transports (multi-machine set-ups: the shipped profile restricts UDP to the loopback interface).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

#: Fast DDS 3.x (Kilted) and 2.x (Jazzy) read different variables; both are set to the same file
PROFILE_VARS = ("FASTDDS_DEFAULT_PROFILES_FILE", "FASTRTPS_DEFAULT_PROFILES_FILE")
OVERRIDE_VAR = "PERCEPTION_SAFETY_DDS_PROFILE"
BUILTIN = "builtin"
PROFILE_NAME = "config/fastdds_loopback_shm.xml"


def packaged_profile() -> Path | None:
    """The shipped loopback/shared-memory profile (package share, or the source checkout), if installed."""
    from perception_safety.io.config import ConfigError
    from perception_safety.io.paths import resolve_file

    try:
        return resolve_file(PROFILE_NAME, "dds profile")
    except ConfigError:
        return None


def select_profile(env: MutableMapping[str, str] | None = None) -> str:
    """Set the Fast DDS profile variables in ``env`` (default: this process) before rclpy starts; returns a label.

    Nothing is changed when a profile variable is already set (the user's choice wins) or the override is
    ``builtin``. Must run before ``rclpy.init`` (Fast DDS reads the variables when the participant is created).
    """
    env = os.environ if env is None else env
    if any(env.get(v) for v in PROFILE_VARS):
        return "user profile"
    choice = env.get(OVERRIDE_VAR, "").strip()
    if choice == BUILTIN:
        return BUILTIN
    path = Path(choice) if choice else packaged_profile()
    if path is None or not path.is_file():
        return BUILTIN
    for var in _profile_vars(env):
        env[var] = str(path)
    return "package default"


def _profile_vars(env: MutableMapping[str, str]) -> tuple[str, ...]:
    """Fast DDS 3.x (Kilted on) reads FASTDDS_..., 2.x (Humble-Jazzy) FASTRTPS_... (3.x warns it is deprecated)."""
    distro = env.get("ROS_DISTRO", "").lower()
    if distro in ("humble", "iron", "jazzy"):
        return PROFILE_VARS
    try:
        from importlib.metadata import version

        if int(version("ros-rmw-fastrtps-cpp").split(".")[0]) < 9:  # the ros-jazzy-* wheels
            return PROFILE_VARS
    except Exception:  # not the pip wheels: a source/apt install of a newer distro
        pass
    return PROFILE_VARS[:1]


def describe(env: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """The transport in use, for /diagnostics: rmw, profile file (or built-in transports), discovery range."""
    env = os.environ if env is None else env
    rmw = env.get("RMW_IMPLEMENTATION") or "rmw_fastrtps_cpp"
    profile = next((env[v] for v in PROFILE_VARS if env.get(v)), "")
    if profile:
        name = Path(profile).name
        transport = ("Fast DDS profile: SHM 64 MB segment + UDP on loopback" if name == Path(PROFILE_NAME).name
                     else f"Fast DDS profile {name}")
    else:
        transport = "Fast DDS built-in transports (512 KB SHM segment: frames over ~0.5 MB may be lost)"
    out = {"rmw": rmw, "transport": transport, "dds_profile": profile or "(none)"}
    rng = env.get("ROS_AUTOMATIC_DISCOVERY_RANGE")
    if rng:
        out["discovery_range"] = rng
    return out
