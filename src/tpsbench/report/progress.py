"""Progress of long work (builds): one line per table with rows, rows/s and MB/s.

On a terminal the table redraws in place (rich's Live display); in a log or CI it
prints a plain summary line every ``LOG_EVERY_S`` seconds, so long builds show life
without flooding the output.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from rich.console import Console
from rich.live import Live
from rich.table import Table

LOG_EVERY_S = 10.0
#: width for tables written to logs and pipes, where rich cannot ask the terminal
LOG_WIDTH = 120


def make_console(stderr: bool = False) -> Console:
    """A rich console that keeps tables unwrapped in logs and pipes."""
    console = Console(stderr=stderr)
    if not console.is_terminal:
        console.width = LOG_WIDTH
    return console


@dataclass
class _TableProgress:
    rows: int = 0
    nbytes: int = 0
    #: when the last chunk arrived: rates of finished tables stop decaying after it
    last: float = 0.0


class LoadProgress:
    """Counts rows and bytes per table and shows them; use as a context manager."""

    def __init__(self, title: str, expected: dict[str, int], enabled: bool = True) -> None:
        self.title = title
        self.expected = expected
        self.tables = {name: _TableProgress() for name in expected}
        self.enabled = enabled
        self.started = time.monotonic()
        self._console = make_console(stderr=True)
        self._live: Live | None = None
        self._last_log = self.started

    def __enter__(self) -> LoadProgress:
        if self.enabled and self._console.is_terminal:
            self._live = Live(self._render(), console=self._console, refresh_per_second=4, transient=False)
            self._live.__enter__()
        elif self.enabled:
            print(f"{self.title}: started", file=sys.stderr, flush=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.update(self._render())
            self._live.__exit__(None, None, None)
        elif self.enabled:
            self._console.print(self._render())

    def add(self, table: str, rows: int, nbytes: int) -> None:
        entry = self.tables.setdefault(table, _TableProgress())
        now = time.monotonic()
        entry.rows += rows
        entry.nbytes += nbytes
        entry.last = now
        if self._live is not None:
            self._live.update(self._render())
        elif self.enabled and now - self._last_log >= LOG_EVERY_S:
            self._last_log = now
            print(self._summary_line(now), file=sys.stderr, flush=True)

    def _summary_line(self, now: float) -> str:
        done = sum(t.rows for t in self.tables.values())
        total = sum(self.expected.values()) or 1
        mb = sum(t.nbytes for t in self.tables.values()) / 1e6
        elapsed = max(now - self.started, 1e-9)
        return (f"{self.title}: {done:,} of ~{total:,} rows ({100 * done / total:.0f}%),"
                f" {done / elapsed:,.0f} rows/s, {mb / elapsed:.1f} MB/s")

    def _render(self) -> Table:
        now = time.monotonic()
        table = Table(title=f"{self.title} ({now - self.started:.0f} s)", title_justify="left")
        for header in ("table", "rows", "of", "rows/s", "MB/s"):
            table.add_column(header, justify="left" if header == "table" else "right")
        for name, entry in self.tables.items():
            elapsed = max((entry.last or now) - self.started, 1e-9)
            table.add_row(
                name,
                f"{entry.rows:,}",
                f"{self.expected.get(name, 0):,}",
                f"{entry.rows / elapsed:,.0f}",
                f"{entry.nbytes / elapsed / 1e6:.1f}",
            )
        return table
