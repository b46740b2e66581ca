-- sysbench OLTP table for SQL Server (sysbench 1.0 has no SQL Server driver: this is its
-- MySQL table in SQL Server's terms): clustered primary key on id, k with its secondary
-- index, c and pad as CHAR.
-- id has no IDENTITY: the loader writes ids 1..table_size through the ODBC bulk path,
-- which IDENTITY would refuse without IDENTITY_INSERT; oltp_insert brings its own ids
-- instead (negative, unique per user), which is sysbench's --auto-inc=off behaviour.
-- One table template: "{n}" is the table number, and every statement runs once per table
-- (sbtest1 .. sbtestN), tables first, then the statements after the marker below.
-- Statements end with ";" (no GO batches) so that one splitter serves every dialect.

CREATE TABLE sbtest{n} (
    id   INT       NOT NULL,
    k    INT       NOT NULL CONSTRAINT df_sbtest{n}_k DEFAULT 0,
    c    CHAR(120) NOT NULL CONSTRAINT df_sbtest{n}_c DEFAULT '',
    pad  CHAR(60)  NOT NULL CONSTRAINT df_sbtest{n}_pad DEFAULT '',
    CONSTRAINT pk_sbtest{n} PRIMARY KEY (id)
);

-- indexes
CREATE INDEX k_{n} ON sbtest{n}(k);
