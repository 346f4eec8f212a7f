"""ament_python build of perception_safety: works with ``pip install -e .`` and in a colcon workspace."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "perception_safety"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(include=[PACKAGE, f"{PACKAGE}.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml") + glob("config/*.xml")),
        (f"share/{PACKAGE}/config/specs", glob("config/specs/*.bbsl")),
        (f"share/{PACKAGE}/config/detectors", glob("config/detectors/*.yaml")),
        (f"share/{PACKAGE}/config/controllers", glob("config/controllers/*.csv")),
    ],
    package_data={PACKAGE: ["io/msg/vision_msgs/*.msg", "bbsl/*.lark"]},
    install_requires=["setuptools"],
    zip_safe=False,
    maintainer="perception_safety developers",
    maintainer_email="perception-safety@example.org",
    description="Safety evaluation of learned camera object detectors for automated driving (ROS 2).",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "perception-safety = perception_safety.cli:main",
            "safety_monitor = perception_safety.ros.safety_monitor_node:main",
            "bbsl_monitor = perception_safety.ros.bbsl_monitor_node:main",
            "returns_logger = perception_safety.ros.returns_logger_node:main",
            "carla_ground_truth = perception_safety.ros.carla_ground_truth_node:main",
            "detector = perception_safety.ros.detector_node:main",
        ],
    },
)
