"""`Spec`: a parsed, type-checked, bound and compiled BBSL specification, with the evaluation API.

spec = load_spec("config/specs/s4_four_cases.bbsl", {"vehicleExists": "subject_exists",
                 "vehicle": "subject", "stoppingDistance": [275, 375], "directionAreaDistance": [420, 821]})
spec.case_names                          # ('x_ystop', 'ysafe_xwarning', 'xsafe_ywarning', 'NOT warning')
spec.cases_for_boxes(boxes)              # bool (n, n_cases): which cases hold with each box as subject
spec.precondition_for_boxes(boxes)       # bool (n,)
spec.evaluate_frame(frame, classes={"car"}).cases_of(0)   # per-frame, detections as subjects
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from perception_safety.bbsl.ast import Type
from perception_safety.bbsl.bindings import Binding, parse_bindings, resolve_bindings
from perception_safety.bbsl.errors import BBSLError
from perception_safety.bbsl.evaluator import CompiledSpec, compile_spec
from perception_safety.bbsl.parser import parse_file, parse_spec
from perception_safety.bbsl.typecheck import CheckedSpec, check_spec
from perception_safety.core.types import Frame

DEFAULT_IMAGE_SIZE = (1242, 375)  # KITTI, Section 5.1
_TRUE = np.asarray(True)


@dataclass(frozen=True)
class FrameEvaluation:
    """The spec evaluated with each selected detection of one frame as the subject."""

    case_names: tuple[str, ...]
    detection_indices: np.ndarray
    boxes: np.ndarray
    precondition: np.ndarray
    cases: np.ndarray

    def cases_of(self, i: int) -> tuple[str, ...]:
        """Names of the cases that hold for subject ``i`` (empty when its precondition fails)."""
        if not self.precondition[i]:
            return ()
        return tuple(n for n, hit in zip(self.case_names, self.cases[i], strict=True) if hit)

    def any_case(self, name: str) -> bool:
        """True when case ``name`` holds (with the precondition) for at least one subject."""
        j = self.case_names.index(name)
        return bool(np.any(self.cases[:, j] & self.precondition))


class Spec:
    """A compiled spec; evaluation is vectorised over subject boxes (see module docstring)."""

    def __init__(self, checked: CheckedSpec, bindings: Mapping[str, Binding], image_size=DEFAULT_IMAGE_SIZE) -> None:
        self.checked = checked
        self.image_size = (float(image_size[0]), float(image_size[1]))
        self.bindings = resolve_bindings(checked.exfunctions, checked.used_exfunctions, bindings, checked.source)
        self._case_names = checked.case_names
        self._compiled: dict[tuple[float, float], CompiledSpec] = {}
        self.compiled = self._compile(self.image_size)

    def _compile(self, image_size: tuple[float, float]) -> CompiledSpec:
        if image_size not in self._compiled:
            self._compiled[image_size] = compile_spec(self.checked, self.bindings, image_size)
        return self._compiled[image_size]

    @property
    def case_names(self) -> tuple[str, ...]:
        return self._case_names

    @property
    def source(self) -> str:
        return self.checked.source

    def evaluate_boxes(
        self,
        boxes: np.ndarray,
        exists: np.ndarray | bool = True,
        sets: Mapping[str, np.ndarray] | None = None,
        image_size: tuple[float, float] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(precondition (n,), cases (n, n_cases))`` with each row of ``boxes`` as the subject.

        ``exists`` flags rows that have a subject at all (False: the box is ignored and
        ``subject_exists`` is false); ``sets`` gives each ``set<bb>`` exfunction's boxes
        (default: all of ``boxes``).
        """
        b = np.asarray(boxes, dtype=np.float64)
        if b.ndim != 2 or b.shape[1] != 4:
            raise BBSLError(f"expected an (n, 4) array of boxes, got shape {b.shape}", source=self.source)
        if not (b[:, :2] <= b[:, 2:]).all():  # one pass: false for NaN and for inverted boxes
            i = int(np.flatnonzero(~(b[:, :2] <= b[:, 2:]).all(axis=1))[0])
            raise BBSLError(
                f"box {i} {b[i].tolist()} is NaN or inverted (need x_min <= x_max, y_min <= y_max)",
                source=self.source,
            )
        compiled = self.compiled if image_size is None else self._compile((float(image_size[0]), float(image_size[1])))
        ex = _TRUE if exists is True else np.asarray(exists, dtype=bool)
        if not compiled.set_names:
            return compiled.evaluate(b, ex)
        given = sets or {}
        set_arrays = [np.asarray(given.get(name, b), dtype=np.float64).reshape(-1, 4) for name in compiled.set_names]
        return compiled.evaluate(b, ex, set_arrays)

    def cases_for_boxes(self, boxes: np.ndarray, image_size: tuple[float, float] | None = None) -> np.ndarray:
        """Bool matrix ``(n, n_cases)``: case j holds with box i as the subject (precondition ignored)."""
        return self.evaluate_boxes(boxes, image_size=image_size)[1]

    def precondition_for_boxes(self, boxes: np.ndarray, exists: np.ndarray | bool = True) -> np.ndarray:
        """Bool ``(n,)``: the precondition block holds with box i as the subject."""
        return self.evaluate_boxes(boxes, exists)[0]

    def cases_for_box(self, box: Iterable[float]) -> tuple[str, ...]:
        """Names of the cases that hold for one subject box (precondition ignored)."""
        row = self.cases_for_boxes(np.asarray([list(box)], dtype=np.float64))[0]
        return tuple(n for n, hit in zip(self.case_names, row, strict=True) if hit)

    def evaluate_frame(
        self, frame: Frame | np.ndarray, classes: Iterable[str] | None = None, image_size=None
    ) -> FrameEvaluation:
        """Evaluate with each detection of ``frame`` (of ``classes``, if given) as the subject.

        ``set<bb>`` exfunctions bound to ``frame_boxes`` see every detection of the frame.
        A plain ``(n, 4)`` array is taken as the frame's detections.
        """
        if isinstance(frame, Frame):
            dets = frame.detections
            if classes is None:
                sel = dets
                idx = np.arange(len(dets))
            else:
                wanted = frozenset(classes)
                mask = [d.class_id in wanted for d in dets]
                sel = [d for d, keep in zip(dets, mask, strict=True) if keep]
                idx = np.flatnonzero(mask)
            coords = chain.from_iterable((d.box.x_min, d.box.y_min, d.box.x_max, d.box.y_max) for d in sel)
            subjects = np.fromiter(coords, dtype=np.float64, count=4 * len(sel)).reshape(-1, 4)
            all_boxes = subjects if len(sel) == len(dets) else None
        else:
            subjects = np.asarray(frame, dtype=np.float64).reshape(-1, 4)
            idx = np.arange(len(subjects))
            all_boxes = subjects
        sets = {}
        if self.compiled.set_names:
            if all_boxes is None:
                all_boxes = frame.detection_boxes()
            sets = {name: all_boxes for name in self.compiled.set_names}
        pre, cases = self.evaluate_boxes(subjects, True, sets, image_size)
        return FrameEvaluation(self.case_names, idx, subjects, pre, cases)


def _read(source: str | Path) -> Any:
    if isinstance(source, Path):
        return parse_file(source)
    if ("\n" not in source and source.strip().endswith(".bbsl")) or ("\n" not in source and Path(source).is_file()):
        return parse_file(source)
    return parse_spec(source, "<spec>")


def check_source(source: str | Path) -> CheckedSpec:
    """Parse and type-check a spec given as a path or as BBSL text."""
    return check_spec(_read(source))


def load_spec(
    source: str | Path | CheckedSpec,
    bindings: Mapping[str, Any] | None = None,
    image_size: tuple[float, float] = DEFAULT_IMAGE_SIZE,
) -> Spec:
    """Parse, check, bind and compile a spec (path, BBSL text, or an already checked spec).

    ``bindings`` maps exfunction names to `Binding` objects or config-style values
    (``"subject"``, ``[275, 375]``, ``True`` ...).
    """
    checked = source if isinstance(source, CheckedSpec) else check_source(source)
    parsed = parse_bindings(bindings or {}, "bindings")
    return Spec(checked, parsed, image_size)


__all__ = ["DEFAULT_IMAGE_SIZE", "FrameEvaluation", "Spec", "Type", "check_source", "load_spec"]
