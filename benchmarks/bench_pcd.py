"""Benchmark of the PCD pipeline: spline fit, variance change points, full 9x9 PCD grid and mPCD.

Run: ``.venv/bin/python benchmarks/bench_pcd.py [--loop-100k]``. Prints absolute seconds, growth against
n = 1k, and the speed-up of the cumulative-sum split statistic over a Python loop over tau with inner sums
(the way the public reference implementation computes it), measured in the same run. Also the hurdle model on
known-answer data (logistic detection x Gaussian scores) against the Gaussian model on the same samples, and the
bootstrap (200 resamples of whole tracks, all estimated at once) against one estimate and against the estimate
resample by resample (the code before, same draws): ``--bootstrap-table`` alone; ``--bootstrap-target N`` the
issue 27 target at N points.
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from unittest import mock

import numpy as np

from perception_safety.evaluation.pcd.bootstrap import bootstrap_pcd
from perception_safety.evaluation.pcd.changepoints import split_likelihoods
from perception_safety.evaluation.pcd.compute import PCDConfig, compute_pcd
from perception_safety.evaluation.pcd.synthetic import hurdle_samples

SIZES = (1_000, 10_000, 100_000)


def data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Samples with a decreasing mean and two variance jumps (at 40 m and 120 m)."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 200, n))
    sigma = np.select([x < 40, x < 120], [0.02, 0.08], 0.15)
    return x, np.clip(0.9 - 0.004 * x + rng.normal(0, 1, n) * sigma, 0, 1)


def best_of(fn, repeats: int, clock=time.perf_counter) -> float:
    """Least time of ``repeats`` calls (wall-clock; ``clock=time.process_time``: CPU)."""
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return min(times)


def cpu_of(fn, repeats: int) -> float:
    return best_of(fn, repeats, time.process_time)


def loop_likelihoods(r: np.ndarray) -> np.ndarray:
    """Baseline: eq. 6 for every tau with fresh sums (O(n^2))."""
    n = r.size
    out = np.empty(n - 1)
    for t in range(1, n):
        out[t - 1] = t * np.log(np.sum(r[:t] ** 2) / t) + (n - t) * np.log(np.sum(r[t:] ** 2) / (n - t))
    return out


def bootstrap_target(n: int, n_boot: int = 200, with_loop: bool = False) -> None:
    """Issue 27 target 3: ``n_boot`` resamples of whole tracks on ``n`` points <= 10x one fit (CPU s, one run).

    Also the cell estimate resample by resample (the code before the batch, kept for aic/bic/gcv) on the same draws;
    ``with_loop``: also the estimate rerun on every resample's samples (the code before the cell sums, kept for the
    reference method), and the intervals of both."""
    import os

    from perception_safety.evaluation.pcd import bootstrap as boot_module

    tracks = max(40, n // 100)
    x, y, g = hurdle_samples(n, 1, tracks=tracks)
    cfg = PCDConfig(model="hurdle", bootstrap={"n_boot": n_boot})
    load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    t = time.process_time()
    res = compute_pcd(x, y, cfg)
    one = time.process_time() - t
    t = time.process_time()
    out = bootstrap_pcd(res, x, y, g, cfg)
    boot = time.process_time() - t
    iv = out.interval
    print(f"bootstrap target, n = {n}, {n_boot} resamples of {tracks} tracks (load {load}): one fit "
          f"{one:.3f} CPU s, bootstrap {boot:.2f} CPU s = {boot / one:.1f}x one fit (target <= 10x), "
          f"{boot / n_boot / one:.3f}x one fit per resample; resample distances: {iv.to_dict()['resample_distances']}")
    print(f"  PCD {res.pcd:.2f} [{iv.pcd_ci[0]:.2f}, {iv.pcd_ci[1]:.2f}], mPCD {res.mpcd:.2f} "
          f"[{iv.mpcd_ci[0]:.2f}, {iv.mpcd_ci[1]:.2f}]")
    _, unit = np.unique(g, return_inverse=True)
    order = np.argsort(unit, kind="stable")
    lengths = np.bincount(unit)
    rng = np.random.default_rng(cfg.bootstrap.seed)
    picks = [rng.integers(0, lengths.size, lengths.size) for _ in range(n_boot)]
    fixed = cfg.model_copy(update={"model": res.model})
    t = time.process_time()
    one_by_one = boot_module._resample_cells(x[order], y[order], unit[order], lengths.size, picks, fixed,
                                             res.logistic.coef if res.logistic else None, batched=False)  # fmt: skip
    cells = time.process_time() - t
    lo_hi = np.quantile(one_by_one[0], [0.025, 0.975])
    print(f"  baseline, the cell estimate resample by resample (the code before the batch, same draws): {cells:.2f} "
          f"CPU s = {cells / one:.1f}x one fit, {cells / boot:.1f}x the batch; PCD [{lo_hi[0]:.2f}, {lo_hi[1]:.2f}]")
    if with_loop:
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        t = time.process_time()
        pcds, grids = boot_module._resample_samples(x[order], y[order], starts, lengths, picks, fixed, res)
        loop = time.process_time() - t
        q = [0.025, 0.975]
        lo_hi, m_lo_hi = np.quantile(pcds, q), np.quantile(np.stack(grids).mean(axis=(1, 2)), q)
        print(f"  baseline, the estimate rerun on each resample's samples (same draws): {loop:.2f} CPU s = "
              f"{loop / one:.1f}x one fit, {loop / boot:.1f}x the batch; PCD [{lo_hi[0]:.2f}, {lo_hi[1]:.2f}], "
              f"mPCD [{m_lo_hi[0]:.2f}, {m_lo_hi[1]:.2f}]")


def bootstrap_table() -> None:
    """The bootstrap against one full estimate and against the cell estimate resample by resample (same run)."""
    print("\nBootstrap (200 resamples of whole tracks, hurdle model), against one full estimate and the cell estimate "
          "resample by resample (the code before the batch) in the same run, CPU s")
    print(f"{'n':>8} {'tracks':>6} {'estimate':>9} {'bootstrap':>10} {'x estimate':>10} {'one by one':>10} "
          f"{'speed-up':>8} {'same interval':>13}")
    from perception_safety.evaluation.pcd import bootstrap as boot_module

    for n, tracks in ((232, 7), (2_000, 40), (10_000, 100), (3_712, 112)):
        x, y, g = hurdle_samples(n, 1, tracks=tracks)
        if n == 3_712:  # the demo's 16 copies: 116 distinct distances
            x = np.round(x / 200 * 115) * 200 / 115
        cfg = PCDConfig(model="hurdle", bootstrap={"n_boot": 200})
        one = cpu_of(lambda x=x, y=y, cfg=cfg: compute_pcd(x, y, cfg), 3)
        res = compute_pcd(x, y, cfg)
        boot = cpu_of(lambda res=res, x=x, y=y, g=g, cfg=cfg: bootstrap_pcd(res, x, y, g, cfg), 2)
        with mock.patch.object(boot_module, "_resample_cells", partial(boot_module._resample_cells, batched=False)):
            old = cpu_of(lambda res=res, x=x, y=y, g=g, cfg=cfg: bootstrap_pcd(res, x, y, g, cfg), 1)
            before = bootstrap_pcd(res, x, y, g, cfg).interval
        now = bootstrap_pcd(res, x, y, g, cfg).interval
        same = (now.pcd_ci, now.mpcd_ci) == (before.pcd_ci, before.mpcd_ci)
        same = same and np.array_equal(now.grid_lo, before.grid_lo) and np.array_equal(now.grid_hi, before.grid_hi)
        print(f"{n:>8} {tracks:>6} {one:>9.4f} {boot:>10.3f} {boot / one:>9.1f}x {old:>10.3f} {old / boot:>7.1f}x "
              f"{'yes' if same else 'NO':>13}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--loop-100k", action="store_true", help="also time the O(n^2) loop at n = 100k (slow)")
    parser.add_argument("--bootstrap-target", type=int, metavar="N", default=0,
                        help="only the issue 27 target: 200 resamples on N points (100000 in the issue) <= 10x one fit")
    parser.add_argument("--with-loop", action="store_true",
                        help="with --bootstrap-target: also the per-resample rerun of the estimate (slow baseline)")
    parser.add_argument("--bootstrap-table", action="store_true", help="only the bootstrap table")
    args = parser.parse_args()
    if args.bootstrap_table:
        bootstrap_table()
        return
    if args.bootstrap_target:
        bootstrap_target(args.bootstrap_target, with_loop=args.with_loop)
        return

    print("Full PCD evaluation (P-spline, change points by binary segmentation, 9x9 grid, mPCD)")
    print(f"{'method':<10} {'n':>8} {'seconds':>9} {'growth vs 1k':>13} {'us/point':>9} {'#cp':>4} {'#tests':>6}")
    for method in ("paper", "reference"):
        base = None
        cfg = PCDConfig(method=method)
        for n in SIZES:
            x, y = data(n)
            res = compute_pcd(x, y, cfg)
            seconds = best_of(lambda x=x, y=y, cfg=cfg: compute_pcd(x, y, cfg), 3 if n < 100_000 else 2)
            base = base or seconds
            print(
                f"{method:<10} {n:>8} {seconds:>9.3f} {seconds / base:>12.1f}x {1e6 * seconds / n:>9.2f} "
                f"{len(res.change_points.distances):>4} {len(res.change_points.tests):>6}"
            )

    print("\nHurdle vs Gaussian model on known-answer data (p_det logistic, scores N(0.75, 0.05), zeros when missed)")
    print(f"{'n':>8} {'gaussian s':>11} {'hurdle s':>9} {'hurdle/gauss':>12} {'hurdle PCD':>10} {'mPCD':>6}")
    for n in SIZES:
        x, y, _ = hurdle_samples(n, 0, tracks=max(40, n // 100))
        gauss = best_of(lambda x=x, y=y: compute_pcd(x, y, PCDConfig(model="gaussian")), 3 if n < 100_000 else 2)
        hurdle = best_of(lambda x=x, y=y: compute_pcd(x, y, PCDConfig(model="hurdle")), 3 if n < 100_000 else 2)
        res = compute_pcd(x, y, PCDConfig(model="hurdle"))
        print(f"{n:>8} {gauss:>11.3f} {hurdle:>9.3f} {hurdle / gauss:>11.2f}x {res.pcd:>10.1f} {res.mpcd:>6.1f}")

    bootstrap_table()

    print("\nSplit statistic l(tau) for all tau of one segment: cumulative sums vs Python loop (baseline)")
    print(f"{'n':>8} {'cumsum s':>10} {'loop s':>10} {'speed-up':>9}")
    rng = np.random.default_rng(1)
    for n in SIZES:
        r = rng.normal(0, 1, n)
        fast = best_of(lambda r=r: split_likelihoods(r), 5)
        if n < 100_000 or args.loop_100k:
            slow = best_of(lambda r=r: loop_likelihoods(r), 1)
            np.testing.assert_allclose(split_likelihoods(r), loop_likelihoods(r), rtol=1e-9)
            print(f"{n:>8} {fast:>10.5f} {slow:>10.3f} {slow / fast:>8.0f}x")
        else:
            print(f"{n:>8} {fast:>10.5f} {'(skipped; --loop-100k)':>22}")


if __name__ == "__main__":
    main()
