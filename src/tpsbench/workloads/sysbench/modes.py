"""The sysbench 1.0 OLTP scripts as data: which statements, how many, in which order.

Each script of /usr/share/sysbench (oltp_read_write.lua and friends) is one *mode* here. A
mode is a sequence of statement groups; each group picks one table (uniformly, as
sysbench's ``get_table_num``) and runs its statement ``count`` times with fresh ids drawn
by ``--rand-type``. Transactional modes wrap the groups in BEGIN/COMMIT unless
``--skip-trx``; the single-statement scripts run in autocommit, as sysbench does.

Options keep sysbench's names (``--point-selects`` or ``point_selects``) and defaults, so a
sysbench command line translates option for option.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from tpsbench.core.cursor import CLIENT_CHOICES, CLIENT_HELP
from tpsbench.core.delays import ENGINE_OPTIONS
from tpsbench.core.errors import TpsbenchError
from tpsbench.core.workload import Option
from tpsbench.workloads.sysbench.rand import RAND_TYPES, RandParams

#: every sysbench OLTP script, the default first
MODES = (
    "oltp_read_write", "oltp_read_only", "oltp_write_only", "oltp_point_select", "oltp_update_index",
    "oltp_update_non_index", "oltp_insert", "oltp_delete", "select_random_points", "select_random_ranges",
)
DEFAULT_MODE = MODES[0]
#: sysbench's default --table-size when neither the schema nor the options say
DEFAULT_TABLE_SIZE = 10_000
#: statement groups (one table per group) and what sysbench counts each statement as when
#: it finds its row: a SELECT is a read; INSERT, UPDATE and DELETE are writes
READ_GROUPS = ("point_selects", "simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges",
               "random_points", "random_ranges")
WRITE_GROUPS = ("index_updates", "non_index_updates", "deletes", "inserts", "insert_auto")


@dataclass(frozen=True)
class SysbenchOptions:
    """A run's sysbench options; None for tables/table_size means "as the schema has them"."""

    mode: str = DEFAULT_MODE
    tables: int | None = None
    table_size: int | None = None
    range_size: int = 100
    point_selects: int = 10
    simple_ranges: int = 1
    sum_ranges: int = 1
    order_ranges: int = 1
    distinct_ranges: int = 1
    index_updates: int = 1
    non_index_updates: int = 1
    delete_inserts: int = 1
    range_selects: bool = True
    skip_trx: bool = False
    random_points: int = 10
    number_of_ranges: int = 10
    delta: int = 5
    #: the statement path: "fast" (the target's default), "prepared", "text" or "dbapi" (Target.client_path)
    client: str = "fast"
    rand: RandParams = field(default_factory=RandParams)


@dataclass(frozen=True)
class ModePlan:
    """One transaction of a mode: BEGIN/COMMIT or not, then (group, count) in order.

    The group ``delete_inserts`` stands for sysbench's pair: a DELETE then an INSERT of the
    same id, ``count`` times, on one table.
    """

    mode: str
    transactional: bool
    groups: tuple[tuple[str, int], ...]


_RAND_KEYS = {"rand_type": "rand_type", "rand_spec_iter": "spec_iter", "rand_spec_pct": "spec_pct",
              "rand_spec_res": "spec_res", "rand_pareto_h": "pareto_h", "rand_zipfian_exp": "zipf_exp"}
_INT_KEYS = {f.name for f in fields(SysbenchOptions) if f.type in ("int", "int | None")}
_BOOL_KEYS = {"range_selects", "skip_trx"}
#: the largest value of a whole-number option: ids, sizes and ranges are sysbench's
#: INTEGER columns; counts of statements, points and ranges per transaction stop far
#: short of a statement the server would refuse, or a transaction that never ends
INT_MOST = {"tables": 10_000, "table_size": 2**31 - 1, "range_size": 2**31 - 1, "delta": 2**31 - 1}
COUNT_MOST = 10_000
_TRUE = {"on", "true", "yes", "1"}
_FALSE = {"off", "false", "no", "0"}


def option_key(name: str) -> str:
    """``--point-selects`` and ``point_selects`` are the same option."""
    return name.strip().lstrip("-").replace("-", "_").lower()


def parse_options(options: Mapping[str, str | int | float | bool]) -> SysbenchOptions:
    """Validate run options into :class:`SysbenchOptions`; a one-line error names a bad one."""
    values: dict[str, object] = {}
    rand: dict[str, object] = {}
    for raw, value in options.items():
        key = option_key(raw)
        text = str(value).strip()
        if key in ENGINE_OPTIONS:
            continue
        if key == "mode":
            mode = text.removesuffix(".lua")
            if mode not in MODES:
                raise TpsbenchError(f"unknown sysbench mode {text!r}; known: {', '.join(MODES)}")
            values["mode"] = mode
        elif key == "client":
            if text not in CLIENT_CHOICES:
                raise TpsbenchError(f"--client must be one of {', '.join(CLIENT_CHOICES)}, got {text!r}")
            values["client"] = text
        elif key in _RAND_KEYS:
            target = _RAND_KEYS[key]
            try:
                rand[target] = text if target == "rand_type" else (int(text) if target == "spec_iter" else float(text))
            except ValueError:
                raise TpsbenchError(f"--{key.replace('_', '-')} must be a number, got {text!r}") from None
        elif key in _BOOL_KEYS:
            if text.lower() not in _TRUE | _FALSE:
                raise TpsbenchError(f"--{key.replace('_', '-')} must be on or off, got {text!r}")
            values[key] = text.lower() in _TRUE
        elif key in _INT_KEYS:
            if not text and key in ("tables", "table_size"):
                continue  # "as the schema has them"
            try:
                number = int(text)
            except ValueError:
                raise TpsbenchError(f"--{key.replace('_', '-')} must be a whole number, got {text!r}") from None
            least = 1 if key in ("tables", "table_size", "random_points", "number_of_ranges", "range_size") else 0
            most = INT_MOST.get(key, COUNT_MOST)
            if not least <= number <= most:
                flag = f"--{key.replace('_', '-')}"
                raise TpsbenchError(f"{flag} must be >= {least}, got {number}" if number < least
                                    else f"{flag} must be at most {most:,}, got {number:,}")
            values[key] = number
        else:
            known = sorted({"mode", "client", *_INT_KEYS, *_BOOL_KEYS, *_RAND_KEYS})
            raise TpsbenchError(f"unknown sysbench option {raw!r}; known: {', '.join(known)}")
    return SysbenchOptions(**values, rand=RandParams(**rand))  # type: ignore[arg-type]  # each value parsed to its field type above


def mode_plan(opts: SysbenchOptions) -> ModePlan:
    """The statements of one transaction of ``opts.mode``, as sysbench 1.0's script runs them."""
    mode = opts.mode
    reads: list[tuple[str, int]] = [("point_selects", opts.point_selects)]
    if opts.range_selects:
        reads += [(g, getattr(opts, g)) for g in ("simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges")]
    writes = [("index_updates", opts.index_updates), ("non_index_updates", opts.non_index_updates),
              ("delete_inserts", opts.delete_inserts)]
    trx = not opts.skip_trx
    plans = {
        "oltp_read_write": (trx, reads + writes),
        "oltp_read_only": (trx, reads),
        "oltp_write_only": (trx, writes),
        # oltp_point_select.lua forces --point-selects to 1
        "oltp_point_select": (False, [("point_selects", 1)]),
        "oltp_update_index": (False, [("index_updates", opts.index_updates)]),
        "oltp_update_non_index": (False, [("non_index_updates", opts.non_index_updates)]),
        "oltp_insert": (False, [("insert_auto", 1)]),
        "oltp_delete": (False, [("deletes", 1)]),
        "select_random_points": (False, [("random_points", 1)]),
        "select_random_ranges": (False, [("random_ranges", 1)]),
    }
    transactional, groups = plans[mode]
    return ModePlan(mode, transactional, tuple((g, n) for g, n in groups if n > 0))


def statement_mix(opts: SysbenchOptions) -> dict[str, int]:
    """Statements per transaction split as sysbench's summary splits them (read/write/other).

    Nominal: it assumes every UPDATE and DELETE finds its row, which holds for ids drawn in
    [1, table_size] of a table as prepared. sysbench itself counts a DML statement that
    changes no row as "other"; sessions count what actually happened
    (``SysbenchSession.statement_counts``).
    """
    plan = mode_plan(opts)
    mix = {"read": 0, "write": 0, "other": 2 if plan.transactional else 0}
    for group, count in plan.groups:
        if group in READ_GROUPS:
            mix["read"] += count
        elif group == "delete_inserts":
            mix["write"] += 2 * count
        else:
            mix["write"] += count
    return mix


_ON_OFF = ("on", "off")
#: the option the distributions' own parameters apply with
_TYPE = "rand_type"
#: ``tpsbench run sysbench`` flags: sysbench's run options with sysbench's defaults
RUN_OPTIONS = (
    Option("mode", DEFAULT_MODE, "sysbench script to run (one transaction type per run)", MODES),
    Option("tables", "", "tables to use, sbtest1..N (default: all the schema has)"),
    Option("table_size", "", "ids are drawn in [1, table_size] (default: the schema's)"),
    Option("range_size", "100", "rows per range SELECT"),
    Option("point_selects", "10", "point SELECTs per transaction (oltp_point_select: always 1)"),
    Option("simple_ranges", "1", "simple range SELECTs per transaction"),
    Option("sum_ranges", "1", "SELECT SUM() ranges per transaction"),
    Option("order_ranges", "1", "SELECT ... ORDER BY ranges per transaction"),
    Option("distinct_ranges", "1", "SELECT DISTINCT ranges per transaction"),
    Option("index_updates", "1", "UPDATEs of the indexed k per transaction"),
    Option("non_index_updates", "1", "UPDATEs of the unindexed c per transaction"),
    Option("delete_inserts", "1", "DELETE + INSERT pairs per transaction"),
    Option("range_selects", "on", "run the four range SELECT kinds at all", _ON_OFF),
    Option("skip_trx", "off", "no BEGIN/COMMIT: every statement in autocommit", _ON_OFF),
    Option("rand_type", "special", "distribution of ids (sysbench 1.0's default: special)", RAND_TYPES),
    Option("rand_spec_iter", "12", "uniforms summed per gaussian draw", needs=(_TYPE, "gaussian", "special")),
    Option("rand_spec_pct", "1", "special: percent of the values that are hot", needs=(_TYPE, "special")),
    Option("rand_spec_res", "75", "special: percent of the draws that hit the hot values", needs=(_TYPE, "special")),
    Option("rand_pareto_h", "0.2", "pareto: shape parameter h", needs=(_TYPE, "pareto")),
    Option("rand_zipfian_exp", "0.8", "zipfian: exponent (a sysbench 1.1 distribution)", needs=(_TYPE, "zipfian")),
    Option("random_points", "10", "select_random_points: values in the IN list",
           needs=("mode", "select_random_points")),
    Option("number_of_ranges", "10", "select_random_ranges: BETWEEN ranges per SELECT",
           needs=("mode", "select_random_ranges")),
    Option("delta", "5", "select_random_ranges: width of each range", needs=("mode", "select_random_ranges")),
    Option("client", "fast", CLIENT_HELP + " Results are read and dropped, as sysbench drops them.", CLIENT_CHOICES),
)
#: ``tpsbench build sysbench`` flags (the scale is the number of tables)
BUILD_OPTIONS = (
    Option("table_size", str(DEFAULT_TABLE_SIZE), "rows per table (sysbench's --table-size)"),
    Option("rand_type", "special", "distribution of the k column (sysbench prepare's --rand-type)", RAND_TYPES),
)
