"""One virtual user of a trace's mix: the custom workload's session, its parameters
taken from the captured executions' values instead of generators.

Why a whole execution's values at a time: parameters of one statement often go together
(a range's two ends, a key and its update), and the sample keeps them so (mix.py).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from tpsbench.core.session import RunContext
from tpsbench.core.target import Target
from tpsbench.workloads.custom.session import CustomSession
from tpsbench.workloads.custom.spec import Spec
from tpsbench.workloads.replay.normalise import Value


class MixSession(CustomSession):
    """A user dealing the mix's statements; each one's values drawn uniformly, with
    replacement, from its sample of captured executions."""

    def __init__(self, ctx: RunContext, user_id: int, users: int, conn: Any, target: Target, spec: Spec,
                 samples: Mapping[str, list[tuple[Value, ...]]]) -> None:
        super().__init__(ctx, user_id, users, conn, target, spec, {})
        self.samples = samples
        self.names = {name: tuple(f"p{i}" for i in range(1, len(rows[0]) + 1)) for name, rows in samples.items()}
        self.pick = random.Random(ctx.seed * 1_000_003 + user_id)

    def inputs(self, name: str) -> dict[str, Any]:
        rows = self.samples[name]
        return dict(zip(self.names[name], rows[self.pick.randrange(len(rows))]))
