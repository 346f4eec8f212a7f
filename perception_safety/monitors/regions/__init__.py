"""Camera-relative monitor regions: image fractions, pixels with the image size they were drawn for, and a metric
ground-plane corridor projected with the camera's intrinsics and mounting (docs/monitors.md, "Regions")."""
