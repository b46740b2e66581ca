"""Capacity planning: the Universal Scalability Law fitted to a run's steps, and the
largest user load that meets a latency SLA.

Why the USL: X(N) = λN / (1 + σ(N−1) + κN(N−1)) has three parameters with a physical
reading: λ the throughput of one user, σ contention (users queueing on one shared
thing: a lock, the log device), κ coherency (every pair of users pays something, which
is what makes throughput fall past a peak). So it says why a curve bends and predicts
beyond the measured loads, which a line through the points cannot.

Why bounded non-linear least squares on relative residuals: the linearised form (N/X
against N−1) leans on the single N=1 point, and noise in a benchmark is a few per cent
of each step's TPS, so absolute residuals would let the largest steps decide alone.
σ and κ are kept in [0, 1] because outside it they have no physical meaning (a negative
κ is super-linear scaling, which the model does not describe; it is warned about).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.parse import MAX_USERS
from tpsbench.measure.summary import LatencyStats

if TYPE_CHECKING:  # scipy is imported where a fit is made: it is half of the CLI's start-up
    from scipy.optimize import OptimizeResult

#: the fewest distinct user loads three parameters can be fitted to at all
MIN_LOADS = 3
#: below this many loads no degree of freedom is left to check the fit against the data
MIN_STEPS = 4
#: an R² below this: the model does not describe the steps
POOR_R2 = 0.9
#: per-user throughput this much above the smallest load's counts as super-linear: each
#: of the two steps carries a few per cent of noise, which must not cry wolf
SUPERLINEAR = 1.05
#: κ is taken for 0 when its term is below this share of the denominator at the largest
#: measured load: the data then shows no coherency delay, whatever tiny κ the fit chose
KAPPA_NEGLIGIBLE = 0.01
#: a covariance this ill-conditioned (columns scaled to unit length) is taken as singular:
#: the parameters are then nearly interchangeable and a linearisation says little of them
#: (steps spread from 1 to 120 users give ~10^2; steps side by side 10^7 and more)
SINGULAR = 1e6
#: bootstrap resamples, and their seed: the same data prints the same intervals
BOOTSTRAP_SAMPLES = 200
BOOTSTRAP_SEED = 0
#: the starting points of the fit: the least-squares surface of σ and κ has flat valleys,
#: and a few starts spread over their scales find the best one without tuning
STARTS = [(s, k) for s in (0.001, 0.05, 0.3) for k in (1e-6, 1e-4, 1e-2)]
LOWER, UPPER = np.array([0.0, 0.0, 1e-12]), np.array([1.0, 1.0, np.inf])

Interval = tuple[float, float]
#: one load or an array of them: the model is written once for both
Load = TypeVar("Load", float, np.ndarray)


def _usl(params: Sequence[float], users: Load) -> Load:
    sigma, kappa, lam = params
    return lam * users / (1 + sigma * (users - 1) + kappa * users * (users - 1))


@dataclass(frozen=True)
class UslFit:
    """The USL fitted to one set of steps.

    ``users`` and ``tps`` are the fitted points, one per distinct load (repeats averaged)
    or, fitted with ``every``, each repeat's in load order;
    ``residuals`` are theirs, relative: (fitted − measured) / measured. ``ci_method`` says
    where the 95% intervals come from: "covariance" (the Jacobian's, Student t),
    "bootstrap" (residuals resampled, when the covariance is singular or a parameter sits
    on its bound, where a linearisation does not hold) or "none" (three loads fit exactly:
    nothing is left to estimate the noise from; the intervals are NaN).
    """

    users: tuple[float, ...]
    tps: tuple[float, ...]
    sigma: float
    kappa: float
    lam: float
    sigma_ci: Interval
    kappa_ci: Interval
    lam_ci: Interval
    ci_method: str
    r2: float
    residuals: tuple[float, ...]
    #: the load of peak throughput, sqrt((1−σ)/κ); None when κ ≈ 0 (no peak in sight)
    n_max: float | None
    peak_tps: float | None
    warnings: list[str] = field(default_factory=list)

    @property
    def params(self) -> tuple[float, float, float]:
        return self.sigma, self.kappa, self.lam

    def predict(self, users: float) -> float:
        """Throughput (TPS) the model predicts at ``users``."""
        return float(_usl(self.params, users))

    def response_ms(self, users: float) -> float:
        """Mean response time by Little's law in a closed system without think time,
        R(N) = N / X(N): what the USL alone says of latency, and only of its mean."""
        return 1000.0 * users / self.predict(users)


def _jacobian(params: Sequence[float], n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The relative residuals' derivatives by σ, κ and λ, exact: the covariance then does
    not rest on finite differences taken at κ's scale of 1e-4, and refits run faster."""
    sigma, kappa, lam = params
    denominator = 1 + sigma * (n - 1) + kappa * n * (n - 1)
    by_sigma = -lam * n * (n - 1) / denominator**2
    return np.column_stack([by_sigma, by_sigma * n, n / denominator]) / x[:, None]


def _solve(n: np.ndarray, x: np.ndarray, start: Sequence[float]) -> OptimizeResult:
    from scipy.optimize import least_squares

    return least_squares(lambda p: _usl(p, n) / x - 1, start, jac=lambda p: _jacobian(p, n, x),  # type: ignore[misc]  # scipy-stubs' least_squares overloads leave the lambda's type open
                         bounds=(LOWER, UPPER), x_scale="jac")


def _best(n: np.ndarray, x: np.ndarray) -> OptimizeResult:
    """The least-cost fit over :data:`STARTS`; λ starts at the best per-user throughput
    measured, which the model says is at most λ."""
    lam = float(np.max(x / n))
    return min((_solve(n, x, (s, k, lam)) for s, k in STARTS), key=lambda r: r.cost)


def _covariance(result: OptimizeResult, dof: int) -> np.ndarray | None:
    """The parameters' covariance from the Jacobian, or None where it does not hold:
    singular (the data cannot tell the parameters apart) or a parameter on its bound
    (the minimum is not a stationary point there, so the quadratic picture is wrong)."""
    jac = result.jac
    norms = np.linalg.norm(jac, axis=0)
    if np.any(result.active_mask) or norms.min() == 0:
        return None
    scaled = jac / norms  # units differ by orders of magnitude (κ ~ 1e-4, λ ~ 1e3)
    info = scaled.T @ scaled
    if np.linalg.cond(info) > SINGULAR:
        return None
    return np.linalg.inv(info) / np.outer(norms, norms) * (2 * result.cost / dof)


def _bootstrap(n: np.ndarray, result: OptimizeResult) -> list[Interval]:
    """Percentile intervals from refits to the fitted curve times resampled relative
    residuals (inflated by sqrt(m/dof), as three fitted parameters shrink them)."""
    fitted = _usl(result.x, n)
    residuals = result.fun * math.sqrt(n.size / (n.size - 3))
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    samples = np.array([
        _solve(n, np.maximum(fitted * (1 + rng.choice(residuals, n.size)), 1e-9), result.x).x
        for _ in range(BOOTSTRAP_SAMPLES)])
    low, high = np.percentile(samples, [2.5, 97.5], axis=0)
    return list(zip(low.tolist(), high.tolist()))


def _intervals(n: np.ndarray, result: OptimizeResult) -> tuple[list[Interval], str]:
    dof = n.size - 3
    if dof == 0:
        return [(math.nan, math.nan)] * 3, "none"
    cov = _covariance(result, dof)
    if cov is None:
        return _bootstrap(n, result), "bootstrap"
    from scipy.stats import t as student_t

    half = student_t.ppf(0.975, dof) * np.sqrt(np.diag(cov))
    low, high = np.clip(result.x - half, LOWER, UPPER), np.clip(result.x + half, LOWER, UPPER)
    return list(zip(low.tolist(), high.tolist())), "covariance"


def _points(users: Sequence[float], tps: Sequence[float],
            every: bool = False) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """One point per distinct load (repeats' TPS averaged), or with ``every`` each point
    as given (in load order); the loads repeated, or a one-line error for what cannot be
    fitted."""
    if len(users) != len(tps):
        raise TpsbenchError(f"USL fit: {len(users)} user loads but {len(tps)} throughputs")
    n_all, x_all = np.asarray(users, dtype=float), np.asarray(tps, dtype=float)
    if not (np.all(np.isfinite(n_all)) and np.all(n_all >= 1)):
        raise TpsbenchError("USL fit: user loads must be numbers >= 1")
    if not (np.all(np.isfinite(x_all)) and np.all(x_all > 0)):
        raise TpsbenchError("USL fit: every step needs a throughput above 0 (relative residuals divide by it)")
    n, inverse, counts = np.unique(n_all, return_inverse=True, return_counts=True)
    if n.size < MIN_LOADS:
        raise TpsbenchError(f"USL fit: {n.size} distinct user load(s), but its 3 parameters need at least"
                            f" {MIN_LOADS}: run more steps, e.g. --users 1,10,20,40,80")
    if every:
        order = np.argsort(n_all, kind="stable")
        return n_all[order], x_all[order], n[counts > 1].tolist()
    x = np.bincount(inverse, weights=x_all) / counts
    return n, x, n[counts > 1].tolist()


def _r2(x: np.ndarray, fitted: np.ndarray) -> float:
    """R² of the throughputs themselves; a flat curve has no variance to explain, so it
    counts as described when it is met exactly and as not at all otherwise."""
    ss_res, ss_tot = float(np.sum((x - fitted) ** 2)), float(np.sum((x - x.mean()) ** 2))
    if ss_tot == 0:
        return 1.0 if ss_res == 0 else 0.0
    return 1 - ss_res / ss_tot


def _loads(values: Iterable[float]) -> str:
    return ", ".join(f"{v:g}" for v in values)


def _warnings(fit: UslFit, repeated: list[float], kappa_zero: bool, every: bool = False) -> list[str]:
    """What keeps the fit from meaning what it seems to: each a sentence a user can act on."""
    n, x = np.array(fit.users), np.array(fit.tps)
    out = []
    if repeated and not every:
        out.append(f"repeated user loads averaged ({_loads(repeated)}): the fit sees one point per load")
    distinct, inverse, counts = np.unique(n, return_inverse=True, return_counts=True)
    loads = distinct.size
    if loads < MIN_STEPS and not (every and n.size > loads):
        out.append(f"{n.size} user loads for 3 parameters leave {n.size - 3} degrees of freedom: no step is left"
                   f" over to check the curve against; run at least {MIN_STEPS} steps")
    n, x = distinct, np.bincount(inverse, weights=x) / counts  # per load (its repeats' mean) from here
    efficiency = (x / n) / (x[0] / n[0])
    if np.any(efficiency > SUPERLINEAR):
        out.append(f"efficiency above 1 at {_loads(n[efficiency > SUPERLINEAR])} users (per-user TPS above that at"
                   f" {n[0]:g}): super-linear scaling, which the USL cannot fit")
    if kappa_zero:
        tail = f"throughput levels off towards λ/σ = {fit.lam / fit.sigma:.1f} TPS" if fit.sigma > 0 else \
            "throughput grows linearly as far as the data goes"
        out.append(f"κ ≈ 0: no retrograde region in reach of the data, so Nmax is undefined; {tail}")
    if fit.n_max is not None and fit.n_max <= n[0]:
        out.append(f"throughput is highest at the smallest load measured ({n[0]:g} user{'' if n[0] == 1 else 's'})"
                   f" and falls with every user added (σ = {fit.sigma:.2f}): the database does this work one at a time"
                   " (a single writer, as SQLite's), so more users only queue; there is no scaling region to plan in")
    if fit.r2 < POOR_R2:
        out.append(f"poor fit: R² = {fit.r2:.3f} < {POOR_R2}: the curve explains little of how TPS varies between"
                   " steps (noise as large as the trend, or a shape the USL lacks); its predictions are not to be"
                   " trusted")
    return out


def fit_usl(users: Sequence[float], tps: Sequence[float], *, every: bool = False) -> UslFit:
    """Fit the USL to steps' user loads and steady-state TPS; ``warnings`` says where the
    result should not be taken at its word. Fewer than 3 distinct loads: TpsbenchError.

    ``every``: fit every point, a load's repeats each one (``run --repeat``), not their
    average: the residuals then hold the spread between repeats, so the parameters'
    intervals widen with it (an average would hide it and leave fewer degrees of freedom)."""
    n, x, repeated = _points(users, tps, every)
    result = _best(n, x)
    (sigma, kappa, lam), fitted = result.x.tolist(), _usl(result.x, n)
    (sigma_ci, kappa_ci, lam_ci), method = _intervals(n, result)
    top = n[-1]
    kappa_zero = kappa * top * (top - 1) < KAPPA_NEGLIGIBLE * (1 + sigma * (top - 1))
    # the peak of the curve, never below one user: past σ = 1 - κ it would be a fraction of one
    n_max = None if kappa_zero else max(1.0, math.sqrt((1 - sigma) / kappa))
    fit = UslFit(users=tuple(n.tolist()), tps=tuple(x.tolist()), sigma=sigma, kappa=kappa, lam=lam,
                 sigma_ci=sigma_ci, kappa_ci=kappa_ci, lam_ci=lam_ci, ci_method=method, r2=_r2(x, fitted),
                 residuals=tuple(((fitted - x) / x).tolist()), n_max=n_max,
                 peak_tps=None if n_max is None else float(_usl(result.x, n_max)))
    return replace(fit, warnings=_warnings(fit, repeated, kappa_zero, every))


# --- SLA ------------------------------------------------------------------------------

#: what an SLA may name, and the LatencyStats figure each one is
METRICS = {"avg": "mean", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p999": "p999"}
_SLA = re.compile(r"^\s*(avg|p50|p90|p95|p99|p999)\s*(<=|<)\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Sla:
    """A latency target like ``p95<2s``: a figure of a step's latency, below (or at) a limit."""

    metric: str
    inclusive: bool
    limit_ms: float

    @classmethod
    def parse(cls, text: str) -> Sla:
        match = _SLA.match(text)
        limit = float(match.group(3)) * (1.0 if match.group(4).lower() == "ms" else 1000.0) if match else 0.0
        if not match or limit <= 0:
            raise TpsbenchError(f"SLA must look like p95<2s, avg<500ms or p99<=1.5s (avg, p50, p90, p95, p99 or"
                                f" p999; < or <=; a duration above 0 in ms or s), got {text!r}")
        return cls(metric=match.group(1).lower(), inclusive=match.group(2) == "<=", limit_ms=limit)

    def value(self, stats: LatencyStats) -> float:
        return float(getattr(stats, METRICS[self.metric]))

    def meets(self, ms: float) -> bool:
        return ms <= self.limit_ms if self.inclusive else ms < self.limit_ms

    def __str__(self) -> str:
        return f"{self.metric}{'<=' if self.inclusive else '<'}{self.limit_ms:g}ms"


@dataclass(frozen=True)
class SlaLimit:
    """The largest user load meeting an SLA. ``basis``: "measured" (a step ran there),
    "interpolated" (between two steps) or "extrapolated" (past the last, from the USL);
    ``users`` is None when the smallest step already misses the SLA, or when the USL sees
    no limit up to the most users a step may have; ``latency_ms`` is the figure there."""

    sla: Sla
    users: int | None
    basis: str
    latency_ms: float | None
    note: str

    @property
    def predicted(self) -> bool:
        return self.basis != "measured"


def _largest(meets: Callable[[int], bool], low: int, high: int) -> int:
    """The largest k in [low, high] with meets(k), given meets(low) and that meets turns
    false once for good as k grows (latency grows with load)."""
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if meets(mid) else (low, mid - 1)
    return low


def _worst(sla: Sla, steps: Iterable[tuple[float, LatencyStats]]) -> list[tuple[float, LatencyStats]]:
    """One entry per load, sorted; of repeated loads the worst, so a limit is never
    claimed on the strength of the luckier repeat."""
    worst: dict[float, LatencyStats] = {}
    for users, stats in steps:
        if users not in worst or sla.value(stats) > sla.value(worst[users]):
            worst[users] = stats
    return sorted(worst.items())


def _interpolated(sla: Sla, below: tuple[float, float], above: tuple[float, float]) -> SlaLimit:
    """Between a step that meets the SLA and the next, which does not: the percentile is
    taken as linear in the load, the least one can assume of a curve seen at two points."""
    (n0, v0), (n1, v1) = below, above

    def at(k: float) -> float:
        return v0 + (v1 - v0) * (k - n0) / (n1 - n0)

    users = _largest(lambda k: sla.meets(at(k)), int(n0), math.ceil(n1) - 1)
    basis = "measured" if users == n0 else "interpolated"
    note = (f"{sla.metric} {v0:.1f} ms at {n0:g} users, {v1:.1f} ms at {n1:g}"
            + ("" if basis == "measured" else ", interpolated linearly between them"))
    return SlaLimit(sla, users, basis, at(users), note)


def _extrapolated(sla: Sla, last: float, stats: LatencyStats, fit: UslFit | None) -> SlaLimit:
    """Past the last step, which meets the SLA. The USL predicts only the mean response
    time; it is anchored at the last step's measured mean by adding the USL's growth
    R(N) − R(last) (any think time Z cancels out: R = N/X − Z), and a percentile is taken
    to keep the last step's ratio to the mean, as a latency distribution that stretches
    without changing shape would."""
    measured = sla.value(stats)
    if fit is None:
        return SlaLimit(sla, int(last), "measured", measured,
                        f"every step meets it; beyond {last:g} users needs a USL fit")
    ratio = measured / stats.mean if stats.mean > 0 else 1.0

    def at(k: float) -> float:
        return (stats.mean + fit.response_ms(k) - fit.response_ms(last)) * ratio

    if sla.meets(at(MAX_USERS)):
        return SlaLimit(sla, None, "extrapolated", None,
                        f"the USL predicts it holds beyond {MAX_USERS:,} users: no limit in sight")
    users = _largest(lambda k: sla.meets(at(k)), int(last), MAX_USERS)
    if users == last:
        return SlaLimit(sla, users, "measured", measured,
                        f"the last step meets it ({measured:.1f} ms) and the USL says one user more would not")
    return SlaLimit(sla, users, "extrapolated", at(users),
                    f"every step meets it; past the last ({last:g} users, {measured:.1f} ms) from the USL's"
                    f" mean response time times the last step's {sla.metric}/mean ratio {ratio:.2f}")


def sla_limit(sla: str | Sla, steps: Iterable[tuple[float, LatencyStats]], fit: UslFit | None = None) -> SlaLimit:
    """The largest user load meeting ``sla``, given each step's (users, latency).

    Measured loads are trusted up to the first one that misses the SLA: a larger load
    meeting it again is noise or luck, not headroom. Between that and the last load
    meeting it, the percentile is interpolated; when every step meets it, the USL ``fit``
    extrapolates (without one, the last step is the answer). Both are ``predicted``.
    """
    sla = Sla.parse(sla) if isinstance(sla, str) else sla
    points = _worst(sla, steps)
    if not points:
        raise TpsbenchError("SLA limit: no step has latency figures")
    values = [sla.value(stats) for _, stats in points]
    failing = next((i for i, v in enumerate(values) if not sla.meets(v)), None)
    if failing == 0:
        return SlaLimit(sla, None, "measured", values[0],
                        f"the smallest step, {points[0][0]:g} users, already misses it ({values[0]:.1f} ms)")
    if failing is None:
        return _extrapolated(sla, points[-1][0], points[-1][1], fit)
    return _interpolated(sla, (points[failing - 1][0], values[failing - 1]), (points[failing][0], values[failing]))
