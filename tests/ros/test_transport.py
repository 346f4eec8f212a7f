"""The package's nodes default to the Fast DDS profile that carries 1080p frames, and say which is in use."""

from __future__ import annotations

from pathlib import Path

from perception_safety.ros.transport import PROFILE_VARS, describe, select_profile

ROOT = Path(__file__).resolve().parents[2]


def test_default_is_the_shipped_shared_memory_profile():
    env: dict[str, str] = {}
    assert select_profile(env) == "package default"
    assert Path(env["FASTDDS_DEFAULT_PROFILES_FILE"]).name == "fastdds_loopback_shm.xml"
    jazzy: dict[str, str] = {"ROS_DISTRO": "jazzy"}  # Fast DDS 2.x reads the older variable
    select_profile(jazzy)
    assert all(Path(jazzy[v]).name == "fastdds_loopback_shm.xml" for v in PROFILE_VARS)
    assert "<segment_size>67108864</segment_size>" in Path(env["FASTDDS_DEFAULT_PROFILES_FILE"]).read_text()
    assert "SHM 64 MB" in describe(env)["transport"]


def test_user_choice_wins_and_builtin_opt_out():
    env = {"FASTDDS_DEFAULT_PROFILES_FILE": "/my/profile.xml"}
    assert select_profile(env) == "user profile" and env == {"FASTDDS_DEFAULT_PROFILES_FILE": "/my/profile.xml"}
    assert describe(env)["transport"] == "Fast DDS profile profile.xml"
    env = {"PERCEPTION_SAFETY_DDS_PROFILE": "builtin"}
    assert select_profile(env) == "builtin" and not any(v in env for v in PROFILE_VARS)
    assert "built-in" in describe(env)["transport"] and describe(env)["dds_profile"] == "(none)"
