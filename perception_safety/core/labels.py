"""Label presets of real datasets, label patterns, and the warning when labels match nothing.

Watched classes (monitors) and class maps (confusion) are lists of labels or ``fnmatch`` patterns
(case-sensitive); an entry ``@name`` stands for the preset `PRESETS[name]`. Datasets name the same things
differently: KITTI ``Pedestrian``, ``Person_sitting``, ``Cyclist``; COCO ``person``, ``bicycle``; nuScenes
``human.pedestrian.*``, ``vehicle.bicycle``; the demo and CARLA ``person``/``pedestrian``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase

PRESETS: dict[str, tuple[str, ...]] = {
    "kitti_pedestrians": ("Pedestrian", "Person_sitting"),
    "kitti_cyclists": ("Cyclist",),
    "coco_pedestrians": ("person",),
    "coco_cyclists": ("bicycle",),
    "nuscenes_pedestrians": ("human.pedestrian.*",),
    "nuscenes_cyclists": ("vehicle.bicycle",),
    "demo_pedestrians": ("person", "pedestrian"),
}
PRESETS["pedestrians"] = tuple(dict.fromkeys(
    PRESETS["demo_pedestrians"] + PRESETS["kitti_pedestrians"] + PRESETS["nuscenes_pedestrians"]))
PRESETS["cyclists"] = tuple(dict.fromkeys(
    PRESETS["kitti_cyclists"] + PRESETS["coco_cyclists"] + PRESETS["nuscenes_cyclists"] + ("cyclist",)))
PRESETS["vulnerable_road_users"] = PRESETS["pedestrians"] + PRESETS["cyclists"]
#: the labels KITTI marks as ignore regions and the ones the other datasets never use for an object
IGNORE_LABELS = ("DontCare",)


def expand(labels: Iterable[str]) -> tuple[str, ...]:
    """Labels with every ``@preset`` replaced by its entries (order kept, duplicates dropped); ValueError for an
    unknown preset."""
    out: list[str] = []
    for label in labels:
        if label.startswith("@"):
            name = label[1:]
            if name not in PRESETS:
                raise ValueError(f"unknown label preset {label!r} (known: {', '.join('@' + p for p in PRESETS)})")
            out.extend(PRESETS[name])
        else:
            out.append(label)
    return tuple(dict.fromkeys(out))


MAX_CACHED_LABELS = 4096
"""Labels a `LabelMatcher` remembers (real label sets are tens; the bound keeps hostile input from growing it)."""


class LabelMatcher:
    """Whether a label is one of ``patterns`` (exact or ``fnmatch``, case-sensitive); cached per label."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = expand(patterns)
        self._exact = frozenset(p for p in self.patterns if not any(c in p for c in "*?["))
        self._globs = tuple(p for p in self.patterns if p not in self._exact)
        self._cache: dict[str, bool] = {}

    def __call__(self, label: str) -> bool:
        hit = self._cache.get(label)
        if hit is None:
            hit = label in self._exact or any(fnmatchcase(label, g) for g in self._globs)
            if len(self._cache) >= MAX_CACHED_LABELS:  # a stream of ever new labels must not grow memory
                self._cache.clear()
            self._cache[label] = hit
        return hit


def unmatched_warning(counts: Mapping[str, int], matcher: LabelMatcher, what: str) -> str | None:
    """A warning naming the labels (with counts) that ``matcher`` does not match, or None when none was seen or
    every label matched. Labels that look like a watched one in another spelling are pointed out."""
    missed = {k: n for k, n in counts.items() if not matcher(k)}
    if not missed:
        return None
    total = sum(counts.values())
    listed = ", ".join(f"{k} ({n})" for k, n in sorted(missed.items(), key=lambda kv: -kv[1])[:8])
    lower = {p.lower() for p in matcher.patterns}
    near = sorted(k for k in missed if k.lower() in lower or any(k in PRESETS[p] for p in
                                                                 ("pedestrians", "cyclists")))
    hint = (f"; {', '.join(near)} look(s) like watched classes in another dataset's spelling: use a preset such "
            "as @pedestrians" if near else "")
    return (f"{what}: {sum(missed.values())} of {total} label(s) match no watched class and are ignored: "
            f"{listed}{hint}")
