"""``evaluate``: map every input to a partial result, reduce the partials, run the analyses on the sums.

Map (`analyse_input`, one bag or JSON Lines dataset, in-process or in a worker process): the shared pass
(`bag_pass`) reads the input once (no images) with its monitor verdicts (bags); per episode, `episode_parts`
flattens the frames into one columnar batch and fills every accumulator from it (all frames, each verdict, each
speed and object-size band), and collects PCD samples per target, AP records and BBSL test cases. A partial is
JSON-ready (count arrays as numpy arrays; floats round-trip exactly; `pipeline.partials` writes it, packed),
returned as data by whichever executor ran it (`perception_safety.executors`: this process, local workers or
Ray tasks) and kept in ``OUT/partials/``; the reduce runs in input order on the driver, so every executor and job
count gives identical results.
A bag whose map fails is reported (`MapResult.failed`) and the others are still evaluated.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from perception_safety.bbsl.spec import Spec, load_spec
from perception_safety.errors import PerceptionSafetyError
from perception_safety.evaluation.bbsl_testing import BoxExtent, OracleReport, TestCase, run_oracle
from perception_safety.evaluation.confusion.accumulate import sum_confusions
from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.config import ClassMapper
from perception_safety.evaluation.confusion.io import confusion_from_mapping
from perception_safety.evaluation.confusion.types import DistanceConfusion
from perception_safety.evaluation.ground_truth_screen import ScreenCounts, screen_frames
from perception_safety.executors import ExecutorConfig, Outcome, run_tasks
from perception_safety.executors.local import runs_in_process
from perception_safety.io.bag_inputs import bag_conditions
from perception_safety.monitors.stop_region import STOP_REGION_BBSL, bbsl_bindings
from perception_safety.pipeline.bag_pass import (
    EpisodeFrames,
    MapInput,
    ReadOptions,
    episode_entries,
    run_pass,
    workers_for,
)
from perception_safety.pipeline.breakdowns import (
    SIZE_BAND,
    SPEED_BAND,
    Group,
    PendingCounts,
    confusion_part,
    episode_samples,
    reduce_breakdowns,
    sample_frames,
    size_band_parts,
    speed_band_parts,
)
from perception_safety.pipeline.collector import collector_paused
from perception_safety.pipeline.evaluate_config import STOP_REGION_SPEC, EvaluateConfig
from perception_safety.pipeline.partials import partial_text, read_partial
from perception_safety.safe_io import write_text


class NothingUsableError(PerceptionSafetyError):
    """No frame could be read from any input."""


_SPECS: dict[tuple[Any, ...], Spec] = {}
"""Compiled specs of this process (one compile per spec and config, not one per bag)."""


def load_evaluate_spec(name: str, cfg: EvaluateConfig) -> Spec:
    """A BBSL spec of ``evaluate.bbsl_specs``: ``stop_region`` or a file (relative to ``cfg.base_dir``); compiled once
    per process for the same spec, file state and config (a `Spec` only caches its compilations)."""
    path = Path(name) if Path(name).is_absolute() else Path(cfg.base_dir) / name
    state = None
    if name != STOP_REGION_SPEC:
        try:
            st = path.stat()
            state = (st.st_mtime_ns, st.st_size)
        except OSError:
            state = None  # load_spec names the problem
    key = (name, str(path), state, cfg.bbsl.model_dump_json(), cfg.monitors.stop_region.model_dump_json())
    if state is not None or name == STOP_REGION_SPEC:
        cached = _SPECS.get(key)
        if cached is not None:
            return cached
    if name == STOP_REGION_SPEC:
        bindings = {**cfg.bbsl.bindings, **bbsl_bindings(cfg.monitors.stop_region, cfg.bbsl.image_size)}
        spec = load_spec(STOP_REGION_BBSL, bindings, cfg.bbsl.image_size)
    else:
        spec = load_spec(path, cfg.bbsl.bindings, cfg.bbsl.image_size)
    if len(_SPECS) > 32:
        _SPECS.clear()
    _SPECS[key] = spec
    return spec


def episode_parts(ep: EpisodeFrames, cfg: EvaluateConfig) -> dict[str, Any]:
    """Everything evaluate needs from one episode's frames, from one columnar batch: the confusion matrices, PCD
    samples per target, the per-band parts of the breakdowns, the counts per verdict and the BBSL test cases."""
    analyses = set(cfg.evaluate.analyses)
    # ignore regions and impossible ground truth leave before any metric (evaluation.ground_truth_screen)
    frames, screened = screen_frames(ep.frames, cfg.confusion.iou_threshold)
    ep = replace(ep, frames=frames)
    source = ep.source
    batch = (
        FrameBatch.from_frames(frames, ClassMapper(cfg.confusion)).with_episode(ep.episode)
        if analyses & {"confusion", "verification", "detection_ap"}
        else None
    )
    counted = batch if analyses & {"confusion", "verification"} else None  # the confusion matrices' batch
    out: dict[str, Any] = {"ground_truth_screen": screened.to_dict()}
    pending = PendingCounts(cfg, source)  # every confusion selection of the episode counted at once, below
    if counted is not None:
        out["confusion"] = confusion_part(counted, cfg, source, pending=pending)
    if "detection_ap" in analyses and cfg.image_boxes and batch is not None:  # IoU of image boxes (3D: run.py warns)
        from perception_safety.pipeline.detection_ap import ap_partial

        out["detection_ap"] = ap_partial(batch, cfg)
    elif "detection_ap" in analyses:  # 3D object lists: nuScenes-style AP by centre distance
        from perception_safety.evaluation.detection_ap.centre_distance import centre_partial

        mapper, names = ClassMapper(cfg.confusion), list(cfg.confusion.classes)
        out["detection_ap_centre"] = centre_partial(
            frames, ep.episode, lambda label: names[i] if (i := mapper(label)) >= 0 else None
        )
    flat = sample_frames(frames, cfg, source) if "pcd" in analyses else None  # one flattening for every target
    samples = episode_samples(flat, cfg, source) if flat is not None else []
    if samples:
        every = np.ones(len(frames), dtype=bool)
        out["pcd"] = {t.name: s.for_frames(every) for t, s in zip(cfg.evaluate.pcd_targets, samples, strict=True)}
    if SPEED_BAND in cfg.evaluate.breakdowns:
        out["speed_bands"] = speed_band_parts(frames, counted, cfg, source, samples, pending)
    if SIZE_BAND in cfg.evaluate.breakdowns:
        out["size_bands"] = size_band_parts(frames, counted, cfg, source, flat, pending)
    if "verification" in analyses and counted is not None:
        from perception_safety.pipeline.verdicts import verdict_part

        out["verdicts"] = verdict_part(ep, batch, cfg, pending)  # monitor in the loop: counts per verdict
        from perception_safety.pipeline.observations import OBSERVATIONS, observation_part

        out[OBSERVATIONS] = observation_part(batch, cfg)  # the chain's independence test: sequences per episode
    pending.flush()
    if "bbsl" in analyses and cfg.image_boxes:
        out["bbsl"] = {}
        for name in cfg.evaluate.bbsl_specs:
            rep = run_oracle(load_evaluate_spec(name, cfg), frames, cfg.bbsl)
            out["bbsl"][name] = {
                "case_names": list(rep.case_names),
                "frames": rep.frames,
                "out_of_scope": rep.out_of_scope,
                "test_cases": [_test_case_record(tc) for tc in rep.test_cases],
                "breakdown_verdicts": list(rep.breakdown_verdicts),
            }
    if cfg.evaluate.evidence_per_cell > 0:
        from perception_safety.pipeline.evidence import evidence_part

        out["evidence"] = evidence_part(ep, cfg, out.get("bbsl"), batch)
    return out


def read_options(cfg: EvaluateConfig) -> ReadOptions:
    """What evaluate reads from an input: no images; the monitor's verdicts when verification runs."""
    statuses = cfg.verification.monitor_loop.status if "verification" in cfg.evaluate.analyses else None
    return ReadOptions(cfg.bags.topics, cfg.bags.tolerance_ns, with_images=False, statuses=statuses)


def analyse_input(inp: MapInput, cfg: EvaluateConfig) -> dict[str, Any]:
    """The map step for one input: its partial (`bag_pass.run_pass` with `episode_parts`)."""
    return run_pass(
        inp,
        read_options(cfg),
        lambda ep: episode_parts(ep, cfg),
        cfg.bbsl.image_size,
        cfg.evaluate.warn_box_overflow_px,
    )


def analyse_bag(bag: str, config_json: str, conditions: dict[str, str] | None = None) -> dict[str, Any]:
    """The map step for one bag (conditions parsed from its metadata unless given)."""
    cond = bag_conditions(Path(bag)) if conditions is None else conditions
    return analyse_input(MapInput(bag, "bag", cond), EvaluateConfig.model_validate_json(config_json))


@dataclass
class Reduced:
    """The sums over all bags."""

    bags: list[str]
    frames: int
    read_reports: dict[str, dict[str, Any]]
    confusion: DistanceConfusion | None = None
    pcd_samples: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)
    pcd_groups: dict[str, np.ndarray | None] = field(default_factory=dict)  # bootstrap unit of each sample
    pcd_inputs: dict[str, str] = field(default_factory=dict)  # raw, thresholded or mixed (samples.INPUT_MEANING)
    bbsl: dict[str, OracleReport] = field(default_factory=dict)
    bbsl_by_episode: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    """Per spec: (episode, passed, test cases) of every episode: the clusters of the pass rate's interval."""
    box_extent: BoxExtent = field(default_factory=BoxExtent)
    verdicts: Any = None
    """`VerdictSplit` of the bags that carry the monitor's per-frame verdict (None when none does)."""
    verdict_notes: list[str] = field(default_factory=list)
    screened: ScreenCounts = field(default_factory=ScreenCounts)
    """Ignore regions and impossible ground truth removed before the metrics (`evaluation.ground_truth_screen`)."""
    breakdowns: dict[str, dict[str, Group]] = field(default_factory=dict)
    detection_ap: Any = None
    detection_ap_centre: Any = None
    """(ground truth, detections) as `CentreObjects` for 3D object lists (nuScenes-style AP), else None."""
    """`APRecords` of all inputs' episodes (None when the analysis did not run)."""
    failed: dict[str, str] = field(default_factory=dict)
    """Bags whose map failed (not in the sums), with the reason."""
    episode_confusions: list[DistanceConfusion] = field(default_factory=list)
    """The confusion counts of each episode (the independent unit of the chain's intervals and posterior)."""
    evidence: dict[str, Any] = field(default_factory=dict)
    """Frame references per cell, failure and alarm (`pipeline.evidence.reduce_evidence`)."""
    observation_runs: dict[tuple[str, str], Any] = field(default_factory=dict)
    """Per (variant, true env): `memory.ObservationRuns` of the pedestrian column (`pipeline.observations`)."""
    ambiguous_frames: dict[str, int] = field(default_factory=dict)
    positions: tuple[int, int] = (0, 0)
    """(objects with an ego-frame position, all objects): 3D object lists carry one, image boxes do not."""


_TEST_CASE_FIELDS = tuple(f.name for f in fields(TestCase))


def _test_case_record(tc: TestCase) -> dict[str, Any]:
    return {name: getattr(tc, name) for name in _TEST_CASE_FIELDS}


def _test_case(d: dict[str, Any]) -> TestCase:
    tuples = ("gt_box", "det_box", "expected", "actual", "iou_verdicts")
    return TestCase(**{k: (tuple(v) if k in tuples and v is not None else v) for k, v in d.items()})


def reduce_partials(partials: Sequence[dict[str, Any]], cfg: EvaluateConfig | None = None) -> Reduced:
    """The reduce step: sum matrices, concatenate samples (in input order); the cyclic collector paused (its full
    passes over the partials free nothing: `pipeline.collector`)."""
    with collector_paused():
        return _reduce(partials, cfg)


def _reduce(partials: Sequence[dict[str, Any]], cfg: EvaluateConfig | None) -> Reduced:
    red = Reduced(
        bags=[p["bag"] for p in partials],
        frames=sum(p["frames"] for p in partials),
        read_reports={p["bag"]: {"frames": p["frames"], **p["read_report"]} for p in partials},
    )
    red.breakdowns = reduce_breakdowns(partials, (cfg or EvaluateConfig()).evaluate.breakdowns)
    for p in partials:
        if "box_extent" in p:
            red.box_extent = red.box_extent.merge(BoxExtent(*p["box_extent"]))
        if "positions" in p:
            red.positions = (red.positions[0] + p["positions"][0], red.positions[1] + p["positions"][1])
    episodes = list(episode_entries(partials))
    for _, ep in episodes:
        red.screened = red.screened + ScreenCounts.from_dict(ep.get("ground_truth_screen", {}))
    confs = [confusion_from_mapping(ep["confusion"], bag) for bag, ep in episodes if "confusion" in ep]
    if confs:
        red.confusion = sum_confusions(confs, source=", ".join(red.bags))
        red.episode_confusions = confs
    from perception_safety.pipeline.verdicts import reduce_verdicts

    red.verdicts, red.verdict_notes = reduce_verdicts(partials)
    from perception_safety.pipeline.evidence import reduce_evidence

    red.evidence = reduce_evidence(partials, cfg or EvaluateConfig())
    from perception_safety.pipeline.detection_ap import reduce_ap

    red.detection_ap = reduce_ap([ep for _, ep in episodes])
    centre = [ep["detection_ap_centre"] for _, ep in episodes if "detection_ap_centre" in ep]
    if centre:
        from perception_safety.evaluation.detection_ap.centre_distance import concat_partials

        red.detection_ap_centre = concat_partials(centre)
    from perception_safety.pipeline.observations import ambiguous_frames, reduce_observations

    red.observation_runs = reduce_observations(partials, cfg or EvaluateConfig())
    red.ambiguous_frames = ambiguous_frames(partials)
    names = [n for _, ep in episodes for n in ep.get("pcd", {})]
    for name in dict.fromkeys(names):
        parts = [ep["pcd"][name] for _, ep in episodes if name in ep.get("pcd", {})]
        red.pcd_samples[name] = (
            np.concatenate([np.asarray(q["x"], dtype=float) for q in parts]),
            np.concatenate([np.asarray(q["y"], dtype=float) for q in parts]),
            np.concatenate([np.asarray(q["missed"], dtype=bool) for q in parts]),
        )
        groups = [q.get("group") for q in parts]
        red.pcd_groups[name] = (
            np.concatenate([np.asarray(g, dtype=object) for g in groups])
            if all(g is not None for g in groups)
            else None
        )
        kinds = {q.get("input", "") for q in parts if q["x"]} - {""}
        red.pcd_inputs[name] = kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else "")
    for name in dict.fromkeys(n for _, ep in episodes for n in ep.get("bbsl", {})):
        parts = [ep["bbsl"][name] for _, ep in episodes if name in ep.get("bbsl", {})]
        red.bbsl_by_episode[name] = [
            (
                str(ep.get("episode", bag)),
                sum(bool(tc["verdict"]) for tc in ep["bbsl"][name]["test_cases"]),
                len(ep["bbsl"][name]["test_cases"]),
            )
            for bag, ep in episodes
            if name in ep.get("bbsl", {})
        ]
        bcfg = (cfg or EvaluateConfig()).bbsl
        red.bbsl[name] = OracleReport(
            spec=name,
            case_names=tuple(parts[0]["case_names"]),
            iou_thresholds=tuple(bcfg.iou_thresholds),
            breakdown_iou=bcfg.breakdown_iou,
            test_cases=tuple(_test_case(tc) for q in parts for tc in q["test_cases"]),
            frames=sum(q["frames"] for q in parts),
            out_of_scope=sum(q["out_of_scope"] for q in parts),
            examples_per_cell=bcfg.examples_per_cell,
            breakdown_verdicts=tuple(v for q in parts for v in q["breakdown_verdicts"]),
        )
    return red


def analyse_input_json(input_json: str, config_json: str) -> str:
    """`analyse_input` as JSON text: the map task every executor runs (the partial travels back as data)."""
    return analyse_input_kept(input_json, config_json)[0]


def analyse_input_kept(input_json: str, config_json: str) -> tuple[str, dict[str, Any]]:
    """`analyse_input_json` and the partial itself: the map task when it runs in this process (the reduce reads the
    partial as built instead of decoding its text again; tested equal)."""
    inp = MapInput.from_json(json.loads(input_json))
    partial = analyse_input(inp, EvaluateConfig.model_validate_json(config_json))
    return partial_text(partial), partial


@dataclass(frozen=True)
class MapResult:
    """The partials of the bags that could be read (input order) and, per bag that could not, the reason."""

    partials: list[dict[str, Any]]
    failed: dict[str, str]


def map_bags(
    bags: Sequence[Path | MapInput],
    cfg: EvaluateConfig,
    partial_dir: Path,
    executor: ExecutorConfig | None = None,
    on_done: Callable[[str], None] | None = None,
) -> MapResult:
    """Run the map over the bags on ``executor`` (default: ``cfg.executor``); partials in input order.

    A bag given as a path has its conditions read from its metadata here; a `MapInput` carries them. Each
    partial is also written to ``partial_dir`` (for inspection). A bag whose task fails (unreadable, truncated,
    its worker died after every retry) is left out of the partials and named in ``failed``.
    """
    executor = executor or cfg.executor
    partial_dir.mkdir(parents=True, exist_ok=True)
    config_json = cfg.model_dump_json()
    inputs = [b if isinstance(b, MapInput) else MapInput(str(b), "bag", bag_conditions(Path(b))) for b in bags]
    names = [i.path for i in inputs]
    if executor.kind == "local" and all(i.messages > 0 for i in inputs):  # sized inputs: workers from their size
        executor = executor.model_copy(update={"jobs": workers_for(inputs, executor.jobs)})

    tasks = [(json.dumps(i.to_json()), config_json) for i in inputs]
    in_process = executor.kind == "local" and runs_in_process(executor.jobs, len(tasks))
    with collector_paused(in_process) as tidy:

        def done(out: Outcome) -> None:
            tidy()
            if on_done is not None:
                on_done(names[out.index])

        outcomes = run_tasks(analyse_input_kept if in_process else analyse_input_json, tasks, executor, done)
    partials, failed = [], {}
    for out in outcomes:
        name = names[out.index]
        if not out.ok:
            failed[name] = out.error or "failed"
            continue
        path = partial_dir / f"{out.index:05d}_{Path(name).name}.json"
        text, partial = out.value if in_process else (out.value, None)
        write_text(path, text)
        partials.append(partial if partial is not None else read_partial(text, str(path)))
    return MapResult(partials, failed)
