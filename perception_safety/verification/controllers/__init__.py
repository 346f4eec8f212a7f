"""Car controllers for the car–pedestrian chain: built-in rules, policy tables (data) and callables (code).

`resolve_controller` turns ``verification.controller`` into a `ResolvedController`; `state_controller`
binds it to one geometry as the builder's ``K(states, observation) -> successors``, so the chain builder
never knows which kind of controller it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from perception_safety.verification.controllers.base import (
    ALARM_TAG,
    KINDS,
    CarController,
    FailSafe,
    checked_successors,
    fail_safe,
    observation_kind,
)
from perception_safety.verification.controllers.builtin import BUILTIN_CONTROLLERS, braking_rule, paper_modes
from perception_safety.verification.controllers.callables import (
    DEFAULT_TIME_LIMIT_S,
    load_callable,
    with_time_limit,
)
from perception_safety.verification.controllers.policy import PolicyTable, load_policy, write_policy
from perception_safety.verification.errors import VerificationError

if TYPE_CHECKING:
    from perception_safety.verification.geometry import Geometry

__all__ = ["ALARM_TAG", "BUILTIN_CONTROLLERS", "KINDS", "CarController", "FailSafe", "PolicyTable",
           "ResolvedController", "braking_rule", "load_policy", "observation_kind", "paper_modes",
           "parse_controller", "resolve_controller", "state_controller", "write_policy"]


@dataclass(frozen=True)
class ResolvedController:
    """A controller ready to bind: ``for_geometry(g)`` gives the callable; ``handles_alarm``: it takes ``alarm``."""

    name: str
    for_geometry: Callable[[Geometry], Callable[..., Any]]
    handles_alarm: bool = False


def parse_controller(text: str) -> str | dict[str, str]:
    """``--controller`` text: a built-in name, ``policy:FILE`` or ``python:module:function``."""
    for key in ("policy", "python"):
        if text.startswith(key + ":"):
            return {key: text[len(key) + 1:]}
    return text


def resolve_controller(choice: Any, base_dir: str | Path | None = None) -> ResolvedController:
    """``braking_rule`` / ``paper_modes``, ``{"policy": FILE}`` (relative to ``base_dir``) or ``{"python": "m:f"}``."""
    if hasattr(choice, "model_dump"):
        choice = choice.model_dump()
    if isinstance(choice, str):
        if choice not in BUILTIN_CONTROLLERS:
            raise VerificationError(f"unknown controller {choice!r}; built-in: {sorted(BUILTIN_CONTROLLERS)}, "
                                    "or policy: FILE, or python: module:function")
        fn = BUILTIN_CONTROLLERS[choice]
        return ResolvedController(choice, lambda g: fn)
    if isinstance(choice, dict) and set(choice) == {"policy"}:
        path = Path(choice["policy"]).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        table = load_policy(path)
        return ResolvedController(table.name, table.controller, table.has_alarm)
    if isinstance(choice, dict) and "python" in choice and set(choice) <= {"python", "time_limit_s"}:
        fn, alarm = load_callable(choice["python"])
        name = f"python {choice['python']}"
        limited = with_time_limit(fn, float(choice.get("time_limit_s", DEFAULT_TIME_LIMIT_S)), name)
        return ResolvedController(name, lambda g: limited, alarm)
    raise VerificationError(f"controller {choice!r}: expected a built-in name, {{policy: FILE}} or "
                            "{python: module:function[, time_limit_s: S]}")


def state_controller(
    resolved: ResolvedController,
    geometry: Geometry,
    pedestrian: str = "ped",
    empty_label: str = "empty",
    action: FailSafe = "brake",
    emergency_deceleration: int | None = None,
) -> Callable[[np.ndarray, tuple[str, ...]], np.ndarray]:
    """The builder's ``K(states, observation)`` for ``geometry``: the observation's kind selects the mode; on a
    monitor alarm (`ALARM_TAG`) the controller decides itself when it takes ``alarm``, else the fail-safe acts."""
    fn = resolved.for_geometry(geometry)

    def controller(states: np.ndarray, observation: tuple[str, ...]) -> np.ndarray:
        kind, alarm = observation_kind(observation, pedestrian, empty_label)
        x, v = geometry.cell_speed(states)
        if alarm and not resolved.handles_alarm:
            nx, nv = fail_safe(x, v, geometry, action, emergency_deceleration)
        else:
            try:
                result = fn(x, v, kind, geometry, alarm=alarm) if resolved.handles_alarm else fn(x, v, kind, geometry)
            except VerificationError:
                raise
            except Exception as exc:
                raise VerificationError(f"controller {resolved.name} failed on kind {kind!r}: "
                                        f"{type(exc).__name__}: {exc}") from exc
            if not (isinstance(result, tuple) and len(result) == 2):
                raise VerificationError(f"controller {resolved.name}: must return a pair (x', v') of arrays, got "
                                        f"{type(result).__name__}")
            nx, nv = checked_successors(result[0], result[1], x, v, kind, geometry, resolved.name)
        return (nx - 1) * (geometry.max_speed + 1) + nv

    return controller
