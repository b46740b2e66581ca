"""MySQL and MariaDB (``mysql://``, ``mariadb://``): the target and the modules it alone uses.

target holds the target (:class:`~tpsbench.targets.mysql.target.MysqlTarget`, and
:class:`~tpsbench.targets.mysql.target.MysqlFamily` that the ODBC target reuses); insert
is its bulk path's fallback; mysqlclient the text path's hot cursors; libmariadb,
prepared and prepared_rows the binary-protocol path; sessions what the server's
sessions are waiting on. ``TARGET`` is named here so that :func:`tpsbench.targets.open_target`
finds this package as it finds a one-module target.
"""

from tpsbench.targets.mysql.target import TARGET as TARGET
