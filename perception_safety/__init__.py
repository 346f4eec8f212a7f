"""perception_safety: is a camera object detector safe enough for this planner, and is its monitor worth it?"""

__version__ = "0.1.0"
