"""ONNX Runtime detectors described by a YAML file: input size and normalisation, output layout, class names.

The YAML (`OnnxModelSpec`) names the ``.onnx`` file (relative to the YAML), the input tensor (size, NCHW/NHWC,
RGB/BGR, ``(pixel * scale - mean) / std``, letterbox or stretch resize) and one of two output decoders:

* ``yolo``: one tensor of candidates, ``(1, N, 4 + [1] + C)`` or channels first ``(1, 4 + [1] + C, N)``
  (YOLOv8 exports), box ``cx, cy, w, h`` (or ``x1, y1, x2, y2``) in input pixels (or normalised), an optional
  objectness column (YOLOv5) multiplied into the class scores;
* ``ssd``: a boxes tensor ``(1, N, 4)`` and a scores tensor ``(1, N, C [+ background])``, boxes normalised
  ``y1, x1, y2, x2`` (TF object detection exports) or ``x1, y1, x2, y2``.

Per class the best score is kept, boxes below ``score_threshold`` dropped, then OpenCV NMS. Boxes are mapped back
to the pixels of the image given to `OnnxDetector.detect`. The model's declared input and output shapes are
checked against the YAML when it is loaded (a mismatch is a `DetectorError` naming the YAML key); a runtime output
that does not fit (dynamic shapes) is a `DetectorError` too, which the node reports and skips. NaN/inf outputs are a
`NonFiniteOutputError` (issue 25 item 3: an all-NaN model used to give "0 detections", a clear road it never saw).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from perception_safety.core.types import Box, Detection
from perception_safety.detectors.base import DetectorError, NonFiniteOutputError, as_rgb
from perception_safety.detectors.nms import nms


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class InputSpec(_Strict):
    """The network input: size, layout, colour order and normalisation ``(pixel * scale - mean) / std``."""

    name: str | None = Field(default=None, description="input tensor name; None: the model's first input")
    width: int = Field(ge=1, le=8192)
    height: int = Field(ge=1, le=8192)
    layout: Literal["NCHW", "NHWC"] = "NCHW"
    color: Literal["rgb", "bgr"] = "rgb"
    scale: float = Field(default=1.0 / 255.0, gt=0.0)
    mean: tuple[float, float, float] = (0.0, 0.0, 0.0)
    std: tuple[float, float, float] = (1.0, 1.0, 1.0)
    resize: Literal["letterbox", "stretch"] = "letterbox"
    pad_value: int = Field(default=114, ge=0, le=255)
    dtype: Literal["float32", "uint8"] = "float32"

    @model_validator(mode="after")
    def _check(self) -> InputSpec:
        if any(s <= 0 for s in self.std):
            raise ValueError(f"std must be > 0, got {self.std}")
        return self


class OutputSpec(_Strict):
    """How the output tensors are laid out and decoded."""

    decoder: Literal["yolo", "ssd"]
    # yolo
    tensor: str | None = Field(default=None, description="yolo: output name; None: the first output")
    layout: Literal["auto", "channels_last", "channels_first"] = "auto"
    objectness: bool = Field(default=False, description="yolo: a 5th column multiplied into the class scores")
    # ssd
    boxes: str | None = Field(default=None, description="ssd: boxes output name; None: the first output")
    scores: str | None = Field(default=None, description="ssd: scores output name; None: the second output")
    background_class: int | None = Field(default=None, ge=0, description="ssd: score column of the background")
    # both
    box_format: Literal["cxcywh", "xyxy", "yxyx"] = "cxcywh"
    normalized: bool = Field(default=False, description="box coordinates in [0, 1] of the network input")


class OnnxModelSpec(_Strict):
    """The YAML file describing an ONNX detector."""

    model: Path = Field(description="the .onnx file; relative to the YAML file")
    input: InputSpec
    output: OutputSpec
    classes: tuple[str, ...] = Field(min_length=1, description="class name of each score column, in order")
    score_threshold: float = Field(default=0.25, ge=0.0, le=1.0)
    iou_threshold: float = Field(default=0.45, gt=0.0, le=1.0)
    max_detections: int = Field(default=300, ge=1, le=10_000)
    max_candidates: int = Field(default=100_000, ge=1, description="more candidate rows: output refused")


def load_spec(path: str | Path) -> OnnxModelSpec:
    """Read and validate the YAML file; errors name the file and the dotted key."""
    from perception_safety.io.config import load_yaml, model_from_mapping

    spec = model_from_mapping(load_yaml(path), OnnxModelSpec, str(path))
    if not spec.model.is_absolute():
        spec = spec.model_copy(update={"model": Path(path).parent / spec.model})
    return spec


def preprocess(image: np.ndarray, inp: InputSpec) -> tuple[np.ndarray, float, float, float, float]:
    """Network input tensor (batch 1) and the mapping back: ``x_img = (x_net - pad_x) / sx`` (same for y)."""
    import cv2

    rgb = as_rgb(image)
    h, w = rgb.shape[:2]
    if inp.resize == "stretch":
        sx, sy = inp.width / w, inp.height / h
        net = cv2.resize(rgb, (inp.width, inp.height), interpolation=cv2.INTER_LINEAR)
        pad_x = pad_y = 0.0
    else:
        s = min(inp.width / w, inp.height / h)
        nw, nh = max(1, round(w * s)), max(1, round(h * s))
        resized = cv2.resize(rgb, (nw, nh), interpolation=cv2.INTER_LINEAR)
        net = np.full((inp.height, inp.width, 3), inp.pad_value, np.uint8)
        px, py = (inp.width - nw) // 2, (inp.height - nh) // 2
        net[py:py + nh, px:px + nw] = resized
        sx = sy = s
        pad_x, pad_y = float(px), float(py)
    if inp.color == "bgr":
        net = net[:, :, ::-1]
    if inp.dtype == "uint8":
        x = np.ascontiguousarray(net)
    else:
        mean = np.asarray(inp.mean, np.float32)
        std = np.asarray(inp.std, np.float32)
        x = (net.astype(np.float32) * np.float32(inp.scale) - mean) / std
    if inp.layout == "NCHW":
        x = x.transpose(2, 0, 1)
    return np.ascontiguousarray(x[None]), sx, sy, pad_x, pad_y


def _xyxy(raw: np.ndarray, fmt: str) -> np.ndarray:
    if fmt == "cxcywh":
        cx, cy, w, h = raw.T
        return np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    if fmt == "yxyx":
        return raw[:, [1, 0, 3, 2]]
    return raw


def decode_yolo(out: np.ndarray, spec: OnnxModelSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidate boxes (network pixels or normalised, xyxy), best class score and class index per candidate."""
    o = spec.output
    width = 4 + int(o.objectness) + len(spec.classes)
    a = np.asarray(out)
    if a.ndim == 3 and a.shape[0] == 1:
        a = a[0]
    if a.ndim != 2 or width not in a.shape:
        raise DetectorError(f"output: yolo expects (1, N, {width}) or (1, {width}, N) for {len(spec.classes)} classes"
                            f"{' + objectness' if o.objectness else ''}, got shape {tuple(np.shape(out))}")
    if o.layout == "channels_first" or (o.layout == "auto" and a.shape[1] != width):
        a = a.T
    if a.shape[1] != width:
        raise DetectorError(f"output.layout {o.layout}: shape {tuple(np.shape(out))} has no {width}-wide rows")
    if a.shape[0] > spec.max_candidates:
        raise DetectorError(f"output: {a.shape[0]} candidates > max_candidates {spec.max_candidates}")
    a = a.astype(np.float64)
    cls = a[:, 4 + int(o.objectness):]
    if o.objectness:
        cls = cls * a[:, 4:5]
    idx = np.argmax(cls, axis=1) if cls.size else np.zeros(0, np.int64)
    return _xyxy(a[:, :4], o.box_format), cls[np.arange(len(idx)), idx], idx


def decode_ssd(boxes: np.ndarray, scores: np.ndarray, spec: OnnxModelSpec) -> tuple[np.ndarray, ...]:
    """SSD-style: boxes (1, N, 4) and per-class scores (1, N, C [+ background])."""
    o = spec.output
    b = np.asarray(boxes)
    s = np.asarray(scores)
    b = b[0] if b.ndim == 3 and b.shape[0] == 1 else b
    s = s[0] if s.ndim == 3 and s.shape[0] == 1 else s
    n_cols = len(spec.classes) + (o.background_class is not None)
    if b.ndim != 2 or b.shape[1] != 4 or s.ndim != 2 or s.shape != (b.shape[0], n_cols):
        raise DetectorError(f"output: ssd expects boxes (1, N, 4) and scores (1, N, {n_cols}) "
                            f"({len(spec.classes)} classes{' + background' if o.background_class is not None else ''})"
                            f", got {tuple(np.shape(boxes))} and {tuple(np.shape(scores))}")
    if b.shape[0] > spec.max_candidates:
        raise DetectorError(f"output: {b.shape[0]} candidates > max_candidates {spec.max_candidates}")
    s = s.astype(np.float64)
    if o.background_class is not None:
        s = np.delete(s, o.background_class, axis=1)
    idx = np.argmax(s, axis=1) if s.size else np.zeros(0, np.int64)
    return _xyxy(b.astype(np.float64), o.box_format), s[np.arange(len(idx)), idx], idx


def _shape_ok(declared: Any, expected: tuple[int | None, ...]) -> bool:
    """A declared ONNX shape (ints, names or None for dynamic dims) can hold ``expected`` (None: any)."""
    if declared is None:
        return True
    if len(declared) != len(expected):
        return False
    return all(not isinstance(d, int) or e is None or d == e for d, e in zip(declared, expected, strict=True))


class OnnxDetector:
    """An ONNX Runtime session with the YAML's pre- and post-processing (CPU, ``threads`` intra-op threads)."""

    def __init__(self, spec: OnnxModelSpec, source: str = "model yaml", threads: int = 1) -> None:
        import onnxruntime as ort

        self.spec = spec
        self.source = source
        self.name = f"onnx:{spec.model.name}"
        if not spec.model.is_file():
            raise DetectorError(f"{source}: model: file {str(spec.model)!r} not found")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        try:
            self.session = ort.InferenceSession(str(spec.model), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types for unreadable models
            raise DetectorError(f"{source}: model {spec.model}: cannot load: {exc}") from exc
        self._check_signature()

    def _err(self, key: str, msg: str) -> DetectorError:
        return DetectorError(f"{self.source}: {key}: {msg}")

    def _check_signature(self) -> None:
        spec, inputs, outputs = self.spec, self.session.get_inputs(), self.session.get_outputs()
        names = [i.name for i in inputs]
        if spec.input.name is not None and spec.input.name not in names:
            raise self._err("input.name", f"{spec.input.name!r} is not an input of the model (inputs: {names})")
        self.input = next(i for i in inputs if i.name == (spec.input.name or names[0]))
        i = spec.input
        want = (1, 3, i.height, i.width) if i.layout == "NCHW" else (1, i.height, i.width, 3)
        if not _shape_ok(self.input.shape, want):
            raise self._err("input", f"model input {self.input.name!r} has shape {self.input.shape}, "
                            f"the YAML describes {list(want)} ({i.layout}, {i.width}x{i.height})")
        want_type = "tensor(float)" if i.dtype == "float32" else "tensor(uint8)"
        if self.input.type != want_type:
            raise self._err("input.dtype", f"model input type is {self.input.type}, the YAML says {i.dtype}")
        out_names = [o.name for o in outputs]
        o = spec.output
        if o.decoder == "yolo":
            name = o.tensor or out_names[0]
            if name not in out_names:
                raise self._err("output.tensor", f"{name!r} is not an output of the model (outputs: {out_names})")
            self.outputs = [name]
            shape = next(x.shape for x in outputs if x.name == name)
            width = 4 + int(o.objectness) + len(spec.classes)
            if shape is not None and len(shape) == 3 and all(isinstance(d, int) for d in shape[1:]) and \
                    width not in shape[1:]:
                raise self._err("classes", f"output {name!r} has shape {shape}: rows of 4 box values "
                                f"{'+ objectness ' if o.objectness else ''}+ {len(spec.classes)} class scores "
                                f"({width}) do not fit; check classes and output.objectness")
        else:
            if len(out_names) < 2 and (o.boxes is None or o.scores is None):
                raise self._err("output", f"ssd needs a boxes and a scores output, the model has {out_names}")
            self.outputs = [o.boxes or out_names[0], o.scores or out_names[1]]
            for key, name in (("output.boxes", self.outputs[0]), ("output.scores", self.outputs[1])):
                if name not in out_names:
                    raise self._err(key, f"{name!r} is not an output of the model (outputs: {out_names})")
            shape = next(x.shape for x in outputs if x.name == self.outputs[1])
            n_cols = len(spec.classes) + (o.background_class is not None)
            if shape is not None and len(shape) == 3 and isinstance(shape[2], int) and shape[2] != n_cols:
                bg = " + background" if o.background_class is not None else ""
                raise self._err("classes", f"scores output {self.outputs[1]!r} has {shape[2]} columns, the YAML "
                                f"gives {len(spec.classes)} classes{bg}")

    def detect(self, image: np.ndarray) -> tuple[Detection, ...]:
        spec = self.spec
        x, sx, sy, pad_x, pad_y = preprocess(image, spec.input)
        try:
            outs = self.session.run(self.outputs, {self.input.name: x})
        except Exception as exc:
            raise DetectorError(f"{self.source}: inference failed: {exc}") from exc
        bad = sum(int(np.size(o) - np.count_nonzero(np.isfinite(o))) for o in outs)
        if bad:  # a NaN row may have been the pedestrian: the frame is an error, never an empty road
            total = sum(int(np.size(o)) for o in outs)
            raise NonFiniteOutputError(f"{self.source}: {bad} of {total} output values are NaN/inf: frame not judged "
                                       "(no detections published)", bad)
        if spec.output.decoder == "yolo":
            boxes, scores, idx = decode_yolo(outs[0], spec)
        else:
            boxes, scores, idx = decode_ssd(outs[0], outs[1], spec)
        if spec.output.normalized:
            boxes = boxes * np.array([spec.input.width, spec.input.height] * 2, np.float64)
        finite = np.isfinite(boxes).all(axis=1) & np.isfinite(scores)
        if not finite.all():  # finite outputs that overflow when scaled (1e38 boxes): as unreadable as NaN
            raise NonFiniteOutputError(f"{self.source}: {int(np.count_nonzero(~finite))} candidates are not finite "
                                       "after decoding: frame not judged (no detections published)",
                                       int(np.count_nonzero(~finite)))
        keep = nms(boxes, scores, idx, spec.score_threshold, spec.iou_threshold, spec.max_detections)
        h, w = image.shape[:2]
        out = []
        for k in keep:
            x1, y1, x2, y2 = boxes[k]
            bx = np.clip([(x1 - pad_x) / sx, (x2 - pad_x) / sx], 0.0, w)
            by = np.clip([(y1 - pad_y) / sy, (y2 - pad_y) / sy], 0.0, h)
            if bx[1] <= bx[0] or by[1] <= by[0]:
                continue
            out.append(Detection(Box(float(bx[0]), float(by[0]), float(bx[1]), float(by[1])),
                                 spec.classes[int(idx[k])], float(np.clip(scores[k], 0.0, 1.0))))
        return tuple(out)
