"""Test peer: receives Detection2DArray and Image messages and prints what arrived as JSON."""

import json
import sys
import time

import numpy as np
import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image
from vision_msgs.msg import Detection2DArray


def main(n: int) -> int:
    rclpy.init()
    node = rclpy.create_node("dds_test_subscriber")
    # transient local: a reader that learns of the writer late (the writer may know the reader first) still gets
    # every sample from the writer's history
    qos = QoSProfile(depth=n, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    dets, imgs = [], []

    def on_det(msg):
        d = msg.detections[0]
        h = d.results[0]
        dets.append(
            [
                msg.header.stamp.sec,
                d.id,
                d.bbox.center.position.x,
                d.bbox.center.position.y,
                d.bbox.size_x,
                d.bbox.size_y,
                h.hypothesis.class_id,
                h.hypothesis.score,
                h.pose.pose.position.x,
            ]
        )

    def on_img(msg):
        data = np.frombuffer(bytes(msg.data), dtype=np.uint8)
        imgs.append([msg.header.stamp.sec, msg.height, msg.width, msg.encoding, int(data.astype(np.int64).sum())])

    node.create_subscription(Detection2DArray, "/test/detections", on_det, qos)
    node.create_subscription(Image, "/test/image", on_img, qos)
    deadline = time.monotonic() + 40
    while (len(dets) < n or len(imgs) < n) and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)
    print(json.dumps({"detections": dets, "images": imgs}))
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
