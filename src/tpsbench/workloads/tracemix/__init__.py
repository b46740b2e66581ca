"""A captured trace's statement mix as a workload: ``tpsbench replay FILE --as-mix``.

It is the custom workload (tpsbench.workloads.custom) with its Spec built from the
trace's summary instead of read from a TOML file (mix.py), so a mix runs at stepped
user loads with the engine's measurement, the results store, the storage observers and
verdicts as every workload does. It builds nothing: the trace's tables are the
application's, on the target already, and a target missing one is refused in one line
before anything is stored. Those tables are the only ones its statements may write.
This package joins the two workloads it is made of (custom and replay) and is imported
by neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.session import RunContext, Session
from tpsbench.core.target import Target
from tpsbench.core.workload import Option, Workload
from tpsbench.workloads.custom import CustomWorkload
from tpsbench.workloads.custom.transactions import table_of
from tpsbench.workloads.replay.tables import refuse_missing
from tpsbench.workloads.replay.trace import read_trace
from tpsbench.workloads.tracemix.mix import Mix, mix_of
from tpsbench.workloads.tracemix.session import SampledInputs, TraceMixSession

TRACE = Option("file", "", "The trace file (tpsbench capture) whose summary's statements and weights, and a"
                           " sample of each statement's captured values, make the mix: docs/replay.md.")


class TraceMixWorkload(CustomWorkload):
    """A captured trace's normalised statements at their captured weights (--file TRACE),
    each its own transaction, parameters drawn from a sample of the captured executions."""

    name = "tracemix"
    scale_unit = "(none: it runs on the database as it is)"
    run_options = (TRACE,)
    build_options = ()  # type: ignore[assignment]  # nothing to build: CustomWorkload has its --file

    def __init__(self) -> None:
        super().__init__()
        self.mix: Mix | None = None
        self.source_dialect = ""

    def configure(self, options: Mapping[str, str]) -> None:
        """Read the trace and make its mix (a trace without a summary: one line)."""
        Workload.configure(self, options)  # the engine's options and waits; CustomWorkload's reads TOML
        path = options.get("file") or ""
        if not path:
            raise TpsbenchError("tracemix needs --file TRACE, a trace written by tpsbench capture (tpsbench run "
                                "tracemix --file TRACE, or tpsbench replay TRACE --as-mix); it builds nothing")
        trace = read_trace(Path(path))
        self.source_dialect = trace.dialect
        self.mix = mix_of(path, trace)
        self.spec = self.mix.spec
        self.table = table_of(self.spec, SampledInputs)
        self.transaction_names = self.table.names

    def verify_schema(self, target: Target) -> dict[str, str]:
        """The trace's kind of database and every table it uses, on the target as it is."""
        found = self.need_spec()
        if target.dialect != self.source_dialect:
            raise TpsbenchError(f"{found.path} was captured on {self.source_dialect}; the target is "
                                f"{target.dialect}: a trace's mix runs on the same kind of database")
        refuse_missing(target, list(found.writes), "nothing run")
        return super().verify_schema(target)

    def prepare_run(self, target: Target, options: Mapping[str, str], users: int) -> str | None:
        """The custom workload's preparation, and what of the trace the mix leaves out."""
        said = super().prepare_run(target, options, users) or ""
        mix = self.mix
        assert mix is not None, "configure made the mix"
        gone = (f"; left out: {mix.left_out} statement(s) that are not SELECT/INSERT/UPDATE/DELETE "
                f"({mix.left_out_count} executions: BEGIN, COMMIT ...)" if mix.left_out else "")
        gone += (f"; {mix.unmatched} statement(s) whose placeholders do not match their captured parameters"
                 if mix.unmatched else "")
        return (f"{said.replace('custom: ', 'tracemix: ', 1)}; {len(mix.statements)} normalised statement(s), "
                f"each its own transaction (sNN: the NNth of the summary kept), its values those of one of its "
                f"sampled captured executions{gone}")

    def open_session(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target) -> Session:
        assert self.mix is not None and self.table is not None, "configure made the mix and its table"
        return TraceMixSession(ctx, user_id, users, conn, target, self.need_spec(), self.mix.samples, self.table)


WORKLOAD = TraceMixWorkload
