"""Exfunction bindings from config values and --bind options; the bbsl config section."""

from __future__ import annotations

from pathlib import Path

import pytest

from perception_safety.bbsl.ast import Type
from perception_safety.bbsl.bindings import (
    Constant,
    FrameBoxes,
    ImageBox,
    Subject,
    SubjectExists,
    parse_bind_option,
    parse_binding_value,
)
from perception_safety.bbsl.config import BBSLConfig
from perception_safety.bbsl.errors import BBSLError
from perception_safety.io.config import ConfigError, load_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ([275, 375], Constant(Type.INTERVAL, (275.0, 375.0))),
        ("[275, 375]", Constant(Type.INTERVAL, (275.0, 375.0))),
        ("275,375", Constant(Type.INTERVAL, (275.0, 375.0))),
        (3, Constant(Type.INTERVAL, (3.0, 3.0))),
        ([1, 2, 3, 4], Constant(Type.BB, (1.0, 2.0, 3.0, 4.0))),
        (True, Constant(Type.BOOL, True)),
        ("false", Constant(Type.BOOL, False)),
        ("subject", Subject()),
        ("Subject_Exists", SubjectExists()),
        ("image", ImageBox()),
        ("frame_boxes", FrameBoxes()),
    ],
)
def test_binding_values(raw, expected) -> None:
    assert parse_binding_value(raw) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([3, 1], "lower bound above upper bound"),
        ([1, 2, 3], "expected 2 numbers (interval) or 4 (bb)"),
        ([3, 0, 1, 5], "inverted"),
        ("vehicle", "cannot read 'vehicle'"),
        ([1, float("inf")], "non-finite"),
        ({"a": 1}, "cannot use a dict"),
    ],
)
def test_bad_binding_values(raw, message) -> None:
    with pytest.raises(ValueError, match="x") as info:
        parse_binding_value(raw, "x")
    assert message in str(info.value)


def test_bind_option() -> None:
    assert parse_bind_option("stoppingDistance()=[250, 375]") == (
        "stoppingDistance",
        Constant(Type.INTERVAL, (250.0, 375.0)),
    )
    for bad in ("stoppingDistance", "1x=3", "a=[1,2,3]"):
        with pytest.raises(BBSLError, match="--bind"):
            parse_bind_option(bad)


def test_shipped_config_holds_the_paper_constants() -> None:
    cfg = load_model(ROOT / "config" / "bbsl.yaml", BBSLConfig, section="bbsl")
    assert cfg == BBSLConfig()  # the file and the defaults agree
    b = cfg.parsed_bindings()
    assert b["stoppingDistance"] == Constant(Type.INTERVAL, (275.0, 375.0))
    assert b["directionAreaDistance"] == Constant(Type.INTERVAL, (420.0, 821.0))
    assert cfg.image_size == (1242.0, 375.0) and cfg.iou_thresholds == [0.6, 0.8]


def test_config_errors_name_file_and_key(tmp_path: Path) -> None:
    p = tmp_path / "b.yaml"
    p.write_text("bbsl:\n  breakdown_iou: 2\n")
    with pytest.raises(ConfigError, match=r"b\.yaml: bbsl\.breakdown_iou"):
        load_model(p, BBSLConfig, section="bbsl")
    p.write_text("bbsl:\n  assignment: nearest\n")
    with pytest.raises(ConfigError, match=r"bbsl\.assignment"):
        load_model(p, BBSLConfig, section="bbsl")
