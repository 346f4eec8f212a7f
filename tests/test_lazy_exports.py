"""`lazy_exports`: a package's public names load their own submodule on first use (issue 27 target 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _fresh(code: str) -> dict:
    """The JSON the last line of ``code`` prints, run in a fresh interpreter on this checkout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_every_public_name_of_pcd_is_its_definition():
    import perception_safety.evaluation.pcd as pcd
    from perception_safety.evaluation.pcd import bootstrap, compute, config, samples

    assert pcd.PCDConfig is config.PCDConfig
    assert pcd.compute_pcd is compute.compute_pcd and pcd.pcd_at is compute.pcd_at
    assert pcd.bootstrap_pcd is bootstrap.bootstrap_pcd and pcd.samples_from_frames is samples.samples_from_frames
    assert all(getattr(pcd, name) is not None for name in pcd.__all__)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        pcd.no_such_name  # noqa: B018


def test_the_map_side_loads_no_fit():
    """A map worker (samples, the config) loads no scipy.interpolate (~0.15 s); the fit loads it when it runs."""
    code = (
        "import json, sys\n"
        "import perception_safety.pipeline.evaluate\n"
        "from perception_safety.evaluation.pcd import PCDConfig, samples_from_frames\n"
        "before = 'scipy.interpolate' in sys.modules\n"
        "import numpy as np\n"
        "from perception_safety.evaluation.pcd.pspline import design, uniform_knots\n"
        "design(np.array([0.25, 0.5]), uniform_knots())\n"
        "print(json.dumps({'before': before, 'after': 'scipy.interpolate' in sys.modules}))\n"
    )
    assert _fresh(code) == {"before": False, "after": True}
