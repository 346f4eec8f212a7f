"""Monitors, BBSL and the returns logger beside the CARLA ROS bridge (its ``/carla/<role_name>/...`` topic names).

``ros2 launch perception_safety carla.launch.py role_name:=ego_vehicle camera_id:=rgb_front
detections_topic:=/detector/detections log_path:=/data/episodes.jsonl``. Every topic is a launch argument, so
other naming schemes remap here. The bridge's camera is ``/carla/<role>/<camera>/image`` and odometry
``/carla/<role>/odometry``; ground truth (vision_msgs/Detection2DArray) and collision stamps (std_msgs/Header,
e.g. relayed from the bridge's CarlaCollisionEvent header) come from the scenario runner; the ground truth can come
from the ``carla_ground_truth`` node started here (the world's actors projected into the bridge camera).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description():
    share = get_package_share_directory("perception_safety")
    role, camera = LaunchConfiguration("role_name"), LaunchConfiguration("camera_id")
    image = ["/carla/", role, "/", camera, "/image"]
    detections = LaunchConfiguration("detections_topic")
    return LaunchDescription([
        DeclareLaunchArgument("role_name", default_value="ego_vehicle"),
        DeclareLaunchArgument("camera_id", default_value="rgb_front"),
        DeclareLaunchArgument("detections_topic", default_value="/detector/detections"),
        DeclareLaunchArgument("ground_truth_topic", default_value="/scenario/ground_truth"),
        DeclareLaunchArgument("collision_topic", default_value="/scenario/collision_stamp"),
        DeclareLaunchArgument("log_path", default_value="episodes.jsonl"),
        DeclareLaunchArgument("monitor_params", default_value=os.path.join(share, "config", "safety_monitor.yaml")),
        DeclareLaunchArgument("bbsl_params", default_value=os.path.join(share, "config", "bbsl_monitor.yaml")),
        DeclareLaunchArgument("logger_params", default_value=os.path.join(share, "config", "returns_logger.yaml")),
        DeclareLaunchArgument("ground_truth_params",
                              default_value=os.path.join(share, "config", "carla_ground_truth.yaml")),
        Node(
            package="perception_safety",
            executable="carla_ground_truth",
            name="carla_ground_truth",
            output="screen",
            parameters=[LaunchConfiguration("ground_truth_params"),
                        {"role_name": role, "camera_role_name": camera}],
            remappings=[("/carla/ego_vehicle/rgb_front/image", image),
                        ("/scenario/ground_truth", LaunchConfiguration("ground_truth_topic"))],
        ),
        Node(
            package="perception_safety",
            executable="safety_monitor",
            name="safety_monitor",
            output="screen",
            parameters=[LaunchConfiguration("monitor_params"), {"image_transport": "raw"}],  # the bridge's Image
            remappings=[("/camera/image_raw", image), ("/detections", detections),
                        ("/camera/camera_info", ["/carla/", role, "/", camera, "/camera_info"])],
        ),
        Node(
            package="perception_safety",
            executable="bbsl_monitor",
            name="bbsl_monitor",
            output="screen",
            parameters=[LaunchConfiguration("bbsl_params")],
            remappings=[("/detections", detections)],
        ),
        Node(
            package="perception_safety",
            executable="returns_logger",
            name="returns_logger",
            output="screen",
            parameters=[LaunchConfiguration("logger_params"), {"log_path": LaunchConfiguration("log_path")}],
            remappings=[
                ("/ego/odometry", ["/carla/", role, "/odometry"]),
                ("/ground_truth", LaunchConfiguration("ground_truth_topic")),
                ("/ego/collision_stamp", LaunchConfiguration("collision_topic")),
            ],
        ),
    ])
