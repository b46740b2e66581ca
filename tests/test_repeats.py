"""Figures over repeats (run --repeat): Student t means, Welch's t on the TPS ratio,
merged percentiles with the repeats' range, and how the reports show them."""

from __future__ import annotations

import json
import math
import random
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from tpsbench.core.repeats import repeat_round
from tpsbench.measure.histogram import merged
from tpsbench.measure.recorder import IntervalRecorder
from tpsbench.measure.repeats import mean_interval, repeats_log_spread, repeats_ratio_interval
from tpsbench.measure.summary import LatencyStats, SteadySummary
from tpsbench.report.compare import compare, summary_lines, to_text
from tpsbench.report.repeats import REPEATS_ROW, repeat_columns
from tpsbench.report.table import build_table, render
from tpsbench.report.usl import UslFit
from tpsbench.results.records import RunData
from tpsbench.results.store import ResultsStore

NAMES = ("new_order", "payment")


def test_the_mean_interval_is_student_t() -> None:
    values = [161.0, 158.5, 166.0, 160.2]
    found = mean_interval(values)
    low, high = stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
    assert (found.low, found.high) == (pytest.approx(low), pytest.approx(high))
    one = mean_interval([3.0])
    assert one.mean == 3.0 and one.half is None and one.low is None


def test_the_ratio_interval_is_welch_on_the_log_ratio() -> None:
    base, other = [100.0, 104.0, 97.0], [162.0, 150.0, 171.0, 158.0, 166.0]
    parts = [np.var(v, ddof=1) / len(v) / np.mean(v) ** 2 for v in (base, other)]
    df = sum(parts) ** 2 / (parts[0] ** 2 / 2 + parts[1] ** 2 / 4)
    ratio = np.mean(other) / np.mean(base)
    half = stats.t.ppf(0.975, df) * math.sqrt(sum(parts))
    found = repeats_ratio_interval(base, other)
    assert found == (pytest.approx(ratio), pytest.approx(ratio * math.exp(-half)),
                     pytest.approx(ratio * math.exp(half)))
    assert repeats_ratio_interval([100.0], other) is None  # one repeat: no spread known


def covered(n_base: int, n_other: int, sd_base: float, sd_other: float) -> int:
    """Of 200 pairs of repeated configurations with known means (ratio 1.62) and normal
    noise between repeats, how many 95% intervals hold the true ratio (seeded)."""
    rng = random.Random(1)
    hits = 0
    for _ in range(200):
        found = repeats_ratio_interval([rng.gauss(100.0, sd_base) for _ in range(n_base)],
                                       [rng.gauss(162.0, sd_other) for _ in range(n_other)])
        assert found is not None
        hits += found[1] <= 1.62 <= found[2]
    return hits


@pytest.mark.parametrize(("n_base", "n_other", "sd_base", "sd_other"), [(5, 5, 5.0, 8.0), (5, 8, 4.0, 16.0)])
def test_the_repeats_intervals_cover_the_true_ratio_95_times_in_100(n_base: int, n_other: int, sd_base: float,
                                                                    sd_other: float) -> None:
    """Equal repeats and equal relative noise; unequal repeats and a noisier configuration
    (where a pooled variance would be wrong, Welch's is not)."""
    hits = covered(n_base, n_other, sd_base, sd_other)
    assert 186 <= hits <= 194, f"{hits / 2:.1f}% covered"


def test_a_normal_quantile_would_undercover_few_repeats() -> None:
    """What Student's t is for: with 3 repeats a side, z = 1.96 instead of t misses the
    true ratio far more often than 5 times in 100."""
    rng = random.Random(1)
    hits = 0
    for _ in range(200):
        base, other = [rng.gauss(100.0, 5.0) for _ in range(3)], [rng.gauss(162.0, 8.0) for _ in range(3)]
        ratio = np.mean(other) / np.mean(base)
        spread = repeats_log_spread(base, other)
        assert spread is not None
        z_half = 1.96 * math.sqrt(spread.variance)
        hits += ratio * math.exp(-z_half) <= 1.62 <= ratio * math.exp(z_half)
    assert hits < 180, f"{hits / 2:.1f}% covered"


def stored_repeats(store: ResultsStore, storage: str, scale: float, loads: tuple[int, ...] = (1, 4),
                   repeat: int = 3, seed: int = 1, **config: int) -> int:
    """A run of ``loads`` repeated ``repeat`` times, stored as run --repeat stores it: steps
    in run order, round after round, each with 6 steady intervals whose latencies (and so
    TPS) are ``scale`` times a random draw; config ``repeat`` and the one-round ``users``."""
    rng = np.random.default_rng(seed)
    run_id = store.start_run("tpcc", db_url="sqlite:///t.db", storage=storage,
                             config={"users": list(loads), "repeat": repeat, **config})
    step = 0
    for _ in range(repeat):
        for users in loads:
            step += 1
            store.start_step(run_id, step, users)
            reports = []
            speed = scale * rng.uniform(0.9, 1.1)  # the run-to-run spread
            for interval in range(6):
                rec = IntervalRecorder(NAMES)
                count = int(100 * users * speed * rng.uniform(0.97, 1.03))
                for i, v in enumerate(rng.integers(1000, 5000, count).tolist()):
                    rec.record(NAMES[i % 2], int(v / speed), True)
                reports.append(rec.take(step, interval, 10.0 * interval, 10.0 * interval + 10))
                store.add_interval(run_id, reports[-1], users)
            store.finish_step(run_id, step, SteadySummary.from_reports(reports, users),
                              observations={"disk_io": {"total.r_s": 100.0 * step, "total.w_s": 50.0}})
    store.finish_run(run_id, "completed")
    return run_id


@pytest.fixture
def store(tmp_path: Path) -> ResultsStore:
    return ResultsStore(f"sqlite:///{tmp_path / 'r.db'}")


def test_steps_group_by_their_place_in_the_round(store: ResultsStore) -> None:
    data = store.load_run(stored_repeats(store, "A", 1.0, loads=(1, 4, 1), repeat=2))
    cols = repeat_columns(data)
    assert [(c.label, [s.step for s in c.steps]) for c in cols] == [("1", [1, 4]), ("4", [2, 5]), ("1 #2", [3, 6])]
    assert [repeat_round(data.run.config, n) for n in range(1, 7)] == [1, 1, 1, 2, 2, 2]


def test_the_table_shows_each_load_once_as_mean_and_interval(store: ResultsStore) -> None:
    data = store.load_run(stored_repeats(store, "A", 1.0))
    (block,) = build_table([data], histograms=store.load_histogram).blocks
    rows = dict(zip(block.rows, block.cells))
    assert rows[REPEATS_ROW] == ["3 of 3", "3 of 3"]
    tps = {users: [s.summary.tps for s in data.steps if s.users == users and s.summary] for users in (1, 4)}
    for cell, users in zip(rows["TPS"], (1, 4)):
        m = mean_interval(tps[users])
        assert cell == f"{m.mean:.1f} ± {m.half:.1f}"
    # p95: the merged histograms' with the repeats' own range
    steps = [s for s in data.steps if s.users == 4]
    whole = LatencyStats.of(merged(store.load_histogram(data.run.id, s.step) for s in steps))
    own = [s.summary.latency.p95 for s in steps]
    value, low, high = map(float, re.fullmatch(r"(\S+) \((\S+)-(\S+)\)", rows["p95 (ms)"][1]).groups())
    assert value == pytest.approx(whole.p95, rel=5e-3) and (low, high) == (pytest.approx(min(own), rel=5e-3),
                                                                          pytest.approx(max(own), rel=5e-3))
    assert min(own) <= whole.p95 <= max(own)
    # what the observers read: each figure's mean over the repeats (IOPS of steps 2, 4, 6: 250, 450, 650)
    iops = mean_interval([250.0, 450.0, 650.0])
    assert rows["IOPS"][1] == f"{int(iops.mean)} ± {int(iops.half)}"
    assert rows["Steady state (SNIA)"] == ["3 of 3 steady", "3 of 3 steady"]
    markdown = render([data], format="markdown", histograms=store.load_histogram)
    assert markdown.splitlines()[0] == "| Storage configuration | metric | 1 | 4 |"  # one column per load
    assert "Limited by" not in markdown


def test_compare_takes_welch_on_repeats_and_batch_means_otherwise(store: ResultsStore) -> None:
    slow, fast = (store.load_run(stored_repeats(store, name, scale, seed=seed))
                  for name, scale, seed in (("slow", 1.0, 1), ("fast", 1.6, 2)))
    c = compare([slow, fast])
    for load in c.loads:
        noise = load.tps_noise[1]
        base, other = ([s.summary.tps for s in d.steps if s.users == load.users and s.summary] for d in (slow, fast))
        ratio, low, high = repeats_ratio_interval(base, other)
        assert noise.repeats == (3, 3) and (noise.low, noise.high) == (pytest.approx(low), pytest.approx(high))
        assert load.ratios[1]["tps"] == pytest.approx(ratio)  # the means' ratio
        assert not noise.within
    (line,) = summary_lines(c)
    assert re.match(r"fast vs slow at 4 users: \+\d+% TPS \(95% CI \+\d+(\.\d+)?% to \+\d+(\.\d+)?%\)", line)
    assert "repeats (Welch's t)" in to_text(c)
    same = store.load_run(stored_repeats(store, "again", 1.0, seed=3))
    assert all(load.tps_noise[1].within for load in compare([slow, same]).loads)  # A/A: within the noise
    single = RunData(run=slow.run, steps=[s for s in slow.steps if s.step <= 2], intervals=slow.intervals)
    single.run = type(slow.run)(**{**vars(slow.run), "config": {"users": [1, 4]}})
    noise = compare([single, fast]).loads[0].tps_noise[1]
    assert noise.repeats is None and noise.counts == (6, 6)  # one side single: batch means as before


def test_the_not_storage_warning_reads_a_repeated_load_by_all_its_repeats(store: ResultsStore) -> None:
    """The warning's "differ by up to" is the ratio compare shows (the repeats' means), and
    its verdicts are every repeat's, not the first step's alone."""
    from tpsbench.report.limits import _compared_steps

    data = store.load_run(stored_repeats(store, "A", 1.0))
    found = _compared_steps(data)
    tps = {users: [s.summary.tps for s in data.steps if s.users == users and s.summary] for users in (1, 4)}
    assert {u: steps for u, (steps, _) in found.items()} == {1: [1, 3, 5], 4: [2, 4, 6]}
    assert {u: mean for u, (_, mean) in found.items()} == {u: pytest.approx(sum(v) / 3) for u, v in tps.items()}
    single = RunData(run=type(data.run)(**{**vars(data.run), "config": {"users": [1, 4]}}), steps=data.steps,
                     intervals=data.intervals)
    assert {u: steps for u, (steps, _) in _compared_steps(single).items()} == {1: [1], 4: [2]}


def test_the_json_export_of_repeats_is_version_3_and_validates(store: ResultsStore) -> None:
    import jsonschema

    from tpsbench.report.export import SCHEMA, SCHEMA_3, json_schema, load_histograms, to_json

    repeated = store.load_run(stored_repeats(store, "A", 1.0))
    plain = store.load_run(stored_repeats(store, "B", 1.0, repeat=1))
    doc = json.loads(to_json([repeated, plain], load_histograms(store, [repeated, plain])))
    assert doc["schema"] == SCHEMA_3
    jsonschema.Draft202012Validator(json_schema(SCHEMA_3)).validate(doc)
    assert doc["runs"][1]["repeats"] is None
    found = doc["runs"][0]["repeats"]
    assert found["count"] == 3 and [load["steps"] for load in found["loads"]] == [[1, 3, 5], [2, 4, 6]]
    tps = [s.summary.tps for s in repeated.steps if s.users == 4]
    m = mean_interval(tps)
    assert found["loads"][1]["tps"] == {"mean": pytest.approx(m.mean), "half_width": pytest.approx(m.half),
                                        "low": pytest.approx(m.low), "high": pytest.approx(m.high)}
    p95 = found["loads"][1]["latency_ms"]["p95"]
    assert p95["low"] == min(s.summary.latency.p95 for s in repeated.steps if s.users == 4)
    with pytest.raises(jsonschema.ValidationError):  # version 3 is strict about a load's keys too
        found["loads"][0]["tps"]["spread"] = 1.0
        jsonschema.Draft202012Validator(json_schema(SCHEMA_3)).validate(doc)
    single = json.loads(to_json([plain]))
    assert single["schema"] == SCHEMA and "repeats" not in single["runs"][0]  # no repeats: version 2 as before
    jsonschema.Draft202012Validator(json_schema()).validate(single)


def test_the_html_report_draws_error_bars_and_shows_the_intervals(store: ResultsStore) -> None:
    from tpsbench.report import charts
    from tpsbench.report.html import to_html

    repeated = store.load_run(stored_repeats(store, "A", 1.0))
    plain = store.load_run(stored_repeats(store, "B", 1.0, repeat=1))
    points = charts._line(repeated, charts.Panel("TPS", "", lambda d, s: s.summary.tps))
    m = mean_interval([s.summary.tps for s in repeated.steps if s.users == 1])
    assert [users for users, _, _ in points] == [1, 4]  # one point per load
    assert points[0] == (1, pytest.approx(m.mean), pytest.approx(m.half))
    with_bars = charts.user_charts([repeated], ["A"])[0]
    without = charts.user_charts([plain], ["B"])[0]
    assert any("--repeat" in note for note in with_bars.notes) and not any("--repeat" in n for n in without.notes)
    assert with_bars.svg.count("<path") > without.svg.count("<path")  # the bars and their caps
    page = to_html([repeated], histograms=store.load_histogram)
    assert " ± " in page and REPEATS_ROW in page


def usl_curve(n: float) -> float:
    return 500.0 * n / (1 + 0.05 * (n - 1) + 0.0005 * n * (n - 1))


def test_the_usl_fitted_to_every_repeat_widens_with_their_spread() -> None:
    """Repeats at +d, 0 and -d of an exact curve: their averages lie on it, so a fit to
    the averages sees no noise at all; the fit to every point sees the spread, and its
    intervals grow with d."""
    from tpsbench.report.usl import fit_usl

    loads = [1, 2, 4, 8, 16, 32, 64]
    users = [n for n in loads for _ in range(3)]

    def tps(d: float) -> list[float]:
        return [usl_curve(n) * (1 + k * d) for n in loads for k in (1, 0, -1)]

    averaged = fit_usl(users, tps(0.05))
    assert any("averaged" in w for w in averaged.warnings)
    narrow, wide = fit_usl(users, tps(0.02), every=True), fit_usl(users, tps(0.08), every=True)
    assert len(wide.users) == 21 and not any("averaged" in w for w in wide.warnings)

    def width(fit: UslFit) -> float:
        low, high = fit.lam_ci
        return high - low

    assert width(averaged) < 1e-3 * averaged.lam < width(narrow) < width(wide)
    assert wide.lam_ci[0] < 500.0 < wide.lam_ci[1]


def test_plan_says_it_fitted_every_repeat(store: ResultsStore, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tpsbench.cli.plan import plan

    run_id = stored_repeats(store, "A", 1.0, loads=(1, 2, 4, 8), repeat=2)
    outcome = CliRunner().invoke(plan, [str(run_id), "--results", f"sqlite:///{tmp_path / 'r.db'}"])
    assert outcome.exit_code == 0, outcome.output
    assert "fitted to every repeat's point (2 repeats a load)" in outcome.output
    assert outcome.output.count("\n   ") >= 8  # a residual line per step, not per load


def test_a_campaigns_rounds_of_a_target_are_its_repeats(store: ResultsStore, tmp_path: Path) -> None:
    """A sequential campaign with repeat = 3: targets A and B run round by round (A B A B
    A B), each round a run of one step per load; report, compare and plan read each
    target's rounds as one run of --repeat."""
    from click.testing import CliRunner

    from tpsbench.cli.report import compare as compare_command
    from tpsbench.cli.report import report
    from tpsbench.report.rounds import merge_rounds

    ids = {name: [] for name in "AB"}
    for r in range(1, 4):
        for target, (name, scale) in enumerate((("A", 1.0), ("B", 1.6))):
            ids[name].append(stored_repeats(store, name, scale, repeat=1, seed=10 * r + target, campaign=1,
                                            campaign_target=target, campaign_round=r, campaign_rounds=3))
    rounds = [store.load_run(i) for i in [*ids["A"], *ids["B"]]]
    merged_runs, histograms = merge_rounds(rounds, store.load_histogram)
    assert [d.run.id for d in merged_runs] == [ids["A"][0], ids["B"][0]]
    a = merged_runs[0]
    assert a.run.config["repeat"] == 3 and a.run.config["round_runs"] == ids["A"]
    assert [(c.label, [s.step for s in c.steps]) for c in repeat_columns(a)] == [("1", [1, 3, 5]), ("4", [2, 4, 6])]
    assert [s.summary.tps for c in repeat_columns(a) for s in c.steps] == [
        store.load_run(i).steps[n].summary.tps for n in (0, 1) for i in ids["A"]]
    assert histograms(a.run.id, 6, "*") == store.load_histogram(ids["A"][2], 2, "*")  # round 3's second step
    noise = compare(merged_runs).loads[1].tps_noise[1]
    assert noise.repeats == (3, 3) and not noise.within
    url = f"sqlite:///{tmp_path / 'r.db'}"
    args = [*map(str, ids["A"] + ids["B"]), "--results", url]
    shown = CliRunner().invoke(report, [*args, "--format", "markdown"])
    assert shown.exit_code == 0, shown.output
    assert shown.output.count(REPEATS_ROW) == 2 and "| 3 of 3 | 3 of 3 |" in shown.output
    said = CliRunner().invoke(compare_command, args)
    assert said.exit_code == 0, said.output
    assert re.search(r"B vs A at 4 users: \+\d+% TPS \(95% CI \+\d+(\.\d+)?% to \+\d+(\.\d+)?%\)", said.output)


@pytest.mark.slow
def test_real_runs_with_repeat_in_every_format(built_tpcc_sqlite: Path, tmp_path: Path) -> None:
    """Two real runs of --repeat 2 on SQLite: report (markdown, csv, json, html), compare
    and plan read their steps as repeats."""
    import jsonschema
    from conftest import cli_in_process, copy_of
    from test_repeat import tpsbench

    from tpsbench.report.export import SCHEMA_3, json_schema

    db = copy_of(built_tpcc_sqlite, tmp_path)
    for label in ("A", "B"):
        done = tpsbench(tmp_path, "run", "tpcc", "--users", "1,2,3", "--repeat", "2", "--rampup", "0s",
                        "--duration", "0.5s", "--interval", "0.25s", "--processes", "1", "--storage", label, db=db)
        assert done.returncode == 0, done.stderr[-3000:]

    def read(*args: str) -> subprocess.CompletedProcess[str]:
        """A command that starts no processes, in this one, on the runs' store."""
        return cli_in_process(*args, cwd=tmp_path, env={"TPSBENCH_RESULTS": f"sqlite:///{tmp_path / 'results.db'}"})

    markdown = read("report", "1", "2", "--format", "markdown")
    assert markdown.returncode == 0, markdown.stderr
    lines = markdown.stdout.splitlines()
    assert lines[0] == "| Storage configuration | metric | 1 | 2 | 3 |"
    assert "| A | Repeats (95% CI) | 2 of 2 | 2 of 2 | 2 of 2 |" in lines
    assert re.search(r"\| TPS \| [\d.]+ ± [\d.]+ \| [\d.]+ ± [\d.]+ \|", markdown.stdout)
    assert re.search(r"\| p95 \(ms\) \| [\d.]+ \([\d.]+-[\d.]+\) \|", markdown.stdout)
    csv_text = read("report", "1", "--format", "csv").stdout
    assert csv_text.splitlines()[0] == "storage,run,metric,1,2,3" and " ± " in csv_text
    doc = json.loads(read("report", "1", "2", "--format", "json").stdout)
    assert doc["schema"] == SCHEMA_3
    jsonschema.Draft202012Validator(json_schema(SCHEMA_3)).validate(doc)
    assert [load["steps"] for load in doc["runs"][0]["repeats"]["loads"]] == [[1, 4], [2, 5], [3, 6]]
    page = read("report", "1", "2", "--format", "html").stdout
    assert "each point is the mean over its repeats" in page
    said = read("compare", "1", "2")
    assert said.returncode == 0, said.stderr
    assert "repeats (Welch's t)" in said.stdout and re.search(r"B vs A at 3 users: [+-]\d+% TPS \(95% CI ", said.stdout)
    plan = read("plan", "1")
    assert "fitted to every repeat's point (2 repeats a load)" in plan.stdout + plan.stderr
