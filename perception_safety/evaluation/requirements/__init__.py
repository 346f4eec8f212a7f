"""Requirements on the evaluation's numbers and their PASS / FAIL / INCONCLUSIVE / NOT EVALUATED verdicts.

`config` holds the pydantic models of the ``requirements:`` section and the name check against the rest of
the config; `check` finds each requirement's number in a results document and judges it.
"""

from perception_safety.evaluation.requirements.check import (
    FAIL,
    INCONCLUSIVE,
    NOT_EVALUATED,
    PASS,
    Verdict,
    check,
    summary,
)
from perception_safety.evaluation.requirements.config import KnownNames, Requirement, check_names

__all__ = [
    "FAIL",
    "INCONCLUSIVE",
    "NOT_EVALUATED",
    "PASS",
    "KnownNames",
    "Requirement",
    "Verdict",
    "check",
    "check_names",
    "summary",
]
