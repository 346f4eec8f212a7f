"""Test peer: publishes N Detection2DArray + Image pairs once a subscriber has matched, then exits when it has left."""

import sys
import time

import numpy as np
import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image
from vision_msgs.msg import BoundingBox2D, Detection2D, Detection2DArray, ObjectHypothesisWithPose


def main(n: int) -> int:
    rclpy.init()
    node = rclpy.create_node("dds_test_publisher")
    # transient local: a reader that learns of the writer late (the writer may know the reader first) still gets
    # every sample from the writer's history
    qos = QoSProfile(depth=n, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    det_pub = node.create_publisher(Detection2DArray, "/test/detections", qos)
    img_pub = node.create_publisher(Image, "/test/image", qos)
    deadline = time.monotonic() + 30
    while (
        det_pub.get_subscription_count() == 0 or img_pub.get_subscription_count() == 0
    ) and time.monotonic() < deadline:
        time.sleep(0.05)
    for i in range(n):
        arr = Detection2DArray()
        arr.header.stamp.sec, arr.header.frame_id = i, "camera"
        d = Detection2D()
        d.id = f"obj{i}"
        d.bbox = BoundingBox2D()
        d.bbox.center.position.x, d.bbox.center.position.y = 100.0 + i, 50.5
        d.bbox.size_x, d.bbox.size_y = 20.0, 40.0
        hyp = ObjectHypothesisWithPose()
        hyp.hypothesis.class_id, hyp.hypothesis.score = "pedestrian", 0.25 + i / 100
        hyp.pose.pose.position.x = 12.5
        d.results.append(hyp)
        arr.detections.append(d)
        img = Image()
        img.header.stamp.sec = i
        img.height, img.width, img.encoding, img.step = 4, 6, "rgb8", 18
        img.data = (np.arange(72, dtype=np.uint16) * (i + 1) % 256).astype(np.uint8).tobytes()
        det_pub.publish(arr)
        img_pub.publish(img)
        time.sleep(0.02)
    deadline = time.monotonic() + 60  # keep the history alive until the subscriber has left (it got everything)
    while (det_pub.get_subscription_count() or img_pub.get_subscription_count()) and time.monotonic() < deadline:
        time.sleep(0.05)
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
