"""How often compare's 95% TPS-ratio intervals hold the true ratio, over many synthetic runs.

Why: tests/test_noise.py checks the coverage on 200 seeded trials, whose own binomial
spread is about 1.5 points; this measures it on many more, for independent noise and for
AR(1) noise (each interval carrying a share phi of its noise into the next), with the
intervals cut into batches as compare does, and, to show what the batches are for, with
every interval its own batch. Runs are two series of N intervals around means 100 and
162 (true ratio 1.62), innovation standard deviations 5 and 8.

    python bench/ratio_ci_coverage.py [--trials 10000] | tee -a bench/results/ratio_ci_coverage.txt

With ``--repeats`` it measures instead the interval compare takes from repeats (run
--repeat: Welch's t on the repeats' TPS, tpsbench.measure.repeats): configurations
repeated n_A and n_B times, each repeat's TPS normal around 100 and 162.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.signal import lfilter

from tpsbench.measure.batch_means import BATCHES, ratio_interval
from tpsbench.measure.repeats import repeats_ratio_interval

#: (phi, intervals a run) of the scenarios measured
SCENARIOS = ((0.0, 25), (0.0, 100), (0.3, 60), (0.5, 60), (0.5, 100), (0.5, 150), (0.8, 250))
TRUE_RATIO = 1.62


def series(rng: np.random.Generator, mean: float, n: int, sd: float, phi: float) -> list[float]:
    """AR(1) noise around ``mean``, begun in its stationary state (a burn-in of 200)."""
    noise = lfilter([1.0], [1.0, -phi], rng.normal(0.0, sd, n + 200))[200:]
    return list(mean + noise)


def coverage(phi: float, n: int, trials: int, batches: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(trials):
        found = ratio_interval(series(rng, 100.0, n, 5.0, phi), series(rng, 162.0, n, 8.0, phi), batches=batches)
        hits += found is not None and found[1] <= TRUE_RATIO <= found[2]
    return hits / trials


#: (repeats of A, of B, standard deviation of A's repeats, of B's) of the repeats scenarios
REPEATS = ((2, 2, 5.0, 8.0), (3, 3, 5.0, 8.0), (5, 5, 5.0, 8.0), (5, 8, 4.0, 16.0), (10, 10, 5.0, 8.0))


def repeats_coverage(n_a: int, n_b: int, sd_a: float, sd_b: float, trials: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(trials):
        found = repeats_ratio_interval(list(rng.normal(100.0, sd_a, n_a)), list(rng.normal(162.0, sd_b, n_b)))
        hits += found is not None and found[1] <= TRUE_RATIO <= found[2]
    return hits / trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", action="store_true", help="the repeats' interval (Welch's t) instead")
    args = parser.parse_args()
    if args.repeats:
        print(f"# bench/ratio_ci_coverage.py --repeats {time.strftime('%Y-%m-%d %H:%M')}: {args.trials:,} trials a "
              f"scenario, seed {args.seed}, true ratio {TRUE_RATIO}; coverage of the 95% interval from repeats")
        for n_a, n_b, sd_a, sd_b in REPEATS:
            print(f"repeats {n_a:2d} and {n_b:2d}, sd {sd_a:4.1f} and {sd_b:4.1f}: "
                  f"{repeats_coverage(n_a, n_b, sd_a, sd_b, args.trials, args.seed):6.1%}", flush=True)
        return
    print(f"# bench/ratio_ci_coverage.py {time.strftime('%Y-%m-%d %H:%M')}: {args.trials:,} trials a scenario, "
          f"seed {args.seed}, true ratio {TRUE_RATIO}; coverage of the 95% interval with {BATCHES} batches "
          "and with every interval its own batch")
    for phi, n in SCENARIOS:
        batched = coverage(phi, n, args.trials, BATCHES, args.seed)
        alone = coverage(phi, n, args.trials, n, args.seed)
        print(f"phi {phi:.1f}  {n:4d} intervals  batches of {n // BATCHES:3d}: {batched:6.1%}   "
              f"one interval a batch: {alone:6.1%}", flush=True)


if __name__ == "__main__":
    main()
