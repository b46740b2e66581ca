"""A database server restarted mid-step, for real, on PostgreSQL and on MariaDB.

What a user must be able to trust after a failover or a restart during a long run: the
run goes on (its users reconnect with back-off), the outage is recorded with the step
(when it began and how long it lasted), transactions whose connection was lost before
their outcome came back are counted in doubt, and the honesty check accounts for them
instead of failing by chance or passing by luck. Each test restarts an instance of its
own (tests/private_servers.py), never the servers other tests share.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from private_servers import PrivateMariadb, PrivatePostgres, private_server, wait_until_answering

from tpsbench.commands.build import build
from tpsbench.commands.run import RunConfig, run
from tpsbench.report.table import render

pytestmark = pytest.mark.slow

#: the step's steady window (s): the server goes down once its first interval is over and
#: must be back before the step ends (the honesty check reads it then); here it took 2 to
#: 4 s with the machine's load at 4 to 8, and its users were committing a second later
STEADY_S = 12.0


SERVERS = ("postgresql", "mysql")


@pytest.fixture(params=SERVERS)
def server(request: pytest.FixtureRequest) -> Iterator[PrivatePostgres | PrivateMariadb]:
    """An instance of the test's own: the shared servers are never restarted."""
    with private_server(request.param) as instance:
        yield instance


def test_a_run_survives_a_server_restart_mid_step(server: PrivatePostgres | PrivateMariadb, tmp_path: Path) -> None:
    url = server.url
    build("tpcc", 1, url, show_progress=False)
    restarts: list[tuple[float, float]] = []
    failures: list[BaseException] = []
    started = threading.Event()

    def restart_now() -> None:
        began = time.time()
        try:
            server.restart()
            wait_until_answering(server)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failures.append(exc)
        restarts.append((began, time.time()))

    def live(line: str) -> None:
        # the first interval of the steady window is over: the restart falls in that window
        # however long the machine took to start the step
        if line.startswith("[") and "ramp-up" not in line and not started.is_set():
            started.set()
            threading.Thread(target=restart_now, daemon=True).start()

    config = RunConfig("tpcc", url, users=[4], rampup_s=1.0, duration_s=STEADY_S, interval_s=1.0, seed=5,
                       results_url=f"sqlite:///{tmp_path}/results.db", options={"think": "off"})
    record = run(config, live=live)
    assert not failures, failures
    assert len(restarts) == 1, "the server was not restarted during the run"

    assert record.status == "completed"
    (step,) = record.outcome.steps
    total = step.total()
    assert total is not None and total.reconnects >= 1
    assert total.total("commits") > 0
    in_doubt = total.total("in_doubt")
    assert in_doubt >= 1  # four users, no think time: someone was mid-transaction
    honesty = record.honesty
    assert honesty["match"] is True, honesty
    assert sum(honesty["in_doubt"].values()) == in_doubt
    for key, expected in honesty["expected"].items():
        assert expected <= honesty["actual"][key] <= honesty["most"][key]

    # the outage, with the step: it began near the restart and lasted about as long
    data = record.store.load_run(record.run_id)
    began, ended = restarts[0]
    outage = [data.readings(1, i.interval).get("outage", {}) for i in data.intervals if i.step == 1]
    starts = [r["first_at"] for r in outage if "first_at" in r]
    down = sum(r.get("down_s", 0.0) for r in outage)
    assert len(starts) >= 1 and began - 0.5 <= min(starts) <= ended, (starts, restarts)
    assert 0.0 < down <= (ended - began) + 3.0, (down, restarts)

    text = render([data])
    assert "the database was unreachable for" in text
    assert "Outage (s)" in text  # the restart fell in the steady window
    assert f"honesty check matches: {in_doubt:,} transaction(s) in doubt" in text
    assert "In doubt" in text
