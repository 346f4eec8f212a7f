"""Offline metrics: distance-binned confusion matrices, PCD/mPCD, SG/RH/AC, BBSL test oracle (no ROS imports)."""
