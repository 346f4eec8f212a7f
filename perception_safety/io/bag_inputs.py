"""Which bags an evaluation reads, and the role and conditions of each (no silent inputs).

A bag's role says what produced its detections: ``perception`` (f, the detector under test), ``monitored``
(f with the runtime monitor braking), ``ground_truth`` (f*, *perfect* perception: detections = ground truth)
or ``recording`` (anything else). The role comes from the bag's ``metadata.yaml`` ``custom_data``
(``perception_safety.rollout``, written by the episode runner) or, for older bags, from the runner's folder
layout ``bags/<episode>/<rollout>``. Bags of f* found inside a folder are excluded by default: evaluating a
detector on its own ground truth inflates every metric. Monitored (f+m) rollouts found in a folder are excluded
too: they repeat the perception rollout's frames up to the monitor's first intervention, so reading both counts
those frames twice (the demo and the docs' numbers are of the perception rollouts).

Conditions (perturbation, level, episode, weather, ...) of a bag come from ``custom_data`` keys
``perception_safety.<name>`` and from an optional sidecar ``conditions.yaml`` (a flat mapping) in the bag folder.

JSON Lines datasets (`perception_safety.io.dataset`, what ``convert`` writes) are inputs too, in any mix with
bags: named ``.jsonl``/``.ndjson`` files, and such files found in a folder whose first record is a frame (episode
logs in the same folders are not). Their role is ``dataset``; their episodes come from each line's ``episode``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from perception_safety.io.bag import BagError, find_bags
from perception_safety.io.bag.storage import MAX_METADATA_BYTES, bag_metadata_document
from perception_safety.io.config import parse_yaml
from perception_safety.io.dataset import DATASET_SUFFIXES, looks_like_dataset
from perception_safety.io.episode_log import ROLLOUTS
from perception_safety.safe_io.bounded_read import read_text

CUSTOM_PREFIX = "perception_safety."
ROLE_KEY = CUSTOM_PREFIX + "rollout"
SIDECAR = "conditions.yaml"
DATASET = "dataset"
PERFECT = "ground_truth"
MONITORED = "monitored"
RECORDING = "recording"
ROLE_TEXT = {
    "perception": "perception rollout (f, the detector under test)",
    "monitored": "monitored rollout (f with the runtime monitor braking)",
    "ground_truth": "perfect-perception rollout (f*, detections = ground truth)",
    "recording": "recording",
    "dataset": "JSON Lines dataset",
}


@dataclass(frozen=True)
class BagInput:
    """One bag found in the inputs: its role, how it was found, its conditions, and why it is excluded (if so)."""

    path: Path
    role: str
    named: bool
    """True when the bag itself was named on the command line (not found by searching a folder)."""
    conditions: Mapping[str, str] = field(default_factory=dict)
    excluded: str = ""
    messages: int = 0
    """Messages in the bag (all topics, from metadata.yaml): the size of the work of reading it."""
    topics: tuple[str, ...] = ()
    """Names of the bag's recorded topics (from metadata.yaml; empty for a dataset or when unknown)."""

    @property
    def is_dataset(self) -> bool:
        """A JSON Lines dataset file rather than a rosbag2 bag."""
        return self.role == DATASET

    @property
    def kind(self) -> str:
        """``bag`` or ``dataset``: how the per-input pass reads it (`pipeline.bag_pass.MapInput.kind`)."""
        return "dataset" if self.is_dataset else "bag"

    def describe(self) -> str:
        how = "named" if self.named else "found in a folder"
        return f"{ROLE_TEXT.get(self.role, self.role)}, {how}" + (
            f"; EXCLUDED: {self.excluded}" if self.excluded else ""
        )


def bag_metadata(path: Path) -> dict:
    """The ``rosbag2_bagfile_information`` mapping of a bag's metadata.yaml (the bounded safe loader; parsed once per
    file version and shared with the bag reader: do not modify it)."""
    data = bag_metadata_document(path, BagError)  # not a mapping: no metadata; reading the bag names it
    info = data.get("rosbag2_bagfile_information") if isinstance(data, dict) else None
    return info if isinstance(info, dict) else {}


def bag_conditions(path: Path, metadata: Mapping | None = None) -> dict[str, str]:
    """``custom_data`` keys ``perception_safety.*`` (prefix dropped), then the sidecar ``conditions.yaml``
    (``metadata``: the bag's already parsed `bag_metadata`)."""
    custom = (bag_metadata(path) if metadata is None else metadata).get("custom_data") or {}
    out = {k[len(CUSTOM_PREFIX) :]: str(v) for k, v in custom.items() if str(k).startswith(CUSTOM_PREFIX)}
    sidecar = path / SIDECAR
    if sidecar.is_file():
        extra = parse_yaml(read_text(sidecar, MAX_METADATA_BYTES, "conditions", BagError), str(sidecar), BagError)
        if any(isinstance(v, dict | list) for v in extra.values()):
            raise BagError(f"{sidecar}: expected a flat mapping of condition name to value")
        out.update({str(k): str(v) for k, v in extra.items()})
    return out


def bag_role(path: Path, conditions: Mapping[str, str]) -> str:
    """The rollout recorded in the metadata, else the runner layout ``bags/<episode>/<rollout>``, else 'recording'."""
    role = conditions.get("rollout")
    if role in ROLLOUTS:
        return role
    if path.name in ROLLOUTS and path.parent.parent.name == "bags":
        return path.name
    return RECORDING


def select_bags(
    inputs: Iterable[str | Path], include_perfect: bool = False, include_monitored: bool = False
) -> list[BagInput]:
    """Every bag and dataset of ``inputs`` with its role; f* (f+m) bags found in a folder are excluded unless
    ``include_perfect`` (``include_monitored``).

    A bag named directly is always read (its role is still listed and warned about by the caller).
    """
    out: list[BagInput] = []
    seen: set[Path] = set()
    for item in inputs:
        p = Path(item)
        if p.suffix.lower() in DATASET_SUFFIXES and p.is_file():
            if p not in seen:
                seen.add(p)
                out.append(BagInput(p, DATASET, True, messages=_dataset_messages(p)))
            continue
        named = (p / "metadata.yaml").is_file() or p.name == "metadata.yaml" or p.suffix in (".mcap", ".db3")
        bags = find_bags([p])
        for bag in bags:
            if bag in seen:
                continue
            seen.add(bag)
            meta = bag_metadata(bag)  # the one parse of this metadata.yaml by the package
            cond = bag_conditions(bag, meta)
            role = bag_role(bag, cond)
            excluded = ""
            if role == PERFECT and not named and not include_perfect:
                excluded = "perfect-perception rollout found in a folder (pass --include-perfect-perception to read it)"
            elif role == MONITORED and not named and not include_monitored:
                excluded = (
                    "monitored rollout found in a folder: it repeats the perception rollout's frames until the "
                    "monitor intervenes (pass --include-monitored to read it)"
                )
            messages = meta.get("message_count")
            out.append(BagInput(bag, role, named, cond, excluded, messages if isinstance(messages, int) else 0,
                                _topic_names(meta)))
        for data in _datasets_below(p, bags) if p.is_dir() else ():
            if data not in seen:
                seen.add(data)
                out.append(BagInput(data, DATASET, False, messages=_dataset_messages(data)))
    return out


def _topic_names(meta: Mapping) -> tuple[str, ...]:
    """The topic names a parsed metadata.yaml lists (empty when it lists none or is malformed)."""
    listed = meta.get("topics_with_message_count")
    if not isinstance(listed, list):
        return ()
    names = [t.get("topic_metadata", {}).get("name") if isinstance(t, dict) else None for t in listed]
    return tuple(n for n in names if isinstance(n, str))


def _dataset_messages(path: Path) -> int:
    """The work of reading a dataset in bag messages: a line is one frame, as a bag's ~4 messages (camera,
    detections, ground truth, odometry) are."""
    with path.open("rb") as fh:
        return 4 * sum(1 for _ in fh)


def _datasets_below(folder: Path, bags: Iterable[Path]) -> list[Path]:
    """Dataset files below ``folder`` (sorted), outside bag directories, whose first record is a frame."""
    bag_dirs = set(bags)
    found = []
    for path in sorted(q for suffix in DATASET_SUFFIXES for q in folder.rglob(f"*{suffix}")):
        if not any(parent in bag_dirs for parent in path.parents) and looks_like_dataset(path):
            found.append(path)
    return found


def used(inputs: Iterable[BagInput]) -> list[Path]:
    """The paths of the inputs that are read."""
    return [b.path for b in inputs if not b.excluded]


def input_notes(inputs: Iterable[BagInput]) -> list[str]:
    """One line per bag whose role changes what a metric means (for the commands' console notes)."""
    lines = []
    for b in inputs:
        if b.excluded:
            lines.append(f"{b.path}: not read: {b.excluded}")
        elif b.role == PERFECT:
            lines.append(f"{b.path}: {ROLE_TEXT[PERFECT]} is read: its detections equal the ground truth")
    return lines
