"""Command line: a thin layer over tpsbench.api."""

import click


@click.group()
def main() -> None:
    """tpsbench: build, run, check and report OLTP benchmarks."""
