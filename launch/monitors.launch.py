"""The safety monitor alone: ``ros2 launch perception_safety monitors.launch.py image_topic:=/cam``.

Parameters come from ``config/safety_monitor.yaml`` (``params_file:=`` to use another); the input topics are
remapped from the launch arguments. The node uses the Fast DDS profile with a 64 MB shared-memory segment
(1080p frames; UDP restricted to loopback) by default; ``use_shm_profile:=false`` selects Fast DDS's built-in
transports instead (multi-machine set-ups; frames over ~0.5 MB may be lost).
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, SetEnvironmentVariable
from launch.conditions import IfCondition, UnlessCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription


def generate_launch_description():
    share = get_package_share_directory("perception_safety")
    profile = os.path.join(share, "config", "fastdds_loopback_shm.xml")
    return LaunchDescription([
        DeclareLaunchArgument("image_topic", default_value="/camera/image_raw"),
        DeclareLaunchArgument("detections_topic", default_value="/detections"),
        DeclareLaunchArgument("params_file", default_value=os.path.join(share, "config", "safety_monitor.yaml")),
        DeclareLaunchArgument("use_shm_profile", default_value="true"),
        SetEnvironmentVariable("FASTDDS_DEFAULT_PROFILES_FILE", profile,
                               condition=IfCondition(LaunchConfiguration("use_shm_profile"))),
        SetEnvironmentVariable("FASTRTPS_DEFAULT_PROFILES_FILE", profile,
                               condition=IfCondition(LaunchConfiguration("use_shm_profile"))),
        SetEnvironmentVariable("PERCEPTION_SAFETY_DDS_PROFILE", "builtin",
                               condition=UnlessCondition(LaunchConfiguration("use_shm_profile"))),
        Node(
            package="perception_safety",
            executable="safety_monitor",
            name="safety_monitor",
            output="screen",
            parameters=[LaunchConfiguration("params_file")],
            remappings=[
                ("/camera/image_raw", LaunchConfiguration("image_topic")),
                ("/detections", LaunchConfiguration("detections_topic")),
            ],
        ),
    ])
