"""MariaDB point selects with the server on a core of its own: text protocol against
server-side prepared statements (issue 20).

Why: where the driver has a machine of its own, as in the storage reviews, TPS follows the
work the server does per transaction. sysbench executes prepared statements
(COM_STMT_EXECUTE, binary protocol); tpsbench's MySQL hot path sends text (COM_QUERY
through mysqlclient), which the server parses every time. mariadb_protocols.py compared
the two on shared cores, where the client's CPU decides; this measures what each path
costs the *server* per statement, with every mariadbd thread pinned to CPU 0 and this
process to the others (bench/vs_sysbench.py's SplitCores, restored afterwards).

Paths, each on sysbench's point select (``SELECT c FROM sbtest<t> WHERE id=?``, a random
table of 10 and an id drawn as sysbench draws it; one statement per transaction, as
oltp_point_select):

* ``text mysqlclient``: what tpsbench sends today (targets/mysql/mysqlclient.py's counting
  cursor): ``query`` of the literal statement, ``discard_result``.
* ``prep mariadb``: MariaDB Connector/Python (``pip install mariadb``),
  ``cursor(prepared=True).execute`` + ``fetchall``, a cursor per table (1.1 sends these
  as text: the first table of the output shows what the server received).
* ``prep myconn-c``: mysql-connector-python's C extension (``use_pure=False``),
  ``cursor(prepared=True)``, a cursor per table (one re-prepares when its SQL changes);
  its 26.x wheel wants OpenSSL 3.2, which Debian 12 lacks, so this script re-executes
  itself with the wheel's own OpenSSL (mysql/vendor) first in LD_LIBRARY_PATH.
* ``prep cffi``: :class:`Stmt`, a binding of our own over libmariadb's ``mysql_stmt_*``
  calls through cffi in ABI mode (``dlopen("libmariadb.so.3")``: nothing compiled at
  install): one statement prepared per table and connection, its parameter bound once to
  a C int, ``mysql_stmt_execute`` + ``store_result`` + ``free_result``; also
  non-blocking (``MYSQL_OPT_NONBLOCK``, ``mysql_stmt_execute_start``/``_cont``), as the
  engine's shared thread needs.

First, what the server counts per statement of each path (SHOW GLOBAL STATUS:
Com_stmt_prepare, Com_stmt_execute ...), which tells the protocol a path really speaks.
Then two phases, the paths interleaved round by round (the order reversed every round):
one connection, ``--statements`` point selects one after the other (client and server CPU
per statement with no queueing); then ``--threads`` connections for ``--seconds``, on a
thread each, and for the paths that can send without waiting also all on one thread
over epoll (tpsbench's shared thread), with ``sysbench oltp_point_select`` at the same
threads as the reference: statements/s, server and client CPU per statement, and how
busy the server's core was. Server CPU is all of mariadbd's (the machine otherwise quiet).

    python bench/experiments/mysql_prepared.py [--statements 20000] [--seconds 20] [--threads 8] [--rounds 2]
        [--server-cpus 0] [--url URL]

Needs the tables of bench/vs_sysbench.py (tpsb_sb_bench on $TPSBENCH_BENCH_MYSQL's server,
else 127.0.0.1's); made with ``sysbench prepare`` when missing. Results:
bench/experiments/results/mysql_prepared.txt.
"""

from __future__ import annotations

import argparse
import os
import random
import select
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # bench/: the modules shared with it
from servers import add_url_options, mysql_args  # type: ignore[import-not-found]
from cpu_meter import Meter, SplitCores, cpu_text, parse_cpus  # type: ignore[import-not-found]
from vs_sysbench import (  # type: ignore[import-not-found]
    DB,
    TABLE_SIZE,
    TABLES,
    ensure_sysbench,
    prepare_tables,
    run_sysbench,
)

from tpsbench.targets import libmariadb
from tpsbench.workloads.sysbench.rand import RandParams, SbRand

SELECT = "SELECT c FROM sbtest%d WHERE id=%s"
#: ids drawn as sysbench 1.0 draws them by default (--rand-type=special: 75 % of draws in 1 %
#: of the rows): the server's CPU per point select depends on that locality, so the
#: figures compare with sysbench's only on the same distribution
IDENT = SbRand(random.Random(), RandParams()).default

#: the part of libmariadb's C API the binding calls: tpsbench's (targets/mysql/libmariadb.py),
#: and the connecting and non-blocking calls this experiment makes itself
CDEF = libmariadb.CDEF + """
MYSQL *mysql_init(MYSQL *mysql);
MYSQL *mysql_real_connect(MYSQL *mysql, const char *host, const char *user, const char *passwd,
                          const char *db, unsigned int port, const char *unix_socket, unsigned long flags);
int mysql_real_connect_start(MYSQL **ret, MYSQL *mysql, const char *host, const char *user, const char *passwd,
                             const char *db, unsigned int port, const char *unix_socket, unsigned long flags);
int mysql_real_connect_cont(MYSQL **ret, MYSQL *mysql, int status);
unsigned int mysql_errno(MYSQL *mysql);
const char *mysql_error(MYSQL *mysql);
void mysql_close(MYSQL *mysql);
int mysql_stmt_store_result_start(int *ret, MYSQL_STMT *stmt);
int mysql_stmt_store_result_cont(int *ret, MYSQL_STMT *stmt, int status);
"""
MYSQL_SET_CHARSET_NAME, MYSQL_OPT_NONBLOCK = 7, 6000
MYSQL_TYPE_LONG = 3
MYSQL_WAIT_READ, MYSQL_WAIT_WRITE = 1, 2


class Stmt:
    """One libmariadb connection with sysbench's point select prepared once per table.

    The id parameter is bound once to a C int (libmariadb reads the bound buffer at every
    execute), so a statement costs Python one store and two or three C calls; the row is
    read into libmariadb's buffer and freed unconverted, as sysbench reads it. With
    ``nonblock`` also :meth:`send` / :meth:`fileno` / :meth:`receive`, libmariadb's
    non-blocking calls, for one thread serving many connections.
    """

    ffi: Any = None
    lib: Any = None

    def __init__(self, url: str, nonblock: bool = False) -> None:
        if Stmt.lib is None:
            from cffi import FFI

            Stmt.ffi = FFI()
            Stmt.ffi.cdef(CDEF)
            Stmt.lib = Stmt.ffi.dlopen("libmariadb.so.3")
        ffi, lib, args = self.ffi, self.lib, mysql_args(url)
        self.conn = lib.mysql_init(ffi.NULL)
        lib.mysql_options(self.conn, MYSQL_SET_CHARSET_NAME, b"utf8mb4")
        given = (args["host"].encode(), args["user"].encode(), args["password"].encode(), args["database"].encode(),
                 args.get("port", 3306), ffi.NULL, 0)
        if nonblock:
            self._connect_nonblocking(given)
        elif not lib.mysql_real_connect(self.conn, *given):
            raise RuntimeError(ffi.string(lib.mysql_error(self.conn)).decode())
        self.ident = ffi.new("int *")
        self.bind = ffi.new("MYSQL_BIND *")
        self.bind.buffer, self.bind.buffer_type = self.ident, MYSQL_TYPE_LONG
        self.stmts = [self._prepare((SELECT % (t, "?")).encode()) for t in range(1, TABLES + 1)]
        self.ret = ffi.new("int *")
        self.pending: Any = None
        self.phase = 0  # non-blocking: 1 while executing, 2 while storing the result

    def _connect_nonblocking(self, given: tuple[Any, ...]) -> None:
        """Connect through the non-blocking calls: only a connection made so has the
        non-blocking socket that mysql_stmt_execute_start needs (made by the blocking
        mysql_real_connect, the _start calls run to the end, blocking)."""
        ffi, lib = self.ffi, self.lib
        lib.mysql_options(self.conn, MYSQL_OPT_NONBLOCK, ffi.NULL)
        ret = ffi.new("MYSQL **")
        status = lib.mysql_real_connect_start(ret, self.conn, *given)
        while status:
            fd = lib.mysql_get_socket(self.conn)
            readable, writable, _ = select.select([fd] if status & MYSQL_WAIT_READ else [],
                                                  [fd] if status & MYSQL_WAIT_WRITE else [], [], 10.0)
            status = lib.mysql_real_connect_cont(ret, self.conn, (MYSQL_WAIT_READ if readable else 0)
                                                 | (MYSQL_WAIT_WRITE if writable else 0))
        if ret[0] == ffi.NULL:
            raise RuntimeError(ffi.string(lib.mysql_error(self.conn)).decode())

    def _prepare(self, sql: bytes) -> Any:
        stmt = self.lib.mysql_stmt_init(self.conn)
        if self.lib.mysql_stmt_prepare(stmt, sql, len(sql)) or self.lib.mysql_stmt_bind_param(stmt, self.bind):
            raise RuntimeError(self.ffi.string(self.lib.mysql_stmt_error(stmt)).decode())
        return stmt

    def _check(self, stmt: Any, failed: int) -> None:
        if failed:
            raise RuntimeError(self.ffi.string(self.lib.mysql_stmt_error(stmt)).decode())

    def one(self, table: int, ident: int) -> None:
        stmt, lib = self.stmts[table - 1], self.lib
        self.ident[0] = ident
        self._check(stmt, lib.mysql_stmt_execute(stmt) or lib.mysql_stmt_store_result(stmt))
        lib.mysql_stmt_free_result(stmt)

    def rows(self, table: int, ident: int) -> int:
        """Rows the statement found (a check that the binding binds)."""
        stmt = self.stmts[table - 1]
        self.ident[0] = ident
        self._check(stmt, self.lib.mysql_stmt_execute(stmt) or self.lib.mysql_stmt_store_result(stmt))
        found = int(self.lib.mysql_stmt_num_rows(stmt))
        self.lib.mysql_stmt_free_result(stmt)
        return found

    def fileno(self) -> int:
        return int(self.lib.mysql_get_socket(self.conn))

    def send(self, table: int, ident: int) -> bool:
        """Start the execute: the statement is written (a few bytes: at once), its answer
        awaited (a readable socket). True if the answer was in already (the server, on a
        core of its own, can answer before libmariadb first reads): then it is read too."""
        stmt = self.pending = self.stmts[table - 1]
        self.ident[0] = ident
        self.phase = 1
        if self.lib.mysql_stmt_execute_start(self.ret, stmt):
            return False
        self._check(stmt, self.ret[0])
        return self._store(self.lib.mysql_stmt_store_result_start(self.ret, stmt))

    def receive(self) -> bool:
        """Carry on once the socket is readable: True when the result is read and freed."""
        lib, stmt = self.lib, self.pending
        if self.phase == 1:
            if lib.mysql_stmt_execute_cont(self.ret, stmt, MYSQL_WAIT_READ):
                return False
            self._check(stmt, self.ret[0])
            return self._store(lib.mysql_stmt_store_result_start(self.ret, stmt))
        return self._store(lib.mysql_stmt_store_result_cont(self.ret, stmt, MYSQL_WAIT_READ))

    def _store(self, waiting: int) -> bool:
        if waiting:
            self.phase = 2
            return False
        self._check(self.pending, self.ret[0])
        self.lib.mysql_stmt_free_result(self.pending)
        self.phase = 0
        return True

    def close(self) -> None:
        for stmt in self.stmts:
            self.lib.mysql_stmt_close(stmt)
        self.lib.mysql_close(self.conn)


class Text:
    """tpsbench's text path on mysqlclient's C connection, as its counting cursor sends it."""

    def __init__(self, url: str) -> None:
        import MySQLdb

        self.conn = MySQLdb.connect(**mysql_args(url), autocommit=True)
        self.drop = self.conn.discard_result

    def one(self, table: int, ident: int) -> None:
        self.conn.query(b"SELECT c FROM sbtest%d WHERE id=%d" % (table, ident))
        self.drop()

    def fileno(self) -> int:
        return int(self.conn.fileno())

    def send(self, table: int, ident: int) -> bool:
        self.conn.send_query(b"SELECT c FROM sbtest%d WHERE id=%d" % (table, ident))
        return False

    def receive(self) -> bool:
        self.conn.read_query_result()
        self.drop()
        return True

    def close(self) -> None:
        self.conn.close()


class DbapiPrepared:
    """A DB-API driver's prepared cursors (``cursor(prepared=True)``), one per table: a
    prepared cursor keeps the last statement it prepared only (mysql-connector's closes
    it and prepares anew when the SQL changes), as a target would keep one per statement."""

    def __init__(self, conn: Any, marker: str) -> None:
        self.conn = conn
        self.cursors = [(conn.cursor(prepared=True), SELECT % (t, marker)) for t in range(1, TABLES + 1)]

    def one(self, table: int, ident: int) -> None:
        cur, sql = self.cursors[table - 1]
        cur.execute(sql, (ident,))
        cur.fetchall()

    def close(self) -> None:
        for cur, _ in self.cursors:
            cur.close()
        self.conn.close()


def mariadb_prepared(url: str) -> DbapiPrepared:
    import mariadb

    return DbapiPrepared(mariadb.connect(**mysql_args(url), autocommit=True), "?")


def myconn_prepared(url: str) -> DbapiPrepared:
    import mysql.connector

    return DbapiPrepared(mysql.connector.connect(**mysql_args(url), autocommit=True, use_pure=False), "%s")


#: path -> (connection factory, and where it can send without waiting the factory of such a
#: connection). libmariadb's blocking calls on a MYSQL_OPT_NONBLOCK connection poll a
#: non-blocking socket (a read that fails, a poll, a read again), so the cffi path gets a
#: blocking connection where it is used blocking.
PATHS: dict[str, tuple[Callable[[str], Any], Callable[[str], Any] | None]] = {
    "text mysqlclient": (Text, Text),
    "prep mariadb": (mariadb_prepared, None),
    "prep myconn-c": (myconn_prepared, None),
    "prep cffi": (Stmt, lambda url: Stmt(url, nonblock=True)),
}
#: the server's counters that tell which protocol a path speaks
COMMANDS = ("Com_stmt_prepare", "Com_stmt_execute", "Com_stmt_close", "Com_select", "Bytes_received")


def commands(make: Callable[[str], Any], url: str, n: int = 1000) -> dict[str, float]:
    """What the server counted per statement of the path (SHOW GLOBAL STATUS around ``n``
    statements): whether it prepares once and executes (COM_STMT_EXECUTE) or sends text."""
    import MySQLdb

    monitor, conn = MySQLdb.connect(**mysql_args(url)), make(url)

    def status() -> dict[str, int]:
        names = ",".join(f"'{c}'" for c in COMMANDS)
        monitor.query(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})".encode())
        return {str(name): int(value) for name, value in monitor.store_result().fetch_row(0)}

    try:
        conn.one(1, 1)
        before = status()
        for _ in range(n):
            conn.one(*draw())
        after = status()
    finally:
        conn.close()
        monitor.close()
    return {name: (after[name] - before[name]) / n for name in COMMANDS}


def draw() -> tuple[int, int]:
    return random.randint(1, TABLES), IDENT(1, TABLE_SIZE)


def sequential(make: Callable[[str], Any], url: str, n: int, server_cpus: frozenset[int]) -> list[float]:
    """One connection, ``n`` statements in a row: [statements/s, client us, server us per statement]."""
    conn = make(url)
    try:
        draws = [draw() for _ in range(n)]
        for table, ident in draws[:500]:
            conn.one(table, ident)
        with Meter("mariadb", DB, server_cpus) as meter:
            for table, ident in draws:
                conn.one(table, ident)
    finally:
        conn.close()
    return [n / meter.wall, 1e6 * meter.client_cpu / n, 1e6 * meter.server_cpu / n]


def threaded(make: Callable[[str], Any], url: str, threads: int, seconds: float, server_cpus: frozenset[int],
             shared: bool) -> list[float]:
    """``threads`` connections for ``seconds``, each on a thread of its own or (``shared``) all on
    this thread over epoll: [statements/s, client us, server us per statement, server core busy]."""
    conns = [make(url) for _ in range(threads)]
    counts = [0] * threads
    try:
        with Meter("mariadb", DB, server_cpus) as meter:
            deadline = time.monotonic() + seconds
            if shared:
                multiplexed(conns, counts, deadline)
            else:
                workers = [threading.Thread(target=loop, args=(conn, counts, i, deadline)) for i, conn in enumerate(conns)]
                for worker in workers:
                    worker.start()
                for worker in workers:
                    worker.join()
    finally:
        for conn in conns:
            conn.close()
    done = sum(counts)
    return [done / meter.wall, 1e6 * meter.client_cpu / done, 1e6 * meter.server_cpu / done,
            meter.server_cores_busy or 0.0]


def loop(conn: Any, counts: list[int], slot: int, deadline: float) -> None:
    one, randint, n = conn.one, random.randint, 0
    while True:
        one(randint(1, TABLES), IDENT(1, TABLE_SIZE))
        n += 1
        if not n % 64 and time.monotonic() > deadline:
            break
    counts[slot] = n


def multiplexed(conns: list[Any], counts: list[int], deadline: float) -> None:
    """Every connection on this thread: send, wait on all sockets at once, read, send again
    (a ``send`` that returns True was answered at once: count it and send the next)."""
    poller, by_fd, randint = select.epoll(), {}, random.randint
    out = len(conns)

    def issue(i: int) -> None:
        nonlocal out
        conn = conns[i]
        while True:
            if not counts[i] % 64 and time.monotonic() >= deadline:
                out -= 1
                poller.unregister(conn.fileno())
                return
            if not conn.send(randint(1, TABLES), IDENT(1, TABLE_SIZE)):
                return
            counts[i] += 1

    for i, conn in enumerate(conns):
        by_fd[conn.fileno()] = i
        poller.register(conn.fileno(), select.EPOLLIN)
    for i in range(len(conns)):
        issue(i)
    while out:
        for fd, _ in poller.poll():
            i = by_fd[fd]
            if conns[i].receive():
                counts[i] += 1
                issue(i)
    poller.close()


def tables_ready(url: str) -> bool:
    """Whether the database holds sysbench's tables at the size measured here."""
    import MySQLdb

    try:
        conn = MySQLdb.connect(**mysql_args(url))
    except MySQLdb.OperationalError:
        return False
    try:
        conn.query(b"SELECT MAX(id) FROM sbtest%d" % TABLES)
        return conn.store_result().fetch_row()[0][0] == TABLE_SIZE
    except MySQLdb.ProgrammingError:  # no such table
        return False
    finally:
        conn.close()


def with_vendored_openssl() -> None:
    """Re-execute with mysql-connector-python's own OpenSSL first (its C extension needs 3.2)."""
    import importlib.util

    spec = importlib.util.find_spec("mysql")
    if spec is None or not spec.submodule_search_locations:
        return
    vendor = str(Path(next(iter(spec.submodule_search_locations))) / "vendor")
    if Path(vendor).is_dir() and vendor not in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        os.environ["LD_LIBRARY_PATH"] = ":".join(filter(None, [vendor, os.environ.get("LD_LIBRARY_PATH")]))
        os.execv(sys.executable, [sys.executable, *sys.argv])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--statements", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--server-cpus", type=parse_cpus, default=frozenset({0}), metavar="LIST")
    add_url_options(parser, DB, ("mariadb",), single=True)
    args = parser.parse_args(argv)
    with_vendored_openssl()
    binary = ensure_sysbench()
    if not tables_ready(args.url):
        prepare_tables(binary, "mariadb", args.url)
    check = Stmt(args.url)
    assert check.rows(3, 77) == 1 and check.rows(3, TABLE_SIZE + 1) == 0, "the binding does not bind its parameter"
    check.close()
    import mariadb
    import mysql.connector
    import MySQLdb

    spoken = {name: commands(PATHS[name][0], args.url) for name in PATHS}
    load = os.getloadavg()[0]
    clients = frozenset(os.sched_getaffinity(0)) - args.server_cpus
    seq: dict[str, list[list[float]]] = {name: [] for name in PATHS}
    par: dict[str, list[list[float]]] = {}
    with SplitCores(["mariadb"], args.server_cpus, clients) as split:
        print(f"# {split.describe()}; load average {load:.2f} at the start; mysqlclient {MySQLdb.version_info[:3]}, "
              f"mariadb {mariadb.__version__}, mysql-connector-python {mysql.connector.__version__}; "
              f"{time.strftime('%Y-%m-%d %H:%M')}", flush=True)
        for round_no in range(args.rounds):
            names = list(PATHS) if round_no % 2 == 0 else list(PATHS)[::-1]
            for name in names:
                split.pin()
                seq[name].append(sequential(PATHS[name][0], args.url, args.statements, args.server_cpus))
            for name in names:
                blocking, sending = PATHS[name]
                variants = [(f"{name} threads", blocking, False)] + ([(f"{name} epoll", sending, True)] if sending else [])
                for label, make, shared in variants:
                    split.pin()
                    par.setdefault(label, []).append(
                        threaded(make, args.url, args.threads, args.seconds, args.server_cpus, shared))
            split.pin()
            sb = run_sysbench(binary, "mariadb", args.url, "oltp_point_select", round(args.seconds), args.threads,
                              args.server_cpus)
            par.setdefault("sysbench (C, prepared)", []).append(
                [sb.tps, sb.us_per_txn(sb.client_cpu_s), sb.us_per_txn(sb.server_cpu_s), sb.server_cores_busy or 0.0])
            print(f"# round {round_no + 1} of {args.rounds} done", flush=True)
    print("# what the server counted per statement of each path (SHOW GLOBAL STATUS around 1,000 statements)")
    print(f"{'path':18} " + " ".join(f"{name.removeprefix('Com_'):>14}" for name in COMMANDS))
    for name, counted in spoken.items():
        print(f"{name:18} " + " ".join(f"{counted[c]:14.2f}" for c in COMMANDS))
    print(f"# one connection, {args.statements:,} point selects in a row, x {args.rounds} rounds; us per statement "
          "(each round's figure in brackets)")
    print(f"{'path':18} {'stmt/s':>8} {'client us':>10} {'server us':>22}")
    for name, rows in seq.items():
        print(f"{name:18} {_mean(rows, 0):8,.0f} {_mean(rows, 1):10.1f} {_mean(rows, 2):8.1f} ({_each(rows, 2)})")
    print(f"# {args.threads} connections, {args.seconds:.0f} s, x {args.rounds} rounds; server on CPU "
          f"{cpu_text(args.server_cpus)}, clients on CPU {cpu_text(clients)}")
    print(f"{'path':28} {'stmt/s':>20} {'client us':>10} {'server us':>22} {'server busy':>11}")
    for name, rows in par.items():
        print(f"{name:28} {_mean(rows, 0):8,.0f} ({_each(rows, 0, '.0f')}) {_mean(rows, 1):10.1f} "
              f"{_mean(rows, 2):8.1f} ({_each(rows, 2)}) {_mean(rows, 3):11.2f}")


def _mean(rows: list[list[float]], col: int) -> float:
    return sum(row[col] for row in rows) / len(rows)


def _each(rows: list[list[float]], col: int, spec: str = ".1f") -> str:
    return ", ".join(format(row[col], spec) for row in rows)


if __name__ == "__main__":
    main(sys.argv[1:])
