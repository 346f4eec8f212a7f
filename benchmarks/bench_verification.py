"""Benchmark: build and check the car–pedestrian DTMC from 10^3 to ~2·10^6 states.

Direct path: numpy CSR (Algorithm 3, vectorised) -> Storm's binary UMB archive -> SparseDtmc, then
``P=? [F "stop_at_k"]`` (PCTL) and the paper's φ (LTL). Baseline measured in the same run: the same chain
written as PRISM text (one guarded command per state), parsed and built by Storm, at the sizes where
that finishes in reasonable time. Run: ``.venv/bin/python benchmarks/bench_verification.py [--quick] [--repeat N]``
(direct-path times are the best of ``--repeat`` runs per phase; the PRISM baseline runs once).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import stormpy

from perception_safety.verification.builder import MarkovChain, build_chain
from perception_safety.verification.car_pedestrian import Geometry, car_pedestrian_system
from perception_safety.verification.observations import class_observations
from perception_safety.verification.specs import BUILTIN_SPECS, check

LABELS = ["ped", "obs", "empty"]


def synthetic_matrices(road_cells: int, bin_m: float = 10.0) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """10 m bins covering the road; pedestrian recall falls with distance (like the reference data)."""
    n = int(road_cells // bin_m) + 2
    recall = np.clip(0.6 * np.exp(-np.arange(n) / 8.0), 0.01, 1.0)
    p = np.zeros((n, 3, 3))
    p[:, 0, 0], p[:, 1, 0], p[:, 2, 0] = recall, 0.02, 0.98 - recall
    p[:, 0, 1], p[:, 1, 1], p[:, 2, 1] = 0.01, 0.5, 0.49
    p[:, 2, 2] = 1.0
    return p, [(bin_m * i, bin_m * (i + 1)) for i in range(n)]


def direct(V: int, clock=time.perf_counter) -> tuple[Geometry, MarkovChain, dict[str, float], np.ndarray]:
    g = Geometry.reference(V)
    probs, edges = synthetic_matrices(g.road_cells)
    t0 = clock()
    system = car_pedestrian_system(g, {"ped": True, "obs": False}, range(1, V + 1))
    chain = build_chain(system, class_observations(probs, LABELS, ["ped"], edges))
    t1 = clock()
    chain.storm_model()
    t2 = clock()
    stop = check(chain, BUILTIN_SPECS["stop_at_k"])
    t3 = clock()
    check(chain, BUILTIN_SPECS["phi"])
    t4 = clock()
    times = {"numpy": t1 - t0, "storm": t2 - t1, "pctl": t3 - t2, "ltl": t4 - t3}
    return g, chain, times, stop


def list_handover(chain: MarkovChain) -> None:
    """Baseline of the hand-over: stormpy's SparseMatrixBuilder fed Python lists (the code before issue 27)."""
    n = chain.n_states
    builder = stormpy.datastructures.SparseMatrixBuilder[float](n, n, chain.n_transitions, True, False, 0)
    builder.add_next_values(chain.rows().tolist(), chain.indices.tolist(), chain.data.tolist())
    builder.build()
    for mask in chain.labels.values():
        stormpy.datastructures.BitVector(n, np.flatnonzero(mask).tolist())


def targets(speeds: list[int]) -> None:
    """Issue 27 target 4: a 10^7-state chain built + checked (PCTL) <= 15 s; 10^6 states with phi <= 3 s.

    Wall and CPU seconds (this process) of each phase, with the load average: the machine is shared. The
    Storm hand-over (UMB archive) against the Python-list builder on the same chain, same run."""
    import os

    for V in speeds:
        load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
        for kind, clock in (("wall", time.perf_counter), ("CPU", time.process_time)):
            _g, chain, t, _ = direct(V, clock)
            build = t["numpy"] + t["storm"]
            print(f"V = {V}: {chain.n_states} states, {chain.n_transitions} transitions (load {load}); {kind}: numpy "
                  f"{t['numpy']:.2f} + storm {t['storm']:.2f} = build {build:.2f} s, PCTL {t['pctl']:.2f} s, LTL "
                  f"phi {t['ltl']:.2f} s; build + PCTL {build + t['pctl']:.2f} s (target <= 15 s at 10^7), "
                  f"build + phi {build + t['ltl']:.2f} s (target <= 3 s at 10^6)", flush=True)
            if kind == "CPU":
                t0 = clock()
                list_handover(chain)
                lists = clock() - t0
                print(f"  hand-over to Storm: UMB archive {t['storm']:.2f} CPU s, Python lists (baseline) "
                      f"{lists:.2f} CPU s: {lists / t['storm']:.1f}x faster", flush=True)
            del chain


def prism_text(g: Geometry, chain: MarkovChain) -> str:
    """The same chain as a PRISM program with one command per state (what a naive generator emits)."""
    V, N, k = g.max_speed, g.road_cells, g.stop_cell
    x, v = g.cell_speed(np.arange(chain.n_states))
    tx, tv = g.cell_speed(chain.indices)
    x, v, tx, tv, data = x.tolist(), v.tolist(), tx.tolist(), tv.tolist(), chain.data.tolist()
    lines = ["dtmc", "module car", f"  x : [1..{N}];", f"  v : [0..{V}];"]
    for s in range(chain.n_states):
        lo, hi = chain.indptr[s], chain.indptr[s + 1]
        upd = " + ".join(f"{data[j]!r}:(x'={tx[j]})&(v'={tv[j]})" for j in range(lo, hi))
        lines.append(f"  [] x={x[s]} & v={v[s]} -> {upd};")
    lines += ["endmodule", "init true endinit", f'label "stop_at_k" = x={k} & v=0;', f'label "start" = x=1 & v={V};']
    return "\n".join(lines) + "\n"


def prism_path(g: Geometry, chain: MarkovChain) -> tuple[dict[str, float], float]:
    t0 = time.perf_counter()
    text = prism_text(g, chain)
    t1 = time.perf_counter()
    program = _parse_via_file(text)
    model = stormpy.build_model(program)
    t2 = time.perf_counter()
    assert model.nr_states == chain.n_states, (model.nr_states, chain.n_states)
    res = stormpy.model_checking(model, stormpy.parse_properties('P=? [F "stop_at_k"]')[0])
    # state order differs: find (1, V) through its label
    start = model.labeling.get_states("start")
    want = next((res.get_value(s) for s in range(model.nr_states) if start.get(s)), float("nan"))
    return {"generate": t1 - t0, "parse+build": t2 - t1}, want


def _parse_via_file(text: str):
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".prism", delete=False) as fh:
        fh.write(text)
    return stormpy.parse_prism_program(fh.name)


def sweep_inputs(episodes: int = 112, seed: int = 0):
    """The reference matrices dealt into ``episodes`` episodes (the 16-copy demo input has 112) and, for the
    proposition variants, pedestrian observation runs with runs of misses: the demo config's sweep shape (2 true
    environments x 4 variants x V = 1..5, 5 specs, bounds, posterior, per-episode and memory chains)."""
    from dataclasses import replace

    from perception_safety.evaluation.confusion.io import load_matrices
    from perception_safety.verification.config import VerificationConfig
    from perception_safety.verification.memory import ObservationRuns

    dc = load_matrices(Path(__file__).resolve().parents[1] / "reference"
                       / "dist_confusion_matrices_nuscenes_yolov3.json")
    rng = np.random.default_rng(seed)
    parts = {}
    for kind in ("class", "prop"):
        c = np.asarray(dc.counts(kind), dtype=np.int64)
        split = np.moveaxis(rng.multinomial(c.ravel(), np.full(episodes, 1 / episodes)), -1, 0)
        parts[kind] = split.reshape((episodes, *c.shape))
    eps = [replace(dc, class_cm=parts["class"][e], prop_cm=parts["prop"][e], class_cm_pooled=parts["class"][e].sum(0),
                   prop_cm_pooled=parts["prop"][e].sum(0)) for e in range(episodes)]

    def runs(n_bins: int) -> ObservationRuns:
        seqs = []
        for _ in range(episodes):
            labels, miss = [], False
            for _ in range(60):
                miss = rng.random() < (0.7 if miss else 0.2)
                labels.append(int(rng.integers(1, len(dc.prop_labels))) if miss else 0)
            seqs.append((np.sort(rng.integers(0, n_bins, size=60)), labels))
        return ObservationRuns.from_sequences(seqs, n_bins, len(dc.prop_labels))

    observation_runs = {("prop_by_distance", "ped"): runs(len(dc.bin_edges)), ("prop", "ped"): runs(1)}
    cfg = VerificationConfig(max_speeds=[1, 2, 3, 4, 5], true_envs={
        "ped": {"class": ["ped", "obs"], "prop": "ped,obs"}, "obs": {"class": ["obs"], "prop": "obs"}})
    return dc, eps, observation_runs, cfg


def sweep_batching(repeat: int) -> None:
    """Issue 27 target 1 (the verification step's fixed cost): the sweep with every chain's Storm checks answered
    together (one call per round on the union of the round's chains) against each check on its own chain (the
    path before), same process, alternating, least CPU s of ``repeat``; the two sweeps' rows compared."""
    import os

    from perception_safety.verification.sweep import sweep_combinations

    dc, eps, runs, cfg = sweep_inputs()
    pairs = [(v, e) for e in cfg.true_envs for v in cfg.variants]
    best = {}
    for _ in range(max(1, repeat)):
        for mode in ("alone", "together"):
            c = time.process_time()
            out = sweep_combinations(dc, cfg, pairs, None, "bench", eps, runs, together=mode == "together")
            best[mode] = min(best.get(mode, 1e9), time.process_time() - c)
            best[f"{mode}_out"] = out
    a, t = best["alone_out"], best["together_out"]
    rows_a = [r for one in a for r in one.results]
    rows_t = [r for one in t for r in one.results]
    diff = max((abs(x[k] - y[k]) for x, y in zip(rows_a, rows_t, strict=True) for k in x
                if isinstance(x[k], float) and x[k] != y[k]), default=0.0)
    same = sum(x == y for x, y in zip(rows_a, rows_t, strict=True))
    load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"sweep of {len(pairs)} (env, variant) x V = 1..5 with {len(eps)} episodes (load {load}): "
          f"checks together {best['together']:.3f} CPU s, each alone {best['alone']:.3f} CPU s: "
          f"{best['alone'] / best['together']:.2f}x; rows identical {same} of {len(rows_a)}, largest difference "
          f"{diff:.1e}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="stop at ~1e5 states")
    ap.add_argument("--prism-max-states", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=2, help="direct path: best of this many runs (shared machine)")
    ap.add_argument("--sweep", action="store_true", help="the sweep's Storm checks together vs each alone (target 1)")
    ap.add_argument("--targets", type=int, nargs="*", metavar="V",
                    help="only the issue 27 targets at these max speeds (125: ~10^6 states, 270: ~10^7)")
    args = ap.parse_args()
    if args.sweep:
        sweep_batching(args.repeat)
        return
    if args.targets is not None:
        direct(5)
        targets(args.targets or [125, 270])
        return
    speeds = [12, 18, 25, 45, 60, 100, 125, 158]
    if args.quick:
        speeds = speeds[:5]
    print(f"{'V':>4} {'states':>9} {'trans':>9} | {'numpy':>7} {'storm':>7} {'build':>7} {'PCTL':>7} {'LTL φ':>7} "
          f"{'total':>7} | {'PRISM gen':>9} {'PRISM build':>11} {'ratio':>7}")
    direct(5)  # warm-up: imports, Storm's first-call setup
    for V in speeds:
        runs = [direct(V) for _ in range(max(1, args.repeat))]
        g, chain, _, stop = runs[0]
        t = {key: min(r[2][key] for r in runs) for key in runs[0][2]}
        build = t["numpy"] + t["storm"]
        total = build + t["pctl"] + t["ltl"]
        prism = ""
        if chain.n_states <= args.prism_max_states:
            pt, p_val = prism_path(g, chain)
            ours = stop[g.index(1, V)]
            assert abs(p_val - ours) < 1e-9, (p_val, ours)
            prism = (f"{pt['generate']:9.3f} {pt['parse+build']:11.3f} "
                     f"{(pt['generate'] + pt['parse+build']) / build:6.0f}x")
        print(f"{V:>4} {chain.n_states:>9} {chain.n_transitions:>9} | {t['numpy']:7.3f} {t['storm']:7.3f} "
              f"{build:7.3f} {t['pctl']:7.3f} {t['ltl']:7.3f} {total:7.3f} | {prism}", flush=True)


if __name__ == "__main__":
    main()
