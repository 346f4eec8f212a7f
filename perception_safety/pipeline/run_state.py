"""No stale results: an ``evaluate`` output folder always says which run wrote it and whether it finished.

Before anything else a run replaces ``OUT/results.json`` with an incomplete marker (``complete: false``,
``status: running``, its ``run_id``, the previous run's id) and ``OUT/report.html`` with a page saying so, both
atomically. A run that fails or is interrupted marks its results ``status: failed`` / ``interrupted`` with the
reason; one killed outright stays ``running``. Only a finished run writes the report and then, last,
results.json with ``complete: true``. ``evaluate --check`` and ``compare`` accept nothing else
(`load_complete_results`). The other files in OUT belong to the run named in results.json only when it is
complete: a failed run may have replaced some of them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import html
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from perception_safety.errors import PerceptionSafetyError
from perception_safety.safe_io import check_output, load_json, write_text

RESULTS_FORMAT = "perception_safety.results/1"
RESULTS_FILE = "results.json"
REPORT_FILE = "report.html"


class IncompleteResultsError(PerceptionSafetyError):
    """A results.json that is missing, unreadable, or not marked ``complete: true`` by a finished run."""


def new_run_id() -> str:
    """A unique id for one ``evaluate`` run: UTC time (sortable) and 8 random hex digits."""
    return f"{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"


def _now() -> str:
    return f"{dt.datetime.now(dt.UTC):%Y-%m-%dT%H:%M:%SZ}"


def _previous_id(out: Path) -> str | None:
    path = out / RESULTS_FILE
    try:
        check_output(path)
        doc = load_json(path, "results", limit=1 << 30)
    except PerceptionSafetyError:
        return None
    return doc.get("run_id") if isinstance(doc, dict) and isinstance(doc.get("run_id"), str) else None


def _marker(out: Path, run_id: str, status: str, started: str, previous: str | None, reason: str = "") -> None:
    doc: dict[str, Any] = {"format": RESULTS_FORMAT, "run_id": run_id, "complete": False, "status": status,
                           "started_utc": started, "previous_run_id": previous}
    if reason:
        doc["error"] = reason
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>evaluation incomplete</title></head><body>"
        f"<h1>Evaluation run {html.escape(run_id)}: {html.escape(status)}</h1>"
        f"<p>Started {html.escape(started)}; it has not written its results. These outputs are not current: "
        "a finished run replaces this page and writes results.json with <code>complete: true</code> last.</p>"
        + (f"<pre>{html.escape(reason)}</pre>" if reason else "")
        + "</body></html>\n"
    )
    write_text(out / REPORT_FILE, page)
    write_text(out / RESULTS_FILE, json.dumps(doc, indent=1) + "\n")


def start_run(out: Path) -> tuple[str, str, str | None]:
    """Mark OUT's results and report as belonging to a new, unfinished run; returns (run id, start, previous id)."""
    out.mkdir(parents=True, exist_ok=True)
    run_id, started, previous = new_run_id(), _now(), _previous_id(out)
    _marker(out, run_id, "running", started, previous)
    return run_id, started, previous


@contextlib.contextmanager
def evaluation_run(out: Path, run_id: str | None = None) -> Iterator[str]:
    """Within the block, OUT belongs to one run: started here (``run_id`` None) or by the caller.

    An exception leaving the block marks the run ``failed`` (``interrupted`` for Ctrl-C/SIGTERM) with the reason,
    unless results.json already names another run or a finished one.
    """
    started, previous = _now(), None
    if run_id is None:
        run_id, started, previous = start_run(out)
    try:
        yield run_id
    except BaseException as exc:
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        with contextlib.suppress(Exception):  # best effort: the original error is what the user must see
            current = load_json(out / RESULTS_FILE, "results")
            if current.get("run_id") == run_id and current.get("status") == "running":
                reason = str(exc).strip() or type(exc).__name__
                _marker(out, run_id, status, current.get("started_utc", started),
                        current.get("previous_run_id", previous), reason[:4000])
        raise


def finished(results: dict[str, Any], run_id: str) -> dict[str, Any]:
    """``results`` with the run id and ``complete: true`` (to be written last, after the report)."""
    head = {"format": results.get("format", RESULTS_FORMAT), "run_id": run_id, "complete": True}
    return {**head, **{k: v for k, v in results.items() if k not in head}}


def check_complete(doc: Any, path: Path, run_id: str | None = None) -> dict[str, Any]:
    """``doc`` if it is a finished run's results (of ``run_id`` when given); else `IncompleteResultsError`."""
    if not isinstance(doc, dict):
        raise IncompleteResultsError(f"{path}: not an 'evaluate' results.json (a JSON {type(doc).__name__}, "
                                     "expected an object)")
    fmt = doc.get("format")
    if not isinstance(fmt, str) or not fmt.startswith("perception_safety.results/"):
        raise IncompleteResultsError(f"{path}: not an 'evaluate' results.json (format {str(fmt)[:80]!r})")
    if doc.get("complete") is not True or not isinstance(doc.get("run_id"), str):
        status = doc.get("status", "no 'complete: true' (written by an unfinished run or an older version)")
        why = f": {str(doc['error'])[:300]}" if doc.get("error") else ""
        raise IncompleteResultsError(
            f"{path}: incomplete results of run {doc.get('run_id', '?')} ({status}{why}); "
            "refusing to use them: rerun 'perception-safety evaluate'"
        )
    if run_id is not None and doc["run_id"] != run_id:
        raise IncompleteResultsError(f"{path}: written by run {doc['run_id']}, not by this run {run_id}")
    return doc


def load_complete_results(run: str | Path, run_id: str | None = None) -> dict[str, Any]:
    """``RUN/results.json`` (or the file itself) of a finished ``evaluate`` run; anything else is an error."""
    path = Path(run)
    path = path / RESULTS_FILE if path.is_dir() else path
    return check_complete(load_json(path, "results", error=IncompleteResultsError), path, run_id)
