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


def test_a_strip_is_one_file_whose_parts_are_the_thumbnails_own_jpegs(tmp_path):
    import re

    import cv2

    from perception_safety.io.image_codec import encode_jpeg
    from perception_safety.pipeline.analyses.evidence import _strip, strip_file
    from perception_safety.report.thumbnails import Thumb

    rng = np.random.default_rng(4)
    smooth = [cv2.resize(rng.integers(0, 256, (12, 16, 3), dtype=np.uint8), (w, h), interpolation=cv2.INTER_CUBIC)
              for w, h in ((160, 120), (160, 120), (150, 100), (160, 120))]  # a clipped, narrower one too
    ref = {"kind": "missed", "label": "ped", "episode": "e", "t_s": 1.0}
    thumbs = [Thumb(ref, smooth[0]), Thumb(ref, None, "frame not found in the bag"), *(Thumb(ref, p) for p in
                                                                                           smooth[1:])]
    files: dict[str, bytes] = {}
    page = _strip("cm:empty:ped@0-10", {"count": 9, "refs": [ref] * 5}, thumbs, files, "evidence")
    assert list(files) == ["ev-cm_empty_ped_0-10.jpg"]
    data, offsets = strip_file(smooth)
    assert files["ev-cm_empty_ped_0-10.jpg"] == data and offsets == [0, 192, 384, 576]
    sheet = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    assert sheet.shape == (120, 736, 3)
    for p, x in zip(smooth, offsets, strict=True):  # each part: what the picture's own JPEG decodes to
        own = cv2.imdecode(np.frombuffer(encode_jpeg(p, 72), np.uint8), cv2.IMREAD_COLOR)
        diff = np.abs(sheet[:p.shape[0], x:x + p.shape[1]].astype(int) - own)
        # stated tolerance: JPEG's colour smoothing across block edges meets the padding, not the picture's own edge
        # rule: at most 8 levels, under half a level on average (no neighbour's colour: that was 80 levels)
        assert diff.max() <= 8 and diff.mean() < 0.5
    shown = re.findall(r"src='evidence/(\S+)' width='(\d+)' height='(\d+)' style='object-fit:none;"
                       r"object-position:-(\d+)px 0'", page)
    assert shown == [("ev-cm_empty_ped_0-10.jpg", str(p.shape[1]), str(p.shape[0]), str(x))
                     for p, x in zip(smooth, offsets, strict=True)]
    assert "no picture (frame not found in the bag)" in page and "4 drawn" not in page and "5 drawn" in page
