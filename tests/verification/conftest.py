"""Shared fixtures: the seed paper's reference confusion matrices, read directly with json."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

REFERENCE = (
    Path(__file__).resolve().parents[2] / "reference" / "dist_confusion_matrices_nuscenes_yolov3.json"
)  # reference/ in the repository


@pytest.fixture(scope="session")
def reference() -> dict:
    if not REFERENCE.exists():
        pytest.fail(f"reference data {REFERENCE} not found (reference/ in the repository)")
    data = json.loads(REFERENCE.read_text())
    out = {"edges": [tuple(e) for e in data["bin_edges_m"]]}
    for kind in ("class", "prop"):
        counts = np.array(data[f"{kind}_cm"], dtype=float)
        pooled = counts.sum(axis=0)
        out[kind] = {
            "labels": data[f"{kind}_labels"],
            "counts": counts,
            "per_bin": counts / counts.sum(axis=1, keepdims=True),
            "pooled": pooled / pooled.sum(axis=0, keepdims=True),
        }
    return out
