"""The evaluate command's console: grouped warnings and the requirement table's columns."""

from __future__ import annotations

from rich.console import Console

from perception_safety.commands.evaluate import print_requirements, warning_lines


def test_warnings_saying_the_same_of_several_places_share_one_line():
    same = "the chain's columns rest on 7 episode(s) (< 10): INCONCLUSIVE"
    warnings = [{"analysis": "verification", "message": f"{p}: {same}"} for p in ("class/obs/V=1", "prop/ped/V=2",
                                                                                   "prop/ped/V=3")]
    warnings += [
        {"analysis": "verification", "message": "prop/ped/V=4: something else"},
        {"analysis": "pcd", "message": f"class/obs/V=9: {same}"},  # another analysis: not grouped with the rest
        {"analysis": "returns", "message": "SG = 0: the monitor prevents none"},  # a place with spaces: as is
        {"analysis": "returns", "message": "SG = 0: the monitor prevents none"},
        {"analysis": "returns", "message": "SG = 0: the monitor prevents none"},
    ]
    lines = warning_lines(warnings)
    assert lines[0] == f"warning [verification] (3 places: class/obs/V=1, prop/ped/V=2, prop/ped/V=3): {same}"
    assert "warning [verification]: prop/ped/V=4: something else" in lines
    assert f"warning [pcd]: class/obs/V=9: {same}" in lines
    assert lines.count("warning [returns]: SG = 0: the monitor prevents none") == 3
    assert len(lines) == 6  # nothing lost: every warning is on a line


def test_requirement_table_shows_the_estimate_not_the_bound_as_the_value():
    item = {"label": "ped recall", "status": "FAIL", "value": 0.1776, "point": 0.5259, "lower": 0.1776,
            "upper": 0.8559, "bound": "lower", "op": ">=", "threshold": 0.8, "n": 232, "clusters": 7, "detail": "d"}
    console = Console(width=200, record=True)
    print_requirements({"overall": "FAIL", "items": [item]}, console)
    text = console.export_text()
    header = next(line for line in text.splitlines() if "verdict" in line)
    assert "point" in header and "measured" not in header
    row = next(line for line in text.splitlines() if "ped recall" in line)
    assert "0.5259" in row and "[0.178, 0.856]" in row and "lower >= 0.8" in row
