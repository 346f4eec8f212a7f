"""ROS parameters from pydantic models: declaration, validation at start-up and at run time."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, Field

from perception_safety.io.config import ConfigError
from perception_safety.ros.params import NodeParams, flatten, unflatten

pytestmark = pytest.mark.ros


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    threshold: float = Field(default=1580.0, gt=0)
    classes: list[str] = Field(default_factory=lambda: ["person"])


class Region(BaseModel):
    model_config = ConfigDict(extra="forbid")
    left: float
    width: float = Field(gt=0)


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")
    topic: str = "/camera"
    inner: Inner = Inner()
    roi: Region | None = None


def test_flatten_unflatten_roundtrip():
    data = {"a": {"b": {"c": 1}, "d": [1, 2]}, "e": "x"}
    assert flatten(data) == {"a.b.c": 1, "a.d": [1, 2], "e": "x"}
    assert unflatten(flatten(data)) == data


@pytest.fixture
def rclpy_context():
    import rclpy

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    yield ctx
    rclpy.shutdown(context=ctx)


def _node(ctx, overrides=()):
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    return Node("params_test", context=ctx, parameter_overrides=[Parameter(k, value=v) for k, v in overrides])


def test_defaults_and_overrides_validate(rclpy_context):
    node = _node(rclpy_context, [("inner.threshold", 100), ("roi.left", 3.0), ("roi.width", 4.0)])
    p = NodeParams(node, Model, read_only=("topic",))
    assert p.config.inner.threshold == 100.0  # int given for a float: pydantic coerces
    assert p.config.roi == Region(left=3.0, width=4.0)
    assert p.config.inner.classes == ["person"]
    node.destroy_node()


def test_bad_and_unknown_overrides_name_the_key(rclpy_context):
    with pytest.raises(ConfigError, match=r"inner\.threshold: Input should be greater than 0"):
        NodeParams(_node(rclpy_context, [("inner.threshold", -1.0)]), Model)
    with pytest.raises(ConfigError, match=r"inner\.treshold \(did you mean inner\.threshold\?\)"):
        NodeParams(_node(rclpy_context, [("inner.treshold", 1.0)]), Model)


def test_run_time_changes_are_validated_and_read_only_keys_refused(rclpy_context):
    from rclpy.parameter import Parameter

    seen = []
    node = _node(rclpy_context)
    p = NodeParams(node, Model, read_only=("topic",), on_change=seen.append)
    bad = node.set_parameters([Parameter("inner.threshold", value=-5.0)])[0]
    assert not bad.successful and "inner.threshold" in bad.reason
    assert p.config.inner.threshold == 1580.0 and seen == []
    assert not node.set_parameters([Parameter("topic", value="/x")])[0].successful
    assert node.set_parameters([Parameter("inner.threshold", value=12.5)])[0].successful
    assert p.config.inner.threshold == 12.5
    assert [c.inner.threshold for c in seen] == [12.5]
    node.destroy_node()
