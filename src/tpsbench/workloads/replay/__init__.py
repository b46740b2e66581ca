"""Captured statement traffic: the trace file, statement normalisation, server-log parsing
and the replay of a trace's sessions.

Not a workload of its own (no ``WORKLOAD``): ``tpsbench capture`` writes a trace from a
live database's log and ``tpsbench replay`` plays it back (docs/replay.md).
"""
