"""The verification layer's user-facing error."""

from __future__ import annotations

from perception_safety.errors import PerceptionSafetyError


class VerificationError(PerceptionSafetyError):
    """Bad probabilities, a controller leaving the state space, an unknown label, or a Storm failure."""
