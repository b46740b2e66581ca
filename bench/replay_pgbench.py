"""Does a trace replay keep up with the client it captured? pgbench unpaced, side by side
for revisions of tpsbench.

Each round: pgbench's TPC-B-like database at scale 1 (``pgbench -i``) and a copy of it
(CREATE DATABASE ... TEMPLATE), pgbench at 4 clients as fast as it goes (no ``-R``), a
``tpsbench capture`` of ``--window`` seconds of it, then each revision's ``tpsbench
replay`` of that trace at speed 1, each on its own fresh copy. Printed per replay: the
traced and replayed statements a second (as replay's title gives them) and their
difference, whether every normalised statement was replayed as often as captured with
no error, pgbench's invariant on the copy (the sums of the accounts', tellers' and
branches' balances and of the history's deltas equal), the replay process's CPU time
(user + system), and the load average before and after. The machine is shared: the
load average says how quiet it was.

    python bench/replay_pgbench.py --rev base=main --rev new=work --rounds 3 --window 60

``work`` is the working tree; other revisions are exported with ``git archive``
(bench/revisions.py). Needs pgbench and a superuser on ``--url``'s server.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from revisions import source_tree  # type: ignore[import-not-found]
from servers import add_url_options, pg_conninfo, with_database  # type: ignore[import-not-found]

PREFIX = "tpsb_replay_pgbench"
TITLE = re.compile(r"replayed at speed 1: ([\d.]+) statements/s \(traced ([\d.]+)/s\)")


def psql(url: str, *sql: str) -> str:
    args = ["psql", pg_conninfo(url), "-Atq", "-v", "ON_ERROR_STOP=1"]
    for statement in sql:
        args += ["-c", statement]
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def tpsbench(src: Path, *args: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    """A tpsbench command of the revision at ``src``, and its CPU seconds (user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "tpsbench", *args], cwd=cwd, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(src)))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def counts(table: str) -> dict[str, tuple[int, int, int, int]]:
    """The replay table's rows: normalised statement (as shown) -> (traced, replayed, errors, in doubt)."""
    found = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 8 and cells[1].isdigit():
            found[cells[0]] = (int(cells[1]), int(cells[2]), int(cells[3]), int(cells[4]))
    return found


def invariant(url: str) -> str:
    sums = psql(url, "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM "
                     "pgbench_tellers), (SELECT sum(bbalance) FROM pgbench_branches), (SELECT coalesce(sum(delta), "
                     "0) FROM pgbench_history)").split("|")
    return f"holds ({sums[0]})" if len(set(sums)) == 1 else f"BROKEN ({'/'.join(sums)})"


def round_(number: int, server: str, revs: dict[str, Path], window: int, tmp: Path) -> None:
    source, copy = f"{PREFIX}_src", f"{PREFIX}_copy"
    psql(with_database(server, "postgres"), f"DROP DATABASE IF EXISTS {source} WITH (FORCE)",
         f"DROP DATABASE IF EXISTS {copy} WITH (FORCE)", f"CREATE DATABASE {source}")
    subprocess.run(["pgbench", "-i", "-s", "1", "-q", pg_conninfo(server, source)], check=True, capture_output=True)
    psql(with_database(server, "postgres"), f"CREATE DATABASE {copy} TEMPLATE {source}")
    before = load()
    bench = subprocess.Popen(["pgbench", "-c", "4", "-T", str(window + 10), pg_conninfo(server, source)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(2)
    trace = tmp / f"round{number}.trace"
    first = next(iter(revs.values()))
    cap, _ = tpsbench(first, "capture", "--db", with_database(server, source), "--duration", f"{window}s", "-o",
                      str(trace), "--allow-settings", cwd=tmp)
    out, _ = bench.communicate()
    if cap.returncode != 0:
        raise SystemExit(f"capture failed: {cap.stderr.strip()}")
    tps = re.search(r"tps = ([\d.]+)", out)
    print(f"round {number}: pgbench -c 4 unpaced {tps.group(1) if tps else '?'} TPS; load average {before} "
          f"-> {load()} during the capture", flush=True)
    for name, src in revs.items():
        target = f"{PREFIX}_{name}"
        psql(with_database(server, "postgres"), f"DROP DATABASE IF EXISTS {target} WITH (FORCE)",
             f"CREATE DATABASE {target} TEMPLATE {copy}")
        before = load()
        rep, cpu = tpsbench(src, "replay", str(trace), "--db", with_database(server, target), "--results",
                            f"sqlite:///{tmp / (name + '.db')}", cwd=tmp)
        title = TITLE.search(rep.stdout)
        if rep.returncode != 0 or title is None:
            raise SystemExit(f"replay ({name}) failed: {rep.stderr.strip()[-500:]}")
        replayed, traced = float(title.group(1)), float(title.group(2))
        rows = counts(rep.stdout)
        # no row read is a table this script no longer understands, not a replay that matched
        same = bool(rows) and all(t == r and e == d == 0 for t, r, e, d in rows.values())
        gap = 100 * (replayed / traced - 1)
        print(f"  {name:>6}: traced {traced:8.1f}/s replayed {replayed:8.1f}/s ({gap:+5.1f} %)"
              f"  counts {'equal' if same else 'DIFFER'} ({len(rows)} statements, "
              f"{sum(row[0] for row in rows.values())} traced)  invariant {invariant(with_database(server, target))}"
              f"  client CPU {cpu:5.1f} s  load {before} -> {load()}", flush=True)
        if number == 1 and name == list(revs)[-1]:
            for text, (t, r, e, d) in rows.items():
                print(f"          {t:7d} {r:7d} {e:3d} {d:3d}  {text}")
        psql(with_database(server, "postgres"), f"DROP DATABASE IF EXISTS {target} WITH (FORCE)")
    psql(with_database(server, "postgres"), f"DROP DATABASE IF EXISTS {source} WITH (FORCE)",
         f"DROP DATABASE IF EXISTS {copy} WITH (FORCE)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_url_options(parser, "", ("postgresql",), single=True)
    parser.add_argument("--rev", action="append", default=[], metavar="NAME=REV",
                        help="a revision to replay with (work: the working tree); default: new=work")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--window", type=int, default=60, help="seconds captured")
    args = parser.parse_args()
    if not shutil.which("pgbench"):
        raise SystemExit("pgbench is not installed")
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        revs = {name: source_tree(rev, tmp) for name, rev in (r.split("=", 1) for r in args.rev or ["new=work"])}
        print(f"pgbench TPC-B-like, scale 1, 4 clients unpaced; {args.window} s captured; replays at speed 1; "
              f"revisions {', '.join(args.rev or ['new=work'])}; {os.cpu_count()} cores", flush=True)
        for number in range(1, args.rounds + 1):
            round_(number, args.url, revs, args.window, tmp)


if __name__ == "__main__":
    main()
