"""Converters from public dataset formats to the JSON Lines dataset (`perception_safety.io.dataset`).

`kitti` reads KITTI object labels (and detection files in the same format, with a score), `coco` reads COCO-style
ground truth and result files. Each returns `Frame`s plus a `ConversionReport` of what was skipped or assumed.
"""

from perception_safety.io.converters.common import ConversionError, ConversionReport

__all__ = ["ConversionError", "ConversionReport"]
