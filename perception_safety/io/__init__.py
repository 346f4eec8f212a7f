"""Input/output: rosbag2 bags (rosbags), datasets, episode logs, config loading. Never imported by science layers."""
