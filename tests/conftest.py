"""Shared fixtures: a fresh, empty scratch database on each server that can run here.

``pg_url``, ``mysql_url`` and ``sqlite_url`` each yield a SQLAlchemy URL string of a new,
empty database that no other test sees, and drop it afterwards. The servers are found
at the addresses below, overridable by environment variables.

A test that needs a server which does not answer is SKIPPED on a developer's machine,
so that the rest of the suite still runs; with ``CI=true`` it FAILS instead, because
CI starts the servers and a silent skip there would hide a broken setup.

``built_tpcc_sqlite`` is a TPC-C scale 1 SQLite file built once per session (two
seconds each time a test built its own); tests run on copies of it (:func:`copy_of`),
never on it. ``built_tpcc_pg`` is the same on PostgreSQL, a template that
``scratch_pg_database(built_tpcc_pg)`` and ``tpcc_pg_url`` copy as files, far quicker
than a build; ``db_template`` makes such a template of any build, on PostgreSQL or on
MariaDB (copied table by table there).
:func:`slow_on` leaves a test's run on some servers to the full lane.
:func:`cli_in_process` runs a command that starts no processes without the
interpreter start of ``python -m tpsbench``. ``deliverable_sigint`` lets a test's subprocesses get Ctrl-C even when the
suite was started where SIGINT is ignored (``cmd &`` in a script, nohup).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import psycopg
import pymysql
import pytest
from sqlalchemy.engine import URL, make_url

# The tpsbench under test is this checkout's, whatever an editable install elsewhere points
# to (a fresh clone's .ci/run repoints it): here and in the CLI subprocesses the tests start.
SRC = str(Path(__file__).resolve().parent.parent / "src")
if sys.path[0] != SRC:
    sys.path.insert(0, SRC)
os.environ["PYTHONPATH"] = os.pathsep.join([SRC, *filter(None, [os.environ.get("PYTHONPATH")])])

#: server-level URLs (any database the user may connect to) used to create scratch databases
PG_ADMIN_URL = os.environ.get("TPSBENCH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
MYSQL_ADMIN_URL = os.environ.get("TPSBENCH_TEST_MYSQL", "mysql://root@127.0.0.1:3306/")
SCRATCH_PREFIX = "tpsb_tgt_"

#: tests side by side (``-n``) and the ``alone`` marker: tests/side_by_side.py
pytest_plugins = ("side_by_side",)


def unavailable(what: str, why: object = "") -> NoReturn:
    """Skip the test because ``what`` is missing here, or fail it when running in CI."""
    message = f"{what} is not available: {str(why).strip().splitlines()[0] if str(why).strip() else 'missing'}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message} (CI=true: the CI script must provide it)")
    pytest.skip(message)


@pytest.fixture
def require() -> Callable[[str, object], NoReturn]:
    """:func:`unavailable` for test modules: ``require("ODBC driver X", reason)`` skips or fails."""
    return unavailable


def scratch_name() -> str:
    """A database name no other test or engineer uses: the prefix and 12 random hex digits."""
    return SCRATCH_PREFIX + uuid.uuid4().hex[:12]


def _url_text(url: URL) -> str:
    return url.render_as_string(hide_password=False)


def _pg_admin() -> psycopg.Connection:
    url = make_url(PG_ADMIN_URL)
    try:
        return psycopg.connect(host=url.host or "127.0.0.1", port=url.port or 5432, user=url.username or "postgres",
                               password=url.password, dbname=url.database or "postgres", autocommit=True,
                               connect_timeout=5)
    except psycopg.OperationalError as exc:
        unavailable(f"PostgreSQL at {url.host}:{url.port or 5432}", exc)


@contextlib.contextmanager
def scratch_pg_database(template: str | None = None) -> Iterator[str]:
    """A fresh PostgreSQL database ``tpsb_tgt_<hex>`` as a URL string, dropped on exit.

    A context manager as well as the ``pg_url`` fixture, for module-scoped fixtures that
    build once and share the database between tests. With ``template`` (the URL of a built
    database no one is connected to, such as ``built_tpcc_pg``) it starts as a copy of it,
    which PostgreSQL makes file by file, far quicker than building again.
    """
    name = scratch_name()
    source = f' TEMPLATE "{make_url(template).database}"' if template else ""
    with _pg_admin() as admin:
        admin.execute(f'CREATE DATABASE "{name}"{source}')
    try:
        yield _url_text(make_url(PG_ADMIN_URL).set(drivername="postgresql+psycopg", database=name))
    finally:
        with _pg_admin() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_url() -> Iterator[str]:
    """``postgresql+psycopg://.../tpsb_tgt_<hex>``: a fresh PostgreSQL database, dropped after."""
    with scratch_pg_database() as url:
        yield url


def _mysql_admin() -> pymysql.Connection:
    url = make_url(MYSQL_ADMIN_URL)
    try:
        return pymysql.connect(host=url.host or "127.0.0.1", port=url.port or 3306, user=url.username or "root",
                               password=url.password or "", connect_timeout=5, autocommit=True)
    except pymysql.err.OperationalError as exc:
        unavailable(f"MySQL/MariaDB at {url.host}:{url.port or 3306}", exc)


def _copy_mysql_database(cur: Any, source: str, name: str) -> None:
    """Every table (its rows) and stored routine of ``source`` into the empty ``name``: MariaDB
    has no database template, and copying a built database is far quicker than building it."""
    cur.execute("SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = %s AND table_type = 'BASE TABLE'", (source,))
    for (table,) in cur.fetchall():
        cur.execute(f"CREATE TABLE `{name}`.`{table}` LIKE `{source}`.`{table}`")
        cur.execute(f"INSERT INTO `{name}`.`{table}` SELECT * FROM `{source}`.`{table}`")
    cur.execute("SELECT routine_name, routine_type FROM information_schema.routines WHERE routine_schema = %s",
                (source,))
    routines = cur.fetchall()
    cur.execute(f"USE `{name}`")  # a routine's CREATE names no database: it goes to the current one
    for routine, kind in routines:
        cur.execute(f"SHOW CREATE {kind} `{source}`.`{routine}`")
        _, sql_mode, create, *_ = cur.fetchone()
        cur.execute("SET SESSION sql_mode = %s", (sql_mode,))
        cur.execute(create)


@contextlib.contextmanager
def scratch_mysql_database(template: str | None = None) -> Iterator[str]:
    """A fresh MySQL/MariaDB database ``tpsb_tgt_<hex>`` as a URL string, dropped on exit;
    with ``template`` (the URL of a built database, such as ``db_template`` makes) a copy of it.

    The driver is mysqlclient where installed, else PyMySQL: the URL opens as it is in
    SQLAlchemy and in tpsbench. Connections a test left open on the database are
    killed before the drop, which would otherwise wait on their metadata locks.
    """
    name = scratch_name()
    admin = _mysql_admin()
    try:
        admin.cursor().execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    finally:
        admin.close()
    driver = "mysqldb" if importlib.util.find_spec("MySQLdb") else "pymysql"
    url = make_url(MYSQL_ADMIN_URL)
    try:
        if template:
            admin = _mysql_admin()
            try:
                _copy_mysql_database(admin.cursor(), str(make_url(template).database), name)
            finally:
                admin.close()
        yield _url_text(url.set(drivername=f"{url.get_backend_name()}+{driver}", database=name))
    finally:
        admin = _mysql_admin()
        try:
            cur = admin.cursor()
            cur.execute("SELECT id FROM information_schema.PROCESSLIST WHERE db = %s AND id <> CONNECTION_ID()",
                        (name,))
            for (thread,) in cur.fetchall():
                try:
                    cur.execute(f"KILL {int(thread)}")
                except pymysql.err.OperationalError:
                    pass  # it ended in the meantime
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        finally:
            admin.close()


@pytest.fixture
def mysql_url() -> Iterator[str]:
    """``mysql+<driver>://.../tpsb_tgt_<hex>``: a fresh MySQL/MariaDB database, dropped after."""
    with scratch_mysql_database() as url:
        yield url


#: connections a run holds beside its users (its step observers: database counters, the
#: outage probe, the waits sampler) plus a few for tests that start at the same moment
RUN_MARGIN = 6


def users_that_fit(url: str, wanted: int, least: int = 1, margin: int = RUN_MARGIN) -> int:
    """``wanted`` users, or as many as the server at ``url`` accepts now beside a run's own
    connections: the suite runs against servers at their shipped defaults (PostgreSQL 100
    connections, MariaDB 151) shared with whatever else is connected, and changes no setting.

    The room is tpsbench's own reading (``Target.connection_limit``: max_connections less
    the reserved and the connected); fewer than ``least`` is a server the test cannot use.
    """
    from tpsbench.targets import open_target

    free = open_target(url).connection_limit()
    if free is None:
        return wanted
    if free - margin < least:
        unavailable(f"room for {least} users at {make_url(url).host}", f"the server accepts {free} more connections")
    return min(wanted, free - margin)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """``sqlite:///<tmp_path>/tpsbench.db``: a SQLite file that does not exist yet."""
    return f"sqlite:///{tmp_path / 'tpsbench.db'}"


@pytest.fixture(scope="session")
def built_tpcc_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A TPC-C scale 1 SQLite database (seed 0), built once for the whole session: copy it
    with :func:`copy_of` and change only the copy, as every test after yours gets this file."""
    from tpsbench.commands.build import build

    path = tmp_path_factory.mktemp("built_tpcc") / "tpcc.db"
    build("tpcc", 1, f"sqlite:///{path}", show_progress=False)
    return path


def scratch_database(backend: str, template: str | None = None) -> contextlib.AbstractContextManager[str]:
    """:func:`scratch_pg_database` for ``postgresql``, :func:`scratch_mysql_database` for ``mysql``."""
    return (scratch_pg_database if backend == "postgresql" else scratch_mysql_database)(template)


@pytest.fixture(scope="session")
def db_template() -> Iterator[Callable[..., str]]:
    """``db_template(backend, workload, scale, **build_arguments)``: the URL of a database on
    the ``postgresql`` or ``mysql`` server built so, once per session for each distinct set
    of arguments, as a template: start a test's database as a copy,
    ``scratch_database(backend, template)``, and never connect to the template itself
    (PostgreSQL copies only a database no one is connected to)."""
    from tpsbench.commands.build import build

    made: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        def template(backend: str, workload: str, scale: int, **arguments: Any) -> str:
            key = repr((backend, workload, scale, sorted(arguments.items())))
            if key not in made:
                url = stack.enter_context(scratch_database(backend))
                build(workload, scale, url, show_progress=False, **arguments)
                made[key] = url
            return made[key]

        yield template


@pytest.fixture(scope="session")
def built_tpcc_pg(db_template: Callable[..., str]) -> str:
    """A TPC-C scale 1 PostgreSQL template (seed 0), built once for the whole session."""
    return db_template("postgresql", "tpcc", 1)


@pytest.fixture
def tpcc_pg_url(built_tpcc_pg: str) -> Iterator[str]:
    """``pg_url`` with TPC-C scale 1 (seed 0) in it already: a copy of the session's build."""
    with scratch_pg_database(built_tpcc_pg) as url:
        yield url


def slow_on(fixture: str, params: dict[str, list[pytest.MarkDecorator]], *slow: str) -> pytest.MarkDecorator:
    """A test's own parametrization of the parametrized module ``fixture`` (``params``: each
    param's marks), the params named in ``slow`` marked slow as well: the quick lane runs the
    test on the others, on the same fixture as the module's other tests."""
    return pytest.mark.parametrize(fixture, [
        pytest.param(param, marks=[*marks, pytest.mark.slow] if param in slow else marks)
        for param, marks in params.items()], indirect=True)


def copy_of(built: Path, folder: Path, name: str = "tpcc.db") -> str:
    """The URL of a fresh copy of the SQLite database ``built`` as ``folder/name``."""
    shutil.copy(built, folder / name)
    return f"sqlite:///{folder / name}"


@pytest.fixture
def bare_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path`` as the working folder, with no TPSBENCH_ settings in the environment:
    where the CLI run in this process (test_cli_help.invoke) would write what it stores."""
    monkeypatch.chdir(tmp_path)
    for name in [name for name in os.environ if name.startswith("TPSBENCH_")]:
        monkeypatch.delenv(name)
    return tmp_path


@pytest.fixture
def deliverable_sigint() -> Iterator[None]:
    """SIGINT reaches the test's subprocesses as it reaches a program run in a terminal.

    A program inherits an ignored SIGINT (a shell ignores it for ``cmd &``) and Python
    then leaves Ctrl-C ignored, so a signal test would wait out its timeout and fail for
    the way the suite was started; a handler of ours here makes an exec'd child start
    with the default disposition again.
    """
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def schema_file(workload: str, dialect: str) -> Path:
    """The DDL file of a workload for a dialect: ``<workload folder>/schemas/<dialect>.sql``."""
    from tpsbench.workloads import workload_classes

    return workload_classes()[workload].schema_file(dialect)


def sql_dialects() -> dict[str, Any]:
    """Every target's SqlDialect by its name (postgresql, mysql, sqlite, mssql)."""
    from tpsbench.targets import target_classes

    return {cls.sql.name: cls.sql for cls in target_classes().values() if cls.sql.name != "sql"}


#: Python's own warning filters, those of ``python -m tpsbench`` (a release build, no -W):
#: a warning they let through is a line on the command's stderr, here as there
PYTHON_WARNING_FILTERS = (("default", DeprecationWarning, "__main__"), ("ignore", DeprecationWarning, ""),
                          ("ignore", PendingDeprecationWarning, ""), ("ignore", ImportWarning, ""),
                          ("ignore", ResourceWarning, ""))


def _stream_like(original: Any) -> io.TextIOWrapper:
    """A capture that encodes as the interpreter's own stream would (stdout fails on what its
    encoding cannot take, stderr escapes it), so a write a real process chokes on fails here."""
    return io.TextIOWrapper(io.BytesIO(), encoding=getattr(original, "encoding", None) or "utf-8",
                            errors=getattr(original, "errors", None) or "strict", write_through=True)


def _captured(stream: io.TextIOWrapper) -> str:
    return stream.buffer.getvalue().decode(stream.encoding, errors="replace")  # type: ignore[attr-defined]  # the stream is a TextIOWrapper over a BytesIO, whose getvalue its buffer type hides


@contextlib.contextmanager
def _no_processes(started: list[str]) -> Iterator[None]:
    """Any process the command starts is refused and noted: ``cli_in_process`` is for those
    that start none, and a command that catches the refusal still fails the test."""
    import multiprocessing.process
    import multiprocessing.util
    from unittest import mock

    def refuse(what: str) -> Callable[..., NoReturn]:
        def start(*args: object, **kwargs: object) -> NoReturn:
            started.append(what)
            raise AssertionError(f"cli_in_process: the command started {what}; run it as a subprocess")
        return start

    with mock.patch.object(multiprocessing.process.BaseProcess, "start", refuse("a multiprocessing process")), \
            mock.patch.object(multiprocessing.util, "spawnv_passfds", refuse("multiprocessing's helper")), \
            mock.patch.object(subprocess.Popen, "__init__", refuse("a subprocess")):
        yield


def _process_state() -> dict[str, object]:
    """What one command run in this process could leave behind for the next."""
    import logging

    import click

    loggers = [logging.root, *(v for v in logging.root.manager.loggerDict.values() if isinstance(v, logging.Logger))]
    # a library's NullHandler, added as its module loads, is the same in a new process
    settings = {lg.name: (logging.getLevelName(lg.level), lg.disabled,
                          [h for h in lg.handlers if not isinstance(h, logging.NullHandler)]) for lg in loggers}
    return {"signal handlers": {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)},
            "loggers": {name: kept for name, kept in settings.items() if kept != ("NOTSET", False, [])},
            "click context": click.get_current_context(silent=True)}


def _threads_left(before: set[threading.Thread]) -> list[str]:
    """Threads the command started that are still running a second after it returned."""
    left = [t for t in threading.enumerate() if t not in before]
    for thread in left:
        thread.join(timeout=1)
    return [t.name for t in left if t.is_alive()]


def cli_in_process(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``tpsbench ARGS`` run in this process, as a finished subprocess would report it.

    The CLI's own ``main`` (what ``python -m tpsbench`` calls after its signal set-up): its
    one-line errors and exit codes, in ``cwd`` with no TPSBENCH_ settings but ``env``,
    without the second of a new interpreter loading the libraries. A traceback the CLI
    would print is an exception here, which fails the test as surely. For commands that
    start no processes of their own (report, compare, plan, runs, drop, check, size, and
    every refusal that comes before a process starts): starting one fails the test.

    What a separate process would show or not keep shows here too: output encoded as the
    interpreter's streams encode it, warnings Python's default filters print, the message
    of ``sys.exit("...")``; and the command must leave no thread running, no signal or
    logging handler, log level or click context changed (cwd and environment are put back).
    """
    import warnings

    from tpsbench.cli.main import main

    saved_env, saved_cwd, threads, state = dict(os.environ), os.getcwd(), set(threading.enumerate()), _process_state()
    out, err = _stream_like(sys.__stdout__), _stream_like(sys.__stderr__)
    code: int | str | None = 0
    started: list[str] = []
    try:
        for name in [name for name in os.environ if name.startswith("TPSBENCH_")]:
            del os.environ[name]
        os.environ.update(env or {})
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings(record=True) as caught, _no_processes(started):
            warnings.resetwarnings()
            for action, category, module in PYTHON_WARNING_FILTERS:
                warnings.filterwarnings(action, category=category, module=module, append=True)
            try:
                main(list(args))
            except SystemExit as exc:
                code = exc.code
            for w in caught:
                err.write(warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line))
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    if not isinstance(code, int) and code is not None:
        err.write(f"{code}\n")  # as Python prints sys.exit's message
    returncode = code if isinstance(code, int) else (0 if code is None else 1)
    after = _process_state()
    # a logger set up by something still closing in the background (a Dask cluster of an
    # earlier test removes its handlers as it ends) may go back to the default: not a leak
    before_loggers = state["loggers"]
    assert isinstance(before_loggers, dict)
    after["loggers"] = {**{n: v for n, v in before_loggers.items() if n not in after["loggers"]}, **after["loggers"]}
    leaks = [f"{what}: {state[what]!r} became {now!r}" for what, now in after.items() if now != state[what]]
    leaks += [f"threads still running: {', '.join(left)}" for left in [_threads_left(threads)] if left]
    assert not started and not leaks, f"tpsbench {' '.join(args)!r} in this process: {started + leaks}"
    return subprocess.CompletedProcess(["tpsbench", *args], returncode, _captured(out), _captured(err))
