"""Input roles: f* bags found in a folder are excluded by default, roles come from metadata or the runner layout."""

from __future__ import annotations

import itertools

import pytest

from perception_safety.core import Box, Detection, Frame, GroundTruthObject
from perception_safety.io.bag import BagError, write_frames
from perception_safety.io.bag_inputs import bag_conditions, bag_metadata, input_notes, select_bags, used


def _frames() -> list[Frame]:
    box = Box(10, 10, 50, 90)
    gt = GroundTruthObject.at_position(box, "pedestrian", (8.0, 0.0, 0.0), "p")
    return [Frame(10**9 + i, (Detection(box, "pedestrian", 0.9),), (gt,)) for i in range(2)]


def test_runner_layout_roles_and_exclusion(tmp_path):
    root = tmp_path / "episodes" / "bags"
    for rollout in ("perception", "monitored", "ground_truth"):
        write_frames(root / "000-x" / rollout, _frames())  # no custom data: the folder layout decides
    found = select_bags([root])
    assert [b.role for b in found] == ["ground_truth", "monitored", "perception"]  # sorted paths
    assert [p.name for p in used(found)] == ["perception"]  # f* and f+m found in a folder are listed, not read
    assert "perfect-perception" in found[0].excluded and "repeats the perception rollout" in found[1].excluded
    assert [p.name for p in used(select_bags([root], include_monitored=True))] == ["monitored", "perception"]
    assert any("not read" in n for n in input_notes(found))
    # the flag reads it; naming the bag itself reads it too (with a note, not silently)
    assert len(used(select_bags([root], include_perfect=True, include_monitored=True))) == 3
    named = select_bags([root / "000-x" / "ground_truth"])
    assert named[0].named and not named[0].excluded
    assert "equal the ground truth" in input_notes(named)[0]


def test_custom_data_and_sidecar_conditions(tmp_path):
    bag = tmp_path / "drive1"
    custom = {"perception_safety.rollout": "ground_truth", "perception_safety.weather": "rain", "other.key": "x"}
    write_frames(bag, _frames(), custom_data=custom)
    (bag / "conditions.yaml").write_text("weather: fog\nego_speed_band: 10-20\n")
    cond = bag_conditions(bag)
    assert cond == {"rollout": "ground_truth", "weather": "fog", "ego_speed_band": "10-20"}
    found = select_bags([tmp_path])
    assert found[0].role == "ground_truth" and found[0].excluded  # not in the runner layout, metadata decides


def test_plain_recording_is_read(tmp_path):
    write_frames(tmp_path / "rec", _frames())
    (b,) = select_bags([tmp_path])
    assert b.role == "recording" and not b.excluded and b.conditions == {}


def test_metadata_and_sidecar_are_parsed_by_the_bounded_safe_loader(tmp_path):
    """A duplicate key, a Python object tag or an alias bomb in a bag's YAML is a BagError naming file:line:column
    (not a silently kept last value, a constructed object or an out-of-memory)."""
    bag = tmp_path / "drive1"
    write_frames(bag, _frames())
    (bag / "conditions.yaml").write_text("weather: fog\nweather: rain\n")
    with pytest.raises(BagError, match=r"conditions\.yaml:2:1: invalid YAML: duplicate key 'weather'"):
        bag_conditions(bag)
    (bag / "conditions.yaml").write_text("weather: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(BagError, match=r"conditions\.yaml.*python/object"):
        bag_conditions(bag)
    (bag / "conditions.yaml").unlink()
    meta = bag / "metadata.yaml"
    levels = "abcdefg"  # each level lists the previous one 10 times: 10^7 values once expanded
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 10)}]\n" for p, c in itertools.pairwise(levels)
    )
    meta.write_text(bomb)
    with pytest.raises(BagError, match=r"metadata\.yaml:.*expands to more than"):
        bag_metadata(bag)
    meta.write_text("- a list\n")
    assert bag_metadata(bag) == {}  # no metadata (as for a missing key): reading the bag then names it
