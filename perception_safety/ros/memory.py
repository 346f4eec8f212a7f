"""glibc malloc settings for processes that receive camera frames (one multi-megabyte buffer per message).

With glibc's defaults a 6.2 MB (1080p rgb8) buffer sits near the dynamic mmap/trim thresholds: depending on
the order of allocations, the process either reuses freed heap memory or maps, page-faults (~1 500 faults per
buffer) and unmaps every frame's buffers — measured 4 500 minor faults and ~13 ms of system CPU per frame
(docs/performance.md, "ROS nodes"). Fixing both thresholds keeps freed frame buffers in the heap for reuse.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: glibc's upper limit for M_MMAP_THRESHOLD on 64-bit (HEAP_MAX_SIZE / 2): buffers below it come from the heap
MMAP_THRESHOLD = 32 * 1024 * 1024
#: free memory at the top of the heap kept (not returned to the system) up to this size
TRIM_THRESHOLD = 64 * 1024 * 1024


def keep_frame_buffers(mmap_threshold: int = MMAP_THRESHOLD, trim_threshold: int = TRIM_THRESHOLD) -> bool:
    """Fix glibc's mmap and trim thresholds (``mallopt``) for this process; False where that is not glibc."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, mmap_threshold)) and bool(mallopt(M_TRIM_THRESHOLD, trim_threshold))
