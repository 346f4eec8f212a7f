"""Replay: errors name the bag/topic; the CLI turns them into exit code 2."""

from __future__ import annotations

import pytest

from perception_safety.cli import main
from perception_safety.ros.replay import ReplayError, message_class

pytestmark = pytest.mark.ros


def test_message_class_imports_rclpy_types():
    from vision_msgs.msg import Detection2DArray

    assert message_class("vision_msgs/msg/Detection2DArray") is Detection2DArray
    with pytest.raises(ReplayError, match="/x: message type 'nope_msgs/msg/Thing' is not in the type store"):
        message_class("nope_msgs/msg/Thing", "/x")


def test_a_bag_never_makes_replay_import_a_module_it_names(tmp_path, capsys):
    """Issue 19 item 9: a topic typed ``this/msg/Foo`` used to import the module ``this`` (the Zen of Python)."""
    import sys

    from rosbags.rosbag2 import Writer
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.EMPTY)
    store.register(get_types_from_msg("int32 x", "this/msg/Foo"))
    bag = tmp_path / "hostile"
    with Writer(bag, version=9) as w:
        conn = w.add_connection("/foo", "this/msg/Foo", typestore=store)
        w.write(conn, 1, store.serialize_cdr(store.types["this/msg/Foo"](x=1), "this/msg/Foo"))
    sys.modules.pop("this", None)
    assert main(["replay", str(bag), "--fast", "--wait-subscribers", "0"]) == 2
    out = capsys.readouterr()
    assert "/foo: message type 'this/msg/Foo' is not in the type store" in out.err
    assert "this" not in sys.modules and "Beautiful is better than ugly" not in out.out


def test_cli_reports_a_missing_bag(tmp_path, capsys):
    assert main(["replay", str(tmp_path / "missing_bag"), "--fast", "--wait-subscribers", "0"]) == 2
    assert "missing_bag: cannot open bag" in capsys.readouterr().err


def test_cli_rejects_bad_rate_and_unknown_topic(tmp_path, capsys):
    from perception_safety.core.types import Frame
    from perception_safety.io.bag import write_frames

    bag = tmp_path / "b"
    write_frames(bag, [Frame(stamp_ns=1)], "sqlite3")
    assert main(["replay", str(bag), "--rate", "0"]) == 2
    assert "--rate must be > 0" in capsys.readouterr().err
    assert main(["replay", str(bag), "--fast", "--topics", "/nope", "--wait-subscribers", "0"]) == 2
    assert "topic(s) not in the bag: /nope" in capsys.readouterr().err


def test_frames_without_a_counterpart_are_skipped_and_counted_never_waited_for(tmp_path, capsys):
    """Detections without their image (the old recordings: images every 10th frame): with --require the frame
    is skipped and counted (not published, so never waited for), and progress accounts for every message."""
    import time

    import numpy as np

    from perception_safety.core.types import Box, Detection, Frame
    from perception_safety.io.bag import write_frames

    img = np.zeros((4, 6, 3), np.uint8)
    frames = [Frame(stamp_ns=(k + 1) * 50_000_000, detections=(Detection(Box(0, 0, 2, 2), "car", 0.5),),
                    image=img if k % 5 == 0 else None) for k in range(10)]
    bag = tmp_path / "b"
    write_frames(bag, frames, "mcap")
    t0 = time.monotonic()
    rc = main(["replay", str(bag), "--fast", "--wait-subscribers", "0", "--ack-timeout", "0",
               "--topics", "/camera/image_raw", "/detections", "--require", "/camera/image_raw", "/detections",
               "--progress-every", "0.01"])
    assert rc == 0
    out = capsys.readouterr()
    assert "published 4 message(s)" in out.out  # frames 0 and 5: image + detections
    assert "8 frame(s) without a message on every --require topic skipped (/detections: 8)" in out.err
    assert "replay: 12/12 message(s), 2 group(s)" in out.err  # progress: every message accounted for
    assert time.monotonic() - t0 < 60
