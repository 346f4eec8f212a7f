"""Bad bags and bad messages: a clear error, or a counted skip naming bag, topic and message index."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest
from rosbags.rosbag2 import Writer

from perception_safety.core import Box, Detection, Frame
from perception_safety.io import bag_messages as bm
from perception_safety.io.bag import BagError, BagReadReport, read_frames, write_frames
from perception_safety.io.typestore import ros2_typestore


def write_raw(path, topic_msgs):
    """Write hand-made messages: topic_msgs = [(topic, msgtype, stamp_ns, msg_object_or_bytes)]."""
    store = ros2_typestore()
    with Writer(path, version=9) as w:
        conns = {}
        for topic, msgtype, t, msg in topic_msgs:
            if topic not in conns:
                conns[topic] = w.add_connection(topic, msgtype, typestore=store)
            raw = msg if isinstance(msg, bytes) else store.serialize_cdr(msg, msgtype)
            w.write(conns[topic], t, raw)


def detections_msg(t, box_values):
    msg = bm.detections_to_msg((Detection(Box(0, 0, 10, 10), "car", 0.5),), t)
    cx, cy, sx, sy = box_values
    b = msg.detections[0].bbox
    b.center.position.x, b.center.position.y, b.size_x, b.size_y = cx, cy, sx, sy
    return msg


@pytest.mark.parametrize(
    "bad, reason",
    [
        ((math.nan, 5, 10, 10), "non-finite box"),
        ((5, 5, -3, 10), "negative box size"),
        ((5, math.inf, 1, 1), "non-finite"),
    ],
)
def test_bad_box_message_is_skipped_and_named(make_frames, tmp_path, bad, reason):
    det = bm.DETECTIONS_TYPE
    write_raw(
        tmp_path / "bag",
        [
            ("/detections", det, 1, detections_msg(1, (5, 5, 10, 10))),
            ("/detections", det, 2, detections_msg(2, bad)),
            ("/detections", det, 3, detections_msg(3, (5, 5, 10, 10))),
        ],
    )
    report = BagReadReport()
    frames = list(read_frames(tmp_path / "bag", report=report))
    assert [f.stamp_ns for f in frames] == [1, 3]
    (skip,) = report.skipped
    assert (skip.topic, skip.index) == ("/detections", 1) and reason in skip.reason
    assert str(tmp_path / "bag") in str(skip) and "message #1" in str(skip)


def test_image_with_wrong_length_or_encoding_is_skipped(make_frames, tmp_path):
    frames = make_frames(3)
    good = [bm.image_to_msg(f.image, f.stamp_ns) for f in frames]
    good[0].data = good[0].data[:-5]  # data length mismatch
    good[1].encoding = "32FC1"  # unsupported encoding
    msgs = [("/camera/image_raw", bm.IMAGE_TYPE, f.stamp_ns, m) for f, m in zip(frames, good, strict=True)]
    msgs += [
        ("/detections", bm.DETECTIONS_TYPE, f.stamp_ns, bm.detections_to_msg(f.detections, f.stamp_ns)) for f in frames
    ]
    write_raw(tmp_path / "bag", msgs)
    report = BagReadReport()
    back = list(read_frames(tmp_path / "bag", report=report))
    assert [b.image is None for b in back] == [True, True, False]
    reasons = sorted((s.index, s.reason) for s in report.skipped)
    assert reasons[0][0] == 0 and "data length" in reasons[0][1]
    assert reasons[1][0] == 1 and "encoding" in reasons[1][1]


def test_undecodable_bytes_are_skipped(make_frames, tmp_path):
    ok = bm.detections_to_msg((), 1)
    write_raw(
        tmp_path / "bag",
        [("/detections", bm.DETECTIONS_TYPE, 1, ok), ("/detections", bm.DETECTIONS_TYPE, 2, b"\x00\x01\x00\x00\xff")],
    )
    report = BagReadReport()
    assert len(list(read_frames(tmp_path / "bag", report=report))) == 1
    assert report.skipped[0].index == 1 and "deserialize" in report.skipped[0].reason


def test_missing_anchor_topic_names_topic_and_lists_present(make_frames, tmp_path):
    write_frames(tmp_path / "bag", make_frames(2))
    from perception_safety.io.bag import BagTopics

    with pytest.raises(BagError, match=r"anchor topic /dets .*topics present: /camera/image_raw"):
        list(read_frames(tmp_path / "bag", topics=BagTopics(detections="/dets")))


def test_missing_optional_topic_is_reported(make_frames, tmp_path):
    from perception_safety.io.bag import BagTopics

    write_frames(tmp_path / "bag", make_frames(2), topics=BagTopics(ego=""))
    report = BagReadReport()
    assert len(list(read_frames(tmp_path / "bag", report=report))) == 2
    assert report.missing_topics == [(str(tmp_path / "bag"), "/ego/odometry")]


def test_topic_of_unexpected_type_is_an_error(make_frames, tmp_path):
    store = ros2_typestore()
    msg = store.types["std_msgs/msg/String"](data="hello")
    write_raw(tmp_path / "bag", [("/detections", "std_msgs/msg/String", 1, msg)])
    with pytest.raises(BagError, match="topic /detections has type std_msgs/msg/String, expected vision_msgs"):
        list(read_frames(tmp_path / "bag"))


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_truncated_bag_gives_clear_error(make_frames, tmp_path, storage):
    write_frames(tmp_path / "bag", make_frames(50), storage=storage)
    (data,) = [p for p in (tmp_path / "bag").iterdir() if p.suffix in (".mcap", ".db3")]
    blob = data.read_bytes()
    data.write_bytes(blob[: len(blob) // 3])
    with pytest.raises(BagError, match=str(tmp_path / "bag")):
        list(read_frames(tmp_path / "bag"))


def test_corrupt_and_absent_bags(make_frames, tmp_path):
    write_frames(tmp_path / "bag", make_frames(2))
    (tmp_path / "bag" / "metadata.yaml").write_text("{{{ not yaml")
    with pytest.raises(BagError, match="cannot open bag"):
        list(read_frames(tmp_path / "bag"))
    with pytest.raises(BagError, match="cannot open bag"):
        list(read_frames(tmp_path / "nope"))


def test_writer_refuses_to_overwrite_and_names_bad_frame(make_frames, tmp_path):
    write_frames(tmp_path / "bag", make_frames(1))
    with pytest.raises(BagError, match="already exists"):
        write_frames(tmp_path / "bag", make_frames(1))
    shutil.rmtree(tmp_path / "bag")
    bad = Frame(0, image=np.zeros((4, 4, 3), dtype=np.float32))
    with pytest.raises(BagError, match="frame #0: image"):
        write_frames(tmp_path / "bag", [bad])


def test_corrupt_jpeg_and_camera_info_size_mismatch_are_reported_skips(tmp_path):
    """A corrupt JPEG payload, and an image whose size disagrees with its CameraInfo: the frame keeps its
    detections, loses the image, and the skip names topic, message index and reason."""
    from perception_safety.io.image_codec import encode_jpeg

    good = encode_jpeg(np.full((24, 32, 3), 100, np.uint8))
    other = encode_jpeg(np.full((48, 64, 3), 100, np.uint8))
    img, info = "/camera/image_raw/compressed", "/camera/camera_info"
    msgs = []
    for t, payload in ((1, good), (2, b"\xff\xd8garbage"), (3, other)):
        msgs += [(img, bm.COMPRESSED_IMAGE_TYPE, t, bm.compressed_image_to_msg(payload, t)),
                 (info, bm.CAMERA_INFO_TYPE, t, bm.camera_info_to_msg((32, 24), (16, 16, 16, 12), t)),
                 ("/detections", bm.DETECTIONS_TYPE, t, detections_msg(t, (5, 5, 10, 10)))]
    write_raw(tmp_path / "bag", msgs)
    report = BagReadReport()
    frames = list(read_frames(tmp_path / "bag", report=report))
    assert [f.image is not None for f in frames] == [True, False, False]
    assert all(len(f.detections) == 1 for f in frames)
    bad, mismatch = report.skipped
    assert (bad.topic, bad.index) == (img, 1) and "cannot decode" in bad.reason
    assert (mismatch.topic, mismatch.index) == (img, 2) and "64x48 disagrees with camera_info 32x24" in mismatch.reason
