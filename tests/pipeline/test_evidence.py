"""results.json keeps the frames behind every confusion cell; the report links each cell to its strip."""

from __future__ import annotations

import numpy as np

from perception_safety.pipeline.analyses.evidence import anchor


def test_every_class_cell_has_its_count_and_bounded_references(evaluated):
    _, results, _ = evaluated
    ev = results["evidence"]
    conf = results["confusion"]
    labels = conf["class_labels"]
    cm = np.asarray(conf["class_cm"])
    for k, (lo, hi) in enumerate(conf["bin_edges"]):
        for p, pred in enumerate(labels):
            for t, true in enumerate(labels[:-1]):
                cell = ev["cells"].get(f"cm:{pred}:{true}@{lo:g}-{hi:g}")
                assert (cell["count"] if cell else 0) == cm[k, p, t]
    for key, cell in ev["cells"].items():
        assert 0 < len(cell["refs"]) <= min(ev["per_cell"], cell["count"])
        for r in cell["refs"]:
            assert {"bag", "topic", "stamp_ns", "episode", "t_s"} <= set(r), key
            assert r["bag"] in results["inputs"]


def test_the_report_links_each_non_empty_cell_to_its_frames(evaluated):
    out, results, _ = evaluated
    page = (out / "report.html").read_text()
    for key in results["evidence"]["cells"]:
        assert f"id='{anchor(key)}'" in page
        if key.startswith("cm:"):
            assert f"href='#{anchor(key)}'" in page
    # bags without images: the strip says so instead of showing nothing
    assert "no picture (the frame has no image)" in page


def test_frames_lists_cells_prints_a_cell_and_names_the_cells_it_has(evaluated, capsys):
    from perception_safety.cli import main

    out, results, _ = evaluated
    assert main(["frames", str(out)]) == 0
    listing = capsys.readouterr().out
    key, cell = next((k, c) for k, c in results["evidence"]["cells"].items() if k.startswith("cm:empty:"))
    assert f"{key}: {cell['count']} occurrence(s), {len(cell['refs'])} frame(s)" in listing
    assert main(["frames", str(out), key]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert len(lines) == len(cell["refs"])
    first = cell["refs"][0]
    assert f"{first['bag']} {first['topic']} {first['stamp_ns']}" in lines[0]
    assert main(["frames", str(out), "cm:nope:ped@0-10"]) == 2
    assert "no cell 'cm:nope:ped@0-10'; cells with frames:" in capsys.readouterr().err
