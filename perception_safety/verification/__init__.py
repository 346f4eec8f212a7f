"""Markov chains built from confusion matrices and model checked with Storm (no ROS imports)."""
