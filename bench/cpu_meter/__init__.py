"""The CPU meter of the bench scripts: driver, database server and machine CPU from /proc
(``from cpu_meter import ...``, with bench/ on sys.path).

Three ways to read it, for three kinds of benchmark, over one set of /proc readers:

- :class:`Meter`, around a ``with`` block: client CPU (this process and its finished
  children: sysbench, a bare loop), the server's CPU on the benchmark database, how busy
  the machine (and, with the server pinned by bench/split_cores.py, the server's cores)
  was. For bench/vs_sysbench.py and bench/experiments/python_floor.py.
- :class:`WindowMeter`, the same figures for a tpsbench step over its steady window
  exactly: a step observer, sampled by the engine at the window's edges.
  For bench/vs_sysbench.py and bench/client_paths.py.
- :class:`Monitor`, a spawned process that samples every ``every`` seconds (0.25 s by
  default) around a run, itself not counted, and splits the CPU into the driver's and
  the server's parts; :meth:`Monitor.window` interpolates the samples at a window's
  edges. For bench/engine_tpcc.py (and bench/engine_300_users.py,
  bench/engine_tpcc_revs.py, bench/experiments/python_floor.py). What it counts:

  - the driver: the coordinator (the process that started the monitor) and every child of
    it (the worker processes), the monitor and multiprocessing's resource tracker excepted;
  - PostgreSQL: every child of the postmaster and the postmaster itself, split into the
    backends of the run's database and their parallel-query workers ("ours") and the
    server's background processes (checkpointer, WAL writer, background writer ...);
    client backends of other databases and their helpers (other people's work on the
    shared server) are left out;
  - MariaDB: the threads of mariadbd (/proc/<pid>/task), split the same way through
    information_schema.PROCESSLIST's TID column: threads serving the run's database
    ("ours"), threads serving other connections (left out), and the rest (background:
    InnoDB purge, page cleaner, log writer ...). A thread that lives and dies between two
    samples is not seen at all.

The /proc readers are tpsbench.measure.procfs of THIS checkout, loaded from its file
(see :data:`procfs`), never the package under test: bench/engine_tpcc_revs.py measures
older revisions with this same meter, and older revisions have no procfs module.
"""

from cpu_meter.meter import Meter, ServerCpu, WindowMeter
from cpu_meter.monitor import SAMPLE_S, Monitor, Sample, Window, monitor_main, pg_role
from cpu_meter.readers import (
    SERVER_PROCESSES,
    TICK,
    cpu_times,
    find_server,
    procfs,
    server_threads,
    server_ticks,
)

__all__ = ["SAMPLE_S", "SERVER_PROCESSES", "TICK", "Meter", "Monitor", "Sample", "ServerCpu", "Window", "WindowMeter",
           "cpu_times", "find_server", "monitor_main", "pg_role", "procfs", "server_threads", "server_ticks"]
