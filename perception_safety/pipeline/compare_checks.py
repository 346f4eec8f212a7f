"""What differs between two ``evaluate`` runs besides the detector: configs, class maps, bins, inputs.

A comparison of two runs means "detector A vs detector B" only when everything else is the same. Every other
difference is named (a warning in compare.json, on screen and in compare.html), and whether the runs judged the
same inputs decides the significance test (`pairing`): same inputs = paired, otherwise independent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

IGNORED = ("executor", "base_dir")
"""Config keys that cannot change a number (where the map ran, where relative paths were resolved from)."""


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, Mapping):
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: d}


def config_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """``key: A vs B`` for every config value that differs (dotted keys, lists compared whole)."""
    fa = {k: v for k, v in _flat(a).items() if k.split(".")[0] not in IGNORED}
    fb = {k: v for k, v in _flat(b).items() if k.split(".")[0] not in IGNORED}
    out = []
    for k in sorted(set(fa) | set(fb)):
        va, vb = fa.get(k, "(unset)"), fb.get(k, "(unset)")
        if va != vb:
            out.append(f"{k}: {va!r} vs {vb!r}")
    return out


def _inputs(doc: Mapping[str, Any]) -> dict[str, str]:
    """sha256 -> path of the inputs a run read (excluded ones left out)."""
    prov = doc.get("provenance") or {}
    out = {}
    for i in prov.get("inputs", []) or []:
        if isinstance(i, Mapping) and i.get("sha256") and not i.get("excluded"):
            out[str(i["sha256"])] = str(i.get("path", ""))
    return out


def pairing(doc_a: Mapping[str, Any], doc_b: Mapping[str, Any]) -> str:
    """``paired`` (both runs read the same inputs, by content hash), ``independent`` (no input in common) or
    ``overlapping`` (some shared: neither test is exact; the comparison says so and uses the independent rule)."""
    ia, ib = set(_inputs(doc_a)), set(_inputs(doc_b))
    if not ia or not ib:
        return "independent"
    if ia == ib:
        return "paired"
    return "overlapping" if ia & ib else "independent"


def differences(doc_a: Mapping[str, Any], doc_b: Mapping[str, Any]) -> list[dict[str, str]]:
    """Every difference besides the detector, as ``{"kind", "message"}`` (kinds: config, classes, bins, inputs)."""
    out: list[dict[str, str]] = []
    ca, cb = doc_a.get("config"), doc_b.get("config")
    if isinstance(ca, Mapping) and isinstance(cb, Mapping):
        diffs = config_differences(ca, cb)
        if diffs:
            out.append({"kind": "config", "message": f"the configs differ in {len(diffs)} value(s): "
                        + "; ".join(diffs[:12]) + ("; ..." if len(diffs) > 12 else "")})
    else:
        sa = (doc_a.get("provenance") or {}).get("config_sha256")
        sb = (doc_b.get("provenance") or {}).get("config_sha256")
        missing = [n for n, c in (("A", ca), ("B", cb)) if not isinstance(c, Mapping)]
        same = "the same" if sa and sa == sb else "different"
        out.append({"kind": "config", "message": f"run {' and '.join(missing)} do(es) not store its configuration: "
                    f"the values cannot be compared (config files: {same} sha256)"})
    conf_a, conf_b = doc_a.get("confusion") or {}, doc_b.get("confusion") or {}
    for key, kind, what in (("class_labels", "classes", "class labels"), ("bin_edges", "bins", "distance bins")):
        va, vb = conf_a.get(key), conf_b.get(key)
        if va is None or vb is None or va == vb:
            continue
        if sorted(map(str, va)) == sorted(map(str, vb)):
            out.append({"kind": kind, "message": f"{what} in another order: {va} vs {vb} (metrics are matched by "
                        "name; the matrices' rows and columns are ordered differently)"})
        else:
            out.append({"kind": kind, "message": f"{what} differ: {va} vs {vb}; metrics of a class or bin present in "
                        "one run only are listed apart, the others are not comparable like for like"})
    ia, ib = _inputs(doc_a), _inputs(doc_b)
    only_a, only_b = sorted(set(ia) - set(ib)), sorted(set(ib) - set(ia))
    if only_a or only_b:
        ex = ", ".join([f"A: {ia[h]}" for h in only_a[:2]] + [f"B: {ib[h]}" for h in only_b[:2]])
        out.append({"kind": "inputs", "message": f"the inputs differ ({len(only_a)} only in A, {len(only_b)} only "
                    f"in B, {len(set(ia) & set(ib))} shared, by content hash; e.g. {ex}): differences mix the "
                    "detector with the data"})
    return out
