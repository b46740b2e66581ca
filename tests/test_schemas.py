"""The DDL of every dialect describes the same tables, for TPC-C and TPC-E.

Workloads and checks name tables and columns once, for every database, so the
dialect files must agree on tables, column names and order, nullability, type
families (integer width, decimal precision and scale, char/varchar length,
timestamp, date, long text), primary keys and the secondary indexes. The canonical
shape is postgresql.sql read by sqlglot; each runnable dialect is created for real and
reflected by SQLAlchemy, and SQL Server's file, which cannot run here, is parsed.
"""

from __future__ import annotations

import re
from functools import cache

import pytest
import sqlalchemy as sa
import sqlglot
from conftest import schema_file
from sqlglot import exp

from tpsbench.core.schema import split_ddl, split_routines
from tpsbench.targets import open_target
from tpsbench.workloads import workload_classes

TABLES = {"warehouse", "district", "customer", "history", "orders", "new_order", "order_line", "item", "stock"}
DIALECTS = ("postgresql", "sqlite", "mysql", "mssql")
#: the workloads with one DDL file per dialect: tables, secondary indexes, stored routines (PostgreSQL, MySQL)
LAYOUTS = {"tpcc": (9, 2, {"tpcc_new_order", "tpcc_payment", "tpcc_delivery"}),
           "tpce": (33, 16, {"tpce_cents", "tpce_toggled", "tpce_take_lots", "tpce_trade_order", "tpce_trade_result",
                             "tpce_market_feed", "tpce_trade_lookup", "tpce_security_detail",
                             "tpce_customer_position"})}
SQLGLOT_DIALECT = {"postgresql": "postgres", "mssql": "tsql", "mysql": "mysql", "sqlite": "sqlite"}

Family = tuple  # ("integer", "int"|"small"|"big"), ("decimal", p, s), ("char"|"varchar", n), ("timestamp",) ...
Shape = dict  # {"tables": {name: {"columns": [(name, nullable, family)], "pk": [...]}}, "indexes": {...}}


# -- shapes from SQLAlchemy reflection -----------------------------------------------
def reflected_family(kind: sa.types.TypeEngine) -> Family:
    if isinstance(kind, sa.Integer):
        return ("integer", "small" if isinstance(kind, sa.SmallInteger) else
                "big" if isinstance(kind, sa.BigInteger) else "int")
    if isinstance(kind, sa.Numeric) and not isinstance(kind, sa.Float):
        return ("decimal", kind.precision, kind.scale)
    if isinstance(kind, sa.Text) or (isinstance(kind, sa.String) and kind.length is None):
        return ("text",)  # TEXT; MySQL's LONGTEXT reflects as a String without a length
    if isinstance(kind, sa.Date):
        return ("date",)
    if isinstance(kind, sa.String):
        return ("char" if isinstance(kind, sa.CHAR) else "varchar", kind.length)
    if isinstance(kind, sa.DateTime):
        return ("timestamp",)
    raise AssertionError(f"unexpected column type {kind!r}")


def reflected_shape(engine: sa.Engine) -> Shape:
    insp = sa.inspect(engine)
    tables, indexes = {}, {}
    for table in insp.get_table_names():
        columns = [(c["name"], c["nullable"], reflected_family(c["type"])) for c in insp.get_columns(table)]
        tables[table] = {"columns": columns, "pk": insp.get_pk_constraint(table)["constrained_columns"]}
        for index in insp.get_indexes(table):
            indexes[index["name"]] = (table, list(index["column_names"]), bool(index["unique"]))
    return {"tables": tables, "indexes": indexes}


# -- shapes from parsing the DDL --------------------------------------------------------
def parsed_family(kind: exp.DataType) -> Family:
    name = kind.this.name
    if name in ("TEXT", "LONGTEXT") or (name == "VARCHAR" and kind.expressions[0].this.name.upper() == "MAX"):
        return ("text",)
    params = [int(p.this.name) for p in kind.expressions]
    if name in ("INT", "SMALLINT", "BIGINT"):
        return ("integer", {"SMALLINT": "small", "BIGINT": "big"}.get(name, "int"))
    if name == "DATE":
        return ("date",)
    if name == "DECIMAL":
        return ("decimal", *params)
    if name in ("CHAR", "NCHAR", "VARCHAR", "NVARCHAR"):
        return ("char" if name.endswith("CHAR") and "VAR" not in name else "varchar", params[0])
    if name in ("TIMESTAMP", "DATETIME", "DATETIME2"):
        return ("timestamp",)
    raise AssertionError(f"unexpected column type {kind.sql()}")


def column_name(node: exp.Expression) -> str:
    """A key column's name, whether sqlglot wraps it in Ordered (ASC/DESC) or not."""
    return node.this.name if isinstance(node, exp.Ordered) else node.name


def parsed_shape(dialect: str, workload: str = "tpcc") -> Shape:
    tables_sql, index_sql = split_ddl(schema_file(workload, dialect).read_text())
    read = SQLGLOT_DIALECT[dialect]
    tables, indexes = {}, {}
    for statement in tables_sql:
        create = sqlglot.parse_one(statement, read=read)
        assert isinstance(create, exp.Create) and create.kind == "TABLE", statement
        columns, pk = [], []
        for item in create.this.expressions:
            if isinstance(item, exp.ColumnDef):
                not_null = any(isinstance(c.kind, exp.NotNullColumnConstraint) for c in item.constraints)
                columns.append((item.name, not not_null, parsed_family(item.kind)))
            elif isinstance(item, exp.PrimaryKey):
                pk = [column_name(e) for e in item.expressions]
            else:
                pytest.fail(f"unexpected table element {item.sql()}")
        tables[create.this.this.name] = {"columns": columns, "pk": pk}
    for statement in index_sql:
        create = sqlglot.parse_one(statement, read=read)
        assert isinstance(create, exp.Create) and create.kind == "INDEX", statement
        index = create.this
        indexes[index.name] = (index.args["table"].name, [column_name(e) for e in index.args["params"].args["columns"]],
                               bool(create.args.get("unique")))
    return {"tables": tables, "indexes": indexes}


def with_pk_not_null(shape: Shape) -> Shape:
    """Primary-key columns are NOT NULL whether or not the DDL says so."""
    for table in shape["tables"].values():
        table["columns"] = [(n, nullable and n not in table["pk"], f) for n, nullable, f in table["columns"]]
    return shape


@cache
def canonical_shape(workload: str) -> Shape:
    return with_pk_not_null(parsed_shape("postgresql", workload))


@pytest.fixture(scope="module")
def canonical() -> Shape:
    return canonical_shape("tpcc")


def assert_same_shape(actual: Shape, canonical: Shape, label: str) -> None:
    assert set(actual["tables"]) == set(canonical["tables"]), label
    for table, expected in canonical["tables"].items():
        assert actual["tables"][table]["columns"] == expected["columns"], f"{label}: {table} columns"
        assert actual["tables"][table]["pk"] == expected["pk"], f"{label}: {table} primary key"
    assert actual["indexes"] == canonical["indexes"], f"{label}: secondary indexes"


# -- the tests -----------------------------------------------------------------------
def test_canonical_shape_is_tpcc(canonical: Shape) -> None:
    assert set(canonical["tables"]) == TABLES
    assert canonical["tables"]["history"]["pk"] == []
    assert canonical["indexes"] == {
        "customer_by_last_name": ("customer", ["c_w_id", "c_d_id", "c_last", "c_first"], False),
        "orders_by_customer": ("orders", ["o_w_id", "o_d_id", "o_c_id", "o_id"], False),
    }
    money = [f for t in canonical["tables"].values() for _, _, f in t["columns"] if f[0] == "decimal"]
    assert len(money) == 11  # w_tax, w_ytd, d_tax, d_ytd, 4 in customer, h_amount, ol_amount, i_price


def test_canonical_shape_is_tpce() -> None:
    shape = canonical_shape("tpce")
    assert set(shape["tables"]) == set(workload_classes()["tpce"].tables)
    assert all(table["pk"] for table in shape["tables"].values())
    assert shape["indexes"]["trade_by_account"] == ("trade", ["t_ca_id", "t_dts"], False)
    assert shape["tables"]["daily_market"]["pk"] == ["dm_s_symb", "dm_date"]
    assert ("ni_item", False, ("text",)) in shape["tables"]["news_item"]["columns"]


@pytest.mark.parametrize("workload", LAYOUTS)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_ddl_file_layout(dialect: str, workload: str) -> None:
    text = schema_file(workload, dialect).read_text()
    tables, indexes = split_ddl(text)
    table_count, index_count, procedures = LAYOUTS[workload]
    assert len(tables) == table_count and len(indexes) == index_count
    assert not re.search(r"\b(REFERENCES|FOREIGN\s+KEY|^GO$)", text, re.IGNORECASE | re.MULTILINE)
    assert not re.search(r"\b(FLOAT|DOUBLE|REAL|MONEY)\b", "\n".join(tables + indexes), re.IGNORECASE)
    routines = split_routines(text)
    expected = procedures if dialect in ("postgresql", "mysql") else set()
    assert {name for _, name, _ in routines} == expected
    assert all(body.lstrip("-").strip() and "CREATE" in body and "//" not in body for _, _, body in routines)


def test_routines_are_split_on_their_own_end_lines() -> None:
    text = ("CREATE TABLE t (x INT);\n-- indexes\nCREATE INDEX i ON t (x);\n-- procedures (two)\n"
            "-- first\nCREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql\n//\n"
            "CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END\n//\n")
    assert split_ddl(text) == (["CREATE TABLE t (x INT)"], ["CREATE INDEX i ON t (x)"])
    assert [(kind, name) for kind, name, _ in split_routines(text)] == [("FUNCTION", "f"), ("PROCEDURE", "p")]
    assert split_routines(text)[1][2] == "CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END"
    assert split_routines("CREATE TABLE t (x INT);\n-- procedures=on is a comment, not the marker\n") == []


@pytest.mark.parametrize("workload", LAYOUTS)
def test_mssql_ddl_matches(workload: str) -> None:
    assert_same_shape(with_pk_not_null(parsed_shape("mssql", workload)), canonical_shape(workload),
                      f"{workload} mssql (parsed as T-SQL)")


@pytest.mark.parametrize("workload", LAYOUTS)
@pytest.mark.parametrize("kind", ["sqlite", "postgresql", "mysql"])
def test_ddl_created_and_reflected_matches(kind: str, workload: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue({"sqlite": "sqlite_url", "postgresql": "pg_url", "mysql": "mysql_url"}[kind])
    target = open_target(url)
    assert target.dialect == kind
    tables, indexes = split_ddl(schema_file(workload, target.dialect).read_text())
    with target.engine.begin() as conn:
        for statement in tables + indexes:
            conn.execute(sa.text(statement))
    assert_same_shape(reflected_shape(target.engine), canonical_shape(workload),
                      f"{workload} {kind} (created and reflected)")
    target.engine.dispose()
