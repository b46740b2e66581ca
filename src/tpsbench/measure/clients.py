"""How many clients a server (or the PgBouncer in front of it) holds now, as it counts them.

Why: with thousands of users the driver's own count says whom it started, not who is
still there; a server that dropped idle connections or a pooler that refused some would
leave the step lighter than asked. A step of many sleeping users is only what it says
when the server side counts them all through the window (bench/fifteen_thousand.py,
tests/test_thousands.py read this every few seconds).
"""

from __future__ import annotations

from sqlalchemy.engine import make_url

from tpsbench.core.target import Target

#: the admin console's database name on a PgBouncer
CONSOLE = "pgbouncer"


def clients_connected(target: Target) -> int:
    """Client connections to ``target`` now, this reading's own left out: MariaDB and
    MySQL's Threads_connected (every client, whatever its database); through PgBouncer
    (``pool_mode`` in the URL) the clients its admin console lists for the database;
    else PostgreSQL's client backends on the database."""
    parsed = make_url(target.url)
    if parsed.get_backend_name() in ("mysql", "mariadb"):
        ((_, value),) = target.fetch_all("SHOW GLOBAL STATUS LIKE 'Threads_connected'", "counting clients")
        return int(value) - 1
    if "pool_mode" not in parsed.query:
        ((count,),) = target.fetch_all("SELECT count(*) - 1 FROM pg_stat_activity WHERE backend_type ="
                                       " 'client backend' AND datname = current_database()", "counting clients")
        return int(count)
    import psycopg

    with psycopg.connect(host=parsed.host or "127.0.0.1", port=parsed.port or 5432, user=parsed.username or "",
                         password=parsed.password or None, dbname=CONSOLE, autocommit=True) as conn:
        cur = conn.execute("SHOW CLIENTS")
        column = [d.name for d in cur.description or ()].index("database")
        return sum(1 for row in cur.fetchall() if row[column] == parsed.database)
