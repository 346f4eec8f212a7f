"""Export a `MarkovChain` for other model checkers: Storm's DRN and PRISM's explicit ``.tra``/``.lab``/``.sta``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from perception_safety.safe_io import atomic_open
from perception_safety.verification.builder import MarkovChain
from perception_safety.verification.errors import VerificationError


def export_drn(chain: MarkovChain, path: str | Path) -> Path:
    """Write the chain in Storm's explicit DRN format (labels and initial states included)."""
    import stormpy

    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        stormpy.io.export_to_drn(chain.storm_model(), str(path))
    except (OSError, RuntimeError) as exc:
        raise VerificationError(f"{path}: cannot write DRN: {exc}") from exc
    return path


def export_prism_explicit(chain: MarkovChain, stem: str | Path, state_names: bool = True) -> dict[str, Path]:
    """Write PRISM's explicit format: ``stem.tra`` (``n m`` then ``i j p``), ``stem.lab`` (``init`` first),
    and with ``state_names`` a ``stem.sta`` giving each state's description (e.g. ``(x=3, v=1)``).
    """
    stem = Path(stem)
    out = {"tra": stem.with_suffix(".tra"), "lab": stem.with_suffix(".lab")}
    names = ["init", *chain.labels]
    masks = np.zeros((chain.n_states, len(names)), dtype=bool)
    masks[chain.initial_states, 0] = True
    for i, name in enumerate(chain.labels, start=1):
        masks[:, i] = chain.labels[name]
    try:
        stem.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(out["tra"], "w", encoding="ascii") as fh:
            fh.write(f"{chain.n_states} {chain.n_transitions}\n")
            table = np.empty(chain.n_transitions, dtype=[("i", np.int64), ("j", np.int64), ("p", np.float64)])
            table["i"], table["j"], table["p"] = chain.rows(), chain.indices, chain.data
            np.savetxt(fh, table, fmt="%d %d %.17g")
        with atomic_open(out["lab"], "w", encoding="ascii") as fh:
            fh.write(" ".join(f'{i}="{n}"' for i, n in enumerate(names)) + "\n")
            for s in np.flatnonzero(masks.any(axis=1)):
                fh.write(f"{s}: " + " ".join(str(i) for i in np.flatnonzero(masks[s])) + "\n")
        if state_names:
            out["sta"] = stem.with_suffix(".sta")
            with atomic_open(out["sta"], "w", encoding="utf-8") as fh:
                fh.write("(state)\n")
                for s in range(chain.n_states):
                    fh.write(f'{s}:("{chain.describe(s)}")\n')
    except OSError as exc:
        raise VerificationError(f"{stem}: cannot write PRISM explicit files: {exc.strerror or exc}") from exc
    return out
