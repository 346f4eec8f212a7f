"""Input/output: rosbag2 bags (rosbags), datasets, episode logs and config loading. Never imported by the science layers."""
