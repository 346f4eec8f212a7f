"""The error every PCD step raises on samples that cannot give a PCD."""

from __future__ import annotations

from perception_safety.errors import PerceptionSafetyError


class PCDError(PerceptionSafetyError):
    """The samples cannot give a PCD (too few, non-finite, degenerate); the message says why."""
