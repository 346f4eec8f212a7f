"""Loading and writing confusion matrices: the paper's reference file and our own format."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from perception_safety.evaluation.confusion.io import (
    ConfusionFileError,
    DistanceConfusion,
    confusion_from_mapping,
    load_matrices,
    write_csv,
    write_json,
)

REFERENCE = (
    Path(__file__).resolve().parents[3] / "reference" / "dist_confusion_matrices_nuscenes_yolov3.json"
)
needs_reference = pytest.mark.usefixtures("shared_reference")  # fails loudly when reference/ is missing


@needs_reference
def test_reference_file_loads_with_paper_figure_values() -> None:
    dc = load_matrices(REFERENCE)
    assert dc.class_labels == ("ped", "obs", "empty")
    assert dc.prop_labels == ("ped", "obs", "ped,obs", "empty")
    assert dc.n_bins == 10
    assert dc.bin_edges[0] == (0.0, 10.0) and dc.bin_edges[-1] == (90.0, 100.0)
    # Fig. 6 and Fig. 7 of the seed paper (d <= 10 m).
    assert dc.class_cm[0].tolist() == [[31, 0, 0], [0, 191, 0], [127, 734, 3227]]
    assert dc.prop_cm[0].tolist() == [[22, 0, 5, 0], [0, 184, 4, 0], [0, 0, 0, 0], [63, 354, 13, 3227]]
    assert dc.pooled_method == "sum_of_bins"


@needs_reference
def test_reference_pooled_p_ped_given_ped_matches_hand_computation() -> None:
    raw = json.loads(REFERENCE.read_text())
    tp = sum(b[0][0] for b in raw["class_cm"])
    col = sum(b[0][0] + b[1][0] + b[2][0] for b in raw["class_cm"])
    dc = load_matrices(REFERENCE)
    p = dc.probabilities("class", pooled=True)
    assert p[0, 0] == pytest.approx(tp / col)
    # Per-bin value of bin 0 from Fig. 6: 31 / (31 + 0 + 127).
    assert dc.probabilities("class")[0, 0, 0] == pytest.approx(31 / 158)
    # Proposition matrix, bin 0, true {ped,obs}: 5, 4, 0, 13 -> P(ped | ped,obs) = 5/22.
    assert dc.probabilities("prop")[0, 0, 2] == pytest.approx(5 / 22)


@needs_reference
def test_reference_round_trips_through_own_format(tmp_path: Path) -> None:
    dc = load_matrices(REFERENCE)
    out = write_json(tmp_path / "confusion.json", dc)
    back = load_matrices(out)
    assert np.array_equal(back.class_cm, dc.class_cm)
    assert np.array_equal(back.prop_cm_pooled, dc.prop_cm_pooled)
    assert back.bin_edges == dc.bin_edges
    doc = json.loads(out.read_text())
    assert "rows=predicted" in doc["orientation"]
    assert doc["class_p"][0][2][2] == pytest.approx(1.0)


def _small() -> DistanceConfusion:
    return DistanceConfusion(
        bin_edges=((0, 10), (10, 20)),
        class_labels=("ped", "empty"),
        prop_labels=("ped", "empty"),
        class_cm=[[[2, 0], [1, 3]], [[0, 0], [0, 4]]],
        prop_cm=[[[1, 0], [1, 3]], [[0, 0], [0, 4]]],
        class_cm_pooled=[[2, 0], [1, 5]],
        prop_cm_pooled=[[1, 0], [1, 5]],
    )


def test_empty_column_policies_never_give_nan() -> None:
    dc = _small()
    for policy, expected in (("zeros", [0.0, 0.0]), ("uniform", [0.5, 0.5]), ("identity", [1.0, 0.0])):
        p = dc.probabilities("class", empty_column=policy)
        assert p[1, :, 0].tolist() == expected
        assert not np.isnan(p).any()
    assert dc.probabilities("class")[0, :, 0].tolist() == pytest.approx([2 / 3, 1 / 3])


def test_csv_has_one_row_per_cell(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "c.csv", _small())
    rows = list(csv.DictReader(path.open()))
    # 2 kinds x (2 bins + pooled) x 4 cells.
    assert len(rows) == 2 * 3 * 4
    key = ("class", "0", "empty", "ped")
    cell = next(r for r in rows if (r["matrix"], r["bin"], r["pred"], r["true"]) == key)
    assert cell["count"] == "1" and float(cell["p_pred_given_true"]) == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("class_cm"), "class_cm"),
        (lambda d: d["class_cm"][0][0].__setitem__(0, -1), "class_cm[0][0][0]"),
        (lambda d: d["prop_cm"][1].pop(), "prop_cm"),
        (lambda d: d.__setitem__("bin_edges", [[0, 10], [5, 20]]), "bin_edges[1]"),
        (lambda d: d.__setitem__("class_labels", "ped"), "class_labels"),
        (lambda d: d["class_cm"][0][0].__setitem__(1, 0.5), "class_cm[0][0][1]"),
    ],
)
def test_malformed_files_name_file_and_key(tmp_path: Path, mutate, message: str) -> None:
    path = write_json(tmp_path / "confusion.json", _small())
    doc = json.loads(path.read_text())
    mutate(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfusionFileError) as err:
        load_matrices(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n "bin_edges": [\n')
    with pytest.raises(ConfusionFileError, match=r"bad\.json:3:1"):
        load_matrices(path)


def test_label_index_uses_set_semantics() -> None:
    dc = DistanceConfusion(
        bin_edges=((0, 10),),
        class_labels=("ped", "obs", "empty"),
        prop_labels=("ped", "obs", "ped,obs", "empty"),
        class_cm=np.zeros((1, 3, 3)),
        prop_cm=np.zeros((1, 4, 4)),
        class_cm_pooled=np.zeros((3, 3)),
        prop_cm_pooled=np.zeros((4, 4)),
    )
    assert dc.label_index("prop", "obs,ped") == 2
    assert dc.bin_for_distance(9.999) == 0 and dc.bin_for_distance(10.0) is None


@needs_reference
def test_reference_data_satisfies_the_counting_rules() -> None:
    """The paper's matrices obey the rules this package counts by (one sample per (frame, bin), ...)."""
    raw = json.loads(REFERENCE.read_text())
    for b in range(10):
        cls, prop = np.array(raw["class_cm"][b]), np.array(raw["prop_cm"][b])
        # One proposition sample per (frame, bin): every bin holds the same 3872 frames.
        assert prop.sum() == 3872
        # (empty, empty) counts the (frame, bin) cells without objects in both matrix types.
        assert cls[2, 2] == prop[3, 3]
        # Unannotated detections are ignored: nothing is counted in the empty column but (empty, empty).
        assert cls[:2, 2].sum() == 0 and prop[:3, 3].sum() == 0
        # Fig. 7 caption: per label, no more proposition samples than class-labeled ones.
        assert prop[:, 0].sum() + prop[:, 2].sum() <= cls[:, 0].sum()
        assert prop[:, 1].sum() + prop[:, 2].sum() <= cls[:, 1].sum()


# --- CSV detection dataset ----------------------------------------------------------------------


def _csv_of(frames) -> str:
    lines = ["frame,kind,x_min,y_min,x_max,y_max,class,score,distance"]
    for f in frames:
        key = f.frame_id or f.stamp_ns
        lines.append(f"{key},frame,,,,,,,")
        for d in f.detections:
            b = d.box
            lines.append(f"{key},det,{b.x_min},{b.y_min},{b.x_max},{b.y_max},{d.class_id},{d.score},")
        for g in f.ground_truth:
            b = g.box
            lines.append(f"{key},gt,{b.x_min},{b.y_min},{b.x_max},{b.y_max},{g.class_id},,{g.distance}")
    return "\n".join(lines) + "\n"


def test_csv_dataset_gives_the_same_matrices_as_frames(tmp_path: Path) -> None:
    from perception_safety.evaluation.confusion.accumulate import ConfusionAccumulator, confusion_from_frames
    from perception_safety.evaluation.confusion.config import ClassMapper, ConfusionConfig
    from perception_safety.evaluation.confusion.io import read_detection_csv

    from .test_accumulate import hand_scene

    cfg = ConfusionConfig(classes={"ped": ["ped"], "obs": ["obs"]}, bin_edges=[0, 10, 20, 30])
    path = tmp_path / "scene.csv"
    path.write_text(_csv_of(hand_scene()))
    acc = ConfusionAccumulator(cfg)
    for batch in read_detection_csv(path, ClassMapper(cfg), chunk_frames=2):
        acc.add_batch(batch)
    got, want = acc.result(), confusion_from_frames(hand_scene(), cfg)
    assert np.array_equal(got.class_cm, want.class_cm) and np.array_equal(got.prop_cm, want.prop_cm)
    assert np.array_equal(got.prop_cm_pooled, want.prop_cm_pooled)
    assert got.report == want.report


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ("a,det,0,0,1,x,ped,0.9,\n", ":2:6"),
        ("a,gt,0,0,1,1,ped,,\n", ":2:9"),
        ("a,car,0,0,1,1,ped,,\n", ":2:2"),
        ("a,det,2,0,1,1,ped,,\n", ":2: inverted"),
        ("a,frame,,,,,,,\nb,frame,,,,,,,\na,frame,,,,,,,\n", ":4: frame 'a'"),
        ("a,det,0,0,1\n", ":2: expected 9 columns"),
    ],
)
def test_csv_errors_name_line_and_column(tmp_path: Path, body: str, where: str) -> None:
    from perception_safety.evaluation.confusion.config import ClassMapper, ConfusionConfig
    from perception_safety.evaluation.confusion.io import read_detection_csv

    path = tmp_path / "d.csv"
    path.write_text("frame,kind,x_min,y_min,x_max,y_max,class,score,distance\n" + body)
    with pytest.raises(ConfusionFileError) as err:
        list(read_detection_csv(path, ClassMapper(ConfusionConfig())))
    assert f"d.csv{where}" in str(err.value)


def test_integer_arrays_in_memory_are_read_as_lists_are():
    """An in-memory partial carries numpy integer counts: the same matrices as its JSON lists; a negative count,
    a wrong shape or a fractional value is refused either way."""
    doc = {"bin_edges": [[0, 10], [10, 20]], "class_labels": ["ped", "empty"], "prop_labels": ["ped", "empty"],
           "class_cm": [[[1, 0], [2, 3]], [[0, 4], [5, 0]]], "prop_cm": [[[1, 0], [0, 2]], [[3, 0], [0, 4]]],
           "class_cm_pooled": [[1, 4], [7, 3]], "prop_cm_pooled": [[4, 0], [0, 6]]}  # fmt: skip
    as_arrays = {k: np.asarray(v, dtype=np.int64) if k.endswith(("_cm", "_pooled")) else v for k, v in doc.items()}
    a, b = confusion_from_mapping(doc), confusion_from_mapping(as_arrays)
    for k in ("class_cm", "prop_cm", "class_cm_pooled", "prop_cm_pooled"):
        np.testing.assert_array_equal(getattr(a, k), getattr(b, k))
        assert getattr(b, k).dtype == np.int64
    for bad in (np.array([[-1, 4], [7, 3]]), np.array([[1, 4, 0], [7, 3, 0]]), np.array([[1.5, 4], [7, 3]])):
        with pytest.raises(ConfusionFileError, match="class_cm_pooled"):
            confusion_from_mapping({**as_arrays, "class_cm_pooled": bad})
