"""One virtual user of a trace's mix: the custom workload's session, its parameters
taken from the captured executions' values instead of generators.

Why a whole execution's values at a time: parameters of one statement often go together
(a range's two ends, a key and its update), and the sample keeps them so (mix.py).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tpsbench.core.session import RunContext
from tpsbench.core.target import Target
from tpsbench.core.transactions import TransactionTable
from tpsbench.workloads.custom.session import CustomSession
from tpsbench.workloads.custom.spec import Spec
from tpsbench.workloads.replay.normalise import Value


class TraceMixSession(CustomSession):
    """A user dealing the mix's statements; each one's values drawn uniformly, with
    replacement, from its sample of captured executions (:class:`SampledInputs`)."""

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target, spec: Spec,
                 samples: Mapping[str, list[tuple[Value, ...]]], table: TransactionTable[Any]) -> None:
        """``table``: the mix's transactions, their inputs :class:`SampledInputs`."""
        super().__init__(ctx, user_id, users, conn, target, spec, {}, table)
        self.samples = samples
        self.names = {name: tuple(f"p{i}" for i in range(1, len(rows[0]) + 1)) for name, rows in samples.items()}
        self.pick = random.Random(ctx.seed * 1_000_003 + user_id)


@dataclass(frozen=True, slots=True)
class SampledInputs:
    """The inputs of the mix's transaction ``name``: one of its sampled executions' values."""

    name: str

    def __call__(self, s: TraceMixSession) -> dict[str, Any]:
        rows = s.samples[self.name]
        return dict(zip(s.names[self.name], rows[s.pick.randrange(len(rows))]))
