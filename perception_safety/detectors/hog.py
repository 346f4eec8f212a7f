"""OpenCV's HOG + linear SVM people detector (Dalal & Triggs; the SVM ships inside OpenCV, nothing to download).

OpenCV 5 moved ``cv2.HOGDescriptor`` out of the main modules (it is in the contrib build); where the installed
cv2 lacks it, building the detector is a `DetectorError` saying so. The SVM margin ``w`` of a window is mapped
to a score in (0, 1) by the logistic ``1 / (1 + exp(-w))`` (our choice: monotone, 0.5 at the SVM's boundary).
"""

from __future__ import annotations

import numpy as np

from perception_safety.core.types import Box, Detection
from perception_safety.detectors.base import DetectorError, as_rgb
from perception_safety.detectors.config import HOGConfig
from perception_safety.detectors.nms import nms


class HOGPeopleDetector:
    """``cv2.HOGDescriptor`` with ``getDefaultPeopleDetector()`` (64x128 windows), multi-scale, OpenCV NMS."""

    def __init__(self, cfg: HOGConfig | None = None) -> None:
        import cv2

        self.cfg = cfg or HOGConfig()
        self.name = "hog"
        if not hasattr(cv2, "HOGDescriptor"):
            raise DetectorError(f"detector hog: the installed OpenCV {cv2.__version__} has no HOGDescriptor "
                                "(OpenCV 5 moved it to the contrib modules); use kind 'onnx' or an OpenCV build "
                                "with HOG")
        self.hog = cv2.HOGDescriptor()
        self.hog.setSVMDetector(cv2.HOGDescriptor_getDefaultPeopleDetector())

    def detect(self, image: np.ndarray) -> tuple[Detection, ...]:
        c = self.cfg
        rgb = as_rgb(image)
        rects, weights = self.hog.detectMultiScale(rgb, hitThreshold=c.hit_threshold, winStride=(c.stride, c.stride),
                                                   padding=(8, 8), scale=c.scale)
        if len(rects) == 0:
            return ()
        r = np.asarray(rects, np.float64).reshape(-1, 4)
        boxes = np.stack([r[:, 0], r[:, 1], r[:, 0] + r[:, 2], r[:, 1] + r[:, 3]], axis=1)
        scores = 1.0 / (1.0 + np.exp(-np.asarray(weights, np.float64).reshape(-1)))
        keep = nms(boxes, scores, np.zeros(len(scores), np.int64), c.score_threshold, c.iou_threshold,
                   c.max_detections)
        h, w = rgb.shape[:2]
        out = []
        for k in keep:
            x1, y1, x2, y2 = np.clip(boxes[k], 0, [w, h, w, h])
            if x2 > x1 and y2 > y1:
                out.append(Detection(Box(float(x1), float(y1), float(x2), float(y2)), c.class_name, float(scores[k])))
        return tuple(out)
