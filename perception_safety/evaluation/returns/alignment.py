"""Aligning logged rollouts: the perception, monitored and ground-truth rollouts of each episode as triples."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from perception_safety.core.episode import Episode
from perception_safety.evaluation.returns.config import ReturnsError

# ---------------------------------------------------------------- alignment


@dataclass(frozen=True)
class Aligned:
    """Rollouts grouped by scenario id: complete triples and what could not be aligned."""

    triples: tuple[tuple[Episode, Episode, Episode], ...]
    by_rollout: Mapping[str, tuple[Episode, ...]]
    incomplete: tuple[str, ...]


def align(episodes: Iterable[Episode]) -> Aligned:
    """Group rollouts by episode id; a duplicate (episode, rollout) is an error naming both sources."""
    seen: dict[tuple[str, str], Episode] = {}
    for ep in episodes:
        key = (ep.episode, ep.rollout)
        if key in seen:
            raise ReturnsError(
                f"episode {ep.episode} rollout {ep.rollout} appears twice ({seen[key].source} and {ep.source})"
            )
        seen[key] = ep
    ids = list(dict.fromkeys(e for e, _ in seen))
    triples, incomplete = [], []
    names = ("perception", "monitored", "ground_truth")
    for i in ids:
        have = [seen.get((i, r)) for r in names]
        if all(h is not None for h in have):
            triples.append(tuple(have))
        else:
            missing = [r for r, h in zip(names, have, strict=True) if h is None]
            incomplete.append(f"episode {i}: missing rollout(s) {', '.join(missing)}")
    by_rollout: dict[str, list[Episode]] = {}
    for (_, r), ep in seen.items():
        by_rollout.setdefault(r, []).append(ep)
    return Aligned(
        tuple(triples),  # type: ignore[arg-type]
        {k: tuple(v) for k, v in by_rollout.items()},
        tuple(incomplete),
    )
