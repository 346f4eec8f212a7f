"""The per-input pass that `evaluate`, the offline `monitor` command and tuning share (issue 27).

One input (a bag, or a JSON Lines dataset file: `MapInput.kind`) is read once: its frames (images only when a
consumer needs them), its monitor verdicts when asked, its read report. The frames are split into episodes (the
sampling unit of the cluster-aware intervals: a bag is one episode, named by its ``perception_safety.episode``
custom data, else by the bag itself; a dataset has one episode per value of its lines' ``episode`` key, and its
lines without the key form one entry named ``""`` whose frames are each their own unit, ``Frame.episode`` =
``path#frame id``: independent images) and a consumer maps each episode to a JSON-ready part. The partial of an
input is JSON-ready (count arrays may be numpy arrays; `pipeline.partials` writes it packed)::

    {"format": PARTIAL_FORMAT, "bag": path, "kind": "bag", "frames": n, "read_report": {...},
     "box_extent": [...], "positions": [with, objects],
     "episodes": [{"episode": id, "conditions": {...}, "frames": n, ...consumer keys}]}

so the reduce can sum over inputs or keep per-episode (per-cluster) counts. The input's conditions come from the
caller (`io.bag_inputs.select_bags` parsed metadata.yaml once); the pass never parses it again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from perception_safety.core.types import Frame
from perception_safety.evaluation.bbsl_testing import box_extent
from perception_safety.io.bag import BagError, BagReadReport, BagTopics, SkippedMessage, StatusRecords, read_frames
from perception_safety.io.dataset import DatasetReadReport, read_jsonl_frames

PARTIAL_FORMAT = "perception_safety.partial/3"
"""Its JSON text packs repeated records (`pipeline.partials`)."""


@dataclass(frozen=True)
class MapInput:
    """One input of the pass: its path, kind and the conditions its metadata gave (parsed once by the caller)."""

    path: str
    kind: str = "bag"
    conditions: Mapping[str, str] = field(default_factory=dict)
    messages: int = 0
    """Messages (or records) in the input, 0 when unknown: sizes the work when choosing workers."""
    topics: tuple[str, ...] = ()
    """The bag's topic names from its metadata (parsed once by the caller); empty when unknown."""

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "conditions": dict(self.conditions), "messages": self.messages,
                "topics": list(self.topics)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MapInput:
        conditions = dict(d.get("conditions") or {})
        topics = tuple(str(t) for t in d.get("topics") or ())
        return cls(str(d["path"]), str(d.get("kind", "bag")), conditions, int(d.get("messages", 0)), topics)


@dataclass(frozen=True)
class ReadOptions:
    """What the consumers need read: topics, stamp tolerance, images, the monitor's per-frame verdicts."""

    topics: BagTopics = field(default_factory=BagTopics)
    tolerance_ns: int = 0
    with_images: bool = False
    statuses: str | None = None
    """Name of the monitor status whose alarm is the frame's verdict (None: verdicts not read)."""


@dataclass(frozen=True)
class EpisodeFrames:
    """The frames of one episode of an input and, when read, each frame's verdict (True alarm, None unknown)."""

    source: str
    episode: str
    conditions: Mapping[str, str]
    frames: Sequence[Frame]
    verdicts: Sequence[bool | None] | None = None
    verdicts_missing: str = ""
    """Why the verdicts are absent (topic or status not in the input), when they were asked for."""
    topics: tuple[str, ...] = ()
    """The input's topic names from its metadata (`MapInput.topics`); empty when unknown."""
    log_windows: Mapping[int, tuple[int, int]] = field(default_factory=dict)
    """Each frame's recording window (anchor stamp -> first and last log time of its messages; `read_frames`), so
    the report can seek a referenced frame instead of reading the bag again; empty for a dataset."""


EpisodeMap = Callable[[EpisodeFrames], dict[str, Any]]


def _verdicts(path: str, frames: Sequence[Frame], records: StatusRecords, name: str, topic: str):
    """Each frame's alarm of the status ``name`` joined by stamp (None: no verdict), or why there are none."""
    if records.missing:
        return None, records.missing
    by_stamp = {stamp: alarm for stamp, alarm in records.alarms if alarm is not None}
    if not by_stamp:
        return None, f"{path}: no status named {name!r} on {topic}"
    return [by_stamp.get(int(f.stamp_ns)) for f in frames], ""


def dataset_episodes(inp: MapInput, report: BagReadReport) -> Iterator[EpisodeFrames]:
    """The episodes of a JSON Lines dataset (module docstring); malformed lines are skipped into ``report`` as
    ``line`` entries (file, line number, reason). A dataset carries no monitor verdicts."""
    rep = DatasetReadReport()
    groups: dict[str, list[Frame]] = {}
    for f in read_jsonl_frames(inp.path, skip_bad=True, report=rep):
        groups.setdefault(f.episode, []).append(f if f.episode else replace(f, episode=f"{inp.path}#{f.frame_id}"))
    report.skipped += [SkippedMessage(inp.path, "line", line, why) for (_, line), why in sorted(rep.skipped.items())]
    report.frames += rep.frames
    for episode, frames in groups.items():
        conditions = {**inp.conditions, **({"episode": episode} if episode else {})}
        missing = f"{inp.path}: a dataset carries no monitor verdicts"
        yield EpisodeFrames(inp.path, episode, conditions, frames, None, missing)


def read_episodes(inp: MapInput, opts: ReadOptions, report: BagReadReport) -> Iterator[EpisodeFrames]:
    """The episodes of one input (a bag: one episode; a dataset: one per episode key), read once (a bag's frames
    and monitor results in one pass)."""
    if inp.kind == "dataset":
        yield from dataset_episodes(inp, report)
        return
    if inp.kind != "bag":
        raise BagError(f"{inp.path}: unknown input kind {inp.kind!r}")
    records = StatusRecords(alarm_of=opts.statuses) if opts.statuses is not None else None
    windows: dict[int, tuple[int, int]] = {}
    frames = list(read_frames(inp.path, opts.topics, opts.tolerance_ns, opts.with_images, report, records, windows))
    verdicts, missing = (None, "")
    if records is not None and opts.statuses is not None:
        verdicts, missing = _verdicts(inp.path, frames, records, opts.statuses, opts.topics.monitor_results)
    episode = str(inp.conditions.get("episode") or inp.path)
    yield EpisodeFrames(inp.path, episode, inp.conditions, frames, verdicts, missing, inp.topics, windows)


def run_pass(inp: MapInput, opts: ReadOptions, episode_map: EpisodeMap, image_size: tuple[int, int] | None = None,
             overflow_px: float = 0.0) -> dict[str, Any]:
    """Read ``inp`` once and map each of its episodes with ``episode_map``: the input's partial (module docstring).

    ``image_size`` (width, height) adds the extent of the boxes (`bbsl_testing.box_extent`) checked against it.
    """
    report = BagReadReport()
    episodes = []
    frames_all: list[Frame] = []
    for ep in read_episodes(inp, opts, report):
        frames_all.extend(ep.frames)
        episodes.append({"episode": ep.episode, "conditions": dict(ep.conditions), "frames": len(ep.frames),
                         **episode_map(ep)})
    partial: dict[str, Any] = {
        "format": PARTIAL_FORMAT,
        "bag": inp.path,
        "kind": inp.kind,
        "frames": len(frames_all),
        "read_report": {
            "skipped": [[s.topic, s.index, s.reason] for s in report.skipped],
            "unmatched": {topic: n for (_, topic), n in sorted(report.unmatched.items())},
            "missing_topics": [topic for _, topic in report.missing_topics],
        },
    }
    if inp.kind == "dataset":
        partial["read_report"]["episodes"] = sum(1 for ep in episodes if ep["episode"])
    objects = [o for f in frames_all for o in (*f.ground_truth, *f.detections)]
    partial["positions"] = [sum(o.position is not None for o in objects), len(objects)]
    if image_size is not None:
        ext = box_extent(frames_all, image_size, overflow_px)
        partial["box_extent"] = [ext.max_x, ext.max_y, ext.outside, ext.boxes]
    partial["episodes"] = episodes
    return partial


MAP_SECONDS_PER_MESSAGE = 2e-4
"""CPU seconds the evaluate map spends per bag message (measured on the demo's bags, images skipped, 2026-11)."""
WORKER_START_S = 1.5
"""CPU seconds to start one spawned worker (interpreter + the package's imports), measured the same way."""


def workers_for(inputs: Sequence[MapInput], jobs: int) -> int:
    """Worker processes worth starting for these inputs (1 = map in this process).

    A worker costs `WORKER_START_S` of CPU whether or not a core is free; on a busy machine that is pure
    overhead, so each worker must have at least 10x its start cost of work: then ``--jobs N`` is never more
    than ~10 % slower than ``--jobs 1``, and small inputs (the demo) run in-process.
    """
    work = sum(i.messages for i in inputs) * MAP_SECONDS_PER_MESSAGE
    return max(1, min(jobs, len(inputs), int(work // (10 * WORKER_START_S))))


def episode_entries(partials: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(input path, episode entry)`` of every episode of every partial, in input order (the reduce's view)."""
    for p in partials:
        for ep in p.get("episodes", ()):
            yield p["bag"], ep
