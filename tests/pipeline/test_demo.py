"""`perception-safety demo` end to end on a tiny sweep: episodes recorded, evaluated, summary printed."""

from __future__ import annotations

import json
from pathlib import Path

from perception_safety.cli import main

CONFIG = Path(__file__).resolve().parents[2] / "config"


def test_demo_runs_episodes_then_evaluate(tmp_path, capsys):
    text = (CONFIG / "demo.yaml").read_text()
    text = text.replace("monitors_file: monitors.yaml", f"monitors_file: {CONFIG / 'monitors.yaml'}")
    small = text.replace(
        """    - {name: smoke, levels: [1, 3]}
    - {name: rain, levels: [2]}
    - {name: brightness, levels: [1]}
    - {name: shifted_pixels, levels: [2]}
    - {name: gaussian_noise, levels: [3]}""",
        "    - {name: smoke, levels: [3]}",
    )
    assert small != text
    cfg = tmp_path / "demo.yaml"
    cfg.write_text(small)
    out = tmp_path / "demo"
    assert main(["demo", "--config", str(cfg), "--out", str(out), "--jobs", "1"]) == 0
    printed = capsys.readouterr().out
    assert "report:" in printed and "mPCD 'pedestrian'" in printed
    logs = sorted((out / "episodes" / "logs").glob("*.jsonl"))
    assert [p.stem for p in logs] == ["000-crossing-none-0", "001-crossing-smoke-3"]
    res = json.loads((out / "evaluation" / "results.json").read_text())
    assert len(res["inputs"]) == 2 and all(p.endswith("/perception") for p in res["inputs"])
    e2 = res["returns"]["E2"]["frames"]
    assert abs(e2["SG"] + e2["RH"] - e2["hazard_f"]) < 1e-12
    assert res["verification"]["results"] and res["bbsl"]["stop_region"]["test_cases"] > 0
    # A second run reuses the finished episodes (resume) and gives the same numbers.
    first = (out / "evaluation" / "results.json").read_bytes()
    assert main(["demo", "--config", str(cfg), "--out", str(out), "--jobs", "1"]) == 0
    assert (out / "evaluation" / "results.json").read_bytes() == first
