"""ONNX detectors: YOLO- and SSD-style decoding, normalisation, letterbox mapping, NMS, and YAML/model mismatches.

Reference values are computed by hand from the constant outputs the tiny models are built with.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from onnx_models import constant_model, identity_model, write_yaml

from perception_safety.detectors import DetectorConfig, DetectorError, build_detector

CLASSES = ["person", "car", "bicycle"]


def _yolo_output() -> np.ndarray:
    """YOLOv8 layout (1, 4 + 3, N): cx, cy, w, h in 64x64 network pixels, then per-class scores."""
    rows = [
        # cx,   cy,   w,    h,    person, car, bicycle
        [20.0, 30.0, 10.0, 20.0, 0.90, 0.05, 0.01],  # person A
        [21.0, 31.0, 10.0, 20.0, 0.80, 0.02, 0.01],  # duplicate of A (IoU > 0.45): suppressed by NMS
        [50.0, 40.0, 12.0, 8.0, 0.10, 0.70, 0.05],  # car
        [40.0, 10.0, 6.0, 6.0, 0.05, 0.10, 0.20],  # below the 0.25 threshold
    ]
    return np.asarray(rows, np.float32).T[None]  # (1, 7, 4)


def _spec(**overrides):
    spec = {"input": {"width": 64, "height": 64}, "output": {"decoder": "yolo"}, "classes": CLASSES,
            "score_threshold": 0.25, "iou_threshold": 0.45}
    spec.update(overrides)
    return spec


def test_yolo_channels_first_letterbox_nms_and_threshold(tmp_path):
    model = constant_model(tmp_path / "yolo.onnx", {"output0": _yolo_output()}, [1, 3, 64, 64])
    det = build_detector(DetectorConfig(kind="onnx", onnx_model=write_yaml(tmp_path / "yolo.yaml", model, **_spec())))
    # a 128x64 image (w x h): letterbox scale 0.5, content 64x32 placed at y = 16 in the 64x64 input
    image = np.zeros((64, 128, 3), np.uint8)
    out = det.detect(image)
    assert [(d.class_id, round(d.score, 6)) for d in out] == [("person", 0.9), ("car", 0.7)]
    # x_img = x_net / 0.5, y_img = (y_net - 16) / 0.5
    person, car = out[0].box, out[1].box
    assert (person.x_min, person.y_min, person.x_max, person.y_max) == pytest.approx((30.0, 8.0, 50.0, 48.0))
    assert (car.x_min, car.y_min, car.x_max, car.y_max) == pytest.approx((88.0, 40.0, 112.0, 56.0))


def test_yolo_channels_last_with_objectness_and_stretch(tmp_path):
    rows = np.asarray([[0.25, 0.5, 0.1, 0.2, 0.5, 0.2, 0.9, 0.1]], np.float32)  # normalised cx,cy,w,h, obj, 3 cls
    model = constant_model(tmp_path / "v5.onnx", {"out": rows[None]}, [1, 3, 64, 64])
    yml = write_yaml(tmp_path / "v5.yaml", model, **_spec(
        input={"width": 64, "height": 64, "resize": "stretch"},
        output={"decoder": "yolo", "objectness": True, "normalized": True, "layout": "channels_last"}))
    (d,) = build_detector(DetectorConfig(kind="onnx", onnx_model=yml)).detect(np.zeros((100, 200, 3), np.uint8))
    assert d.class_id == "car" and math.isclose(d.score, 0.45, rel_tol=1e-6)  # 0.5 objectness * 0.9
    # normalised box (0.2, 0.4)-(0.3, 0.6) of the stretched input = the same fractions of 200x100
    assert (d.box.x_min, d.box.y_min, d.box.x_max, d.box.y_max) == pytest.approx((40.0, 40.0, 60.0, 60.0))


def test_ssd_boxes_and_scores_with_background(tmp_path):
    boxes = np.asarray([[[0.1, 0.2, 0.5, 0.4], [0.5, 0.5, 0.9, 0.9]]], np.float32)  # y1, x1, y2, x2 normalised
    scores = np.asarray([[[0.1, 0.8, 0.05, 0.05], [0.9, 0.05, 0.02, 0.03]]], np.float32)  # background first
    model = constant_model(tmp_path / "ssd.onnx", {"boxes": boxes, "scores": scores}, [1, 3, 32, 32])
    yml = write_yaml(tmp_path / "ssd.yaml", model, **_spec(
        input={"width": 32, "height": 32, "resize": "stretch"},
        output={"decoder": "ssd", "boxes": "boxes", "scores": "scores", "box_format": "yxyx", "normalized": True,
                "background_class": 0}))
    out = build_detector(DetectorConfig(kind="onnx", onnx_model=yml)).detect(np.zeros((50, 100, 3), np.uint8))
    assert len(out) == 1  # the second box is background (0.9) with class scores <= 0.05
    d = out[0]
    assert d.class_id == "person" and math.isclose(d.score, 0.8, rel_tol=1e-6)
    assert (d.box.x_min, d.box.y_min, d.box.x_max, d.box.y_max) == pytest.approx((20.0, 5.0, 40.0, 25.0))


def test_normalisation_and_layout_reach_the_model(tmp_path):
    """An identity model returns the tensor the adapter built: (pixel * scale - mean) / std, BGR, NHWC."""
    from perception_safety.detectors.onnx_model import OnnxDetector, load_spec, preprocess

    model = identity_model(tmp_path / "id.onnx", [1, 8, 8, 3])
    yml = write_yaml(tmp_path / "id.yaml", model, **_spec(
        input={"width": 8, "height": 8, "layout": "NHWC", "color": "bgr", "scale": 1.0,
               "mean": [10.0, 20.0, 30.0], "std": [2.0, 4.0, 5.0], "resize": "stretch"},
        output={"decoder": "yolo", "tensor": "out"}))
    det = OnnxDetector(load_spec(yml), str(yml))
    image = np.zeros((8, 8, 3), np.uint8)
    image[..., 0], image[..., 1], image[..., 2] = 100, 150, 200  # R, G, B
    (x,) = det.session.run(["out"], {"images": preprocess(image, det.spec.input)[0]})
    # BGR order: channel 0 is blue = 200 -> (200 - 10) / 2
    assert x.shape == (1, 8, 8, 3)
    assert np.allclose(x[0, 3, 5], [(200 - 10) / 2, (150 - 20) / 4, (100 - 30) / 5])
    # the identity output is no detection layout: a clear, reported error (the node skips the frame)
    with pytest.raises(DetectorError, match=r"yolo expects \(1, N, 7\) or \(1, 7, N\) for 3 classes"):
        det.detect(image)


@pytest.mark.parametrize(("spec", "outputs", "shape", "match"), [
    # the YAML lists 2 classes but each row holds 3 class scores
    ({"classes": ["person", "car"]}, {"output0": _yolo_output()}, [1, 3, 64, 64], r"classes: output 'output0'"),
    # input size in the YAML differs from the model's
    ({"input": {"width": 32, "height": 64}}, {"output0": _yolo_output()}, [1, 3, 64, 64], r"input: model input"),
    # NHWC declared for an NCHW model
    ({"input": {"width": 64, "height": 64, "layout": "NHWC"}}, {"output0": _yolo_output()}, [1, 3, 64, 64],
     r"input: model input"),
    ({"output": {"decoder": "yolo", "tensor": "nope"}}, {"output0": _yolo_output()}, [1, 3, 64, 64],
     r"output\.tensor: 'nope' is not an output"),
    ({"output": {"decoder": "ssd"}}, {"output0": _yolo_output()}, [1, 3, 64, 64], r"ssd needs a boxes and a scores"),
])
def test_yaml_that_does_not_match_the_model_is_a_clear_error(tmp_path, spec, outputs, shape, match):
    model = constant_model(tmp_path / "m.onnx", outputs, shape)
    yml = write_yaml(tmp_path / "m.yaml", model, **_spec(**spec))
    with pytest.raises(DetectorError, match=match) as err:
        build_detector(DetectorConfig(kind="onnx", onnx_model=yml))
    assert str(yml) in str(err.value)


def test_bad_yaml_and_missing_model_name_file_and_key(tmp_path):
    yml = tmp_path / "bad.yaml"
    yml.write_text("model: m.onnx\ninput: {width: -3, height: 64}\noutput: {decoder: yolo}\nclasses: [a]\n")
    with pytest.raises(DetectorError, match=r"bad\.yaml.*input\.width"):
        build_detector(DetectorConfig(kind="onnx", onnx_model=yml))
    yml.write_text("model: missing.onnx\ninput: {width: 3, height: 64}\noutput: {decoder: yolo}\nclasses: [a]\n")
    with pytest.raises(DetectorError, match=r"model: file .*missing\.onnx.* not found"):
        build_detector(DetectorConfig(kind="onnx", onnx_model=yml))


def test_hog_needs_an_opencv_with_hog():
    import cv2

    if hasattr(cv2, "HOGDescriptor"):
        det = build_detector(DetectorConfig(kind="hog"))
        assert det.detect(np.full((128, 64, 3), 128, np.uint8)) == ()  # a flat image holds no person
    else:  # the pinned OpenCV 5 wheel: building it says why, instead of failing later
        with pytest.raises(DetectorError, match="has no HOGDescriptor"):
            build_detector(DetectorConfig(kind="hog"))


def test_shipped_model_description_and_node_params_validate():
    import yaml

    from perception_safety.detectors.onnx_model import load_spec
    from perception_safety.ros.detector_node import DetectorNodeParams

    root = Path(__file__).resolve().parents[2]
    spec = load_spec(root / "config" / "detectors" / "yolov8.yaml")
    assert len(spec.classes) == 80 and spec.classes[0] == "person" and spec.output.decoder == "yolo"
    doc = yaml.safe_load((root / "config" / "detector.yaml").read_text())
    params = DetectorNodeParams.model_validate(doc["detector"]["ros__parameters"])
    assert params.detector.kind == "onnx" and params.topics.detections == "/detections"


@pytest.mark.parametrize("poison", ["all_nan", "one_inf_score"])
def test_non_finite_outputs_are_an_error_never_an_empty_road(tmp_path, poison):
    """Issue 25 item 3: an all-NaN model used to give 0 detections (a clear road nobody saw)."""
    from perception_safety.detectors.base import NonFiniteOutputError

    out = _yolo_output()
    if poison == "all_nan":
        out[:] = np.nan
    else:
        out[0, 5, 3] = np.inf  # one car score of the (otherwise sub-threshold) 4th candidate
    model = constant_model(tmp_path / "nan.onnx", {"output0": out}, [1, 3, 64, 64])
    det = build_detector(DetectorConfig(kind="onnx", onnx_model=write_yaml(tmp_path / "nan.yaml", model, **_spec())))
    with pytest.raises(NonFiniteOutputError, match="NaN/inf") as info:
        det.detect(np.zeros((64, 64, 3), np.uint8))
    assert info.value.values == (out.size if poison == "all_nan" else 1)
    assert isinstance(info.value, DetectorError)
