"""The user docs as a user follows them: links resolve inside the repository, and the snippets run as written.

- every relative link (and ``#anchor``) of README.md and docs/*.md points at an existing file (and heading);
- the README's "Your own bag" Python snippet runs unchanged and `evaluate` reads the bag it writes;
- every line of docs/verification.md's CLI block runs unchanged from a folder laid out like the checkout after
  `make demo` (the demo's matrices at demo_out/evaluation/confusion/confusion.json, made here by the same
  `confusion` computation on frames built in code; the paper's matrices from reference/).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from perception_safety.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.+)$", text, re.M)}


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # code is not a link
    return [m.group(1) for m in LINK.finditer(text)]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_relative_links_point_at_existing_pages_and_headings(page: Path) -> None:
    broken = []
    for target in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.is_relative_to(ROOT):
            broken.append(f"{target}: outside the repository")
        elif not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading '#{anchor}' in {dest.name}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def _block_after(page: Path, marker: str, lang: str) -> str:
    text = page.read_text(encoding="utf-8")
    start = text.index(marker)
    m = re.compile(rf"```{lang}\n(.*?)```", re.S).search(text, start)
    assert m is not None, f"no ```{lang} block after {marker!r} in {page.name}"
    return m.group(1)


def test_readme_own_bag_snippet_runs_and_evaluate_reads_its_bag(tmp_path: Path, monkeypatch) -> None:
    code = _block_after(ROOT / "README.md", "**Your own bag:**", "python")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md (Your own bag)", "exec"), {})
    assert (tmp_path / "my_bag" / "metadata.yaml").is_file()
    (tmp_path / "cfg.yaml").write_text("evaluate: {analyses: [detection_ap]}\n")  # fast: no report figures
    assert main(["evaluate", "my_bag", "--config", "cfg.yaml", "--out", "out"]) == 0
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert res["frames"] == 10 and res["detection_ap"]["ped"]["pooled"]["ground_truth"] == 10


def _commands(block: str) -> list[list[str]]:
    joined = re.sub(r"\\\n\s*", " ", block)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            assert words[0] == "perception-safety", line
            out.append(words[1:])
    return out


def test_verify_examples_run_as_written_on_the_demo_layout(tmp_path: Path, monkeypatch) -> None:
    from perception_safety.io.dataset import write_jsonl_frames
    from tests.pipeline.conftest import scene_frames

    demo_cfg = ROOT / "config" / "demo.yaml"
    classes = json.dumps({"ped": ["pedestrian", "person"], "obs": ["car", "vehicle.*"]})  # as config/demo.yaml
    assert "classes: {ped: [pedestrian, person], obs: [car, vehicle.*]}" in demo_cfg.read_text()
    (tmp_path / "confusion.yaml").write_text(f"confusion: {{classes: {classes}, plots: false}}\n")
    write_jsonl_frames(tmp_path / "frames.jsonl", scene_frames(300, 5))
    demo = tmp_path / "demo_out" / "evaluation" / "confusion"
    assert main(["confusion", str(tmp_path / "frames.jsonl"), "--config", str(tmp_path / "confusion.yaml"),
                 "--out", str(demo), "--no-progress"]) == 0  # fmt: skip
    for name in ("reference", "config"):
        os.symlink(ROOT / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    commands = _commands(_block_after(ROOT / "docs" / "verification.md", "## CLI", "bash"))
    assert len(commands) >= 7 and all(c[0] == "verify" for c in commands)
    for argv in commands:
        assert main(argv) == 0, shlex.join(argv)
    for out in ("sweep", "paper", "formula", "modes", "policy", "python"):
        doc = json.loads((tmp_path / "out" / out / "verification.json").read_text())
        assert doc["results"], out
    assert (tmp_path / "table.csv").is_file()
    modes = json.loads((tmp_path / "out" / "modes" / "verification.json").read_text())["results"]
    python = json.loads((tmp_path / "out" / "python" / "verification.json").read_text())["results"]
    assert [r["probability"] for r in modes] == [r["probability"] for r in python]  # same controller, two ways
    shutil.rmtree(tmp_path / "out")
