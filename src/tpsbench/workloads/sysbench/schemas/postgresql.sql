-- sysbench OLTP table for PostgreSQL, as oltp_common.lua creates it with --db-driver=pgsql:
-- SERIAL id as the primary key, k with its secondary index, c and pad as blank-padded CHAR.
-- One table template: "{n}" is the table number, and every statement runs once per table
-- (sbtest1 .. sbtestN), tables first, then the statements after the marker below.
-- The loader writes ids 1..table_size itself (so that a build is deterministic), which a
-- SERIAL column does not notice: setval moves the sequence past them, as sysbench's own
-- INSERTs without an id would have, so that oltp_insert gets fresh ids.

CREATE TABLE sbtest{n} (
    id   SERIAL,
    k    INTEGER   DEFAULT '0' NOT NULL,
    c    CHAR(120) DEFAULT ''  NOT NULL,
    pad  CHAR(60)  DEFAULT ''  NOT NULL,
    PRIMARY KEY (id)
);

-- indexes
CREATE INDEX k_{n} ON sbtest{n}(k);
SELECT setval(pg_get_serial_sequence('sbtest{n}', 'id'), (SELECT COALESCE(MAX(id), 0) + 1 FROM sbtest{n}), false);
