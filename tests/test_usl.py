"""Capacity planning: the USL fit on curves of known parameters, its warnings, the SLA
knee, and ``tpsbench plan`` on a real (short) SQLite run."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import copy_of

from tpsbench.cli.plan import plan
from tpsbench.core.errors import TpsbenchError
from tpsbench.measure.summary import LatencyStats, SteadySummary
from tpsbench.report.usl import Sla, fit_usl, sla_limit
from tpsbench.results.store import ResultsStore

TRUE = (0.03, 0.0004, 1200.0)
LOADS = [1, 5, 10, 20, 40, 60, 80, 120]


def usl(n: float, sigma: float, kappa: float, lam: float) -> float:
    return lam * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


def curve(params: tuple[float, float, float] = TRUE, loads: list[int] = LOADS, noise: float = 0.0,
          seed: int = 0) -> list[float]:
    """TPS at ``loads`` on the USL of ``params``, times 1 + ``noise`` × a seeded normal draw."""
    rng = np.random.default_rng(seed)
    return [usl(n, *params) * (1 + noise * rng.standard_normal()) for n in loads]


def one_line(exc: pytest.ExceptionInfo[TpsbenchError], *needles: str) -> None:
    text = str(exc.value)
    assert "\n" not in text and all(needle in text for needle in needles), text


# --- the fit ----------------------------------------------------------------------------

#: a finer sweep of loads, as a planning campaign steps them
FINE = [1, 2, 4, 8, 16, 24, 32, 48, 64, 80, 100, 120, 160, 200]


def test_the_fit_recovers_each_parameter_within_5_percent() -> None:
    # 1% noise per step (a steady step's mean TPS over minutes) on 14 loads: σ's standard
    # error is then about 2%, and 49 of the first 50 draws land all three parameters
    # within 5% (the 50th: 6%); a fit that is biased or that mixes σ up with κ fails this.
    def error(seed: int) -> float:
        fit = fit_usl(FINE, curve(loads=FINE, noise=0.01, seed=seed))
        assert fit.ci_method == "covariance" and fit.r2 > 0.99 and fit.warnings == []
        return max(abs(got / true - 1) for got, true in zip((fit.sigma, fit.kappa, fit.lam), TRUE))

    errors = [error(seed) for seed in range(50)]
    assert sum(e < 0.05 for e in errors) >= 48 and max(errors) < 0.1, sorted(errors)[-3:]


def test_residuals_are_each_steps_relative_miss() -> None:
    tps = curve(noise=0.02, seed=4)
    fit = fit_usl(LOADS, tps)
    assert len(fit.residuals) == len(LOADS) and max(map(abs, fit.residuals)) < 0.06
    predicted = [usl(n, fit.sigma, fit.kappa, fit.lam) for n in LOADS]
    assert fit.residuals == pytest.approx([(p - t) / t for t, p in zip(tps, predicted)], abs=1e-9)


def test_noiseless_data_is_fitted_exactly() -> None:
    fit = fit_usl(LOADS, curve())
    assert (fit.sigma, fit.kappa, fit.lam) == pytest.approx(TRUE, rel=1e-6)
    assert max(map(abs, fit.residuals)) < 1e-8 and fit.r2 == pytest.approx(1.0)


def test_the_95_percent_intervals_hold_the_truth_about_95_percent_of_the_time() -> None:
    fits = [fit_usl(LOADS, curve(noise=0.02, seed=seed)) for seed in range(40)]
    for name, true in zip(("sigma", "kappa", "lam"), TRUE):
        intervals = [getattr(fit, f"{name}_ci") for fit in fits]
        covered = sum(low <= true <= high for low, high in intervals)
        assert covered >= 34, f"{name}: {covered}/40"  # 38 expected; too narrow intervals fall far below
        widths = [(high - low) / 2 / true for low, high in intervals]
        assert np.median(widths) < 0.2, f"{name}: intervals ±{np.median(widths):.0%} say nothing"


def test_predictions_nmax_and_peak() -> None:
    fit = fit_usl(LOADS, curve(noise=0.02, seed=4))
    true_nmax = math.sqrt((1 - TRUE[0]) / TRUE[1])
    assert fit.n_max == pytest.approx(true_nmax, rel=0.05)
    assert fit.peak_tps == pytest.approx(usl(true_nmax, *TRUE), rel=0.03)
    for users in (1, 30, 49, 100, 200):  # inside, at the peak, and beyond the measured loads
        assert fit.predict(users) == pytest.approx(usl(users, *TRUE), rel=0.04)
    assert fit.predict(fit.n_max) == pytest.approx(fit.peak_tps)
    assert fit.predict(200) < fit.predict(120) < fit.peak_tps  # the retrograde region
    assert fit.response_ms(10) == pytest.approx(1000 * 10 / fit.predict(10))


def test_three_loads_fit_but_leave_nothing_to_check_them() -> None:
    fit = fit_usl([1, 10, 40], curve(loads=[1, 10, 40]))
    assert any("0 degrees of freedom" in w for w in fit.warnings), fit.warnings
    assert fit.ci_method == "none" and all(math.isnan(v) for v in fit.sigma_ci + fit.kappa_ci + fit.lam_ci)


def test_super_linear_steps_are_warned_about() -> None:
    fit = fit_usl([1, 2, 4, 8, 16], [100, 260, 480, 700, 800])
    assert any("super-linear" in w and "2, 4" in w for w in fit.warnings), fit.warnings
    plain = fit_usl(LOADS, curve(noise=0.02, seed=4))
    assert not any("super-linear" in w for w in plain.warnings)


def test_a_curve_falling_from_the_first_step_peaks_at_it_and_says_nothing_scales() -> None:
    fit = fit_usl([1, 4, 8, 16], [2988.2, 2295.2, 2066.2, 1700.0])  # SQLite's single writer
    assert fit.n_max == 1.0 and fit.peak_tps == pytest.approx(fit.predict(1))
    assert any("highest at the smallest load measured (1 user)" in w for w in fit.warnings), fit.warnings


def test_amdahl_data_has_no_retrograde_region() -> None:
    loads = LOADS
    fit = fit_usl(loads, curve((0.05, 0.0, 1000.0), loads, noise=0.01, seed=1))
    assert fit.n_max is None and fit.peak_tps is None
    assert any(w.startswith("κ ≈ 0") and "λ/σ" in w for w in fit.warnings), fit.warnings
    # κ sits on its bound, where the covariance's quadratic picture is wrong: bootstrapped
    assert fit.ci_method == "bootstrap"
    assert fit.sigma_ci[0] <= 0.05 <= fit.sigma_ci[1] and fit.kappa_ci[0] == pytest.approx(0, abs=1e-12)
    assert fit.sigma == pytest.approx(0.05, rel=0.1)


def test_a_singular_covariance_is_bootstrapped() -> None:
    # five loads side by side: σ, κ and λ cannot be told apart (seed 1 leaves none on a bound)
    loads = [50, 51, 52, 53, 54]
    fit = fit_usl(loads, curve(loads=loads, noise=0.02, seed=1))
    assert fit.ci_method == "bootstrap"
    assert fit.sigma_ci[1] - fit.sigma_ci[0] > 0.5 and fit.lam_ci[1] > 10 * fit.lam_ci[0]  # and they say so


def test_a_noisy_curve_gets_a_poor_r2() -> None:
    fit = fit_usl([1, 2, 4, 8, 16, 32], [100, 900, 300, 1000, 200, 800])
    assert fit.r2 < 0.9
    assert any(w.startswith("poor fit: R²") for w in fit.warnings), fit.warnings


def test_repeated_loads_are_averaged() -> None:
    loads = [1, 1, 10, 20, 40, 40]
    tps = [1150.0, 1250.0, *curve(loads=[10, 20]), usl(40, *TRUE) * 0.98, usl(40, *TRUE) * 1.02]
    fit = fit_usl(loads, tps)
    assert fit.users == (1, 10, 20, 40) and fit.tps[0] == pytest.approx(1200)
    assert fit.tps[3] == pytest.approx(usl(40, *TRUE))
    assert any("repeated user loads averaged (1, 40)" in w for w in fit.warnings), fit.warnings


@pytest.mark.parametrize(("users", "tps", "needles"), [
    ([1, 10], [100, 800], ("2 distinct user load(s)", "at least 3")),
    ([5, 5, 10, 10], [400, 410, 700, 690], ("2 distinct",)),
    ([1, 10, 20], [100, 0, 900], ("above 0",)),
    ([0, 10, 20], [100, 800, 900], (">= 1",)),
    ([1, 10, 20], [100, 800], ("3 user loads but 2",)),
])
def test_what_cannot_be_fitted_is_one_line(users: list[float], tps: list[float], needles: tuple[str, ...]) -> None:
    with pytest.raises(TpsbenchError) as exc:
        fit_usl(users, tps)
    one_line(exc, *needles)


# --- the SLA ------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "metric", "inclusive", "limit_ms"), [
    ("p95<2s", "p95", False, 2000.0), ("avg<500ms", "avg", False, 500.0), ("p99<=1.5s", "p99", True, 1500.0),
    (" P999 <= 250 MS ", "p999", True, 250.0), ("p50<.5s", "p50", False, 500.0),
])
def test_sla_strings_parse(text: str, metric: str, inclusive: bool, limit_ms: float) -> None:
    assert Sla.parse(text) == Sla(metric, inclusive, limit_ms)


@pytest.mark.parametrize("text", ["", "p95", "p95<2", "p95>2s", "p97<2s", "p95<2m", "p95<0s", "avg<-1s",
                                  "p95<2s and avg<1s", "mean<2s", "p95=<2s"])
def test_bad_sla_strings_are_one_line(text: str) -> None:
    with pytest.raises(TpsbenchError) as exc:
        sla_limit(text, [(1, LatencyStats(mean=1, p95=2))])
    one_line(exc, "SLA must look like p95<2s", repr(text))


def stats(p95: float, mean: float | None = None) -> LatencyStats:
    return LatencyStats(mean=p95 / 2 if mean is None else mean, p95=p95)


#: p95 doubling with each doubling of the load
DOUBLING = [(1, stats(10)), (2, stats(20)), (4, stats(40)), (8, stats(80)), (16, stats(160))]


def test_the_knee_at_a_measured_load() -> None:
    limit = sla_limit("p95<=40ms", DOUBLING)
    assert (limit.users, limit.basis, limit.predicted, limit.latency_ms) == (4, "measured", False, 40)


def test_the_knee_between_measured_loads_is_interpolated() -> None:
    limit = sla_limit("p95<100ms", DOUBLING)
    assert (limit.users, limit.basis, limit.predicted) == (9, "interpolated", True)
    assert limit.latency_ms == pytest.approx(90)  # 80 + (160 - 80) / 8 per user
    strict = sla_limit("p95<40ms", DOUBLING)  # 4 users is exactly at the limit: not below it
    assert (strict.users, strict.basis, strict.latency_ms) == (3, "interpolated", 30)


def test_a_larger_load_meeting_the_sla_again_is_not_headroom() -> None:
    limit = sla_limit("p95<40ms", [(1, stats(10)), (4, stats(50)), (8, stats(30))])
    assert (limit.users, limit.basis) == (3, "interpolated")


def test_repeated_loads_count_with_their_worst_step() -> None:
    limit = sla_limit("p95<40ms", [(1, stats(10)), (4, stats(30)), (4, stats(50))])
    assert (limit.users, limit.basis) == (3, "interpolated")


def test_when_the_smallest_load_misses_there_is_no_limit() -> None:
    limit = sla_limit("avg<2ms", DOUBLING)
    assert (limit.users, limit.basis) == (None, "measured") and "already misses" in limit.note


def closed_loop(params: tuple[float, float, float], loads: list[int], think_ms: float = 0.0,
                ratio: float = 2.0) -> list[tuple[int, LatencyStats]]:
    """Latency of a closed system on the USL curve by Little's law, N = X (R + Z), with
    the p95 at ``ratio`` times the mean."""
    means = [1000 * n / usl(n, *params) - think_ms for n in loads]
    return [(n, LatencyStats(mean=m, p95=ratio * m)) for n, m in zip(loads, means)]


@pytest.mark.parametrize("think_ms", [0.0, 1.0])
def test_beyond_the_last_step_the_knee_is_predicted_from_the_usl(think_ms: float) -> None:
    loads = [1, 5, 10, 20, 40]
    fit = fit_usl(loads, curve(loads=loads))
    limit = sla_limit("p95<10ms", closed_loop(TRUE, loads, think_ms), fit)
    expected = max(n for n in range(1, 10_000) if 2 * (1000 * n / usl(n, *TRUE) - think_ms) < 10)
    assert expected > 40  # the knee lies past the measured loads, at 61 users without think time
    assert (limit.users, limit.basis, limit.predicted) == (expected, "extrapolated", True)
    assert limit.latency_ms == pytest.approx(2 * (1000 * expected / usl(expected, *TRUE) - think_ms), rel=1e-6)


def test_when_one_user_more_would_miss_the_last_step_is_measured() -> None:
    loads = [1, 5, 10, 20, 40]
    steps = closed_loop(TRUE, loads)
    last, next_one = steps[-1][1].p95, 2 * 1000 * 41 / usl(41, *TRUE)
    limit = sla_limit(Sla("p95", False, (last + next_one) / 2), steps, fit_usl(loads, curve(loads=loads)))
    assert (limit.users, limit.basis, limit.latency_ms) == (40, "measured", last)


def test_without_a_fit_the_last_step_is_the_answer() -> None:
    limit = sla_limit("p95<1s", DOUBLING)
    assert (limit.users, limit.basis) == (16, "measured") and "needs a USL fit" in limit.note


def test_a_curve_without_contention_sets_no_limit() -> None:
    loads = [1, 2, 4, 8]
    fit = replace(fit_usl(loads, [100.0 * n for n in loads]), sigma=0.0, kappa=0.0)  # a fit lands near, not on, 0
    limit = sla_limit("avg<20ms", closed_loop((0.0, 0.0, 100.0), loads), fit)
    assert (limit.users, limit.basis) == (None, "extrapolated") and "no limit in sight" in limit.note


# --- tpsbench plan ------------------------------------------------------------------------

def tpsbench(*args: str, cwd: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPSBENCH_")}
    done = subprocess.run([sys.executable, "-m", "tpsbench", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, built_tpcc_sqlite: Path) -> str:
    """A results store with one real run of TPC-C on SQLite at 1, 2, 4 and 8 users."""
    folder = tmp_path_factory.mktemp("plan")
    db, store = copy_of(built_tpcc_sqlite, folder), f"sqlite:///{folder / 'results.db'}"
    tpsbench("run", "tpcc", "--db", db, "--users", "1,2,4,8", "--rampup", "0s", "--duration", "2s",
             "--interval", "1s", "--results", store, cwd=folder)
    return store


def invoke(*args: str) -> tuple[str, BaseException | None]:
    outcome = CliRunner().invoke(plan, list(args))
    return outcome.output, outcome.exception


@pytest.mark.slow
def test_plan_fits_the_latest_run_and_says_what_it_can_conclude(results: str) -> None:
    output, exc = invoke("--results", results, "--sla", "p95<2s", "--users", "16,32")
    assert exc is None, output
    assert output.startswith("run 1: tpcc, no storage label, 4 steps at 1, 2, 4, 8 users"), output
    for needle in ("σ (contention)", "κ (coherency)", "λ (TPS of one)", "95% [", "intervals: ", "R² ",
                   "residual", "predicted at 16 users:", "predicted at 32 users:", "SLA p95<2000ms: "):
        assert needle in output, needle
    assert "Nmax " in output  # a peak, or why there is none
    assert "  warning: " in output or "no warnings: the USL describes these steps" in output
    assert "(measured)" in output or "(predicted, " in output


@pytest.mark.slow
def test_plan_names_the_runs_it_cannot_fit_in_one_line(results: str) -> None:
    store = ResultsStore(results)
    short = store.start_run("tpcc", db_url="sqlite:///elsewhere.db", storage="two steps")
    for step, (users, tps) in enumerate([(1, 50.0), (2, 90.0)], start=1):
        store.finish_step(short, step, SteadySummary(step=step, users=users, seconds=2, intervals=2, tps=tps,
                                                     latency=stats(10)))
    output, exc = invoke("1", str(short), "--results", results)
    assert output.startswith("run 1: ") and f"run {short}:" not in output  # the run fitted is still shown
    assert isinstance(exc, TpsbenchError) and "\n" not in str(exc)
    assert str(exc).startswith(f"run {short}: USL fit: 2 distinct user load(s)"), exc


@pytest.mark.slow
@pytest.mark.parametrize(("args", "needle"), [
    (("99",), "has no run 99"),
    (("--sla", "p95 under 2s"), "SLA must look like"),
    (("--campaign", "7"), "has no runs of campaign 7"),
])
def test_plan_errors_are_one_line(results: str, args: tuple[str, ...], needle: str) -> None:
    output, exc = invoke(*args, "--results", results)
    assert output == "" and isinstance(exc, TpsbenchError)
    assert needle in str(exc) and "\n" not in str(exc), exc
