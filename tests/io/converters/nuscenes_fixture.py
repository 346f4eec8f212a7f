"""A small nuScenes-format data set built in code, following the public table schema (tokens, scene, sample,
sample_data, sensor, calibrated_sensor, ego_pose, sample_annotation, instance, category) and a results file in
the submission format. Ego poses are rotated so that global and ego frames differ."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

CATEGORIES = ["human.pedestrian.adult", "vehicle.car", "animal", "human.pedestrian.child"]


def quaternion_z(yaw: float) -> list[float]:
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


def to_global(ego_xy: tuple[float, float], ego_t: list[float], yaw: float) -> list[float]:
    c, s = math.cos(yaw), math.sin(yaw)
    x, y = ego_xy
    return [ego_t[0] + c * x - s * y, ego_t[1] + s * x + c * y, ego_t[2] + 1.0]


def build(folder: Path, n_scenes: int = 3, samples_per_scene: int = 6, seed: int = 0) -> dict[str, Any]:
    """Write the tables and ``results.json`` into ``folder``; returns what the test needs to know (ground truth
    positions in the ego frame per sample, the expected counts)."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    t: dict[str, list[dict[str, Any]]] = {k: [] for k in (
        "scene", "sample", "sample_data", "sensor", "calibrated_sensor", "ego_pose", "sample_annotation",
        "instance", "category")}
    t["sensor"] = [{"token": "s-lidar", "channel": "LIDAR_TOP", "modality": "lidar"},
                   {"token": "s-cam", "channel": "CAM_FRONT", "modality": "camera"}]
    t["calibrated_sensor"] = [
        {"token": "cs-lidar", "sensor_token": "s-lidar", "translation": [0.9, 0, 1.8], "rotation": [1, 0, 0, 0],
         "camera_intrinsic": []},
        {"token": "cs-cam", "sensor_token": "s-cam", "translation": [1.7, 0, 1.5], "rotation": [1, 0, 0, 0],
         "camera_intrinsic": []},
    ]
    t["category"] = [{"token": f"cat-{i}", "name": n, "description": ""} for i, n in enumerate(CATEGORIES)]
    truth: dict[str, list[tuple[str, float, float]]] = {}
    results: dict[str, list[dict[str, Any]]] = {}
    expected = {"skipped_animal": 0, "skipped_empty": 0, "frames": 0}
    for sc in range(n_scenes):
        scene_token = f"scene-{sc}"
        t["scene"].append({"token": scene_token, "name": f"scene-{sc:04d}", "description": "", "log_token": "l",
                           "nbr_samples": samples_per_scene})
        instances = []
        for k in range(4):
            cat = ("cat-0", "cat-1", "cat-2", "cat-3")[k]
            tok = f"inst-{sc}-{k}"
            instances.append(tok)
            t["instance"].append({"token": tok, "category_token": cat, "nbr_annotations": samples_per_scene})
        for j in range(samples_per_scene):
            s_tok = f"sample-{sc}-{j}"
            yaw = float(rng.uniform(-math.pi, math.pi))
            ego_t = [float(rng.uniform(-500, 500)), float(rng.uniform(-500, 500)), 0.0]
            t["ego_pose"].append({"token": f"ep-{s_tok}", "translation": ego_t, "rotation": quaternion_z(yaw),
                                  "timestamp": 1_000_000 * sc + 500_000 * j})
            t["ego_pose"].append({"token": f"ep-cam-{s_tok}", "translation": [0, 0, 0], "rotation": [1, 0, 0, 0],
                                  "timestamp": 0})  # the camera's pose: must not be used
            t["sample"].append({"token": s_tok, "scene_token": scene_token, "timestamp": 1_000_000 * sc + 500_000 * j,
                                "prev": "", "next": ""})
            t["sample_data"] += [
                {"token": f"sd-l-{s_tok}", "sample_token": s_tok, "ego_pose_token": f"ep-{s_tok}",
                 "calibrated_sensor_token": "cs-lidar", "is_key_frame": True, "timestamp": 0, "filename": ""},
                {"token": f"sd-c-{s_tok}", "sample_token": s_tok, "ego_pose_token": f"ep-cam-{s_tok}",
                 "calibrated_sensor_token": "cs-cam", "is_key_frame": True, "timestamp": 0, "filename": ""},
            ]
            truth[s_tok] = []
            preds = []
            for k, inst in enumerate(instances):
                ego_xy = (float(rng.uniform(2, 45)), float(rng.uniform(-8, 8)))
                lidar = 0 if (k == 1 and j == 0) else 5  # the first car of each scene has no point
                ann = {"token": f"ann-{sc}-{j}-{k}", "sample_token": s_tok, "instance_token": inst,
                       "translation": to_global(ego_xy, ego_t, yaw), "size": [0.7, 0.8, 1.7],
                       "rotation": quaternion_z(yaw), "num_lidar_pts": lidar, "num_radar_pts": 0,
                       "visibility_token": "4", "attribute_tokens": [], "prev": "", "next": ""}
                t["sample_annotation"].append(ann)
                name = {0: "pedestrian", 1: "car", 2: None, 3: "pedestrian"}[k]
                if name is None:
                    expected["skipped_animal"] += 1
                    continue
                if lidar == 0:
                    expected["skipped_empty"] += 1
                    continue
                truth[s_tok].append((name, *ego_xy))
                if rng.random() < 0.8:  # detected, 0-1.5 m off
                    off = rng.normal(0, 0.6, 2)
                    preds.append({"sample_token": s_tok, "translation": to_global(
                        (ego_xy[0] + off[0], ego_xy[1] + off[1]), ego_t, yaw), "size": [0.7, 0.8, 1.7],
                        "rotation": quaternion_z(yaw), "velocity": [0, 0], "detection_name": name,
                        "detection_score": float(rng.uniform(0.3, 1.0)), "attribute_name": ""})
            for _ in range(int(rng.integers(0, 3))):  # false detections
                fx = (float(rng.uniform(2, 45)), float(rng.uniform(-8, 8)))
                preds.append({"sample_token": s_tok, "translation": to_global(fx, ego_t, yaw), "size": [0.7, 0.8, 1.7],
                              "rotation": quaternion_z(yaw), "velocity": [0, 0],
                              "detection_name": ["pedestrian", "car"][int(rng.integers(0, 2))],
                              "detection_score": float(rng.uniform(0.0, 0.7)), "attribute_name": ""})
            results[s_tok] = preds
            expected["frames"] += 1
    for name, rows in t.items():
        (folder / f"{name}.json").write_text(json.dumps(rows), encoding="utf-8")
    (folder / "results.json").write_text(json.dumps({"meta": {"use_lidar": True}, "results": results}),
                                         encoding="utf-8")
    return {"truth": truth, "results": results, "expected": expected, "tables": t}
