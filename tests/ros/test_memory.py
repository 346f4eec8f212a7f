"""ros/memory.py: with glibc's thresholds fixed, freed frame-sized buffers are reused instead of re-mapped."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# one frame's allocations as in the node: the received message, the luma image, the next (slightly larger)
# message; bytearray zero-fills, so a freshly mapped buffer faults on every page
SCRIPT = textwrap.dedent("""
    import sys
    from pathlib import Path

    from perception_safety.ros.memory import keep_frame_buffers

    def minflt():
        return int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[7])

    ok = keep_frame_buffers() if sys.argv[1] == "1" else True
    size = 1920 * 1080 * 3

    def frame():
        msg = bytearray(size)
        luma = bytearray(size // 3)
        del msg
        nxt = bytearray(size + 8192)
        del luma
        del nxt

    for _ in range(3):
        frame()
    before = minflt()
    for _ in range(20):
        frame()
    print(ok, minflt() - before)
""")

PAGES_PER_FRAME = 1920 * 1080 * 3 // 4096


def _faults(tuned: bool) -> tuple[str, int]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, "1" if tuned else "0"], capture_output=True, text=True,
                         check=True).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt and /proc are Linux-only")
def test_frame_sized_buffers_are_reused_without_page_faults() -> None:
    ok, tuned = _faults(True)
    assert ok == "True"
    assert tuned < PAGES_PER_FRAME  # 20 frames: (almost) no fault at all
    # the same allocation pattern with glibc's dynamic thresholds maps and faults buffers every frame
    _, default = _faults(False)
    assert default > 10 * PAGES_PER_FRAME
