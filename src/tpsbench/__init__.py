"""tpsbench: an OLTP database benchmark driver.

Build a database at a scale factor, run a transaction mix at stepped user loads,
record TPS and response times per storage configuration, and report them side by side.
Everything the CLI does is also available from Python: see :mod:`tpsbench.api`.
"""

__version__ = "0.1.0"
