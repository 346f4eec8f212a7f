"""Warnings raised by an analysis reach results, the top of the report and are not repeated."""

from perception_safety.pipeline.analyses.base import Evaluation, pct
from perception_safety.report.html import Metric, Report


def test_warn_records_once_and_renders_above_the_summary():
    ev = Evaluation(results={}, report=Report("t"))
    ev.report.summary.append(Metric("recall", 0.5, "", "n = 2"))
    ev.warn("confusion", "bin [0, 10) has 1 sample", code="small_bin")
    ev.warn("confusion", "bin [0, 10) has 1 sample", code="small_bin")
    ev.warn("pcd", "target 'x' matched no label", code="empty_target")
    assert ev.warnings == [
        {"analysis": "confusion", "code": "small_bin", "message": "bin [0, 10) has 1 sample"},
        {"analysis": "pcd", "code": "empty_target", "message": "target 'x' matched no label"},
    ]
    page = ev.report.render()
    assert page.index("Warnings (2)") < page.index("id='summary'")
    assert "[pcd] target &#x27;x&#x27; matched no label" in page


def test_pct_marks_undefined_rates():
    assert pct(None) == "n/a"
    assert pct(0.1234) == "12.3 %"
