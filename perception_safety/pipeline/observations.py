"""The evaluate map/reduce for the chain's independence test: per episode, the pedestrian column's observations in
time order (issue 24 item 9).

Map: from the episode's one columnar batch, `verification.sequences.observation_sequences` gives run-length
sequences of the pedestrian class column and of every configured true environment's proposition set that holds
the pedestrian, keyed by the frames' own episode. Reduce: per (variant, true environment) one
`memory.ObservationRuns` with the episodes as the unit (an episode split over inputs is joined with a break).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from perception_safety.evaluation.confusion.batch import FrameBatch
from perception_safety.evaluation.confusion.rows import matched_rows
from perception_safety.evaluation.confusion.subset import select_frames
from perception_safety.evaluation.confusion.types import proposition_labels
from perception_safety.pipeline.bag_pass import episode_entries
from perception_safety.pipeline.evaluate_config import EvaluateConfig

OBSERVATIONS = "observations"


def prop_column(cfg: EvaluateConfig, prop: str) -> str | None:
    """The proposition label of a true environment's set when it holds the pedestrian (labels are sets: any
    order), else None."""
    want = frozenset(x.strip() for x in prop.split(","))
    if cfg.verification.pedestrian_label not in want:
        return None
    labels = proposition_labels(cfg.confusion.class_names, cfg.confusion.empty_label)
    return next((lab for lab in labels if frozenset(lab.split(",")) == want), None)


def pedestrian_sets(cfg: EvaluateConfig) -> list[str]:
    """The proposition labels of the configured true environments that hold the pedestrian."""
    sets = (prop_column(cfg, env.prop) for env in cfg.verification.true_envs.values())
    return list(dict.fromkeys(s for s in sets if s is not None))


def observation_part(batch: FrameBatch, cfg: EvaluateConfig) -> dict[str, Any]:
    """``{episode: sequences}`` of one map episode's batch (`verification.sequences`), frames in order."""
    from perception_safety.verification.sequences import observation_sequences

    ped, sets = cfg.verification.pedestrian_label, pedestrian_sets(cfg)
    episodes = batch.frame_episodes if batch.frame_episodes is not None else np.full(batch.n_frames, "", object)
    rows = matched_rows(batch, cfg.confusion)  # the confusion counts' matching of this batch, reused
    out = {}
    for name in dict.fromkeys(episodes.tolist()):
        if len(out) == 0 and (episodes == name).all():
            out[str(name)] = observation_sequences(batch, cfg.confusion, ped, sets, rows.gt_pred)
        else:
            keep = episodes == name
            out[str(name)] = observation_sequences(select_frames(batch, keep), cfg.confusion, ped, sets,
                                                   rows.select_frames(keep).gt_pred)  # fmt: skip
    return out


def reduce_observations(partials: Sequence[Mapping[str, Any]], cfg: EvaluateConfig) -> dict[tuple[str, str], Any]:
    """Per ``(variant, true env)`` whose column holds the pedestrian: the `memory.ObservationRuns` of all episodes
    (none when no partial carries observation sequences)."""
    from perception_safety.verification.memory import ObservationRuns
    from perception_safety.verification.sequences import decode

    by_episode: dict[str, list[dict[str, Any]]] = {}
    for _, ep in episode_entries(partials):
        for name, seqs in (ep.get(OBSERVATIONS) or {}).items():
            by_episode.setdefault(name, []).append(seqs)
    if not by_episode:
        return {}
    vcfg, ccfg = cfg.verification, cfg.confusion
    n_cls, n_bins = len(ccfg.classes), len(ccfg.bins)
    n_prop = 1 << n_cls
    out: dict[tuple[str, str], Any] = {}
    for variant in vcfg.variants:
        pooled = not variant.endswith("_by_distance")
        for env_name, env in vcfg.true_envs.items():
            if variant.startswith("class"):
                key, column, n_labels = "class", vcfg.pedestrian_label, n_cls + 1
                if column not in env.class_objects:
                    continue
            else:
                key, n_labels = ("prop_pooled" if pooled else "prop"), n_prop
                column = prop_column(cfg, env.prop)
                if column is None:
                    continue
            seqs = []
            for parts in by_episode.values():
                pieces = [decode(p[key][column]) for p in parts if column in p.get(key, {})]
                if not pieces:
                    continue
                bins = np.concatenate([np.append(b, -1) for b, _ in pieces])
                labels = np.concatenate([np.append(y, 0) for _, y in pieces])
                if pooled and key == "class":
                    bins = np.where(bins >= 0, 0, -1)
                seqs.append((bins, labels))
            if seqs:
                out[(variant, env_name)] = ObservationRuns.from_sequences(seqs, 1 if pooled else n_bins, n_labels)
    return out


def ambiguous_frames(partials: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Frames left out of the sequences because they held several samples of one column, summed per column."""
    total: dict[str, int] = {}
    for _, ep in episode_entries(partials):
        for seqs in (ep.get(OBSERVATIONS) or {}).values():
            for col, n in seqs.get("ambiguous", {}).items():
                total[col] = total.get(col, 0) + int(n)
    return total
