"""The package's user-facing error: the CLI prints its message and exits with code 2."""

from __future__ import annotations


class PerceptionSafetyError(Exception):
    """An error caused by the user's input (file, config, spec, data) with a message naming it."""
