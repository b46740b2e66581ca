-- sysbench OLTP table for SQLite (sysbench has no SQLite driver: this is its MySQL table
-- in SQLite's terms). "id INTEGER PRIMARY KEY" makes id the rowid, SQLite's clustered key
-- and its auto-increment: an INSERT without id gets max(id) + 1, like AUTO_INCREMENT.
-- One table template: "{n}" is the table number, and every statement runs once per table
-- (sbtest1 .. sbtestN), tables first, then the statements after the marker below.

CREATE TABLE sbtest{n} (
    id   INTEGER   NOT NULL PRIMARY KEY,
    k    INTEGER   DEFAULT '0' NOT NULL,
    c    CHAR(120) DEFAULT ''  NOT NULL,
    pad  CHAR(60)  DEFAULT ''  NOT NULL
);

-- indexes
CREATE INDEX k_{n} ON sbtest{n}(k);
