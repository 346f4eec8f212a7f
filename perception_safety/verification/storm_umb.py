"""A chain's CSR arrays handed to Storm without Python lists: Storm's binary UMB archive, read by its C++ importer.

stormpy 2.0's ``SparseMatrixBuilder.add_next_values`` and ``BitVector`` take Python sequences only (a 10⁷-state
chain meant three lists of 13M items, ≈ 3–4 CPU s, issue 27 target 4). The UMB format ("unified Markov binary",
``stormpy.build_model_from_umb``) is a tar archive of an ``index.json`` and little-endian arrays: the CSR row
starts (``choice-to-branches``, one choice per DTMC state), targets, probabilities (or ``[lower, upper]`` pairs:
an interval DTMC) and one bit set per label. The
arrays are written straight from numpy into a temporary archive (in ``/dev/shm`` where there is one: memory, not
disk), so the hand-over costs two copies of the arrays instead of one Python object per entry. Small chains (up to
`LIST_TRANSITIONS` transitions: the demo's sweep builds 100 of 10–114 states) go through stormpy's list builder
instead, where the archive's fixed cost (a temporary file and Storm's importer, ≈ 1 ms) is ten times the lists'.
"""

from __future__ import annotations

import json
import os
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

#: Chains with at most this many transitions are handed over as Python lists (measured crossover: ≈ 5 000 for a
#: DTMC, ≈ 1 000 for an interval DTMC, whose entries become ``stormpy.Interval`` objects).
LIST_TRANSITIONS = 1000
#: UMB format version written (the one stormpy 2.0's exporter writes and its importer reads).
UMB_VERSION = 1
_BLOCK = tarfile.BLOCKSIZE


def bit_set(mask: np.ndarray) -> np.ndarray:
    """UMB bit vector: bit ``i`` of little-endian 64-bit word ``i // 64`` is ``mask[i]`` (bytes, padded to words)."""
    packed = np.packbits(np.asarray(mask, dtype=bool), bitorder="little")
    out = np.zeros(-(-packed.size // 8) * 8, dtype=np.uint8)
    out[: packed.size] = packed
    return out


def _member(f: IO[bytes], name: str, array: np.ndarray) -> None:
    """One tar member whose payload is ``array``'s bytes, written without a Python-level copy."""
    info = tarfile.TarInfo(name)
    info.size = array.nbytes
    f.write(info.tobuf(tarfile.USTAR_FORMAT))
    array.tofile(f)
    f.write(b"\0" * (-array.nbytes % _BLOCK))


def _check_names(labels: Mapping[str, np.ndarray]) -> None:
    for name in labels:
        if not (name.replace("_", "a").isalnum() and name.isascii() and not name[0].isdigit()):
            raise ValueError(f"label {name!r}: Storm labels are letters, digits and '_' (not starting with a digit)")


def write_umb(
    path: Path,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    initial_states: np.ndarray,
    labels: Mapping[str, np.ndarray],
) -> None:
    """Write the DTMC (CSR rows = states) as an uncompressed UMB archive at ``path``; ``data`` of shape
    ``(transitions, 2)`` holds ``[lower, upper]`` of each probability (an interval DTMC)."""
    n = int(indptr.size - 1)
    interval = np.ndim(data) == 2
    _check_names(labels)
    initial = np.zeros(n, dtype=bool)
    initial[np.asarray(initial_states, dtype=np.int64)] = True
    arrays = {
        "state-is-initial.bin": bit_set(initial),
        "choice-to-branches.bin": np.ascontiguousarray(indptr, dtype="<u8"),
        "branch-to-target.bin": np.ascontiguousarray(indices, dtype="<u8"),
        "branch-to-probability.bin": np.ascontiguousarray(data, dtype="<f8"),
    }
    aps = {}
    for name, mask in labels.items():
        arrays[f"annotations/aps/{name}/states/values.bin"] = bit_set(mask)
        aps[name] = {"alias": name, "applies-to": ["states"], "type": {"size": 1, "type": "bool"}}
    index = {
        "annotations": {"aps": aps},
        "file-data": {"tool": "perception_safety"},
        "format-revision": 0,
        "format-version": UMB_VERSION,
        "transition-system": {
            "#branch-actions": 0,
            "#branches": len(data),
            "#choice-actions": 0,
            "#choices": n,
            "#initial-states": int(np.count_nonzero(initial)),
            "#observations": 0,
            "#players": 0,
            "#states": n,
            "branch-probability-type": {"size": 128, "type": "double-interval"} if interval
            else {"size": 64, "type": "double"},
            "time": "discrete",
        },
    }
    with open(path, "wb") as f:
        _member(f, "index.json", np.frombuffer(json.dumps(index).encode(), dtype=np.uint8))
        for name, array in arrays.items():
            _member(f, name, array)
        f.write(b"\0" * (2 * _BLOCK))  # end-of-archive marker


def _scratch_dir() -> str | None:
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def storm_dtmc(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    initial_states: np.ndarray,
    labels: Mapping[str, np.ndarray],
    via: str = "auto",
) -> Any:
    """A ``stormpy`` sparse DTMC of the CSR chain with the label ``init`` (the initial states) and ``labels``;
    ``SparseDtmc[Interval]`` when ``data`` holds ``[lower, upper]`` pairs. ``via``: ``archive`` (UMB), ``lists``
    (stormpy's builder) or ``auto`` (lists up to `LIST_TRANSITIONS` transitions): the same model either way."""
    import stormpy

    if via not in ("auto", "archive", "lists"):
        raise ValueError(f"via must be auto, archive or lists, got {via!r}")
    if via == "lists" or (via == "auto" and len(indices) <= LIST_TRANSITIONS):
        return _list_built(indptr, indices, data, initial_states, labels)
    options = stormpy.io.UmbImportOptions()
    options.build_state_valuations = False  # there are none; asking would print a warning
    with tempfile.TemporaryDirectory(prefix="perception_safety_umb_", dir=_scratch_dir()) as tmp:
        path = Path(tmp) / "chain.umb"
        write_umb(path, indptr, indices, data, initial_states, labels)
        return stormpy.build_model_from_umb(path, options=options)


def _list_built(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, initial_states: np.ndarray,
                labels: Mapping[str, np.ndarray]) -> Any:
    """The same model through stormpy's SparseMatrixBuilder and BitVector (Python lists: for small chains)."""
    import stormpy

    n = int(len(indptr) - 1)
    _check_names(labels)
    interval = np.ndim(data) == 2
    kind = stormpy.Interval if interval else float
    values = [stormpy.Interval(a, b) for a, b in np.asarray(data).tolist()] if interval else np.asarray(data).tolist()
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(np.asarray(indptr, dtype=np.int64)))
    builder = stormpy.datastructures.SparseMatrixBuilder[kind](n, n, len(indices), True, False, 0)
    builder.add_next_values(rows.tolist(), np.asarray(indices, dtype=np.int64).tolist(), values)
    labeling = stormpy.models.StateLabeling(n)
    bits = stormpy.datastructures.BitVector
    labeling.add_label("init")
    labeling.set_states("init", bits(n, sorted({int(s) for s in np.asarray(initial_states).ravel()})))
    for name, mask in labels.items():
        labeling.add_label(name)
        labeling.set_states(name, bits(n, np.flatnonzero(mask).tolist()))
    components = stormpy.models.SparseModelComponents[kind](transition_matrix=builder.build(), state_labeling=labeling)
    return stormpy.models.SparseDtmc[kind](components)
