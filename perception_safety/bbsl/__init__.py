"""BBSL, the Bounding Box Specification Language: grammar, parser, checker, evaluator, analysis (no ROS imports).

Public API (Tanaka et al., ENASE 2023, Section 3 and Definitions 1-10)::

    from perception_safety.bbsl import load_spec, analyse, BBSLError
    spec = load_spec(path_or_text, {"vehicle": "subject", "vehicleExists": "subject_exists",
                                    "stoppingDistance": [275, 375]}, image_size=(1242, 375))
    spec.case_names                       # case names in order
    spec.cases_for_boxes(boxes)           # (n, n_cases) bool, boxes (n, 4) x_min, y_min, x_max, y_max
    spec.evaluate_boxes(boxes, exists)    # (precondition (n,), cases (n, n_cases))
    spec.evaluate_frame(frame, classes)   # FrameEvaluation: detections of a Frame as subjects
    analyse(spec.checked, spec.bindings, spec.image_size)   # Definition 10 via z3

Every user-facing failure is a `BBSLError` (a `PerceptionSafetyError`) naming file and line:column.
"""

from perception_safety.bbsl.ast import Type
from perception_safety.bbsl.bindings import parse_bind_option, parse_binding_value, parse_bindings
from perception_safety.bbsl.errors import BBSLError
from perception_safety.bbsl.parser import parse_file, parse_spec
from perception_safety.bbsl.spec import DEFAULT_IMAGE_SIZE, FrameEvaluation, Spec, check_source, load_spec
from perception_safety.bbsl.typecheck import CheckedSpec, check_spec

__all__ = [
    "DEFAULT_IMAGE_SIZE",
    "AnalysisResult",
    "BBSLError",
    "CheckedSpec",
    "FrameEvaluation",
    "Spec",
    "Type",
    "analyse",
    "check_source",
    "check_spec",
    "load_spec",
    "parse_bind_option",
    "parse_binding_value",
    "parse_bindings",
    "parse_file",
    "parse_spec",
]


def __getattr__(name: str):
    """``analyse`` and ``AnalysisResult`` load z3 on first use, not with every BBSL import."""
    if name in ("analyse", "AnalysisResult"):
        from perception_safety.bbsl import analysis

        return getattr(analysis, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
