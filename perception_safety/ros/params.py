"""ROS parameters from pydantic config models: declare flattened (``a.b.c``), validate, update at run time.

The parameter tree of a node is its pydantic model flattened with dots (the ``ros__parameters``
YAML nests them). Every parameter is declared with dynamic typing, and pydantic is the single
validator: at start-up (an invalid params file stops the node with a message naming the key) and
on every run-time change (rejected with the same message). Keys under ``read_only`` prefixes (topics,
QoS) cannot change at run time.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from perception_safety.io.config import ConfigError, format_validation_error

M = TypeVar("M", bound=BaseModel)

#: bounds shared by the nodes' parameter models (issue 19 item 3: a 1e-9 s diagnostics period meant 100 % CPU
#: and 2000 msg/s; 10^6 OpenCV threads gave 320k thread errors and stopped processing)
MIN_DIAGNOSTICS_PERIOD_S = 0.05
MAX_TIMEOUT_S = 3600.0
MAX_OPENCV_THREADS = 64


class StrictParams(BaseModel):
    """Base of the nodes' parameter models: unknown keys are errors, and NaN/inf are never a valid parameter
    (a NaN threshold silently disables a comparison)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mapping -> ``{"a.b.c": leaf}``; lists and scalars are leaves."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Inverse of `flatten`."""
    out: dict[str, Any] = {}
    for name, value in flat.items():
        node = out
        *parents, leaf = name.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


def to_param_value(value: Any) -> Any:
    """A model value as a ROS parameter value (tuples -> lists)."""
    return list(value) if isinstance(value, tuple) else value


def from_param_value(value: Any) -> Any:
    """A ROS parameter value as plain Python (rclpy arrays -> lists)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, tuple):
        return list(value)
    return value


def _params_files(argv: list[str]) -> list[str]:
    """The ``--params-file`` arguments of a command line (to name them in errors)."""
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--params-file"]


def validate(model: type[M], flat: Mapping[str, Any], source: str) -> M:
    """Validate flattened parameters into ``model``; errors name ``source`` and the dotted key."""
    try:
        return model.model_validate(unflatten({k: from_param_value(v) for k, v in flat.items()}))
    except ValidationError as exc:
        raise ConfigError(format_validation_error(source, exc)) from exc


class NodeParams(Generic[M]):
    """The validated configuration of one node, backed by its ROS parameters.

    ``on_change(new_config)`` runs after an accepted run-time change.
    """

    def __init__(self, node: Any, model: type[M], read_only: Iterable[str] = (),
                 on_change: Callable[[M], None] | None = None) -> None:
        from rcl_interfaces.msg import ParameterDescriptor

        self._node = node
        self._model = model
        self._read_only = tuple(read_only)
        self._on_change = on_change
        files = _params_files(sys.argv)
        source = f"node {node.get_fully_qualified_name()} parameters" + (f" ({', '.join(files)})" if files else "")
        defaults = flatten(model().model_dump(mode="json"))
        overrides = getattr(node, "_parameter_overrides", {}) or {}
        # an optional sub-model that defaults to None (e.g. a region) is given by its fields
        for key in overrides:
            parent = next((d for d in defaults if defaults[d] is None and key.startswith(d + ".")), None)
            if parent is not None:
                defaults.pop(parent)
                defaults.update({k: None for k in overrides if k.startswith(parent + ".")})
        unknown = sorted(k for k in overrides if k not in defaults and k != "use_sim_time")
        if unknown:
            hints = []
            for k in unknown:
                close = difflib.get_close_matches(k, list(defaults), n=1)
                hints.append(f"{k} (did you mean {close[0]}?)" if close else k)
            raise ConfigError(f"{source}: unknown parameter(s): {', '.join(hints)}")
        for name, default in defaults.items():
            desc = ParameterDescriptor(dynamic_typing=True, read_only=self.is_read_only(name))
            node.declare_parameter(name, to_param_value(default), desc)
        self._flat = {name: from_param_value(node.get_parameter(name).value) for name in defaults}
        self.config: M = validate(model, self._flat, source)
        self._source = source
        node.add_on_set_parameters_callback(self._check)
        node.add_post_set_parameters_callback(self._apply)

    def is_read_only(self, name: str) -> bool:
        return any(name == p or name.startswith(p + ".") for p in self._read_only)

    def _candidate(self, params: Iterable[Any]) -> dict[str, Any]:
        flat = dict(self._flat)
        for p in params:
            if p.name in flat:
                flat[p.name] = from_param_value(p.value)
        return flat

    def _check(self, params: list[Any]) -> Any:
        from rcl_interfaces.msg import SetParametersResult

        mine = [p for p in params if p.name in self._flat]
        if not mine:
            return SetParametersResult(successful=True)
        try:
            validate(self._model, self._candidate(mine), "parameter update")
        except ConfigError as exc:
            return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _apply(self, params: list[Any]) -> None:
        mine = [p for p in params if p.name in self._flat]
        if not mine:
            return
        self._flat = self._candidate(mine)
        self.config = validate(self._model, self._flat, self._source)
        if self._on_change is not None:
            self._on_change(self.config)
