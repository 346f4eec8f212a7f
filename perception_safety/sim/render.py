"""Software renderer of the builtin scene: textured road, lane marks, sidewalks, facades, sky, cuboid actors.

The static background is ray-cast once per camera (it is invariant along the road except for its
texture, which is periodic), so a frame costs one texture gather plus a few filled polygons.
Actors are drawn far to near (painter's order) into the image and into an id mask; the mask gives
each actor's visible pixel count for occlusion-aware ground truth.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import cv2
import numpy as np

from perception_safety.sim.camera import CameraPose, Intrinsics, cuboid_corners, project_points
from perception_safety.sim.scenario import ScenarioConfig

GROUND_TEXEL = 0.05  # m per ground texel
WALL_TEXEL = 0.1  # m per facade texel
GROUND_PERIOD = 12.0  # m; multiple of the 6 m lane-dash period
WALL_PERIOD = 36.0  # m; three 12 m building fronts
WALL_HEIGHT = 14.0  # m
HAZE_LEVELS = 8
HAZE_RANGE = 220.0  # m, e-folding distance of the haze
_SUBPIX = 4  # cv2 fixed-point bits for polygon vertices
_NEAR = 0.3


_Face = tuple[float, np.ndarray, tuple[int, int, int], int]  # depth, polygon (u, v), colour, actor id


@dataclass(frozen=True)
class Part:
    """A coloured cuboid: centre (scenario frame, m), half-sizes (m), RGB colour."""

    center: tuple[float, float, float]
    extent: tuple[float, float, float]
    color: tuple[int, int, int]


@dataclass(frozen=True)
class Actor:
    """A renderable actor (id >= 1 in the id mask) made of cuboid parts."""

    actor_id: int
    parts: tuple[Part, ...]


def _value_noise(rng: np.random.Generator, shape: tuple[int, int], cell: int) -> np.ndarray:
    """Smooth periodic noise in [-1, 1] by bilinear upsampling of a coarse random grid."""
    coarse = rng.uniform(-1.0, 1.0, size=(max(1, shape[0] // cell), max(1, shape[1] // cell))).astype(np.float32)
    tiled = np.concatenate([coarse, coarse[:1]], axis=0)
    tiled = np.concatenate([tiled, tiled[:, :1]], axis=1)
    up = cv2.resize(tiled, (shape[1] + shape[1] // coarse.shape[1], shape[0] + shape[0] // coarse.shape[0]),
                    interpolation=cv2.INTER_LINEAR)
    return up[: shape[0], : shape[1]]


class SceneTextures:
    """Periodic ground and facade textures built from the road layout and a seed (RGB uint8)."""

    def __init__(self, cfg: ScenarioConfig, seed: int = 7) -> None:
        rng = np.random.default_rng(seed)
        road, lane_y = cfg.road, cfg.ego.lane_y
        lw = road.lane_width
        self.y_right_edge = lane_y - lw / 2.0  # ego lane's right edge
        self.y_left_edge = lane_y + 1.5 * lw  # opposite lane's left edge
        self.y_right_curb = self.y_right_edge - road.parking_width
        self.y_left_curb = self.y_left_edge
        self.y_right_wall = self.y_right_curb - road.sidewalk_width - road.building_setback
        self.y_left_wall = self.y_left_curb + road.sidewalk_width + road.building_setback
        self.y0 = self.y_right_wall
        nx = round(GROUND_PERIOD / GROUND_TEXEL)
        ny = int(np.ceil((self.y_left_wall - self.y_right_wall) / GROUND_TEXEL)) + 1
        xs = (np.arange(nx) + 0.5) * GROUND_TEXEL
        ys = self.y0 + (np.arange(ny) + 0.5) * GROUND_TEXEL
        gx, gy = np.meshgrid(xs, ys, indexing="ij")
        fine = rng.normal(0.0, 1.0, size=(nx, ny)).astype(np.float32)
        coarse = _value_noise(rng, (nx, ny), 16)
        asphalt = 92.0 + 30.0 * fine + 20.0 * coarse
        base = np.repeat(asphalt[:, :, None], 3, axis=2)
        base[..., 2] += 4.0
        on_road = (gy >= self.y_right_curb) & (gy <= self.y_left_curb)
        sidewalk = ~on_road
        tiles = ((np.floor(gx / 0.6) + np.floor(gy / 0.6)) % 2).astype(np.float32)
        joint = (np.mod(gx, 0.6) < 0.04) | (np.mod(gy - self.y0, 0.6) < 0.04)
        paving = 150.0 + 18.0 * tiles + 8.0 * fine - 45.0 * joint
        for c, tint in enumerate((6.0, 0.0, -8.0)):
            base[..., c] = np.where(sidewalk, paving + tint, base[..., c])
        curb = (np.abs(gy - self.y_right_curb) < 0.15) | (np.abs(gy - self.y_left_curb) < 0.15)
        base[curb] = 200.0
        white = 225.0 + 10.0 * fine
        centre = (np.abs(gy - (lane_y + lw / 2.0)) < 0.08) & (np.mod(gx, 6.0) < 3.0)
        edges = (np.abs(gy - self.y_right_edge) < 0.08) | (np.abs(gy - (self.y_left_edge - 0.2)) < 0.08)
        for mask in (centre, edges):
            for c in range(3):
                base[..., c] = np.where(mask, white, base[..., c])
        self.ground = np.clip(base, 0, 255).astype(np.uint8)

        wx = round(WALL_PERIOD / WALL_TEXEL)
        wz = round(WALL_HEIGHT / WALL_TEXEL)
        xs = (np.arange(wx) + 0.5) * WALL_TEXEL
        zs = (np.arange(wz) + 0.5) * WALL_TEXEL
        fx, fz = np.meshgrid(xs, zs, indexing="ij")
        palette = np.array([[182, 140, 110], [150, 150, 160], [205, 190, 150]], dtype=np.float32)
        block = np.minimum((fx // 12.0).astype(np.int64), 2)
        wall = palette[block] + 24.0 * rng.normal(0.0, 1.0, size=(wx, wz, 1)).astype(np.float32)
        window = (np.mod(fx, 3.0) > 0.8) & (np.mod(fx, 3.0) < 2.2) & (np.mod(fz, 3.0) > 1.0) & (fz > 3.0)
        door = (np.mod(fx, 12.0) > 5.0) & (np.mod(fx, 12.0) < 6.6) & (fz < 2.4)
        wall[window] = np.array([35.0, 45.0, 65.0]) + 30.0 * (np.mod(fz[window], 3.0) > 2.2)[:, None]
        wall[door] = np.array([70.0, 45.0, 30.0])
        self.wall = np.clip(wall, 0, 255).astype(np.uint8)


class Renderer:
    """Renders the scenario from the ego camera; ``render`` returns (RGB image, actor id mask)."""

    def __init__(self, cfg: ScenarioConfig, textures: SceneTextures | None = None, cache_size: int = 96) -> None:
        cam = cfg.camera
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()
        self.k = Intrinsics.from_fov(cam.width, cam.height, cam.fov_deg)
        self.pose = CameraPose(cam.x, cam.y, cam.z, np.radians(cam.pitch_deg))
        self.tex = textures or SceneTextures(cfg)
        self._precompute()

    def _precompute(self) -> None:
        k, pose, tex = self.k, self.pose, self.tex
        h, w = k.height, k.width
        u = (np.arange(w, dtype=np.float64) + 0.5)[None, :]
        v = (np.arange(h, dtype=np.float64) + 0.5)[:, None]
        # ray in camera forward/left/up, then rotated into ego axes by the pitch
        dl = np.broadcast_to(-(u - k.cx) / k.fx, (h, w))
        du = np.broadcast_to(-(v - k.cy) / k.fy, (h, w))
        c, s = np.cos(pose.pitch), np.sin(pose.pitch)
        rx = c * 1.0 - s * du
        ry = dl
        rz = s * 1.0 + c * du
        inf = np.full((h, w), np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            t_ground = np.where(rz < -1e-9, -pose.z / rz, inf)
            t_right = np.where(ry < -1e-9, (tex.y_right_wall - pose.y) / ry, inf)
            t_left = np.where(ry > 1e-9, (tex.y_left_wall - pose.y) / ry, inf)
        z_right = pose.z + t_right * rz
        z_left = pose.z + t_left * rz
        t_right = np.where((z_right >= 0) & (z_right <= WALL_HEIGHT), t_right, inf)
        t_left = np.where((z_left >= 0) & (z_left <= WALL_HEIGHT), t_left, inf)
        t_wall = np.minimum(t_right, t_left)
        t_best = np.minimum(t_ground, t_wall)
        ground = np.isfinite(t_ground) & (t_ground <= t_wall)
        wall = ~ground & np.isfinite(t_wall)
        t_hit = np.where(np.isfinite(t_best), t_best, 0.0)
        gx = pose.x + t_hit * rx
        gy = pose.y + t_hit * ry
        gz = pose.z + t_hit * rz
        # Texture atlas (RGBA packed in uint32): HAZE_LEVELS copies of the doubled ground and facade
        # textures blended towards the haze colour, then one sky colour per row. Each pixel keeps a
        # base index into it; a frame adds the ego's texel shift for its surface type and gathers.
        nx, ny = tex.ground.shape[:2]
        wx, wz = tex.wall.shape[:2]
        haze_rgb = np.array([190.0, 205.0, 220.0], dtype=np.float32)
        ground2 = np.concatenate([tex.ground, tex.ground], axis=0).reshape(-1, 3).astype(np.float32)
        wall2 = np.concatenate([tex.wall, tex.wall], axis=0).reshape(-1, 3).astype(np.float32)
        levels = []
        for lvl in range(HAZE_LEVELS):
            hz = lvl / HAZE_LEVELS
            levels.append(ground2 + (haze_rgb - ground2) * hz)
            levels.append(wall2 + (haze_rgb - wall2) * hz)
        sky = np.zeros((h, 3), dtype=np.float32)
        frac = np.clip(np.arange(h) / max(1.0, k.cy), 0.0, 1.0)[:, None]
        sky[:] = (1 - frac) * np.array([70.0, 120.0, 190.0]) + frac * np.array([185.0, 205.0, 225.0])
        levels.append(sky)
        rgb = np.clip(np.round(np.concatenate(levels)), 0, 255).astype(np.uint8)
        rgba = np.zeros((len(rgb), 4), dtype=np.uint8)
        rgba[:, :3] = rgb
        self._atlas = rgba.view(np.uint32).ravel()
        g_size, w_size = len(ground2), len(wall2)
        block = g_size + w_size
        dist = np.nan_to_num(t_best, posinf=1e6)
        level = np.minimum((HAZE_LEVELS * (1.0 - np.exp(-dist / HAZE_RANGE))).astype(np.int64), HAZE_LEVELS - 1)
        base = np.zeros((h, w), dtype=np.int64)
        g_ix = np.floor(gx / GROUND_TEXEL).astype(np.int64) % nx
        g_iy = np.clip(((gy - tex.y0) / GROUND_TEXEL).astype(np.int64), 0, ny - 1)
        base = np.where(ground, level * block + g_ix * ny + g_iy, base)
        # the left facade is shifted in phase so the two sides differ
        w_xf = gx / WALL_TEXEL + np.where(gy > 0, 0.37 * wx, 0.0)
        w_ix = np.floor(w_xf).astype(np.int64) % wx
        w_iz = np.clip((gz / WALL_TEXEL).astype(np.int64), 0, wz - 1)
        base = np.where(wall, level * block + g_size + w_ix * wz + w_iz, base)
        rows = np.broadcast_to(np.arange(h)[:, None], (h, w))
        base = np.where(~(ground | wall), HAZE_LEVELS * block + rows, base)
        self._base = base.astype(np.int32 if len(self._atlas) < 2**31 - 2**24 else np.int64)
        self._surface = np.where(ground, 1, np.where(wall, 2, 0)).astype(np.uint8)
        self._nx, self._ny, self._wx, self._wz = nx, ny, wx, wz
        # rotated unit axes of the ego frame seen from the camera (for back-face culling)
        axes_cam = pose.ego_to_camera(np.eye(3) + np.array([pose.x, pose.y, pose.z])).astype(np.float64)
        self._face_normals = np.array([sign * axes_cam[ax] for _, (ax, sign), _ in _FACES])

    def background(self, cam_x: float) -> np.ndarray:
        """The static scene seen from a camera at road coordinate ``cam_x`` (RGB uint8, a fresh array).

        Backgrounds are kept in a small LRU cache keyed by the texture shifts: every episode drives the
        same trajectory until it brakes, so most frames of a sweep are cache hits.
        """
        g_shift = int(np.floor(cam_x / GROUND_TEXEL)) % self._nx
        w_shift = int(np.floor(cam_x / WALL_TEXEL)) % self._wx
        key = (g_shift, w_shift)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit.copy()
        img = self._gather(g_shift, w_shift)
        if self.cache_size > 0:
            self._cache[key] = img
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
            return img.copy()
        return img

    def _gather(self, g_shift: int, w_shift: int) -> np.ndarray:
        lut = np.array([0, g_shift * self._ny, w_shift * self._wz], dtype=self._base.dtype)
        idx = np.take(lut, self._surface)
        idx += self._base
        packed = np.take(self._atlas, idx)
        rgba = packed.view(np.uint8).reshape(self.k.height, self.k.width, 4)
        return cv2.cvtColor(rgba, cv2.COLOR_RGBA2RGB)

    def render(self, ego_x: float, actors: list[Actor]) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
        """Image, id mask (uint8; 0 = background, else ``actor_id``) and each drawn actor's unoccluded
        silhouette pixel count, for the ego at ``ego_x``."""
        img = self.background(ego_x + self.pose.x)
        mask = np.zeros((self.k.height, self.k.width), dtype=np.uint8)
        scale = float(1 << _SUBPIX)
        faces = self._faces(ego_x, actors)
        for _, poly, color, aid in faces:
            pts = np.round(np.clip(poly, -1e5, 1e5) * scale).astype(np.int32)
            cv2.fillConvexPoly(img, pts, color, lineType=cv2.LINE_8, shift=_SUBPIX)
            cv2.fillConvexPoly(mask, pts, aid, lineType=cv2.LINE_8, shift=_SUBPIX)
        by_actor: dict[int, list[np.ndarray]] = {}
        for _, poly, _, aid in faces:
            by_actor.setdefault(aid, []).append(poly)
        return img, mask, {aid: self._silhouette(polys) for aid, polys in by_actor.items()}

    def _silhouette(self, polys: list[np.ndarray]) -> int:
        """Pixels inside the image covered by the union of one actor's face polygons."""
        allpts = np.concatenate(polys)
        x0 = int(np.clip(np.floor(allpts[:, 0].min()), 0, self.k.width))
        y0 = int(np.clip(np.floor(allpts[:, 1].min()), 0, self.k.height))
        x1 = int(np.clip(np.ceil(allpts[:, 0].max()) + 1, 0, self.k.width))
        y1 = int(np.clip(np.ceil(allpts[:, 1].max()) + 1, 0, self.k.height))
        if x1 <= x0 or y1 <= y0:
            return 0
        crop = np.zeros((y1 - y0, x1 - x0), dtype=np.uint8)
        scale = float(1 << _SUBPIX)
        offset = np.array([x0, y0], dtype=np.float64)
        for poly in polys:
            pts = np.round(np.clip(poly - offset, -1e5, 1e5) * scale).astype(np.int32)
            cv2.fillConvexPoly(crop, pts, 1, lineType=cv2.LINE_8, shift=_SUBPIX)
        return int(np.count_nonzero(crop))

    def _faces(self, ego_x: float, actors: list[Actor]) -> list[_Face]:
        """Visible faces of all actors as (depth, polygon uv, colour, id), far to near."""
        faces: list[_Face] = []
        for actor in actors:
            for part in actor.parts:
                faces.extend(self._part_faces(ego_x, part, actor.actor_id))
        faces.sort(key=lambda f: -f[0])
        return faces

    def _part_faces(self, ego_x: float, part: Part, aid: int) -> list[_Face]:
        center = np.array(part.center, dtype=np.float64)
        center[0] -= ego_x
        corners = self.pose.ego_to_camera(cuboid_corners(center, np.array(part.extent)))
        if (corners[:, 0] < _NEAR).all():
            return []
        centres = corners[_FACE_IDX].mean(axis=1)  # (6, 3)
        # back-face culling: a face is seen when the camera lies on its outer side
        facing = np.einsum("ij,ij->i", self._face_normals, centres) < 0.0
        any_behind = bool((corners[:, 0] < _NEAR).any())
        out = []
        for f in np.flatnonzero(facing):
            poly3 = corners[_FACE_IDX[f]]
            if any_behind:
                poly3 = _clip_near(poly3, _NEAR)
                if poly3 is None:
                    continue
            uv = project_points(self.k, poly3)
            shade = _FACE_SHADE[f]
            color = (min(255, int(part.color[0] * shade)), min(255, int(part.color[1] * shade)),
                     min(255, int(part.color[2] * shade)))
            out.append((float(np.sqrt(poly3.mean(axis=0) @ poly3.mean(axis=0))), uv, color, aid))
        return out


# Faces by corner indices (order of cuboid_corners: sign bits x, y, z), outward axis, shading factor.
_FACES = (
    ((4, 5, 7, 6), (0, 1.0), 0.85),  # +x (front)
    ((0, 2, 3, 1), (0, -1.0), 0.85),  # -x
    ((2, 6, 7, 3), (1, 1.0), 0.7),  # +y (left)
    ((0, 1, 5, 4), (1, -1.0), 0.7),  # -y (right)
    ((1, 3, 7, 5), (2, 1.0), 1.0),  # +z (top)
    ((0, 4, 6, 2), (2, -1.0), 0.4),  # -z
)


_FACE_IDX = np.array([f[0] for f in _FACES], dtype=np.int64)
_FACE_SHADE = tuple(f[2] for f in _FACES)


def _clip_near(poly: np.ndarray, near: float) -> np.ndarray | None:
    """Sutherland-Hodgman clip of a convex 3D polygon against the plane x = near."""
    out = []
    n = len(poly)
    for i in range(n):
        a, b = poly[i], poly[(i + 1) % n]
        a_in, b_in = a[0] >= near, b[0] >= near
        if a_in:
            out.append(a)
        if a_in != b_in:
            t = (near - a[0]) / (b[0] - a[0])
            out.append(a + t * (b - a))
    if len(out) < 3:
        return None
    return np.array(out)
