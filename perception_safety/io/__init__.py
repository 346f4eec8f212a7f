"""Input/output: rosbag2 bags (rosbags), datasets, episode logs, config files. Science layers never import it."""
