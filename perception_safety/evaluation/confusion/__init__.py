"""Distance-binned class- and proposition-labeled confusion matrices (confusion-matrix paper, Sec. III).

`accumulate` builds them from frames (Algorithms 1-2), `batch` flattens frames into columns, `config` holds
the options and label mapping, `types` the frozen `DistanceConfusion` value, `metrics` recall/precision per
bin, and `io` the JSON/CSV formats (ours and the paper's reference file).
"""

from perception_safety.evaluation.confusion.accumulate import (
    ConfusionAccumulator,
    confusion_from_frames,
    sum_confusions,
)
from perception_safety.evaluation.confusion.config import ClassMapper, ConfusionConfig
from perception_safety.evaluation.confusion.io import load_matrices
from perception_safety.evaluation.confusion.types import DistanceConfusion

__all__ = [
    "ClassMapper",
    "ConfusionAccumulator",
    "ConfusionConfig",
    "DistanceConfusion",
    "confusion_from_frames",
    "load_matrices",
    "sum_confusions",
]
