"""The value types' construction checks take a fast path for the common case; on every mix of ordinary and special
values they raise exactly what the check written out value by value raises (the reference below)."""

from __future__ import annotations

import itertools
import math

from perception_safety.core.types import Box, Detection, EgoState, GroundTruthObject, InvalidValueError

SPECIAL = [0.0, -1.5, 2.0, 1e308, -1e308, math.inf, -math.inf, math.nan]


def reference_error(name: str, values, extra=None) -> str | None:
    for v in values:
        if not math.isfinite(v):
            return f"{name}: non-finite value {v!r}"
    return extra() if extra is not None else None


def outcome(fn) -> str | None:
    try:
        fn()
    except InvalidValueError as exc:
        return str(exc)
    return None


def test_box_checks_equal_the_value_by_value_check():
    for x0, y0, x1, y1 in itertools.product(SPECIAL, repeat=4):
        def inverted(x0=x0, y0=y0, x1=x1, y1=y1):
            return f"box: inverted coordinates ({x0}, {y0}, {x1}, {y1})" if x0 > x1 or y0 > y1 else None
        box = (x0, y0, x1, y1)
        assert outcome(lambda b=box: Box(*b)) == reference_error("box", box, inverted)


def test_ego_detection_and_ground_truth_checks_equal_the_value_by_value_check():
    box = Box(0.0, 0.0, 1.0, 1.0)
    for values in itertools.product(SPECIAL, repeat=4):
        assert outcome(lambda v=values: EgoState(*v)) == reference_error("ego state", values)
        score, pos = values[0], tuple(values[1:])
        want = reference_error("detection score", (score,)) or reference_error("detection position", pos)
        assert outcome(lambda s=score, p=pos: Detection(box, "c", s, p)) == want
        assert outcome(lambda s=score: Detection(box, "c", s)) == reference_error("detection score", (score,))
        distance = values[0]
        want = reference_error("ground-truth distance", (distance,), lambda d=distance, p=pos: (
            f"ground-truth distance: negative value {d}" if d < 0 else reference_error("ground-truth position", p)))
        assert outcome(lambda d=distance, p=pos: GroundTruthObject(box, "c", d, p)) == want


def made(fn):
    """A value and its fields, or the error, of one construction."""
    try:
        v = fn()
    except InvalidValueError as exc:
        return "error", str(exc)
    return type(v), repr(v), hash(v)


def test_the_hot_path_constructors_equal_the_classes():
    """`make_box`, `make_box_from_center`, `make_detection` and `make_ground_truth` (the bag readers') give the value
    or the error the class gives, on every mix of ordinary and special values; the values compare and hash equal."""
    from perception_safety.core.types import make_box, make_box_from_center, make_detection, make_ground_truth

    for values in itertools.product(SPECIAL, repeat=4):
        assert made(lambda v=values: make_box(*v)) == made(lambda v=values: Box(*v))
        assert made(lambda v=values: make_box_from_center(*v)) == made(lambda v=values: Box.from_center(*v))
        if made(lambda v=values: Box(*v))[0] is Box:
            assert make_box(*values) == Box(*values) and make_box(*values) is not Box(*values)
    box = Box(0.0, 1.0, 2.0, 3.0)
    for score in [*SPECIAL, 0.5]:
        assert made(lambda s=score: make_detection(box, "car", s)) == made(lambda s=score: Detection(box, "car", s))
    for values in itertools.product(SPECIAL, repeat=4):
        distance, pos = values[0], tuple(values[1:])
        for position in (pos, None):
            for ignore in (False, True):
                assert made(lambda d=distance, p=position, i=ignore: make_ground_truth(box, "ped", d, p, "t1", i)) \
                    == made(lambda d=distance, p=position, i=ignore: GroundTruthObject(box, "ped", d, p, "t1", i))
    g = make_ground_truth(box, "ped", 5.0, (3.0, 4.0, 0.0), "t1", True)
    assert g == GroundTruthObject(box, "ped", 5.0, (3.0, 4.0, 0.0), "t1", True) and g.ignore and g.track_id == "t1"
    try:
        g.distance = 1.0  # still frozen
    except AttributeError:
        pass
    else:
        raise AssertionError("a made value must stay frozen")


def test_make_frame_equals_the_class():
    import numpy as np

    from perception_safety.core.camera import Intrinsics
    from perception_safety.core.types import Frame, make_frame

    det = Detection(Box(0.0, 1.0, 2.0, 3.0), "car", 0.5)
    gt = GroundTruthObject(Box(0.0, 1.0, 2.0, 3.0), "ped", 5.0, (3.0, 4.0, 0.0), "t1")
    args = dict(stamp_ns=7, detections=(det,), ground_truth=(gt,), ego=EgoState(1.0, 2.0, 0.1, 3.0),
                image=np.zeros((2, 3), np.uint8), frame_id="bag:7", candidates=(det,), episode="e",
                camera=Intrinsics(10.0, 10.0, 1.5, 1.0, 3, 2))
    made, built = make_frame(**args), Frame(**args)
    assert made == built and repr(made) == repr(built) and made.image is args["image"] and made.camera == args["camera"]
    assert make_frame(3) == Frame(3) and make_frame(3).candidates is None and make_frame(3).episode == ""
