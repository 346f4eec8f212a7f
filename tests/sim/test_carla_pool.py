"""episodes.carla.servers: a pool of CARLA servers, one episode per server at a time (real carla client; no server
runs here, so every server of the pool is found dead and the error names each one)."""

from __future__ import annotations

import socket

import pytest

from perception_safety.cli import main
from perception_safety.sim.config import load_episodes_config
from perception_safety.sim.sweep import sweep_fingerprint

from .conftest import write_tiny_config


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_every_server_of_the_pool_dead_names_each_and_writes_no_episode(tmp_path, capsys) -> None:
    ports = [_free_port(), _free_port()]
    cfg = write_tiny_config(
        tmp_path / "cfg",
        perturbations=[{"name": "brightness", "levels": [1, 2]}],
        carla={"servers": [f"127.0.0.1:{p}" for p in ports], "timeout_s": 1.0},
    )
    out = tmp_path / "out"
    rc = main(["episodes", "--config", str(cfg), "--backend", "carla", "--out", str(out), "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "2 episode(s) failed" in err and "no server left to run it" in err
    for p in ports:
        assert f"127.0.0.1:{p}: no CARLA server answered at 127.0.0.1:{p}" in err
    assert not list(out.glob("logs/*.jsonl"))


def test_server_list_is_validated_and_not_part_of_the_sweep_fingerprint(tmp_path) -> None:
    from perception_safety.io.config import ConfigError

    bad = write_tiny_config(tmp_path / "bad", carla={"servers": ["no-port"]})
    with pytest.raises(ConfigError, match=r"episodes\.carla\.servers"):
        load_episodes_config(bad)
    a = load_episodes_config(write_tiny_config(tmp_path / "a", carla={"servers": ["h1:2000"]}))
    b = load_episodes_config(write_tiny_config(tmp_path / "b", carla={"servers": ["h2:2000", "h3:2002"]}))
    assert a.carla.servers == ("h1:2000",)
    from perception_safety.monitors.config import MonitorsConfig

    m = MonitorsConfig()
    assert sweep_fingerprint(a, m, "carla") == sweep_fingerprint(b, m, "carla")  # resume may use other servers
