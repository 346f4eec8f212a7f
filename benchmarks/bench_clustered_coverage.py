"""Benchmark: coverage of the cluster-aware proportion interval on grouped data of known truth (issue 24 item 3).

Per layout (episodes × frames), true proportion p and intra-cluster correlation (0, 0.1, 0.3, 0.6),
``--trials`` beta-binomial data sets (`evaluation.coverage.beta_binomial_clusters`, fixed seeds): coverage of
the Korn-Graubard interval (`evaluation.clustered`, what recall, precision, BBSL pass rates and SG/RH/AC per
frame use) and of frame-level Clopper-Pearson (the former intervals), the rate at which the lower bound lies
above the truth (a false PASS of a ``bound: lower`` requirement) and the median width relative to Clopper-
Pearson. Then SG/RH/AC-style means of {-1, 0, 1} frame values (`returns.intervals.mean_interval`). The
interval is the hull of Korn-Graubard and the beta-binomial profile likelihood (`clustered_proportion`); the
Korn-Graubard part alone is shown beside it (KG). Prints
markdown tables for docs/confusion-matrices.md. Not a timing benchmark.

Run: ``.venv/bin/python benchmarks/bench_clustered_coverage.py [--trials N] [--quick]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from perception_safety.evaluation.clustered import clustered_proportion, effective_counts
from perception_safety.evaluation.coverage import beta_binomial_clusters
from perception_safety.evaluation.intervals import clopper_pearson
from perception_safety.evaluation.returns.intervals import mean_interval

ICCS = (0.0, 0.1, 0.3, 0.6)
LAYOUTS = ((10, 20), (20, 10), (20, 50))
PS = (0.5, 0.8, 0.95)


def proportion_row(trials: int, k: int, m: int, p: float, icc: float, seed: int) -> str:
    y, n = beta_binomial_clusters(np.random.default_rng(seed), trials, k, m, p, icc)
    x_eff, n_eff, _ = effective_counts(y, n, axis=1)
    klo, khi = clopper_pearson(np.minimum(x_eff, n_eff), n_eff)
    bounds = np.array([[r.lower, r.upper] for r in map(clustered_proportion, y, n)])
    lo, hi = bounds[:, 0], bounds[:, 1]
    plo, phi = clopper_pearson(y.sum(axis=1), n.sum(axis=1))
    cov = np.mean((lo <= p) & (p <= hi))
    se = np.sqrt(cov * (1 - cov) / trials)
    above = np.mean(lo > p)
    ratio = np.median(hi - lo) / np.median(phi - plo)
    cov_kg = np.mean((klo <= p) & (p <= khi))
    cov_cp = np.mean((plo <= p) & (p <= phi))
    return (
        f"| {k} × {m} | {p:g} | {icc:g} | {cov:.3f} ± {se:.3f} | {above:.3f} | {ratio:.2f} | {cov_kg:.3f} | "
        f"{cov_cp:.3f} |"
    )


def returns_row(trials: int, k: int, m: int, icc: float, seed: int) -> str:
    rng = np.random.default_rng(seed)
    pos, n = beta_binomial_clusters(rng, trials, k, m, 0.1, icc)
    truth = 0.1
    hits = []
    for row_pos, row_n in zip(pos, n, strict=True):
        d = [np.r_[np.ones(a), np.zeros(b - a)] for a, b in zip(row_pos, row_n, strict=True)]
        r = mean_interval(d, "frames")
        hits.append((r.lower <= truth <= r.upper, r.upper < truth))
    h = np.array(hits)
    cov = h[:, 0].mean()
    return f"| {k} × {m} | {icc:g} | {cov:.3f} ± {np.sqrt(cov * (1 - cov) / trials):.3f} | {h[:, 1].mean():.3f} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=4000)
    ap.add_argument("--quick", action="store_true", help="500 trials")
    a = ap.parse_args()
    trials = 500 if a.quick else a.trials
    t0 = time.perf_counter()
    print(f"Proportions, nominal 0.95, {trials} trials per row")
    print(
        "| episodes × frames | p | ICC | coverage ± MC s.e. | lower bound above p | width / CP width | KG coverage "
        "| CP coverage |"
    )
    print("|---|---|---|---|---|---|---|---|")
    seed = 0
    for k, m in LAYOUTS:
        for p in PS:
            for icc in ICCS:
                seed += 1
                print(proportion_row(trials, k, m, p, icc, seed))
    n_ret = max(trials // 4, 100)
    print(f"\nSG/RH/AC-style frame means (true mean 0.1), nominal 0.95, {n_ret} trials per row")
    print("| episodes × frames | ICC | coverage ± MC s.e. | upper bound below truth |")
    print("|---|---|---|---|")
    for k, m in ((10, 20), (20, 50)):
        for icc in ICCS:
            seed += 1
            print(returns_row(n_ret, k, m, icc, seed))
    print(f"\n{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
