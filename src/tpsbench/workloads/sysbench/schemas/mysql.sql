-- sysbench OLTP table for MySQL/MariaDB, as oltp_common.lua creates it with the mysql driver:
-- INTEGER NOT NULL AUTO_INCREMENT primary key (InnoDB clusters the rows by it), k with its
-- secondary index, c and pad as CHAR.
-- One table template: "{n}" is the table number, and every statement runs once per table
-- (sbtest1 .. sbtestN), tables first, then the statements after the marker below.
-- Explicit ids move AUTO_INCREMENT past themselves, so oltp_insert's id 0 gets a fresh id.

CREATE TABLE sbtest{n} (
    id   INTEGER   NOT NULL AUTO_INCREMENT,
    k    INTEGER   DEFAULT '0' NOT NULL,
    c    CHAR(120) DEFAULT ''  NOT NULL,
    pad  CHAR(60)  DEFAULT ''  NOT NULL,
    PRIMARY KEY (id)
) ENGINE = InnoDB;

-- indexes
CREATE INDEX k_{n} ON sbtest{n}(k);
