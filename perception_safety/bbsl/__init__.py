"""BBSL, the Bounding Box Specification Language: grammar, parser, checker, evaluator, analysis (no ROS imports)."""
