"""Offline metrics: distance-binned confusion matrices, PCD/mPCD, SG/RH/AC returns, the BBSL test oracle (no ROS imports)."""
