"""`perception-safety validate-model`: do new recordings still fit the confusion model behind an `evaluate` run?

The model's counts come from the run's own per-input partials (``RESULTS_DIR/partials``: per-episode counts, so
the test keeps episodes as the unit); the new inputs go through the same per-input pass (`map_bags`) with the same
config. Then `evaluation.validity.column_shifts` per column, and P(phi) recomputed on the new counts beside the
verified one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perception_safety.errors import PerceptionSafetyError
from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.evaluation.validity import ColumnShift, column_shifts
from perception_safety.io.bag_inputs import select_bags, used
from perception_safety.pipeline.evaluate import map_bags, reduce_partials
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.pipeline.partials import PartialError, unpack_partial
from perception_safety.verification.errors import VerificationError
from perception_safety.verification.sweep import run_sweep

FORMAT = "perception_safety.validity/1"


class ValidityError(PerceptionSafetyError):
    """The previous run or the new inputs cannot be compared (the message says which file and why)."""


def load_run(results_dir: Path, cfg: EvaluateConfig) -> tuple[dict[str, Any], DistanceConfusion]:
    """The previous run's results.json and its confusion counts reduced from its partials (episodes kept)."""
    path = results_dir / "results.json"
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValidityError(f"{path}: no results.json (RESULTS_DIR is an `evaluate --out` folder)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValidityError(f"{path}: unreadable: {exc}") from None
    if not isinstance(results, dict) or results.get("complete") is False:
        raise ValidityError(f"{path}: not a complete evaluate result")
    parts = []
    for p in sorted((results_dir / "partials").glob("*.json")):
        try:
            parts.append(_partial(p, json.loads(p.read_text(encoding="utf-8"))))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise ValidityError(f"{p}: unreadable partial: {exc}") from None
        except PartialError as exc:
            raise ValidityError(f"{exc}") from None
    if not parts:
        raise ValidityError(f"{results_dir / 'partials'}: no partials: the model's per-episode counts are needed")
    try:
        red = reduce_partials(parts, cfg)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ValidityError(f"{results_dir / 'partials'}: damaged partials ({type(exc).__name__}: {exc}); rerun "
                            "`evaluate` to rebuild them") from None
    if red.confusion is None:
        raise ValidityError(f"{results_dir}: the run has no confusion counts")
    return results, red.confusion


_PARTIAL_KEYS = {"bag": str, "frames": int, "read_report": dict, "episodes": list}


def _partial(path: Path, doc: Any) -> dict[str, Any]:
    """One per-input partial of the model's run, its shape checked (a damaged file is named, not a traceback)."""
    doc = unpack_partial(doc, str(path))  # a readable format (packed lists restored), else named
    for key, kind in _PARTIAL_KEYS.items():
        if not isinstance(doc.get(key), kind) or isinstance(doc.get(key), bool):
            raise ValidityError(f"{path}: damaged partial: {key!r} missing or not a {kind.__name__}")
    if not all(isinstance(ep, dict) for ep in doc["episodes"]):
        raise ValidityError(f"{path}: damaged partial: 'episodes' holds a non-object entry")
    return doc


def new_counts(inputs: Sequence[str], cfg: EvaluateConfig, work: Path) -> tuple[DistanceConfusion, list[str]]:
    """The new inputs through the same per-input pass; also the bags that failed or were left out."""
    found = select_bags(inputs)
    excluded = [b for b in found if b.excluded]
    notes = [f"{len(excluded)} monitored or perfect-perception rollout(s) found in the folders were not read"] \
        if excluded else []
    paths = used(found)
    if not paths:
        raise ValidityError(f"no usable bag among the new inputs ({', '.join(map(str, inputs))})"
                            + (f": {notes[0]}" if notes else ""))
    mapped = map_bags(paths, cfg, work / "partials")
    notes += [f"{bag}: unreadable: {why}" for bag, why in mapped.failed.items()]
    red = reduce_partials(mapped.partials, cfg)
    if red.confusion is None:
        failed = "; ".join(f"{bag}: {why}" for bag, why in mapped.failed.items())
        raise ValidityError("the new inputs gave no confusion counts" + (f" ({failed})" if failed else ""))
    return red.confusion, notes


def chain_columns(dc: DistanceConfusion, cfg: EvaluateConfig) -> tuple[list[int], set[str]]:
    """Bins the chain's roads pass through (their lower edge within the longest road) and the classes its true
    environments hold ('empty' included): the columns the verified P(phi) rests on."""
    from perception_safety.verification.car_model import geometry_for

    v = cfg.verification
    reach = max(geometry_for(V, v.geometry).road_cells for V in v.max_speeds) * v.geometry.cell_length_m
    bins = [i for i, (lo, _) in enumerate(dc.bin_edges) if lo <= reach]
    labels = {c for env in v.true_envs.values() for c in env.class_objects} | {dc.class_labels[-1]}
    return bins, labels


def _per_cluster(dc: DistanceConfusion) -> np.ndarray:
    return dc.clusters.class_cm if dc.clusters is not None else dc.class_cm[None]


def _worst_phi(dc: DistanceConfusion, cfg: EvaluateConfig) -> dict[str, Any]:
    """The lowest P(phi) per (variant, true environment) over the swept speeds, with its bounds."""
    try:
        sweep = run_sweep(dc, cfg.verification)
    except VerificationError as exc:
        return {"error": str(exc)}
    out: dict[str, Any] = {}
    for r in sweep.results:
        if r["spec"] != "phi":
            continue
        key = f"{r['variant']}/{r['true_env']}"
        if key not in out or r["probability"] < out[key]["probability"]:
            out[key] = {k: r.get(k) for k in ("probability", "lower", "upper", "max_speed", "initial_speed")}
    return out


def compare(results_dir: Path, results: dict[str, Any], old: DistanceConfusion, new: DistanceConfusion,
            cfg: EvaluateConfig, config_text: str, notes: list[str], alpha: float = 0.05) -> dict[str, Any]:
    """The comparison document of the model's counts ``old`` and new counts ``new`` (validity.json)."""
    notes = list(notes)
    sha = hashlib.sha256(config_text.encode("utf-8")).hexdigest()
    recorded = (results.get("provenance") or {}).get("config_sha256")
    if recorded and recorded != sha:
        notes.append("the config given is not the one the model was evaluated with (sha256 differs): class map, "
                     "bins or matching may differ, and so may the counts")
    if list(old.bin_edges) != list(new.bin_edges) or list(old.class_labels) != list(new.class_labels):
        raise ValidityError(f"the new counts have other bins or classes than the model's: model bins "
                            f"{[list(b) for b in old.bin_edges]}, classes {list(old.class_labels)}; new bins "
                            f"{[list(b) for b in new.bin_edges]}, classes {list(new.class_labels)} (evaluate the "
                            f"new inputs with the model's config)")
    names = [f"[{a:g}, {b:g}) m" for a, b in old.bin_edges]
    used_bins, used_labels = chain_columns(old, cfg)
    labels = list(old.class_labels)
    cl_old, cl_new = _per_cluster(old), _per_cluster(new)
    # the family: the columns the verified chain reads (its environments' classes, the bins its road passes)
    tests = column_shifts(cl_old[:, used_bins], cl_new[:, used_bins], labels, [names[b] for b in used_bins], alpha,
                          only=used_labels)
    others = [b for b in range(len(names)) if b not in used_bins]
    outside = column_shifts(cl_old[:, others], cl_new[:, others], labels, [names[b] for b in others], alpha) \
        if others else []
    moved = [t for t in tests if t.rejected]
    for side, dc in (("model", old), ("new data", new)):
        k = 1 if dc.clusters is None else len(dc.clusters.ids)
        if k < 10:
            notes.append(f"the {side} holds {k} episode(s): a shift can hide in the noise (see min_detectable_shift)")
    phi_old, phi_new = _worst_phi(old, cfg), _worst_phi(new, cfg)
    for key, a in phi_old.items():
        b = phi_new.get(key)
        if isinstance(a, dict) and isinstance(b, dict) and a.get("lower") is not None and a.get("upper") is not None \
                and not a["lower"] <= b["probability"] <= a["upper"]:
            notes.append(f"worst P(phi) {key} on the new counts, {b['probability']:.4g}, lies outside the model's "
                         f"bounds [{a['lower']:.4g}, {a['upper']:.4g}]")
    return {
        "format": FORMAT,
        "model": str(results_dir),
        "alpha": alpha,
        "method": "per column: detection rate P(pred = true | true) old vs new, cluster-robust variances (episodes "
                  "as the unit, floored at binomial), Student t with min(episodes) - 1 df, Holm over columns",
        "holds": not moved,
        "family": "the columns the verified chain reads: classes of verification.true_envs in the bins its roads "
                  "pass through (Holm over these); other columns are tested as a separate family, for information",
        "columns_tested": len(tests),
        "columns_moved": [t.to_dict() for t in moved],
        "columns": [t.to_dict() for t in tests],
        "columns_outside_the_chain": [t.to_dict() for t in outside],
        "phi_model": phi_old,
        "phi_new": phi_new,
        "notes": notes,
        "complete": True,
    }


def validate(results_dir: Path, inputs: Sequence[str], cfg: EvaluateConfig, config_text: str, out: Path,
             alpha: float = 0.05) -> dict[str, Any]:
    """`validate-model`: the model's run against new inputs mapped here; ``holds`` is False when a column moved."""
    results, old = load_run(results_dir, cfg)
    new, notes = new_counts(inputs, cfg, out)
    doc = compare(results_dir, results, old, new, cfg, config_text, notes, alpha)
    doc["new_inputs"] = list(inputs)
    return doc


def summary_lines(doc: dict[str, Any]) -> list[str]:
    """The console text: verdict, moved columns, P(phi) old vs new."""
    lines = [f"{doc['columns_tested']} columns tested at family-wise alpha {doc['alpha']:g} (Holm)"]
    for c in doc["columns"]:
        c = ColumnShift(**{**c, "old_interval": tuple(c["old_interval"]), "new_interval": tuple(c["new_interval"])})
        mds = f"{c.min_detectable_shift:.3f}" if c.min_detectable_shift is not None else "not estimable"
        flag = "MOVED" if c.rejected else "ok"
        lines.append(f"  {c.bin:>12} {c.true_label:>6}: {c.old_rate:.3f} [{c.old_interval[0]:.3f}, "
                     f"{c.old_interval[1]:.3f}] ({c.old_clusters} ep.) -> {c.new_rate:.3f} [{c.new_interval[0]:.3f}, "
                     f"{c.new_interval[1]:.3f}] ({c.new_clusters} ep.)  p_adj {c.p_adjusted:.3g}  detectable shift "
                     f"{mds}  {flag}")
    for key in sorted(set(doc["phi_model"]) | set(doc["phi_new"])):
        a, b = doc["phi_model"].get(key), doc["phi_new"].get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            lines.append(f"  worst P(phi) {key}: model {a['probability']:.4g} -> new data {b['probability']:.4g}")
    lines.append("verdict: the verified model " + ("still fits the new data (no column moved; this does not prove it "
                 "holds: see the detectable shifts)" if doc["holds"] else
                 f"NO LONGER APPLIES: {len(doc['columns_moved'])} column(s) moved"))
    return lines + [f"note: {n}" for n in doc["notes"]]
