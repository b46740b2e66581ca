"""libmariadb's prepared-statement calls (``mysql_stmt_*``) on mysqlclient's own connection.

Why: the server parses a text statement (COM_QUERY) every time it comes; a statement
prepared once per connection and executed with bound values (COM_STMT_EXECUTE, the
binary protocol, as sysbench sends its statements) skips that, which saves the server
CPU on every statement (bench/experiments/results/mysql_prepared.txt). No MySQL Python
driver does this at mysqlclient's client cost (same file: MariaDB Connector/Python sends
its prepared cursor's statements as text, mysql-connector-python's C extension takes more
client CPU), so this binds the C calls itself, through cffi in ABI mode: nothing is compiled at
install. On Debian and Ubuntu mysqlclient is linked against the same libmariadb.so.3, so
the statements run on the very connection handle mysqlclient holds (its
``_get_native_connection`` capsule): connecting, autocommit, COMMIT, errors and
reconnects stay mysqlclient's, and a statement that cannot be prepared can still go as text.

:class:`Handle` is one connection's handle, :class:`Prepared` one statement on it, with
its parameters bound once to C buffers that each execute only refills.
"""

from __future__ import annotations

import ctypes
import datetime
import fcntl
import os
import select
import weakref
from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import cache
from typing import Any

from tpsbench.core.errors import TpsbenchError

#: the part of libmariadb's C API used here (mysql.h, mariadb_stmt.h of Connector/C 3.x),
#: structs spelled out field by field since ABI mode takes their layout from here (checked
#: against the C compiler's sizeof/offsetof for Connector/C 3.3)
CDEF = """
typedef struct st_mysql MYSQL;
typedef struct st_mysql_stmt MYSQL_STMT;
typedef struct st_mysql_res MYSQL_RES;
typedef signed char my_bool;
typedef struct st_mysql_bind {
    unsigned long *length; my_bool *is_null; void *buffer; my_bool *error; void *u;
    void *store_param_func; void *fetch_result; void *skip_result;
    unsigned long buffer_length; unsigned long offset; unsigned long length_value;
    unsigned int flags; unsigned int pack_length; int buffer_type;
    my_bool error_value; my_bool is_unsigned; my_bool long_data_used; my_bool is_null_value;
    void *extension;
} MYSQL_BIND;
typedef struct st_mysql_field {
    char *name; char *org_name; char *table; char *org_table; char *db; char *catalog; char *def;
    unsigned long length; unsigned long max_length;
    unsigned int name_length, org_name_length, table_length, org_table_length, db_length, catalog_length, def_length;
    unsigned int flags; unsigned int decimals; unsigned int charsetnr; int type; void *extension;
} MYSQL_FIELD;
const char *mysql_get_client_info(void);
int mysql_options(MYSQL *mysql, int option, const void *arg);
int mysql_get_socket(MYSQL *mysql);
unsigned int mysql_num_fields(MYSQL_RES *res);
MYSQL_FIELD *mysql_fetch_fields(MYSQL_RES *res);
void mysql_free_result(MYSQL_RES *result);
MYSQL_STMT *mysql_stmt_init(MYSQL *mysql);
int mysql_stmt_prepare(MYSQL_STMT *stmt, const char *query, unsigned long length);
unsigned long mysql_stmt_param_count(MYSQL_STMT *stmt);
my_bool mysql_stmt_bind_param(MYSQL_STMT *stmt, MYSQL_BIND *bnd);
my_bool mysql_stmt_bind_result(MYSQL_STMT *stmt, MYSQL_BIND *bnd);
int mysql_stmt_execute(MYSQL_STMT *stmt);
int mysql_stmt_store_result(MYSQL_STMT *stmt);
int mysql_stmt_fetch(MYSQL_STMT *stmt);
int mysql_stmt_fetch_column(MYSQL_STMT *stmt, MYSQL_BIND *bind_arg, unsigned int column, unsigned long offset);
unsigned long long mysql_stmt_num_rows(MYSQL_STMT *stmt);
unsigned long long mysql_stmt_affected_rows(MYSQL_STMT *stmt);
unsigned long long mysql_stmt_insert_id(MYSQL_STMT *stmt);
unsigned int mysql_stmt_field_count(MYSQL_STMT *stmt);
MYSQL_RES *mysql_stmt_result_metadata(MYSQL_STMT *stmt);
my_bool mysql_stmt_more_results(MYSQL_STMT *stmt);
int mysql_stmt_next_result(MYSQL_STMT *stmt);
my_bool mysql_stmt_free_result(MYSQL_STMT *stmt);
my_bool mysql_stmt_close(MYSQL_STMT *stmt);
unsigned int mysql_stmt_errno(MYSQL_STMT *stmt);
const char *mysql_stmt_error(MYSQL_STMT *stmt);
const char *mysql_stmt_sqlstate(MYSQL_STMT *stmt);
int mysql_stmt_execute_start(int *ret, MYSQL_STMT *stmt);
int mysql_stmt_execute_cont(int *ret, MYSQL_STMT *stmt, int status);
int mysql_stmt_prepare_start(int *ret, MYSQL_STMT *stmt, const char *query, unsigned long length);
int mysql_stmt_prepare_cont(int *ret, MYSQL_STMT *stmt, int status);
"""
LIBRARY = "libmariadb.so.3"
MYSQL_OPT_NONBLOCK = 6000
MYSQL_WAIT_READ, MYSQL_WAIT_WRITE = 1, 2
#: buffer types (enum_field_types)
T_DOUBLE, T_NULL, T_LONGLONG, T_NEWDECIMAL, T_BLOB, T_STRING = 5, 6, 8, 246, 252, 254
#: errors of a statement the server will not prepare: not preparable, max_prepared_stmt_count reached
NOT_PREPARED = frozenset({1295, 1461})


@cache
def binding() -> tuple[Any, Any]:
    """(ffi, lib) over libmariadb, loaded once; a one-line error says what is missing."""
    try:
        from cffi import FFI  # type: ignore[import-untyped]  # cffi ships no type hints (types-cffi is not installed)
    except ImportError:
        raise TpsbenchError("--client prepared needs cffi: pip install 'tpsbench[fast]'") from None
    ffi = FFI()
    ffi.cdef(CDEF)
    try:
        lib = ffi.dlopen(LIBRARY)
    except OSError:
        raise TpsbenchError(f"--client prepared needs {LIBRARY} (apt-get install libmariadb3)") from None
    return ffi, lib


@cache
def unavailable() -> str | None:
    """Why prepared statements cannot run on mysqlclient's connections here, or None."""
    try:
        import MySQLdb  # type: ignore[import-untyped]  # mysqlclient ships no type hints
        ffi, lib = binding()
    except (ImportError, TpsbenchError) as exc:
        return str(exc) if isinstance(exc, TpsbenchError) else "mysqlclient is not installed"
    ours, theirs = ffi.string(lib.mysql_get_client_info()).decode(), MySQLdb._mysql.get_client_info()
    if ours != theirs:
        return (f"mysqlclient is linked against client library {theirs}, not {LIBRARY} ({ours});"
                " use --client text")
    return None


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


class Handle:
    """The MYSQL handle of one mysqlclient connection, and the statements prepared on it.

    One per connection (:meth:`of`), shared by every cursor made on it: a user keeps its
    connection from one step to the next and opens a new session, whose cursors then
    find the statements prepared already, and a CALL's status still to read (``pending``)
    is read by whichever cursor sends next. It holds no reference to the connection (the
    cursors do), so the statements are closed when the connection goes."""

    def __init__(self, conn: Any) -> None:
        self.ffi, self.lib = binding()
        pointer = _capsule_pointer(conn._get_native_connection(), b"_mysql.connection.native_connection")
        self.mysql = self.ffi.cast("MYSQL *", pointer)
        self.ret = self.ffi.new("int *")
        self.nonblocking = False
        #: statements by SQL text; None for one the server would not prepare (sent as text)
        self.statements: dict[str, Prepared | None] = {}
        #: the statement whose CALL status is still to be read
        self.pending: Prepared | None = None
        # not at exit: a thread given up on may still be using the connection, and the
        # server frees a connection's statements when it closes anyway
        weakref.finalize(conn, _close_all, self.statements).atexit = False

    @classmethod
    def of(cls, conn: Any) -> Handle:
        """The handle of ``conn``, made on first use."""
        handle = _HANDLES.get(conn)
        if handle is None:
            handle = _HANDLES[conn] = cls(conn)
        return handle

    def prepare(self, sql: str) -> Prepared | None:
        """``sql`` (``%s`` markers) prepared, or None where the server will not prepare it."""
        stmt, text = self.lib.mysql_stmt_init(self.mysql), server_text(sql)
        return self.prepared(stmt, text, self.lib.mysql_stmt_prepare(stmt, text, len(text)))

    def prepared(self, stmt: Any, text: bytes, failed: int) -> Prepared | None:
        """The statement ``stmt`` once its prepare of ``text`` has ended (``failed``: its
        status), or None where the server will not prepare it (``stmt`` closed then)."""
        if failed:
            code = self.lib.mysql_stmt_errno(stmt)
            error = self.error(stmt)
            self.lib.mysql_stmt_close(stmt)
            if code in NOT_PREPARED:
                return None
            raise error
        return Prepared(self, stmt, varies=text.lstrip()[:4].upper() == b"CALL")

    def drain(self) -> None:
        """Read the rest of a CALL's answer (its status), before the connection's next command."""
        prepared, self.pending = self.pending, None
        if prepared is None:
            return
        lib, stmt = self.lib, prepared.stmt
        while lib.mysql_stmt_more_results(stmt) and lib.mysql_stmt_next_result(stmt) == 0:
            if lib.mysql_stmt_field_count(stmt) and lib.mysql_stmt_store_result(stmt) == 0:
                lib.mysql_stmt_free_result(stmt)

    def fileno(self) -> int:
        """The socket, non-blocking from here on (for the engine's shared thread).

        libmariadb's ``_start`` calls only yield on a socket that would block, and a
        connection made by the blocking connect has a blocking socket; its blocking calls
        (mysqlclient's) poll on a non-blocking one, so both keep working."""
        fd = int(self.lib.mysql_get_socket(self.mysql))
        if not self.nonblocking:
            self.lib.mysql_options(self.mysql, MYSQL_OPT_NONBLOCK, self.ffi.NULL)
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
            self.nonblocking = True
        return fd

    def error(self, stmt: Any) -> Exception:
        """The statement's error as mysqlclient would raise it: (number, message), with the SQLSTATE."""
        import MySQLdb

        ffi, lib = self.ffi, self.lib
        code, message = int(lib.mysql_stmt_errno(stmt)), ffi.string(lib.mysql_stmt_error(stmt)).decode(errors="replace")
        cls = MySQLdb.IntegrityError if code in (1062, 1451, 1452) else (
            MySQLdb.ProgrammingError if code in (1054, 1064, 1146) else MySQLdb.OperationalError)
        exc = cls(code, message)
        exc.sqlstate = ffi.string(lib.mysql_stmt_sqlstate(stmt)).decode()
        return exc


_HANDLES: weakref.WeakKeyDictionary[Any, Handle] = weakref.WeakKeyDictionary()


def server_text(sql: str) -> bytes:
    """``sql`` as the server prepares it: ``?`` markers for ``%s``."""
    return sql.replace("%s", "?").replace("%%", "%").encode()


def _close_all(statements: dict[str, Prepared | None]) -> None:
    """Close a connection's statements as it goes (once it is closed, only their memory)."""
    for prepared in statements.values():
        if prepared is not None:
            prepared.close()
    statements.clear()


class Prepared:
    """One statement prepared on a connection: its parameters bound to C buffers once,
    refilled by each :meth:`bind`, rebound only when a value's type changes or a text
    outgrows its buffer; its result columns' buffers made once per result shape."""

    __slots__ = ("handle", "lib", "stmt", "count", "binds", "kinds", "setters", "keep", "columns", "shapes", "varies")

    def __init__(self, handle: Handle, stmt: Any, varies: bool = False) -> None:
        self.handle, self.lib, self.stmt = handle, handle.lib, stmt
        self.count = int(self.lib.mysql_stmt_param_count(stmt))
        self.binds = handle.ffi.new("MYSQL_BIND[]", max(self.count, 1))
        #: each parameter's type as bound (None: only NULLs so far), and what stores a value in its buffer
        self.kinds: list[type | None] = [None] * self.count
        self.setters: list[Callable[[Any], bool]] = [_unbound] * self.count
        self.keep: list[Any] = []  # the C buffers the binds point to
        #: the result columns' binds and readers (mysqlrows.py), made on the first fetch (a SELECT's shape is
        #: fixed); ``varies``: made anew for every result (a CALL's results differ in shape,
        #: and a NULL row's column types differ from a found row's)
        self.columns: Any = None  # mysqlrows.Columns
        self.shapes: dict[tuple, Any] = {}  # the Columns of each result shape seen, for ``varies``
        self.varies = varies

    def bind(self, params: Sequence[Any]) -> None:
        """The statement's parameters set to ``params`` for the next execute: each value
        stored in its C buffer; bound again (all of them) when one does not fit its
        buffer's type or size. A NULL sets the buffer's flag, so that a parameter that
        is sometimes NULL (Payment's customer name) does not bind again every time."""
        if len(params) != self.count:
            raise TpsbenchError(f"a statement with {self.count} markers got {len(params)} values")
        for setter, value in zip(self.setters, params):
            if not setter(value):
                self._rebind(params)
                return

    def _rebind(self, params: Sequence[Any]) -> None:
        ffi, kinds = self.handle.ffi, self.kinds
        self.keep = []
        for i, (bind, value) in enumerate(zip(self.binds, params)):
            if value is not None:  # a NULL keeps the type the parameter had
                kinds[i] = type(value)
            self.setters[i] = setter = _setter(ffi, bind, kinds[i], value, self.keep)
            setter(value)
        if self.lib.mysql_stmt_bind_param(self.stmt, self.binds):
            raise self.handle.error(self.stmt)
        self.columns = None  # a result column can take a parameter's type (SELECT ?)

    def execute(self) -> None:
        """Execute with the values bound, and read a result set whole (store_result)."""
        lib, stmt = self.lib, self.stmt
        if lib.mysql_stmt_execute(stmt) or (lib.mysql_stmt_field_count(stmt) and lib.mysql_stmt_store_result(stmt)):
            raise self.handle.error(stmt)

    def start(self) -> bool:
        """Send the execute without waiting: True if its answer was read already (the
        server answered before the socket was first read); else wait for the socket to
        be readable and call :meth:`resume` until it returns True."""
        if self._written(self.lib.mysql_stmt_execute_start(self.handle.ret, self.stmt)):
            return False
        return self._executed()

    def _written(self, status: int) -> int:
        """``status`` once the statement is all written: a send that fills the socket's
        buffer (a long statement) waits here, as the text path's blocking send does, so
        that the shared thread only ever waits for answers."""
        while status & MYSQL_WAIT_WRITE:
            select.select([], [self.handle.fileno()], [])
            status = self.lib.mysql_stmt_execute_cont(self.handle.ret, self.stmt, MYSQL_WAIT_WRITE)
        return status

    def resume(self) -> bool:
        """Carry on with the answer once the socket is readable: True once it is read."""
        if self._written(self.lib.mysql_stmt_execute_cont(self.handle.ret, self.stmt, MYSQL_WAIT_READ)):
            return False
        return self._executed()

    def _executed(self) -> bool:
        """The execute's answer is in: read its rows, if any, at once and blocking, as the
        text path reads its result once the socket is readable. The rest of the answer
        is on its way by then; waiting for it on the shared thread's poller took a
        wake-up for each part of it that came apart (a CALL's rows, its status)."""
        handle, lib, stmt = self.handle, self.lib, self.stmt
        if handle.ret[0] or (lib.mysql_stmt_field_count(stmt) and lib.mysql_stmt_store_result(stmt)):
            raise handle.error(stmt)
        return True

    def close(self) -> None:
        self.lib.mysql_stmt_close(self.stmt)


def _unbound(value: Any) -> bool:
    """The setter of a parameter not bound yet: bind first."""
    return False


def _setter(ffi: Any, bind: Any, kind: type | None, value: Any, keep: list[Any]) -> Callable[[Any], bool]:
    """Point ``bind`` at a C buffer for values of type ``kind`` (None: NULLs only), and
    a function that stores one value there, or NULL; False for a value of another type,
    or a text too long for the buffer: bind again."""
    null = ffi.new("my_bool[1]")
    bind.is_null = null
    keep.append(null)
    if kind is None:
        bind.buffer_type = T_NULL
        return lambda v: v is None
    if kind is int or kind is bool or kind is float:
        unsigned = kind is int and value is not None and value >= 1 << 63
        cell = ffi.new("double[1]" if kind is float else ("unsigned long long[1]" if unsigned else "long long[1]"))
        bind.buffer, bind.buffer_type, bind.is_unsigned = cell, T_DOUBLE if kind is float else T_LONGLONG, unsigned
        keep.append(cell)

        def put_number(v: Any) -> bool:
            if v is None:
                null[0] = 1
                return True
            if type(v) is not kind:
                return False
            null[0] = 0
            try:
                cell[0] = v
            except OverflowError:  # past the other signedness's range: bind again
                return False
            return True

        return put_number
    encode = _bytes_of(kind)
    size = max(64, 2 * len(encode(value))) if value is not None else 64
    buf, length = ffi.new("char[]", size), ffi.new("unsigned long[1]")
    bind.buffer, bind.buffer_length, bind.length = buf, size, length
    bind.buffer_type = T_BLOB if kind is bytes else (T_NEWDECIMAL if kind is Decimal else T_STRING)
    keep.extend((buf, length))
    memmove = ffi.memmove

    def put(v: Any) -> bool:
        if v is None:
            null[0] = 1
            return True
        if type(v) is not kind:
            return False
        data = encode(v)
        if len(data) > size:
            return False
        null[0] = 0
        memmove(buf, data, len(data))
        length[0] = len(data)
        return True

    return put


def _bytes_of(kind: type) -> Callable[[Any], bytes]:
    """How a value of ``kind`` (not int, float or None) goes, chosen once at bind time
    rather than at every execute: as text, which the server converts to the column's
    type as it converts a literal; dates with a space, as MySQL writes them."""
    if kind is bytes:
        return bytes
    if kind is str:
        return str.encode
    if issubclass(kind, datetime.datetime):
        return lambda v: v.isoformat(" ").encode()
    return lambda v: str(v).encode()  # Decimal, date, time and the rest
