"""Runtime monitors (contrast, plausibility, stop region) and image perturbations.

Pure objects with ``update(frame) -> MonitorResult`` and ``reset()``, the same online and offline.
"""
