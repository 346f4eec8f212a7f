"""Safety monitor + BBSL monitor on one detections topic: ``ros2 launch perception_safety monitors_bbsl.launch.py``.

``specs`` / ``bbsl_config`` are set in ``config/bbsl_monitor.yaml`` (relative paths resolve in the package share).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description():
    share = get_package_share_directory("perception_safety")
    detections = LaunchConfiguration("detections_topic")
    return LaunchDescription([
        DeclareLaunchArgument("image_topic", default_value="/camera/image_raw"),
        DeclareLaunchArgument("detections_topic", default_value="/detections"),
        DeclareLaunchArgument("monitor_params", default_value=os.path.join(share, "config", "safety_monitor.yaml")),
        DeclareLaunchArgument("bbsl_params", default_value=os.path.join(share, "config", "bbsl_monitor.yaml")),
        Node(
            package="perception_safety",
            executable="safety_monitor",
            name="safety_monitor",
            output="screen",
            parameters=[LaunchConfiguration("monitor_params")],
            remappings=[("/camera/image_raw", LaunchConfiguration("image_topic")), ("/detections", detections)],
        ),
        Node(
            package="perception_safety",
            executable="bbsl_monitor",
            name="bbsl_monitor",
            output="screen",
            parameters=[LaunchConfiguration("bbsl_params")],
            remappings=[("/detections", detections)],
        ),
    ])
