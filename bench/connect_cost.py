"""What opening one MySQL/MariaDB connection costs the client, per driver and TLS choice.

Why: a run of thousands of users opens that many connections over its ramp-up, and a
login the client is too busy to finish within the server's connect_timeout is reset by
the server. Measured here: N connections opened one after another through tpsbench's
target (``Target.connect``), the client thread's CPU and the wall time per connection,
for PyMySQL as tpsbench connects it, PyMySQL with its own TLS default (``ssl_disabled=0``
in the URL: PyMySQL 1.2 then builds each connection a context from the system's CA store)
and mysqlclient where installed. One line per variant is appended to the results file.

    PYTHONPATH=src python bench/connect_cost.py [--url mysql://root@127.0.0.1/mysql] [--connections 200]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import time
from datetime import datetime
from pathlib import Path

from sqlalchemy.engine import make_url

from tpsbench.targets import open_target

RESULTS = Path(__file__).parent / "results" / "connect_cost.txt"


def cost(url: str, connections: int) -> tuple[float, float]:
    """(client CPU, wall time) per connection in ms, over ``connections`` opened in turn."""
    target = open_target(url)
    target.connect().close()  # imports and the first connection's one-time work, not counted
    cpu, wall = time.thread_time(), time.perf_counter()
    for _ in range(connections):
        target.connect().close()
    return ((time.thread_time() - cpu) * 1000 / connections, (time.perf_counter() - wall) * 1000 / connections)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="mysql://root@127.0.0.1/mysql", help="a MySQL/MariaDB database")
    parser.add_argument("--connections", type=int, default=200, help="connections per variant")
    args = parser.parse_args()
    base = make_url(args.url)
    variants = {"pymysql": base.set(drivername="mysql+pymysql"),
                "pymysql ssl_disabled=0": base.set(drivername="mysql+pymysql").update_query_dict({"ssl_disabled": "0"})}
    if importlib.util.find_spec("MySQLdb"):
        variants["mysqlclient"] = base.set(drivername="mysql+mysqldb")
    load = os.getloadavg()[0]
    lines = [f"# bench/connect_cost.py {datetime.now():%Y-%m-%d %H:%M}: {args.connections} connections a variant "
             f"to {base.host}:{base.port or 3306}, one after another; PyMySQL {importlib.metadata.version('PyMySQL')};"
             f" {os.cpu_count()} cores, load average at start {load:.1f}"]
    for name, url in variants.items():
        cpu, wall = cost(url.render_as_string(hide_password=False), args.connections)
        lines.append(f"{name}: client CPU {cpu:.2f} ms, wall {wall:.2f} ms per connection")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with RESULTS.open("a") as out:
        out.write(text + "\n")


if __name__ == "__main__":
    main()
