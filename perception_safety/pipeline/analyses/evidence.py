"""Evaluate steps: the evidence section (every confusion cell, failure and alarm linked to its frames) and the
report's first screen (overall verdict, pictures of the worst failures).

Pictures come from a separate pass over a bounded number of frames (`pictures`, its own step: ``thumbnails``),
each frame sought by the recording window the per-bag pass noted (`report.thumbnails`); the per-bag pass stays
image-free. Each strip is one JPEG file in ``OUT/evidence/`` (its thumbnails side by side, `strip_file`) that the
report loads when the strip is opened (lazy images inside a fold, each showing its part), so the report itself
stays small; the first screen's pictures are embedded.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from perception_safety.io.bag import BagError, BagReadReport, read_frames
from perception_safety.io.image_codec import encode_jpeg
from perception_safety.pipeline.analyses.base import Evaluation
from perception_safety.pipeline.evaluate import Reduced
from perception_safety.pipeline.evaluate_config import EvaluateConfig
from perception_safety.report.html import Picture
from perception_safety.report.overlay import TruthStyle
from perception_safety.report.thumbnails import MIN_WINDOW_H, Thumb, alt_text, thumbnails
from perception_safety.safe_io import write_files

STRIP = 6
"""Thumbnails per cell strip (the cell keeps up to ``evaluate.evidence_per_cell`` references in results.json)."""
LIMIT = 240
"""Frames the thumbnail pass reads at most (strips and first screen together)."""
STRIP_WIDTH, FIRST_WIDTH = 160, 240
"""Widths (px) of a strip's thumbnails and of the first screen's pictures (as the report's CSS shows them)."""
STRIP_WINDOW_H = 240
"""A strip thumbnail is cut from at least 320 x 240 px of the frame (first screen: `thumbnails.MIN_WINDOW_H`),
two frame pixels per thumbnail pixel: its JPEG is decoded at 1/2 (libjpeg's scaled IDCT) and cut with no
resampling."""
PED_LABELS = ("pedestrian", "person", "ped")


def _truth(cfg: EvaluateConfig) -> TruthStyle:
    return TruthStyle(cfg.confusion.iou_threshold, cfg.confusion.class_aware)


@dataclass(frozen=True)
class Pictures:
    """The thumbnails of the report: per evidence cell (in strip order) and of the first screen's picks."""

    strips: list[tuple[str, list[Thumb]]] = field(default_factory=list)
    picked: list[dict[str, Any]] = field(default_factory=list)
    first: list[Thumb] = field(default_factory=list)


def pictures(ev: Evaluation, red: Reduced, cfg: EvaluateConfig) -> Pictures:
    """One pass over the frames the report shows (each cell's strip, the first screen's worst failures), at most
    `LIMIT` strip frames: each bag opened once, each frame sought by its recording window. Frames without one
    (partials of an older version) are read by reading their bag and named in a warning."""
    cells = (red.evidence or {}).get("cells") or {}
    wanted = [(k, list(cells[k]["refs"][:STRIP])) for k in sorted(cells, key=_cell_order)]
    picked = _first_screen_refs(ev, red, cfg)
    flat = picked + [r for _, refs in wanted for r in refs]
    if not flat:
        return Pictures(picked=picked)
    widths = [FIRST_WIDTH] * len(picked) + [STRIP_WIDTH] * (len(flat) - len(picked))
    heights = [MIN_WINDOW_H] * len(picked) + [STRIP_WINDOW_H] * (len(flat) - len(picked))
    thumbs = thumbnails(flat, cfg.bags.topics, cfg.monitors, _truth(cfg), LIMIT + len(picked), widths,
                        cfg.bags.tolerance_ns, min_h=heights)
    whole = {str(t.ref["bag"]) for t in thumbs if t.picture is not None and not t.seeked}
    if whole:
        ev.warn("evidence", f"thumbnails: {len(whole)} bag(s) read whole for their pictures (first: {min(whole)}): "
                "their frame references carry no recording window (partials of an older version)",
                "thumbnails_read_whole")
    pics = iter(thumbs[len(picked):])
    return Pictures([(k, [next(pics) for _ in refs]) for k, refs in wanted], picked, thumbs[:len(picked)])


def _public(ref: Mapping[str, Any]) -> dict[str, Any]:
    """A reference as results.json keeps it (the recording window is the thumbnail pass's, not the user's)."""
    return {k: v for k, v in ref.items() if k != "log_ns"}


def _cell_order(key: str) -> tuple[int, str]:
    """Errors first: missed and confused cells, false stops and detections, failures, alarms; correct cells last."""
    if key.startswith("cm:"):
        pred, true = key[3:].split("@")[0].split(":", 1)
        return (0 if pred != true else 5, key)
    return ({"false_stop": 1, "missed_stop": 1}.get(key, 2 if key.startswith(("false:", "bbsl:")) else 3), key)


def anchor(key: str) -> str:
    """The HTML id of a cell's strip."""
    return "ev-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in key)


def _short(ref: Mapping[str, Any]) -> str:
    dist = f"{ref['distance_m']:.1f} m · " if ref.get("distance_m") is not None else ""
    return f"{dist}{ref.get('episode', '?')} · t = {float(ref.get('t_s', 0)):.2f} s"


def strip_file(pictures: Sequence[np.ndarray]) -> tuple[bytes, list[int]]:
    """One JPEG of a strip's pictures side by side, and each picture's x offset in it. Each picture starts on a
    16 px boundary (a JPEG colour block) and is framed by 16 px of copies of its own edge pixels where it meets
    another (the decoder smooths colour across block edges): cut out again, a picture is what its own JPEG decodes
    to within a few levels (tested). One file per strip instead of one per thumbnail: a sixth of
    the files to write and flush."""
    height = max(p.shape[0] for p in pictures)
    offsets, parts, x = [], [], 0
    for i, p in enumerate(pictures):
        left, right = (16 if i else 0), -p.shape[1] % 16 + (16 if i + 1 < len(pictures) else 0)
        parts.append(np.pad(p, ((0, height - p.shape[0]), (left, right), (0, 0)), mode="edge"))
        offsets.append(x + left)
        x += left + p.shape[1] + right
    return encode_jpeg(np.hstack(parts), 72), offsets


def _strip(key: str, cell: Mapping[str, Any], thumbs: Sequence[Thumb], files: dict[str, bytes], rel: str) -> str:
    """A fold with the cell's thumbnails: one file (`strip_file`, loaded when the fold opens, its bytes added to
    ``files`` by name) that each figure shows its part of; the references are in results.json."""
    drawn = [t for t in thumbs if t.picture is not None]
    name = f"{anchor(key)}.jpg"
    data, offsets = strip_file([t.picture for t in drawn]) if drawn else (b"", [])
    if drawn:
        files[name] = data
    at = iter(offsets)  # the drawn ones' offsets, in order
    figs = []
    for t in thumbs:
        if t.picture is None:
            figs.append(f"<figure><figcaption>{html.escape(_short(t.ref))}: no picture "
                        f"({html.escape(t.missing)})</figcaption></figure>")
            continue
        h, w = t.picture.shape[:2]
        figs.append(f"<figure><img loading='lazy' alt='{html.escape(t.alt)}' src='{rel}/{name}' width='{w}' "
                    f"height='{h}' style='object-fit:none;object-position:-{next(at)}px 0'>"
                    f"<figcaption>{html.escape(_short(t.ref))}</figcaption></figure>")
    return (f"<details class='ev' id='{anchor(key)}'><summary><code>{html.escape(key)}</code>: {cell['count']} "
            f"occurrence(s), {len(cell['refs'])} referenced, {len(thumbs)} drawn</summary>"
            f"<div class='thumbs strip'>{''.join(figs)}</div></details>")


def _linked_matrices(cells: Mapping[str, Any], classes: Sequence[str], edges: Sequence[float]) -> str:
    """One small class-labeled matrix per bin whose every non-zero cell links to its strip (rows pred, cols true)."""
    out = ["<div class='thumbs'>"]
    for lo, hi in pairwise(edges):
        keys = {k: c for k, c in cells.items() if k.startswith("cm:") and k.endswith(f"@{lo:g}-{hi:g}")}
        if not keys:
            continue
        head = "".join(f"<th>{html.escape(t)}</th>" for t in classes[:-1])
        rows = []
        for p in classes:
            tds = []
            for t in classes[:-1]:
                key = f"cm:{p}:{t}@{lo:g}-{hi:g}"
                c = keys.get(key)
                css = " class='err'" if c and p != t else ""
                tds.append(f"<td{css}><a href='#{anchor(key)}'>{c['count']}</a></td>" if c else "<td>0</td>")
            rows.append(f"<tr><th>{html.escape(p)}</th>{''.join(tds)}</tr>")
        out.append(f"<table class='cm'><caption>[{lo:g}, {hi:g}) m: rows predicted, columns true</caption>"
                   f"<thead><tr><th></th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    out.append("</div>")
    return "".join(out)


def run(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, out: Path, pics: Pictures) -> None:
    """results.json ``evidence`` and the report's evidence section."""
    block = red.evidence
    if block and block.get("stops_not_judged"):
        u = block["stops_not_judged"]
        ev.warn("evidence", f"false/missed stops not collected in {u['episodes']} episode(s) (first: {u['first']}): "
                f"the stop rule cannot be placed on their frames: {u['reason']}", "stops_not_judged")
    if not block or not block.get("cells"):
        return
    cells = block["cells"]
    ev.results["evidence"] = {**block, "cells": {k: {**c, "refs": [_public(r) for r in c["refs"]]}
                                                 for k, c in cells.items()}}
    sec = ev.report.section("Evidence: the frames behind each count")
    sec.text(
        f"Every confusion cell, false detection, false or missed stop, failed BBSL test case and monitor alarm keeps "
        f"up to {block['per_cell']} frame references (bag, topic, stamp) in results.json ('evidence'), the most "
        f"informative first; {STRIP} of them are drawn per cell when its strip is opened (white: ground truth, "
        "red: missed, green: matched detection, pink: false detection). `perception-safety frames RESULTS CELL` "
        "lists or extracts them; `perception-safety render BAG --frames-of RESULTS CELL` draws exactly those frames.",
        "note",
    )
    classes = [*cfg.confusion.class_names, cfg.confusion.empty_label]
    sec.html(_linked_matrices(cells, classes, cfg.confusion.bin_edges))
    folder = out / "evidence"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.jpg"):
        old.unlink()
    files: dict[str, bytes] = {}
    sec.html("".join(_strip(k, cells[k], thumbs, files, "evidence") for k, thumbs in pics.strips))
    write_files(folder, files)  # each file atomic, the folder flushed once


def _ped_classes(cfg: EvaluateConfig) -> list[str]:
    from perception_safety.evaluation.confusion.config import ClassMapper

    mapper = ClassMapper(cfg.confusion)
    names = cfg.confusion.class_names
    return sorted({names[c] for c in (mapper(lab) for lab in PED_LABELS) if c >= 0})


def _collision_refs(ev: Evaluation, cfg: EvaluateConfig, limit: int) -> list[dict[str, Any]]:
    """E2 collisions of the perception rollout, the first ``limit``: the last recorded frame of the episode's
    perception bag (each such bag read in full: its last frame is not among the partial's references)."""
    per_ep = (((ev.results.get("returns") or {}).get("E2") or {}).get("per_episode")) or {}
    hit = [ep for ep, d in per_ep.items() if isinstance(d, dict) and (d.get("collided") or {}).get("perception")]
    bags = {r["conditions"].get("episode"): r["path"] for r in ev.results.get("input_roles", [])
            if r.get("role") == "perception" and not r.get("excluded")}
    out = []
    for ep in hit:
        if len(out) >= limit:
            break
        bag = bags.get(ep)
        if bag is None:
            continue
        windows: dict[int, tuple[int, int]] = {}
        try:
            frames = list(read_frames(bag, cfg.bags.topics, cfg.bags.tolerance_ns, False, BagReadReport(), None,
                                      windows))
        except BagError:
            continue
        if not frames:
            continue
        last = frames[-1]
        near = min(last.ground_truth, key=lambda g: g.distance) if last.ground_truth else None
        from perception_safety.pipeline.evidence import image_topic

        out.append({"bag": bag, "topic": image_topic(bag, cfg.bags.topics), "stamp_ns": last.stamp_ns,
                    "episode": ep, "t_s": round((last.stamp_ns - frames[0].stamp_ns) / 1e9, 3), "kind": "collision",
                    "label": near.class_id if near else "", "distance_m": near.distance if near else None,
                    "box": list(near.box.as_tuple()) if near else None, "detail": "E2 collision of f", "priority": 0,
                    "log_ns": list(windows[last.stamp_ns])})
    return out


def _episode_count(ev: Evaluation) -> int:
    used = [r for r in ev.results.get("input_roles", []) if not r.get("excluded")]
    return len({(r.get("conditions") or {}).get("episode") or r.get("path") for r in used})


def _first_screen_refs(ev: Evaluation, red: Reduced, cfg: EvaluateConfig) -> list[dict[str, Any]]:
    """The worst failures: the nearest missed pedestrian of (up to) 3 episodes, 2 false stops, 3 collisions."""
    cells = (red.evidence or {}).get("cells", {})
    peds = _ped_classes(cfg)
    missed = sorted((r for k, c in cells.items() if k.startswith("cm:" + cfg.confusion.empty_label + ":")
                     and k.split(":")[2].split("@")[0] in peds for r in c["refs"]),
                    key=lambda r: (r["distance_m"], r["stamp_ns"]))
    picked: list[dict[str, Any]] = []
    for r in missed:  # one per episode: the nearest miss of each
        if len(picked) < 3 and r["episode"] not in {p["episode"] for p in picked}:
            picked.append(r)
    picked += cells.get("false_stop", {}).get("refs", [])[:2]
    picked += _collision_refs(ev, cfg, 3)
    return picked


def first_screen(ev: Evaluation, red: Reduced, cfg: EvaluateConfig, pics: Pictures) -> None:
    """Overall verdict and the worst failures with pictures: nearest missed pedestrians, false stops, collisions."""
    req = ev.results.get("requirements")
    if isinstance(req, dict):
        ev.report.verdict = str(req.get("overall", ""))
        ev.report.verdict_text = (f"{req.get('passed', 0)} passed, {req.get('failed', 0)} failed, "
                                  f"{req.get('inconclusive', 0)} inconclusive, {req.get('not_evaluated', 0)} not "
                                  f"evaluated · {ev.results.get('frames', 0)} frames of {_episode_count(ev)} "
                                  "episode(s) read")
    cells = (red.evidence or {}).get("cells", {})
    peds = _ped_classes(cfg)
    picked, thumbs = pics.picked, pics.first
    if not picked:
        ev.report.failures_note = "No missed pedestrian, false stop or collision with a recorded frame in this run."
        return
    ev.report.failures = [Picture(t.jpeg, t.alt) for t in thumbs if t.jpeg is not None]
    lost = [f"{t.alt}: {t.missing}" for t in thumbs if t.picture is None]
    counts = {k: cells.get(k, {}).get("count", 0) for k in ("false_stop", "missed_stop")}
    n_missed = sum(c["count"] for k, c in cells.items() if k.startswith("cm:" + cfg.confusion.empty_label + ":")
                   and k.split(":")[2].split("@")[0] in peds)
    ev.report.failures_note = (
        f"Missed pedestrians (nearest of each episode) of {n_missed} missed in all, false stops of "
        f"{counts['false_stop']} (and {counts['missed_stop']} missed stops), E2 collisions of the perception "
        "rollout (its last recorded frame). White: ground truth, red: missed, green: matched, pink: false detection. "
        "Every cell's frames: Evidence section." + (f" Without picture: {'; '.join(lost)}." if lost else ""))
    ev.results.setdefault("evidence", {})["first_screen"] = [{**_public(r), "alt": alt_text(r)} for r in picked]
