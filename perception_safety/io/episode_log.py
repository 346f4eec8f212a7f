"""Append-only episode log (JSON Lines): one record per frame of a simulated rollout, fsynced per episode.

Every line is one JSON object with a ``type``::

    {"type": "begin", "episode": "s3-fog2-seed7", "rollout": "monitored", "meta": {...}}
    {"type": "step", "episode": "s3-fog2-seed7", "rollout": "monitored", "t": 0,
     "running": true, "collision": false, "stop": false, "alarm": false,
     "reasons": ["contrast: ..."], "values": {"contrast.statistic": 2100.5},
     "frame": {<perception_safety.io.dataset frame record: detections, ground_truth>}}
    {"type": "end", "episode": "s3-fog2-seed7", "rollout": "monitored", "steps": 57, "reason": "stopped"}

``running``/``collision`` describe the world state z_t *at* frame t (mission reward 1/0, safety
reward -1 on collision frames, SG/RH/AC paper eq. 16-17); ``stop`` is the braking request the
system issued after seeing frame t; ``alarm`` is the runtime monitor's verdict on frame t (logged in
every rollout, acted on only in ``monitored``). Rollouts of one scenario share the ``episode`` id:
``perception`` (f), ``monitored`` (f with m_f) and ``ground_truth`` (f*).

The writer appends, and on `EpisodeLogWriter.end_episode` flushes and fsyncs, so a crash loses at
most the running episode. The reader skips a torn (unterminated, unparsable) last line and reports
episodes that never ended; any other bad line is an error naming file and line.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from perception_safety.core.episode import ROLLOUTS, Episode, EpisodeStep
from perception_safety.core.types import InvalidValueError
from perception_safety.errors import PerceptionSafetyError
from perception_safety.io.dataset import frame_from_record, frame_to_record
from perception_safety.safe_io import check_output

__all__ = ["ROLLOUTS", "Episode", "EpisodeLogError", "EpisodeLogReport", "EpisodeLogWriter", "EpisodeStep",
           "iter_episodes", "read_episode_log"]


class EpisodeLogError(PerceptionSafetyError):
    """An episode log is unreadable, malformed, or written out of order."""


@dataclass
class EpisodeLogReport:
    """What a read skipped: torn last lines and episodes that began but never ended."""

    episodes: int = 0
    torn_lines: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def messages(self) -> list[str]:
        return self.torn_lines + self.incomplete + self.skipped


def _finite_values(values: Mapping[str, float], where: str) -> dict[str, float]:
    out = {}
    for k, v in values.items():
        fv = float(v)
        if not math.isfinite(fv):
            raise EpisodeLogError(f"{where}: value {k!r} is not finite ({v!r})")
        out[str(k)] = fv
    return out


def _values_with_nulls(values: Mapping[str, float]) -> tuple[dict[str, float | None], list[str]]:
    """Values with non-finite ones as null (JSON has no NaN/inf), and the keys that were non-finite."""
    out: dict[str, float | None] = {}
    bad = []
    for k, v in values.items():
        fv = float(v)
        out[str(k)] = fv if math.isfinite(fv) else None
        if not math.isfinite(fv):
            bad.append(str(k))
    return out, bad


class EpisodeLogWriter:
    """Appends episodes to a JSON Lines file; use as a context manager.

    ``begin_episode`` -> ``write_step`` per frame (t must increase) -> ``end_episode`` (flush + fsync).
    """

    def __init__(self, path: str | Path, fsync: bool = True, nonfinite: str = "error") -> None:
        """``nonfinite``: ``"error"`` refuses a NaN/inf value; ``"null"`` writes it as null and lists its key
        under ``"nonfinite"`` in the step record (a live logger must not lose the step; readers get NaN back)."""
        if nonfinite not in ("error", "null"):
            raise ValueError(f"nonfinite must be 'error' or 'null', got {nonfinite!r}")
        self.nonfinite = nonfinite
        self.path = Path(path)
        self._fsync = fsync
        self._fh: TextIO | None = None
        self._current: tuple[str, str] | None = None
        self._last_t = -1
        self._steps = 0

    def __enter__(self) -> EpisodeLogWriter:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        check_output(self.path)  # appended to, so not atomic; but never through a link, FIFO or device
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            torn_tail = False
            if self.path.exists() and self.path.stat().st_size > 0:
                with self.path.open("rb") as fh:
                    fh.seek(-1, os.SEEK_END)
                    torn_tail = fh.read(1) != b"\n"
            self._fh = self.path.open("a", encoding="utf-8")
            if torn_tail:
                # a previous writer crashed mid-line: terminate its torn line so ours start cleanly
                self._fh.write("\n")
        except OSError as exc:
            raise EpisodeLogError(f"{self.path}: cannot open episode log: {exc.strerror or exc}") from exc

    def close(self) -> None:
        """Close the file; an episode still running stays unterminated (readers report it as incomplete)."""
        if self._fh is not None:
            self._fh.flush()
            self._fh.close()
            self._fh = None

    def _write(self, record: dict[str, Any]) -> None:
        if self._fh is None:
            raise EpisodeLogError(f"{self.path}: episode log is not open")
        try:
            line = json.dumps(record, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as exc:
            what = f"episode {record.get('episode')} ({record.get('rollout')}) {record.get('type')} record"
            raise EpisodeLogError(f"{self.path}: {what} is not JSON-serialisable: {exc}") from exc
        self._fh.write(line + "\n")

    def begin_episode(self, episode: str, rollout: str, meta: Mapping[str, Any] | None = None) -> None:
        """Start a rollout ``rollout`` (one of `ROLLOUTS` or any label) of scenario ``episode``."""
        if self._current is not None:
            raise EpisodeLogError(f"{self.path}: begin_episode({episode!r}) while {self._current} is running")
        self._write({"type": "begin", "episode": str(episode), "rollout": str(rollout), "meta": dict(meta or {})})
        self._current = (str(episode), str(rollout))
        self._last_t = -1
        self._steps = 0

    def write_step(self, step: EpisodeStep) -> None:
        """Append one frame record (buffered; durable after ``end_episode``)."""
        if self._current is None:
            raise EpisodeLogError(f"{self.path}: write_step outside an episode")
        if step.t <= self._last_t:
            raise EpisodeLogError(f"{self.path}: step t={step.t} not after t={self._last_t} in episode {self._current}")
        episode, rollout = self._current
        rec: dict[str, Any] = {
            "type": "step",
            "episode": episode,
            "rollout": rollout,
            "t": int(step.t),
            "running": bool(step.running),
            "collision": bool(step.collision),
            "stop": bool(step.stop),
            "alarm": bool(step.alarm),
        }
        if step.reasons:
            rec["reasons"] = [str(r) for r in step.reasons]
        if step.values and self.nonfinite == "null":
            rec["values"], bad = _values_with_nulls(step.values)
            if bad:
                rec["nonfinite"] = bad
        elif step.values:
            rec["values"] = _finite_values(step.values, f"{self.path}: episode {episode} t={step.t}")
        if step.frame is not None:
            rec["frame"] = frame_to_record(step.frame)
        self._write(rec)
        self._last_t = step.t
        self._steps += 1

    def end_episode(self, reason: str = "") -> None:
        """Terminate the running episode, flush and fsync the file."""
        if self._current is None:
            raise EpisodeLogError(f"{self.path}: end_episode outside an episode")
        episode, rollout = self._current
        self._write({"type": "end", "episode": episode, "rollout": rollout, "steps": self._steps, "reason": reason})
        assert self._fh is not None
        self._fh.flush()
        if self._fsync:
            os.fsync(self._fh.fileno())
        self._current = None

    def write_episode(
        self,
        episode: str,
        rollout: str,
        steps: Sequence[EpisodeStep],
        meta: Mapping[str, Any] | None = None,
        reason: str = "",
    ) -> None:
        """Write one whole episode (begin, steps, end)."""
        self.begin_episode(episode, rollout, meta)
        for s in steps:
            self.write_step(s)
        self.end_episode(reason)


def _step_from_record(rec: dict[str, Any], where: str) -> EpisodeStep:
    try:
        t = rec["t"]
        if not isinstance(t, int) or isinstance(t, bool):
            raise InvalidValueError(f"t: expected an integer, got {t!r}")
        for key in ("running", "collision", "stop", "alarm"):
            if key in rec and not isinstance(rec[key], bool):
                raise InvalidValueError(f"{key}: expected true/false, got {rec[key]!r}")
        frame = frame_from_record(rec["frame"], t) if rec.get("frame") is not None else None
        values = rec.get("values", {}) or {}
        if not isinstance(values, dict):
            raise InvalidValueError(f"values: expected an object, got {values!r}")
        return EpisodeStep(
            t=t,
            running=rec["running"],
            collision=rec.get("collision", False),
            stop=rec.get("stop", False),
            alarm=rec.get("alarm", False),
            frame=frame,
            reasons=tuple(str(r) for r in rec.get("reasons", []) or []),
            values={str(k): math.nan if v is None else float(v) for k, v in values.items()},  # null: not finite
        )
    except KeyError as exc:
        raise EpisodeLogError(f"{where}: missing key {exc.args[0]!r}") from exc
    except (InvalidValueError, TypeError, ValueError) as exc:
        raise EpisodeLogError(f"{where}: {exc}") from exc


def _unended(path: Path, current: dict[str, Any]) -> str:
    episode, rollout = current["key"]
    return f"{path}: episode {episode} ({rollout}) begun at line {current['line']} never ended"


def iter_episodes(path: str | Path, report: EpisodeLogReport | None = None) -> Iterator[Episode]:
    """Yield the complete episodes of a log in file order; torn tail and unfinished episodes go to ``report``."""
    path = Path(path)
    report = report if report is not None else EpisodeLogReport()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EpisodeLogError(f"{path}: cannot read episode log: {exc.strerror or exc}") from exc
    lines = data.split(b"\n")
    # the text after the final newline is empty for a cleanly written file, else an unterminated tail
    tail = lines.pop()
    current: dict[str, Any] | None = None
    torn: tuple[str, str] | None = None
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            rec = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            if torn is not None:
                raise EpisodeLogError(f"{torn[0]}: not a JSON record: {torn[1]}") from exc
            torn = (where, str(exc))
            continue
        if torn is not None:
            # a torn line is only acceptable where a crashed writer stopped and a new run began
            if not isinstance(rec, dict) or rec.get("type") != "begin":
                raise EpisodeLogError(f"{torn[0]}: not a JSON record: {torn[1]}")
            report.torn_lines.append(f"{torn[0]}: torn line skipped (a writer stopped mid-record)")
            torn = None
        if not isinstance(rec, dict) or rec.get("type") not in ("begin", "step", "end"):
            raise EpisodeLogError(f"{where}: expected an object with type begin/step/end")
        kind = rec["type"]
        key = (str(rec.get("episode", "")), str(rec.get("rollout", "")))
        if kind == "begin":
            if current is not None:
                report.incomplete.append(_unended(path, current))
            meta = rec.get("meta", {}) or {}
            if not isinstance(meta, dict):
                raise EpisodeLogError(f"{where}: meta: expected an object")
            current = {"key": key, "line": lineno, "meta": meta, "steps": []}
            continue
        if current is None or current["key"] != key:
            raise EpisodeLogError(f"{where}: {kind} record for episode {key[0]} ({key[1]}) outside its begin/end")
        if kind == "step":
            step = _step_from_record(rec, where)
            if current["steps"] and step.t <= current["steps"][-1].t:
                raise EpisodeLogError(f"{where}: t={step.t} does not increase")
            current["steps"].append(step)
        else:
            report.episodes += 1
            yield Episode(
                key[0], key[1], tuple(current["steps"]), current["meta"], str(rec.get("reason", "")), str(path)
            )
            current = None
    if torn is not None:
        report.torn_lines.append(f"{torn[0]}: torn last line skipped")
    if tail.strip():
        report.torn_lines.append(f"{path}:{len(lines) + 1}: torn last line skipped ({len(tail)} bytes, no newline)")
    if current is not None:
        report.incomplete.append(_unended(path, current))


def read_episode_log(path: str | Path, report: EpisodeLogReport | None = None) -> list[Episode]:
    """All complete episodes of one log file (see `iter_episodes`)."""
    return list(iter_episodes(path, report))
