"""The Python API: build, drop, check, run and size as functions, each what one CLI
command does (``tpsbench`` re-exports them).
"""
