"""``run --until-steady MAX``: a step measured until SNIA's test holds over its last five intervals.

The real run: a custom workload on PostgreSQL whose one transaction bumps a counter and
sleeps less as the counter grows (80 ms down to 20 ms by its 30th commit), so that the
step's first intervals ramp and then settle, whatever the host's speed. With --duration
1s the step measures on past it while it ramps and ends once its last five intervals are
steady, well before MAX: said on a live line, stored with the step, and the step's figures
are the window judged steady (the interval under way when it ended is not steady). As a
warm-up (``--warmup`` with ``--until-steady``) it ends once steady too, before step 1, and
every report format says so.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import cli_in_process
from test_warmup import tpsbench

from tpsbench.commands.warmup import check_until_steady, warmup_step
from tpsbench.core.errors import TpsbenchError
from tpsbench.engine.steps import LoadStep
from tpsbench.engine.until_steady import SteadyWatch
from tpsbench.measure.histogram import LatencyHistogram
from tpsbench.measure.reports import IntervalReport, TxnReport
from tpsbench.measure.steady_state import excursion
from tpsbench.report.export import json_schema

RAMP = '''
description = "one counter: each transaction bumps it and sleeps, less as it grows, down to 20 ms"

[[table]]
name = "ramp"
rows = 1
scaled = false
create = "CREATE TABLE ramp (id INTEGER NOT NULL PRIMARY KEY, n INTEGER NOT NULL)"
[table.columns]
id = { gen = "sequence" }
n = 0

[[transaction]]
name = "tick"
weight = 1
statements = [
    "UPDATE ramp SET n = n + 1 WHERE id = 1",
    "SELECT pg_sleep(greatest(0.02, 0.08 - n * 0.002)) FROM ramp WHERE id = 1",
]
'''


def ramp_run(tmp_path: Path, pg_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The ramping workload built on ``pg_url`` and run by one user with ``args``."""
    (tmp_path / "ramp.toml").write_text(RAMP)
    built = tpsbench(tmp_path, pg_url, "build", "custom", "--file", "ramp.toml")
    assert built.returncode == 0, built.stderr
    return tpsbench(tmp_path, pg_url, "run", "custom", "--file", "ramp.toml", "--users", "1", "--processes", "1",
                    "--rampup", "0.5s", "--duration", "1s", *args)


@pytest.mark.slow
def test_a_ramping_step_is_measured_on_until_steady_and_ends_there(pg_url: str, tmp_path: Path) -> None:
    done = ramp_run(tmp_path, pg_url, "--interval", "0.5s", "--until-steady", "40s")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "step 1 steady (SNIA, last 5 intervals) after " in done.stderr, done.stderr[-3000:]
    with sqlite3.connect(tmp_path / "results.db") as db:
        said = dict(db.execute("SELECT name, value FROM observations WHERE observer = 'until_steady' AND step = 1 "
                               "AND interval IS NULL").fetchall())
        intervals = db.execute("SELECT interval, steady, t_start, t_end, tps, p95_ms FROM intervals WHERE step = 1 "
                               "ORDER BY interval").fetchall()
        (seconds,) = db.execute("SELECT seconds FROM steps WHERE step = 1").fetchone()
    steady = [i for i in intervals if i[1]]
    assert said["steady"] == 1.0 and said["intervals"] == len(steady), (said, intervals)
    # extended past --duration (1 s) while it ramped, and ended well before MAX
    assert 2.5 <= said["measured_s"] < 30 and seconds == pytest.approx(said["measured_s"], abs=0.05), (said, seconds)
    assert steady[0][4] < 0.8 * steady[-1][4], steady  # the ramp is in the window: the first slower than the last
    # the window is judged on its last five; every interval after it is outside it
    last = steady[-5:]
    assert all(e is not None and e.steady for e in (excursion([i[4] for i in last]), excursion([i[5] for i in last])))
    assert [i[1] for i in intervals[intervals.index(steady[-1]) + 1:]] == [0] * (len(intervals) -
                                                                           intervals.index(steady[-1]) - 1)
    assert steady[-1][3] - steady[0][2] < 30


def report(tps: float, p95_ms: float, seconds: float = 1.0) -> IntervalReport:
    """An interval of ``tps`` over ``seconds``, every transaction taking ``p95_ms``."""
    hist = LatencyHistogram()
    hist.record_many([p95_ms * 1000.0] * round(tps * seconds))
    return IntervalReport(step=1, interval=0, t_start=0.0, t_end=seconds, steady=True,
                          txns={"t": TxnReport(commits=round(tps * seconds), histogram=hist.encode())})


def test_the_watch_ends_a_step_only_past_its_least_time_and_once_steady() -> None:
    watch = SteadyWatch(least_s=6.0, most_s=20.0)
    ramp = [report(tps, 10.0) for tps in (10, 20, 30, 40, 50)]
    assert not any(watch.add(r, True) for r in ramp)  # five intervals, but a ramp and before least_s
    flat = [report(100, 10.0) for _ in range(5)]
    ended = [watch.add(r, True) for r in flat]
    assert ended == [False, False, False, False, True] and watch.steady, ended  # the 10th: its last five flat
    assert watch.reading() == {"steady": 1.0, "measured_s": 10.0, "intervals": 10.0}
    assert not watch.add(report(100, 10.0), True)  # said once
    assert "steady (SNIA, last 5 intervals) after 10s measured" in watch.line("step 1")


def test_intervals_outside_the_window_are_not_judged_and_max_is_said() -> None:
    watch = SteadyWatch(least_s=0.0, most_s=5.0)
    assert not any(watch.add(report(100, 10.0), False) for _ in range(6))  # ramp-up: not in the window
    assert [watch.add(r, True) for r in [report(t, 10.0) for t in (100, 50, 100, 50, 100)]] == [False] * 5
    assert watch.reading()["steady"] == 0.0
    assert watch.line("step 2") == ("step 2 NOT steady by --until-steady 5s: measured 5s, its last 5 intervals "
                                    "never passed the SNIA test")


@pytest.mark.parametrize(("most", "duration", "interval", "needle"), [
    (2.0, 1.0, 0.5, ("--until-steady 2s is shorter than 5 intervals of 0.5s, the window SNIA's test judges: give"
                     " at least 2.5s")),
    (30.0, 60.0, 1.0, "--until-steady 30s is shorter than --duration 60s: it extends"),
    (float("inf"), 1.0, 1.0, "--until-steady must be at most 30 days, not infs"),
    (float("nan"), 1.0, 1.0, "--until-steady must be at most 30 days, not nans"),
])
def test_a_max_that_cannot_judge_or_would_cut_the_window_is_refused(most: float, duration: float, interval: float,
                                                                   needle: str) -> None:
    with pytest.raises(TpsbenchError) as refused:
        check_until_steady(most, duration, interval)
    assert needle in str(refused.value) and "\n" not in str(refused.value)


def test_exactly_five_intervals_is_enough_and_the_warmup_ends_once_steady() -> None:
    check_until_steady(2.5, 1.0, 0.5)
    first = LoadStep(users=4, duration_s=60.0, rampup_s=1.0, interval_s=1.0, least_s=10.0)
    warm = warmup_step(30.0, first)
    assert warm is not None and (warm.duration_s, warm.least_s) == (30.0, 0.0)
    plain = warmup_step(30.0, LoadStep(users=4, duration_s=10.0))
    assert plain is not None and plain.least_s is None


@pytest.mark.slow
def test_a_warmup_until_steady_ends_once_steady_and_every_format_says_so(pg_url: str, tmp_path: Path) -> None:
    done = ramp_run(tmp_path, pg_url, "--warmup", "60s", "--interval", "1s",
                    "--until-steady", "60s")  # whole seconds: a p95 of some 40 transactions, not 15
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "the warm-up steady (SNIA, last 5 intervals) after " in done.stderr, done.stderr[-3000:]
    with sqlite3.connect(tmp_path / "results.db") as db:
        said = dict(db.execute("SELECT name, value FROM observations WHERE observer = 'until_steady' AND step = 0 "
                               "AND interval IS NULL").fetchall())
        warm = db.execute("SELECT t_end, tps, steady FROM intervals WHERE step = 0 ORDER BY interval").fetchall()
        (first,) = db.execute("SELECT min(t_start) FROM intervals WHERE step = 1").fetchone()
    # the warm-up ramped, then ended once steady: well before its 60 s, and before step 1
    assert said["steady"] == 1.0 and 5 <= said["measured_s"] < 50, said
    assert not any(steady for *_, steady in warm) and max(t for t, *_ in warm) <= first, warm
    results = f"sqlite:///{tmp_path / 'results.db'}"
    shown = {fmt: cli_in_process("report", "--format", fmt, "--results", results, cwd=tmp_path)
             for fmt in ("json", "markdown", "csv", "rich")}
    assert all(s.returncode == 0 for s in shown.values()), {f: s.stderr for f, s in shown.items()}
    import jsonschema  # a test dependency only, as in test_repeats

    doc = json.loads(shown["json"].stdout)
    jsonschema.Draft202012Validator(json_schema(doc["schema"])).validate(doc)
    warmup = doc["runs"][0]["warmup"]
    assert warmup["until_steady"] == {"steady": True, "measured_s": said["measured_s"]}, warmup
    assert warmup["steady_state"]["steady"] is True and warmup["steady_state"]["intervals"] == said["intervals"]
    assert warmup["users"] == 1 and warmup["seconds"] == pytest.approx(said["measured_s"], abs=0.05), warmup
    assert "until_steady" in doc["runs"][0]["steps"][0]["steady_state"], doc["runs"][0]["steps"][0]
    for fmt in ("markdown", "csv", "rich"):
        text = " ".join(shown[fmt].stdout.split())
        assert "Warm-up before step 1" in text and "steady; ended once steady after" in text, (fmt, text)
    page = tmp_path / "report.html"
    html = cli_in_process("report", "--format", "html", "--output", str(page), "--results", results, cwd=tmp_path)
    assert html.returncode == 0, html.stderr
    assert "Warm-up before step 1" in page.read_text() and ">warm-up<" in page.read_text()
