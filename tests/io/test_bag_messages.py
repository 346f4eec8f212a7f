"""Wire layout against hand-built messages (not round trips through our own encoder)."""

from __future__ import annotations

import numpy as np
import pytest

from perception_safety.core import Box
from perception_safety.io import bag_messages as bm
from perception_safety.io.typestore import ros2_typestore

T = ros2_typestore().types


def hand_detection(cx, cy, sx, sy, cls, score, pos=(0.0, 0.0, 0.0), ident=""):
    point = T["geometry_msgs/msg/Point"](x=pos[0], y=pos[1], z=pos[2])
    quat = T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0)
    pose = T["geometry_msgs/msg/PoseWithCovariance"](
        pose=T["geometry_msgs/msg/Pose"](position=point, orientation=quat), covariance=np.zeros(36)
    )
    hyp = T["vision_msgs/msg/ObjectHypothesisWithPose"](
        hypothesis=T["vision_msgs/msg/ObjectHypothesis"](class_id=cls, score=score), pose=pose
    )
    center = T["vision_msgs/msg/Pose2D"](position=T["vision_msgs/msg/Point2D"](x=cx, y=cy), theta=0.0)
    bbox = T["vision_msgs/msg/BoundingBox2D"](center=center, size_x=sx, size_y=sy)
    return T["vision_msgs/msg/Detection2D"](header=bm.header(0), results=[hyp], bbox=bbox, id=ident)


def test_detection_box_is_centre_plus_half_size():
    msg = T[bm.DETECTIONS_TYPE](header=bm.header(5), detections=[hand_detection(100.0, 50.0, 20.0, 40.0, "car", 0.75)])
    (det,) = bm.detections_from_msg(msg)
    assert det.box == Box(90.0, 30.0, 110.0, 70.0)
    assert (det.class_id, det.score) == ("car", 0.75)


def test_readable_detections_keeps_valid_boxes_and_names_each_unreadable_one():
    dets = [hand_detection(100.0, 50.0, 20.0, 40.0, "person", 0.75),
            hand_detection(float("nan"), 5.0, 2.0, 2.0, "car", 0.5),
            hand_detection(10.0, 10.0, 4.0, -4.0, "person", 0.5),
            hand_detection(10.0, 10.0, 4.0, 4.0, "car", float("inf"))]
    msg = T[bm.DETECTIONS_TYPE](header=bm.header(5), detections=dets)
    valid, problems = bm.readable_detections(msg)
    assert [d.box for d in valid] == [Box(90.0, 30.0, 110.0, 70.0)]
    assert [p.split(":")[0] for p in problems] == ["detections[1]", "detections[2]", "detections[3]"]
    assert "non-finite box" in problems[0] and "negative box size" in problems[1] and "non-finite score" in problems[2]
    with pytest.raises(Exception, match="detections\\[1\\]"):
        bm.detections_from_msg(msg)  # the offline reader stays strict


def test_ground_truth_position_gives_distance_and_track():
    d = hand_detection(10.0, 10.0, 4.0, 8.0, "pedestrian", 1.0, pos=(6.0, 8.0, 0.0), ident="ped7")
    (gt,) = bm.ground_truth_from_msg(T[bm.DETECTIONS_TYPE](header=bm.header(0), detections=[d]))
    assert gt.distance == 10.0 and gt.position == (6.0, 8.0, 0.0) and gt.track_id == "ped7"
    assert gt.box == Box(8.0, 6.0, 12.0, 14.0)


def test_bgr8_image_with_row_padding():
    h, w = 2, 3
    rows = np.zeros((h, w * 3 + 2), dtype=np.uint8)  # two bytes of padding per row
    for y in range(h):
        for x in range(w):
            rows[y, 3 * x : 3 * x + 3] = (1 + x, 10 + y, 100)  # B, G, R
    msg = T[bm.IMAGE_TYPE](
        header=bm.header(0), height=h, width=w, encoding="bgr8", is_bigendian=0, step=w * 3 + 2, data=rows.reshape(-1)
    )
    img = bm.image_from_msg(msg)
    assert img.shape == (2, 3, 3)
    assert img[1, 2].tolist() == [100, 11, 3]  # R, G, B


def test_odometry_yaw_from_quaternion():
    import math

    q = T["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=math.sin(0.3), w=math.cos(0.3))
    pose = T["geometry_msgs/msg/Pose"](position=T["geometry_msgs/msg/Point"](x=1.0, y=2.0, z=0.0), orientation=q)
    v3 = T["geometry_msgs/msg/Vector3"]
    twist = T["geometry_msgs/msg/Twist"](linear=v3(x=7.5, y=0.0, z=0.0), angular=v3(x=0.0, y=0.0, z=0.0))
    odom = T[bm.ODOMETRY_TYPE](
        header=bm.header(0),
        child_frame_id="ego",
        pose=T["geometry_msgs/msg/PoseWithCovariance"](pose=pose, covariance=np.zeros(36)),
        twist=T["geometry_msgs/msg/TwistWithCovariance"](twist=twist, covariance=np.zeros(36)),
    )
    ego = bm.ego_from_msg(odom)
    assert (ego.x, ego.y, ego.speed) == (1.0, 2.0, 7.5)
    assert ego.yaw == pytest.approx(0.6, abs=1e-12)
