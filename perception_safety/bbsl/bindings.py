"""Exfunction bindings: what each ``name()`` of a spec's exfunction block evaluates to.

A binding is one of

* a constant: ``true``/``false``, an interval ``[lo, hi]`` (a single number is ``[n, n]``),
  a bb ``[x_min, y_min, x_max, y_max]`` (e.g. ``stoppingDistance() = [275, 375]``, Table 2);
* ``subject``: the bb of the object under test (``vehicle()``);
* ``subject_exists``: true when there is an object under test (``vehicleExists()``);
* ``image``: the image as a bb ``[0, 0, W, H]``;
* ``frame_boxes``: the set of every box of the frame (type ``set<bb>``).

Bindings come from the ``bbsl.bindings`` config mapping or ``--bind NAME=VALUE``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perception_safety.bbsl.ast import Type
from perception_safety.bbsl.errors import BBSLError


@dataclass(frozen=True, slots=True)
class Constant:
    """A fixed value of ``type`` (bool, ``(lo, hi)`` or ``(x_min, y_min, x_max, y_max)``)."""

    type: Type
    value: Any


@dataclass(frozen=True, slots=True)
class Subject:
    """The bb of the object under test."""


@dataclass(frozen=True, slots=True)
class SubjectExists:
    """Whether an object under test exists."""


@dataclass(frozen=True, slots=True)
class ImageBox:
    """The image rectangle ``[0, 0, W, H]``."""


@dataclass(frozen=True, slots=True)
class FrameBoxes:
    """All boxes of the frame, as a ``set<bb>``."""


Binding = Constant | Subject | SubjectExists | ImageBox | FrameBoxes

_KINDS: dict[str, Binding] = {
    "subject": Subject(),
    "subject_exists": SubjectExists(),
    "image": ImageBox(),
    "frame_boxes": FrameBoxes(),
}
_KIND_TYPES = {Subject: Type.BB, SubjectExists: Type.BOOL, ImageBox: Type.BB, FrameBoxes: Type.BBSET}


def binding_type(binding: Binding) -> Type:
    """The BBSL type a binding provides."""
    if isinstance(binding, Constant):
        return binding.type
    return _KIND_TYPES[type(binding)]


def _numbers(values: list[Any], what: str) -> tuple[float, ...]:
    out = []
    for v in values:
        if isinstance(v, bool):
            raise ValueError(f"{what}: expected numbers, got {v!r}")
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ValueError(f"{what}: expected numbers, got {v!r}") from None
        if not math.isfinite(f):
            raise ValueError(f"{what}: non-finite number {v!r}")
        out.append(f)
    return tuple(out)


def parse_binding_value(value: Any, what: str = "binding") -> Binding:
    """A binding from a config value or CLI text; raises `ValueError` saying what was expected."""
    if isinstance(value, Constant | Subject | SubjectExists | ImageBox | FrameBoxes):
        return value
    if isinstance(value, bool):
        return Constant(Type.BOOL, value)
    if isinstance(value, int | float):
        (v,) = _numbers([value], what)
        return Constant(Type.INTERVAL, (v, v))
    if isinstance(value, str):
        text = value.strip()
        low = text.lower()
        if low in _KINDS:
            return _KINDS[low]
        if low in ("true", "false"):
            return Constant(Type.BOOL, low == "true")
        inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
        parts = [p for p in re.split(r"[,\s]+", inner.strip()) if p]
        try:
            nums = list(_numbers(parts, what)) if parts else None
        except ValueError:
            nums = None
        if nums is not None:
            return parse_binding_value(nums, what)
        raise ValueError(
            f"{what}: cannot read {value!r}; expected true/false, [lo, hi], [x_min, y_min, x_max, y_max], "
            "or one of " + ", ".join(_KINDS)
        )
    if isinstance(value, list | tuple):
        nums = _numbers(list(value), what)
        if len(nums) == 1:
            return Constant(Type.INTERVAL, (nums[0], nums[0]))
        if len(nums) == 2:
            if nums[0] > nums[1]:
                raise ValueError(f"{what}: interval [{nums[0]}, {nums[1]}] has lower bound above upper bound")
            return Constant(Type.INTERVAL, nums)
        if len(nums) == 4:
            if nums[0] > nums[2] or nums[1] > nums[3]:
                raise ValueError(f"{what}: bb {list(nums)} is inverted (need x_min <= x_max, y_min <= y_max)")
            return Constant(Type.BB, nums)
        raise ValueError(f"{what}: expected 2 numbers (interval) or 4 (bb), got {len(nums)}")
    raise ValueError(f"{what}: cannot use a {type(value).__name__} as a binding")


def parse_bind_option(text: str) -> tuple[str, Binding]:
    """``NAME=VALUE`` (``NAME()`` accepted) from the command line; raises `BBSLError`."""
    if "=" not in text:
        raise BBSLError(f"--bind {text!r}: expected NAME=VALUE, e.g. stoppingDistance=[275,375]", source="--bind")
    name, _, value = text.partition("=")
    name = name.strip().removesuffix("()").strip()
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise BBSLError(f"--bind {text!r}: {name!r} is not an exfunction name", source="--bind")
    try:
        return name, parse_binding_value(value, name)
    except ValueError as exc:
        raise BBSLError(str(exc), source="--bind") from None


def parse_bindings(mapping: Mapping[str, Any], source: str = "bindings") -> dict[str, Binding]:
    """Bindings from a mapping ``{name: value}`` (config ``bbsl.bindings``)."""
    out: dict[str, Binding] = {}
    for name, value in mapping.items():
        key = str(name).removesuffix("()")
        try:
            out[key] = parse_binding_value(value, f"{source}.{name}")
        except ValueError as exc:
            raise BBSLError(str(exc), source=source) from None
    return out


def resolve_bindings(
    exfunctions: Mapping[str, Type],
    used: set[str] | frozenset[str],
    bindings: Mapping[str, Binding],
    source: str,
    allow_unbound: bool = False,
) -> dict[str, Binding]:
    """The binding of each used exfunction, checked against its declared type.

    Unused exfunctions may stay unbound; extra bindings are ignored (one config serves many specs).
    With ``allow_unbound`` (spec analysis) a used exfunction without binding is left out.
    """
    out: dict[str, Binding] = {}
    for name in sorted(used):
        want = exfunctions[name]
        if name not in bindings:
            if allow_unbound:
                continue
            raise BBSLError(
                f"exfunction '{name}()' of type {want} has no binding; give one with --bind {name}=VALUE "
                "or in the config under bbsl.bindings",
                source=source,
            )
        got = binding_type(bindings[name])
        if got is not want:
            raise BBSLError(f"exfunction '{name}()' is declared {want} but its binding gives {got}", source=source)
        out[name] = bindings[name]
    return out
