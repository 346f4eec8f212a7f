"""Value-type invariants: bad numbers are rejected at construction with a message naming them."""

from __future__ import annotations

import math

import pytest

from perception_safety.core import Box, Detection, EgoState, GroundTruthObject, Interval, InvalidValueError


@pytest.mark.parametrize(
    "coords, message",
    [
        ((math.nan, 0, 1, 1), "non-finite"),
        ((0, 0, math.inf, 1), "non-finite"),
        ((5, 0, 1, 1), "inverted"),
        ((0, 5, 1, 1), "inverted"),
    ],
)
def test_box_rejects_bad_coordinates(coords, message):
    with pytest.raises(InvalidValueError, match=message):
        Box(*coords)


def test_box_geometry_and_center_form():
    b = Box.from_center(10, 20, 4, 6)
    assert b.as_tuple() == (8, 17, 12, 23)
    assert (b.width, b.height, b.area, b.center) == (4, 6, 24, (10, 20))


def test_interval_and_other_values_validate():
    assert Interval(1, 3).length == 2
    with pytest.raises(InvalidValueError, match="exceeds"):
        Interval(3, 1)
    with pytest.raises(InvalidValueError):
        Detection(Box(0, 0, 1, 1), "car", math.nan)
    with pytest.raises(InvalidValueError, match="negative"):
        GroundTruthObject(Box(0, 0, 1, 1), "car", -1.0)
    with pytest.raises(InvalidValueError):
        EgoState(speed=math.inf)


def test_ground_truth_distance_is_position_norm():
    g = GroundTruthObject.at_position(Box(0, 0, 1, 1), "ped", (3.0, 4.0, 12.0), "7")
    assert g.distance == 13.0
    assert g.track_id == "7"
