"""Interfaces and value types that every layer shares: Workload, Session, Target, Batch,
SqlDialect, errors, redaction and parsing. Imports nothing else of tpsbench.
"""
