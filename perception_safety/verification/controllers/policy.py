"""A controller given as data: a policy table ``(x, v, kind[, alarm]) -> (x', v')`` from CSV or JSON.

Columns: ``x``, ``v``, ``kind`` (``ped``/``obs``/``empty``), ``next_x``, ``next_v``; optional ``alarm``
(0/1: the table then decides what to do on a monitor alarm itself) and ``max_speed`` (one table for several
geometries, e.g. a Fig. 8 sweep over V). CSV has a header line; JSON is a list of objects with these keys
(or ``{"rows": [...]}``). Every cell is checked on load (errors name file, row and column); completeness
and range are checked against each geometry the table is used with.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from perception_safety.safe_io import atomic_open, parse_json, read_text
from perception_safety.verification.controllers.base import KINDS, CarController
from perception_safety.verification.errors import VerificationError

if TYPE_CHECKING:
    from perception_safety.verification.geometry import Geometry

REQUIRED = ("x", "v", "kind", "next_x", "next_v")
OPTIONAL = ("alarm", "max_speed")
_BOOL = {"0": 0, "1": 1, "false": 0, "true": 1}
MAX_POLICY_BYTES = 512 * 1024 * 1024
"""A policy table file larger than this is refused (a 10^7-state table is a few hundred MB of CSV)."""
_KIND_INDEX = {k: i for i, k in enumerate(KINDS)}


def _int_cell(value: Any, where: str, column: str) -> int:
    if isinstance(value, bool):
        raise VerificationError(f"{where}, column {column!r}: expected an integer, got {value!r}")
    try:
        f = float(str(value).strip())
    except ValueError:
        raise VerificationError(f"{where}, column {column!r}: expected an integer, got {value!r}") from None
    if not np.isfinite(f) or f != int(f):
        raise VerificationError(f"{where}, column {column!r}: expected an integer, got {value!r}")
    return int(f)


@dataclass(frozen=True, eq=False)
class PolicyTable:
    """The parsed table: one int64 array per column (``alarm`` and ``max_speed`` are -1 when absent)."""

    source: str
    rows: np.ndarray
    """The row number of each entry in the file (CSV line number; JSON position in the list, from 1)."""
    x: np.ndarray
    v: np.ndarray
    kind: np.ndarray
    alarm: np.ndarray
    max_speed: np.ndarray
    next_x: np.ndarray
    next_v: np.ndarray
    has_alarm: bool
    has_max_speed: bool

    @property
    def name(self) -> str:
        return f"policy table {self.source}"

    def lookup(self, geometry: Geometry) -> np.ndarray:
        """``table[alarm, kind, x-1, v] = (x', v')`` for one geometry; checks completeness and range."""
        g = geometry
        sel = self.max_speed == g.max_speed if self.has_max_speed else np.ones(len(self.x), dtype=bool)
        if self.has_max_speed and not sel.any():
            raise VerificationError(
                f"{self.source}: no row for max_speed {g.max_speed} (the table covers V in "
                f"{sorted(set(self.max_speed.tolist()))})"
            )
        idx = np.flatnonzero(sel)
        for col, arr, hi in (("x", self.x, g.road_cells), ("v", self.v, g.max_speed),
                             ("next_x", self.next_x, g.road_cells), ("next_v", self.next_v, g.max_speed)):
            lo = 1 if col.endswith("x") else 0
            bad = idx[(arr[idx] < lo) | (arr[idx] > hi)]
            if bad.size:
                r = int(bad[0])
                raise VerificationError(
                    f"{self.source}: row {int(self.rows[r])}, column {col!r}: {int(arr[r])} is outside "
                    f"{lo}..{hi} (road of {g.road_cells} cells, speeds 0..{g.max_speed} for max speed {g.max_speed})"
                )
        n_alarm = 2 if self.has_alarm else 1
        shape = (n_alarm, len(KINDS), g.road_cells, g.max_speed + 1)
        seen = np.full(shape, -1, dtype=np.int64)
        a = np.maximum(self.alarm[idx], 0)
        key = (a, self.kind[idx], self.x[idx] - 1, self.v[idx])
        flat = np.ravel_multi_index(key, shape)
        order = np.argsort(flat, kind="stable")
        dup = np.flatnonzero(np.diff(flat[order]) == 0)
        if dup.size:
            r1, r2 = (int(self.rows[idx[order[dup[0] + d]]]) for d in (0, 1))
            extra = (", alarm" if self.has_alarm else "") + (", max_speed" if self.has_max_speed else "")
            raise VerificationError(f"{self.source}: rows {r1} and {r2} give the same (x, v, kind{extra})")
        seen.reshape(-1)[flat] = idx
        missing = np.argwhere(seen < 0)
        if missing.size:
            am, k, xm, vm = (int(i) for i in missing[0])
            alarm = f", alarm={am}" if self.has_alarm else ""
            raise VerificationError(
                f"{self.source}: incomplete: no row for (x={xm + 1}, v={vm}, kind={KINDS[k]}{alarm}) "
                f"for max speed {g.max_speed}; {len(missing)} of {seen.size} (x, v, kind"
                f"{', alarm' if self.has_alarm else ''}) combinations missing"
            )
        return np.stack([self.next_x[seen], self.next_v[seen]], axis=-1)

    def controller(self, geometry: Geometry) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
        """A `CarController` (with an ``alarm`` keyword) reading this table for ``geometry``."""
        table = self.lookup(geometry)

        def policy(x: np.ndarray, v: np.ndarray, kind: str, geometry: Geometry, alarm: bool = False) -> tuple[
                np.ndarray, np.ndarray]:
            a = 1 if (alarm and self.has_alarm) else 0
            out = table[a, KINDS.index(kind), np.asarray(x) - 1, np.asarray(v)]
            return out[..., 0], out[..., 1]

        return policy


def _records(path: Path) -> tuple[list[str], list[int], dict[str, list[Any]]]:
    """Header, row numbers and the cells column by column (CSV cells are strings, JSON cells as parsed)."""
    # bounded read; binary bytes and too-deep JSON are errors naming the file (not UnicodeDecode/RecursionError)
    text = read_text(path, MAX_POLICY_BYTES, "policy table", VerificationError)
    if path.suffix.lower() == ".json":
        data = parse_json(text, path, "policy table", VerificationError)
        if isinstance(data, dict):
            data = data.get("rows")
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise VerificationError(f"{path}: expected a list of row objects (or {{\"rows\": [...]}})")
        columns = list(dict.fromkeys(k for r in data for k in r))
        return columns, list(range(1, len(data) + 1)), {c: [r.get(c) for r in data] for c in columns}
    lines = list(csv.reader(text.splitlines()))
    if not lines:
        return [], [], {}
    columns = [c.strip() for c in lines[0]]
    body = [(i, r) for i, r in enumerate(lines[1:], start=2) if r]
    bad = [(i, len(r)) for i, r in body if len(r) != len(columns)]
    if bad:
        raise VerificationError(f"{path}: row {bad[0][0]}: {bad[0][1]} cells for the {len(columns)} columns of the "
                                "header")
    cells = list(zip(*(r for _, r in body), strict=True)) if body else [() for _ in columns]
    return columns, [i for i, _ in body], {c: list(v) for c, v in zip(columns, cells, strict=True)}


def _fast_columns(values: dict[str, list[Any]], n: int) -> dict[str, np.ndarray] | None:
    """All columns converted at once; None when any cell is unusual (the cell-by-cell pass then names it)."""
    out: dict[str, np.ndarray] = {}
    try:
        for c in REQUIRED + OPTIONAL:
            vals = values.get(c)
            if vals is None:
                out[c] = np.full(n, -1, dtype=np.int64)
                continue
            if c in ("kind", "alarm"):
                arr = np.char.strip(np.asarray(vals, dtype=str))
                if c == "alarm":
                    arr = np.char.lower(arr)
                table = _KIND_INDEX if c == "kind" else _BOOL
                uniq, inverse = np.unique(arr, return_inverse=True)
                if any(u not in table for u in uniq.tolist()):
                    return None
                out[c] = np.array([table[u] for u in uniq.tolist()], dtype=np.int64)[inverse]
                continue
            arr = np.asarray(vals)
            if arr.dtype.kind != "U" and any(isinstance(v, bool) for v in vals):  # JSON true/false is no integer
                return None
            if arr.dtype.kind not in "iuU":
                return None
            out[c] = arr.astype(np.int64)
    except (ValueError, TypeError, OverflowError):
        return None
    return out


def load_policy(path: str | Path) -> PolicyTable:
    """Read and check a policy table (CSV or JSON); errors name the file, row and column."""
    path = Path(path)
    columns, rows, values = _records(path)
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise VerificationError(f"{path}: missing column(s) {missing}; a policy table has {list(REQUIRED)} "
                                f"and optionally {list(OPTIONAL)}")
    unknown = [c for c in columns if c not in REQUIRED + OPTIONAL]
    if unknown:
        raise VerificationError(f"{path}: unknown column(s) {unknown}; expected {list(REQUIRED + OPTIONAL)}")
    if not rows:
        raise VerificationError(f"{path}: the policy table has no rows")
    has_alarm, has_v = "alarm" in columns, "max_speed" in columns
    arr = _fast_columns(values, len(rows)) or _slow_columns(path, rows, values)
    return PolicyTable(str(path), np.asarray(rows), arr["x"], arr["v"], arr["kind"], arr["alarm"],
                       arr["max_speed"], arr["next_x"], arr["next_v"], has_alarm, has_v)


def _slow_columns(path: Path, rows: list[int], values: dict[str, list[Any]]) -> dict[str, np.ndarray]:
    """Cell by cell, raising at the first bad cell with its file, row and column."""
    cols: dict[str, list[int]] = {c: [] for c in (*REQUIRED, *OPTIONAL)}
    for j, row in enumerate(rows):
        where = f"{path}: row {row}"
        for c in REQUIRED + OPTIONAL:
            if c not in values:
                cols[c].append(-1)
                continue
            value = values[c][j]
            if value is None or (isinstance(value, str) and not value.strip()):
                raise VerificationError(f"{where}, column {c!r}: empty cell")
            if c == "kind":
                if str(value).strip() not in KINDS:
                    raise VerificationError(f"{where}, column 'kind': {value!r} is not one of {list(KINDS)}")
                cols[c].append(KINDS.index(str(value).strip()))
            elif c == "alarm":
                key = str(value).strip().lower()
                if key not in _BOOL:
                    raise VerificationError(f"{where}, column 'alarm': {value!r} is not 0/1/true/false")
                cols[c].append(_BOOL[key])
            else:
                cols[c].append(_int_cell(value, where, c))
    return {c: np.asarray(v, dtype=np.int64) for c, v in cols.items()}


def write_policy(path: str | Path, controller: CarController, geometries: Sequence[Geometry],
                 alarm_action: Callable[..., tuple[np.ndarray, np.ndarray]] | None = None) -> Path:
    """Tabulate ``controller`` on every state of each geometry (one ``max_speed`` block per geometry).

    With ``alarm_action`` (``(x, v, geometry) -> (x', v')``) the table gets an ``alarm`` column.
    """
    path = Path(path)
    header = ["max_speed", "x", "v", "kind", *(["alarm"] if alarm_action else []), "next_x", "next_v"]
    lines: list[Iterable[Any]] = [header]
    for g in geometries:
        s = np.arange(g.n_states, dtype=np.int64)
        x, v = g.cell_speed(s)
        for kind in KINDS:
            for alarm in ((0, 1) if alarm_action else (None,)):
                nx, nv = alarm_action(x, v, g) if alarm else controller(x, v, kind, g)
                for i in range(len(s)):
                    mid = [] if alarm is None else [alarm]
                    lines.append([g.max_speed, int(x[i]), int(v[i]), kind, *mid, int(nx[i]), int(nv[i])])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(path, "w", newline="") as fh:
            csv.writer(fh).writerows(lines)
    except OSError as exc:
        raise VerificationError(f"{path}: cannot write policy table: {exc.strerror or exc}") from exc
    return path
