"""Episode log: round trip, fsync per episode, torn tails and unfinished episodes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perception_safety.core.types import Box, Detection, Frame, GroundTruthObject
from perception_safety.io.episode_log import (
    EpisodeLogError,
    EpisodeLogReport,
    EpisodeLogWriter,
    EpisodeStep,
    read_episode_log,
)


def _steps(n: int, collide_at: int | None = None) -> list[EpisodeStep]:
    out = []
    for t in range(n):
        frame = Frame(
            t * 50_000_000,
            detections=(Detection(Box(10, 20, 30, 40), "person", 0.75),),
            ground_truth=(GroundTruthObject(Box(11, 21, 31, 41), "person", 12.5, (12.5, 0.0, 0.0), "p1"),),
            frame_id=str(t),
        )
        out.append(
            EpisodeStep(
                t,
                running=True,
                collision=(t == collide_at),
                alarm=t % 2 == 1,
                frame=frame,
                reasons=("contrast: low",) if t % 2 else (),
                values={"contrast.statistic": 1000.0 + t},
            )
        )
    return out


def test_round_trip(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    with EpisodeLogWriter(p) as w:
        w.write_episode(
            "s1", "perception", _steps(3, collide_at=2), meta={"perturbation": "fog", "level": 2}, reason="horizon"
        )
        w.write_episode("s1", "monitored", _steps(2), reason="stopped")
    report = EpisodeLogReport()
    eps = read_episode_log(p, report)
    assert [(e.episode, e.rollout, len(e.steps), e.end_reason) for e in eps] == [
        ("s1", "perception", 3, "horizon"),
        ("s1", "monitored", 2, "stopped"),
    ]
    assert eps[0].meta == {"perturbation": "fog", "level": 2}
    assert eps[0].steps == tuple(_steps(3, collide_at=2))  # frames compare without their (absent) images
    assert eps[0].steps[2].collision and eps[0].steps[1].values == {"contrast.statistic": 1001.0}
    assert report.episodes == 2 and report.messages == []


def test_torn_log_is_read_up_to_its_last_complete_record(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    with EpisodeLogWriter(p) as w:
        w.write_episode("s1", "perception", _steps(3))
        w.write_episode("s2", "perception", _steps(2))
    full = p.read_bytes()
    # simulate a crash in the middle of episode s3: begin and one step, then half a line
    with EpisodeLogWriter(p) as w:
        w.begin_episode("s3", "perception")
        w.write_step(_steps(1)[0])
    with p.open("ab") as fh:
        fh.write(b'{"type":"step","episode":"s3","rollout":"perception","t":1,"runn')
    report = EpisodeLogReport()
    eps = read_episode_log(p, report)
    assert [e.episode for e in eps] == ["s1", "s2"]
    assert len(report.torn_lines) == 1 and "torn last line" in report.torn_lines[0]
    assert len(report.incomplete) == 1 and "s3" in report.incomplete[0]
    assert p.read_bytes().startswith(full)

    # a new writer appends after the torn line; the reader skips it and reads the new episode
    with EpisodeLogWriter(p) as w:
        w.write_episode("s4", "perception", _steps(1))
    report = EpisodeLogReport()
    assert [e.episode for e in read_episode_log(p, report)] == ["s1", "s2", "s4"]
    assert len(report.torn_lines) == 1 and len(report.incomplete) == 1


def test_end_episode_flushes_to_disk(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    w = EpisodeLogWriter(p)
    w.open()
    w.write_episode("s1", "perception", _steps(2))
    # not closed: the episode must already be on disk
    assert [e.episode for e in read_episode_log(p)] == ["s1"]
    w.begin_episode("s2", "perception")
    with pytest.raises(EpisodeLogError, match="while"):
        w.begin_episode("s3", "perception")
    w.write_step(EpisodeStep(5, running=True))
    with pytest.raises(EpisodeLogError, match="not after"):
        w.write_step(EpisodeStep(5, running=True))
    with pytest.raises(EpisodeLogError, match="not finite"):
        w.write_step(EpisodeStep(6, running=True, values={"x": float("nan")}))
    w.end_episode()
    with pytest.raises(EpisodeLogError, match=r"begin record is not JSON-serialisable"):
        w.begin_episode("s3", "perception", meta={"threshold": float("inf")})
    w.begin_episode("s3", "perception")  # the failed begin left no episode running
    w.close()


def test_corrupt_line_in_the_middle_is_an_error_naming_the_line(tmp_path: Path) -> None:
    p = tmp_path / "log.jsonl"
    with EpisodeLogWriter(p) as w:
        w.write_episode("s1", "perception", _steps(3))
    lines = p.read_text().splitlines(keepends=True)
    lines[2] = "{not json\n"
    p.write_text("".join(lines))
    with pytest.raises(EpisodeLogError, match=r"log\.jsonl:3: not a JSON record"):
        read_episode_log(p)
    rec = json.loads(lines[1])
    rec["running"] = "yes"
    lines[2] = json.dumps(rec) + "\n"
    p.write_text("".join(lines))
    with pytest.raises(EpisodeLogError, match=r"log\.jsonl:3: running: expected true/false"):
        read_episode_log(p)
    with pytest.raises(EpisodeLogError, match="cannot read"):
        read_episode_log(tmp_path / "missing.jsonl")
