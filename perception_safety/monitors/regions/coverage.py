"""Does an image-rectangle stop region cover the ground it must protect, on the camera in use?

A watched box stops the car when it overlaps the rectangle. A pedestrian standing on flat ground at ``(x, y)`` has
its foot at the pixel of that ground point and its box reaches up from there, so the rectangle stops it when the foot
pixel lies inside the rectangle below its top row (positive overlap). The rectangle therefore covers a ground corridor
when every foot pixel of the corridor the camera sees (its outline projected with the intrinsics and mounting, clipped
to the image: feet nearer than the bottom row are cut off at it) lies inside. The outline is convex, so its vertices
decide. What the camera cannot place (no intrinsics, no mounting height) cannot be checked: a `RegionError` too.
"""

from __future__ import annotations

import math

import numpy as np

from perception_safety.monitors.regions.forms import CameraMount, GroundCorridor, Region
from perception_safety.monitors.regions.resolve import CameraInUse, Rect, RegionError, corridor_for

#: pixels of slack on the rectangle's sides (rounded fractions; a foot on the side edge still overlaps)
EDGE_SLACK_PX = 1e-6


def check_covers(name: str, region: Region, rect: Rect, spec: GroundCorridor, camera: CameraInUse,
                 mount: CameraMount, corridor_name: str = "stop_region.corridor") -> None:
    """`RegionError` naming ``name``, the image size and how far the rectangle ``rect`` (``region`` placed on the
    camera) reaches, unless it covers the corridor ``spec`` at its ``far_m``; also when the camera model or the
    mounting needed to check it is missing."""
    w, h = camera.size
    subject = f"checking that {region.describe()} covers {corridor_name} ({spec.describe()})"
    geo = corridor_for(name, spec, camera, mount, subject)
    outline = geo.outline(None)
    x0, y0, x1, y1 = rect
    u, v = outline[:, 0], outline[:, 1]
    inside = ((u >= x0 - EDGE_SLACK_PX) & (u <= x1 + EDGE_SLACK_PX) & (v > y0 + 1e-9) & (v <= y1 + EDGE_SLACK_PX))
    if inside.all():
        return
    cam, k = geo.camera, geo.camera.intrinsics
    gaps = []
    reach = float(cam.to_ground(np.array([k.cx]), np.array([y0]))[0][0])
    if not (math.isfinite(reach) and reach >= spec.far_m):
        gaps.append(f"it reaches only {reach:.1f} m ahead (top row {y0:g})" if math.isfinite(reach) else
                    f"its top row {y0:g} is at or above the horizon")
    bottom = float(cam.to_ground(np.array([k.cx]), np.array([float(h)]))[0][0])  # the bottom row's distance
    near, v_near = (spec.near_m, cam.row_of_distance(spec.near_m)) if spec.near_m > bottom else (bottom, float(h))
    if y1 < v_near - EDGE_SLACK_PX:
        start = float(cam.to_ground(np.array([k.cx]), np.array([y1]))[0][0])
        gaps.append(f"it starts only {start:.1f} m ahead (bottom row {y1:g})")
    sides = cam.to_ground(np.array([max(x0, 0.0), min(x1, float(w))]), np.full(2, v_near))[1]
    centre = -mount.lateral_offset_m
    covered = min(float(sides[0]) - centre, centre - float(sides[1]))
    if covered < spec.half_width_m - 1e-9:
        gaps.append(f"it covers only |y| <= {covered:.2f} m at {near:.1f} m")
    if not gaps:
        gaps.append("the corridor's image outline leaves it")
    raise RegionError(f"{name}: {region.describe()} does not cover {corridor_name} ({spec.describe()}) on the {w}x{h} "
                      f"image (camera {mount.height_m:g} m high, pitch {mount.pitch_deg:g} deg): " + ", ".join(gaps)
                      + " — a pedestrian in the corridor there would not stop the car (extend the region, or use "
                      "rule: either or corridor)")
