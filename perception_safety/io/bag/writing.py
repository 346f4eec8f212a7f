"""Recording `Frame`s as a new rosbag2 bag (sqlite3 or mcap): detections, ground truth, ego, images (raw or
JPEG) with CameraInfo, candidates and per-frame monitor results; custom data into metadata.yaml."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from rosbags.rosbag2 import Writer

from perception_safety.core.types import Frame, InvalidValueError
from perception_safety.io import bag_messages as bm
from perception_safety.io.bag.layout import (
    COMPRESSED_SUFFIX,
    TOPIC_TYPES,
    BagError,
    BagTopics,
    CameraInfoSpec,
    storage_plugin,
)
from perception_safety.io.typestore import ros2_typestore
from perception_safety.monitors.base import MonitorResult


def write_frames(
    path: str | Path,
    frames: Iterable[Frame],
    storage: Literal["mcap", "sqlite3"] = "mcap",
    topics: BagTopics | None = None,
    monitor_results: Iterable[Sequence[MonitorResult]] | None = None,
    custom_data: Mapping[str, str] | None = None,
    compressed: Iterable[bytes | None] | None = None,
    camera_info: CameraInfoSpec | None = None,
    jpeg_quality: int | None = None,
) -> int:
    """Record frames as a new rosbag2 directory ``path``; returns the number of frames written.

    ``monitor_results`` (one sequence per frame, in frame order) go on ``topics.monitor_results``;
    ``custom_data`` (string pairs, e.g. the rollout and the episode's conditions) goes into metadata.yaml.
    Images: ``compressed`` (one JPEG payload or None per frame) or ``jpeg_quality`` (encode ``frame.image``)
    write ``sensor_msgs/CompressedImage`` on ``<topics.image>/compressed``; otherwise ``frame.image`` is written
    raw. With ``camera_info`` a CameraInfo goes with every image; an image of another size is refused.
    """
    from perception_safety.io.image_codec import encode_jpeg, jpeg_size

    topics = topics or BagTopics()
    path = Path(path)
    if path.exists():
        raise BagError(f"{path}: already exists; bags are never overwritten")
    store = ros2_typestore()
    as_jpeg = compressed is not None or jpeg_quality is not None
    payloads = iter(compressed) if compressed is not None else None
    n = 0
    try:
        with Writer(path, version=9, storage_plugin=storage_plugin(storage)) as writer:
            for key, value in (custom_data or {}).items():
                writer.set_custom_data(key, str(value))
            conns = {
                role: writer.add_connection(name, TOPIC_TYPES[role], typestore=store)
                for role in ("detections", "ground_truth", "ego")
                if (name := getattr(topics, role))
            }
            image_conn = info_conn = None
            if topics.image:
                image_type = bm.COMPRESSED_IMAGE_TYPE if as_jpeg else bm.IMAGE_TYPE
                image_topic = topics.image + COMPRESSED_SUFFIX if as_jpeg else topics.image
                image_conn = writer.add_connection(image_topic, image_type, typestore=store)
                if camera_info is not None and topics.camera_info:
                    info_conn = writer.add_connection(topics.camera_info, bm.CAMERA_INFO_TYPE, typestore=store)
            cand_conn = None  # added with the first frame that carries candidates
            results = iter(monitor_results) if monitor_results is not None and topics.monitor_results else None
            status_conn = (
                writer.add_connection(topics.monitor_results, bm.DIAGNOSTICS_TYPE, typestore=store) if results else None
            )
            for frame in frames:
                t = int(frame.stamp_ns)
                msgs = {
                    "detections": bm.detections_to_msg(frame.detections, t),
                    "ground_truth": bm.ground_truth_to_msg(frame.ground_truth, t),
                    "ego": None if frame.ego is None else bm.ego_to_msg(frame.ego, t),
                }
                if image_conn is not None:
                    payload = next(payloads) if payloads is not None else None
                    if payload is None and as_jpeg and frame.image is not None:
                        payload = encode_jpeg(frame.image, jpeg_quality or 90)
                    image_msg = None
                    if payload is not None:
                        size = jpeg_size(payload) if camera_info is not None else None
                        image_msg = bm.compressed_image_to_msg(payload, t)
                    elif frame.image is not None and not as_jpeg:
                        size = frame.image.shape[1::-1]
                        image_msg = bm.image_to_msg(frame.image, t)
                    if image_msg is not None:
                        if camera_info is not None and tuple(size) != tuple(camera_info.size):
                            raise InvalidValueError(
                                f"image size {size[0]}x{size[1]} disagrees with camera_info "
                                f"{camera_info.size[0]}x{camera_info.size[1]}")
                        if info_conn is not None:  # before its image: a node checks the image against it
                            info = bm.camera_info_to_msg(camera_info.size, camera_info.k, t)
                            writer.write(info_conn, t, store.serialize_cdr(info, bm.CAMERA_INFO_TYPE))
                        writer.write(image_conn, t, store.serialize_cdr(image_msg, image_conn.msgtype))
                for role, conn in conns.items():
                    if msgs[role] is not None:
                        writer.write(conn, t, store.serialize_cdr(msgs[role], TOPIC_TYPES[role]))
                if topics.candidates and frame.candidates is not None:
                    if cand_conn is None:
                        cand_conn = writer.add_connection(topics.candidates, bm.DETECTIONS_TYPE, typestore=store)
                    cand = bm.detections_to_msg(frame.candidates, t)
                    writer.write(cand_conn, t, store.serialize_cdr(cand, bm.DETECTIONS_TYPE))
                if results is not None:
                    status = bm.monitor_results_to_msg(tuple(next(results)), t)
                    writer.write(status_conn, t, store.serialize_cdr(status, bm.DIAGNOSTICS_TYPE))
                n += 1
    except InvalidValueError as exc:
        raise BagError(f"{path}: frame #{n}: {exc}") from exc
    except StopIteration:
        raise BagError(f"{path}: frame #{n}: fewer monitor results or images than frames") from None
    return n
