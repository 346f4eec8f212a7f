"""ament_python build of perception_safety: works with ``pip install -e .`` and in a colcon workspace."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "perception_safety"

# Runtime dependencies as compatible ranges (the exact, tested pins are in constraints.txt; `make` installs those).
# In a colcon workspace these are not resolved by pip: package.xml names their rosdep keys.
INSTALL_REQUIRES = [
    "numpy>=2.0,<3",
    "scipy>=1.13,<2",
    "stormpy>=2.0,<3",
    "rosbags>=0.11,<0.12",
    "lz4>=4,<5",  # MCAP chunks (io/bag/mcap_file; rosbags depends on it too)
    "backports.zstd>=1,<2; python_version < '3.14'",  # MCAP chunks; the standard library's compression.zstd after
    "opencv-python-headless>=4.9,<6",
    "albumentations>=2.0,<3",
    "pydantic>=2.7,<3",
    "PyYAML>=6.0,<7",
    "rich>=13.7,<16",
    "matplotlib>=3.8,<4",
    "pillow>=10,<14",  # report figures re-encoded as palette PNGs (report/html.compact_png)
    "lark>=1.1,<2",
    "z3-solver>=4.12,<6",
]
EXTRAS_REQUIRE = {
    # live ROS 2 nodes, replay and online from PyPI wheels (on a ROS 2 install the distro provides these instead)
    "ros": [
        "ros-rclpy>=9.1,<10",
        "ros-rmw-fastrtps-cpp>=9.3,<10",
        "ros-std-msgs>=5.5,<6",
        "ros-sensor-msgs>=5.5,<6",
        "ros-visualization-msgs>=5.5,<6",
        "ros-diagnostic-msgs>=5.5,<6",
        "ros-geometry-msgs>=5.5,<6",
        "ros-nav-msgs>=5.5,<6",
        "ros-builtin-interfaces>=2.3,<3",
        "ros-rcl-interfaces>=2.3,<3",
        "ros-ament-index-python>=1.11,<2",
    ],
    "ray": ["ray>=2.40,<3"],  # evaluate/episodes --executor ray
    "carla": ["carla>=0.9.15,<0.10"],  # episodes --backend carla, carla_ground_truth node
    "onnx": ["onnxruntime>=1.17,<2"],  # detectors: ONNX models
    "test": ["pytest>=8", "pytest-timeout>=2.3", "hypothesis>=6.100", "onnx>=1.16,<2", "pycocotools>=2.0.8,<3"],
}

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
        (f"share/{PACKAGE}/config/viewers", glob("config/viewers/*.json") + glob("config/viewers/*.rviz")),
        (f"share/{PACKAGE}/config/detectors", glob("config/detectors/*.yaml")),
        (f"share/{PACKAGE}/config/controllers", glob("config/controllers/*.csv")),
    ],
    package_data={PACKAGE: ["io/msg/vision_msgs/*.msg", "io/msg/autoware_perception_msgs/*.msg", "bbsl/*.lark"]},
    python_requires=">=3.11",
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS_REQUIRE,
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
