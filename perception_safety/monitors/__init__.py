"""Runtime monitors (contrast, plausibility, stop region) and image perturbations; pure objects, the same online and offline."""
