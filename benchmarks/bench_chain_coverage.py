"""Benchmark: coverage of the P(φ) interval bounds and posterior on grouped data of known truth (issue 24 item 3).

For each intra-cluster correlation (0, 0.1, 0.3, 0.6) and cluster layout, ``--trials`` simulated data sets
(`verification.coverage.chain_coverage`, fixed seeds) with the episodes as the unit ("episodes") and, for
comparison, the same counts read frame by frame ("frames": today's bare matrices); then the posterior for good
detectors with episodes (P(ped | ped) = 0.98 / 0.95, 10 × 10, every ICC) and (20 and 50 frames, no clustering)
with the Jeffreys hit-vs-rest split
and the former Dirichlet(0.5). Prints a markdown table (coverage ± Monte-Carlo standard error, median width)
for docs/verification.md. Not a timing benchmark; the seconds are printed for information.

Run: ``.venv/bin/python benchmarks/bench_chain_coverage.py [--trials N] [--draws D] [--quick]``.
"""

from __future__ import annotations

import argparse
import time

from perception_safety.evaluation.coverage import Coverage
from perception_safety.verification.coverage import ChainCoverage, ChainSetup, chain_coverage

ICCS = (0.0, 0.1, 0.3, 0.6)
LAYOUTS = ((8, 10), (20, 10))


def cell(c: Coverage) -> str:
    return f"{c.covered:.3f} ± {c.mc_se:.3f} (w {c.median_width:.2f})"


def row(label: str, r: ChainCoverage) -> str:
    return f"| {label} | {r.clusters} × {r.frames} | {r.icc:g} | {cell(r.bounds)} | {cell(r.posterior)} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="100 trials, 300 draws")
    a = ap.parse_args()
    trials, draws = (100, 300) if a.quick else (a.trials, a.draws)
    t0 = time.perf_counter()
    setup = ChainSetup()
    print(f"truth P(phi) at v0 = 1, 2: {setup.truth().round(4).tolist()} (P(ped|ped) = {setup.hit} per bin); "
          f"{trials} trials, {draws} posterior draws; bounds: joint over v0 (claim >= 0.95), posterior: per v0\n")
    print("| unit | clusters × frames | ICC | interval-chain bound coverage (w = median width) | posterior 95 % "
          "coverage |")
    print("|---|---|---|---|---|")
    for clusters, frames in LAYOUTS:
        for icc in ICCS:
            for unit, use in (("episodes", True), ("frames", False)):
                r = chain_coverage(setup, trials, clusters, frames, icc, seed=2024, draws=draws, use_clusters=use)
                print(row(unit, r), flush=True)
    good = ChainSetup(hit=(0.98, 0.95))
    for icc in ICCS:  # a good detector with rare bad episodes: the regime the profile likelihood is for
        r = chain_coverage(good, trials, 10, 10, icc, seed=2025, draws=draws)
        print(row("episodes, P(ped\\|ped) 0.98 / 0.95", r), flush=True)
    print("\n| P(ped\\|ped) per bin | frames | posterior | coverage (w = median width) | upper end below truth |")
    print("|---|---|---|---|---|")
    for hit in ((0.98, 0.95),):
        good = ChainSetup(hit=hit)
        for frames in (20, 50):
            for method in ("split", "dirichlet"):
                r = chain_coverage(good, trials, 1, frames, 0.0, seed=7, draws=draws, use_clusters=False,
                                   method=method)
                print(f"| {hit} | {frames} | {method} | {cell(r.posterior)} | {r.posterior.upper_below:.3f} |",
                      flush=True)
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
