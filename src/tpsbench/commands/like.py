"""``tpsbench run --like RUN``: a stored run's configuration as the run options that repeat it.

Why one mapping: a run is repeated on other storage, another server or another machine,
and the comparison means something only if everything but the environment is the same.
:func:`like_arguments` turns a stored configuration (``runs.config``, as any results store
or a bundle file holds it) into the ``tpsbench run WORKLOAD`` arguments that give the same
stored configuration again; options given beside ``--like`` come after them and win.

What is not carried, since it belongs to the place and not to the load: the database
(``--db``), the storage label, file and data path (the storage under test is the new
one's), the Dask cluster, the trace folder, the metrics endpoint, ``--force``, the notes,
and a campaign's id and round (the new run is of no campaign). The scale is the stored
one: a database built at another scale is refused in one line, and one with no build is
built at it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tpsbench.core.errors import TpsbenchError
from tpsbench.core.meta import read_meta
from tpsbench.results.bundle import bundle_runs
from tpsbench.results.records import Run
from tpsbench.results.store import ResultsStore
from tpsbench.targets import open_target

#: the timing keys of a stored configuration and the option each came from
DURATIONS = (("rampup_s", "--rampup"), ("duration_s", "--duration"), ("interval_s", "--interval"),
             ("warmup_s", "--warmup"))
#: stored workload option values that mean "not given" (an unset option is stored as its str())
UNSET = ("", "None")


def _seconds(value: Any) -> str:
    """A stored duration as a duration option reads it back exactly: 2.5 -> "2.5s"."""
    return f"{float(value)!r}s"


def like_arguments(config: Mapping[str, Any], seed: int | None = None) -> list[str]:
    """The arguments of ``tpsbench run`` (the workload first) that repeat a run whose stored
    configuration is ``config``; ``seed``: the run's seed where its configuration drew one."""
    workload = config.get("workload")
    if not isinstance(workload, str) or not workload:
        raise TpsbenchError("the stored configuration names no workload: it cannot be repeated")
    args = [workload, "--users", ",".join(str(int(u)) for u in config.get("users") or [])]
    args += [arg for key, flag in DURATIONS if config.get(key) is not None for arg in (flag, _seconds(config[key]))]
    if config.get("until_steady_s") is not None:
        args += ["--until-steady", _seconds(config["until_steady_s"])]
    if int(config.get("repeat") or 1) != 1:
        args += ["--repeat", str(int(config["repeat"]))]
    processes = config.get("processes", config.get("workers"))  # "workers": the key of runs stored before
    if processes is not None:
        args += ["--processes", str(int(processes))]
    chosen = config.get("seed") if config.get("seed") is not None else seed
    if chosen is not None:
        args += ["--seed", str(int(chosen))]
    for name, value in (config.get("options") or {}).items():
        if str(value) not in UNSET:
            args += [f"--{name.replace('_', '-')}", str(value)]
    args.append("--multiplex" if config.get("multiplex", True) else "--no-multiplex")
    if config.get("rates"):
        args += ["--rate", ",".join(repr(float(r)) for r in config["rates"]), "--arrivals",
                 str(config.get("arrivals") or "poisson")]
    if config.get("cache"):
        args += ["--cache", str(config["cache"])]
    if config.get("build_scale") is not None:
        args += ["--build-if-missing", "--scale", str(int(config["build_scale"]))]
    return args


def stored_run(results_url: str | None, run_id: int) -> Run:
    """The run ``--like`` names, from the results store; one line if there is none."""
    return ResultsStore(results_url, create=False).load_run(run_id).run


def check_scale(run: Run, url: str | None) -> list[str]:
    """Refuse a database built at another scale than the stored run's; the arguments that
    build it at that scale where it has no build yet (none where it has one)."""
    scale = run.config.get("scale")
    if scale is None:
        return []
    meta = {}
    try:
        meta = read_meta(open_target(url), run.workload)
    except TpsbenchError:  # no database yet: built below, or refused by the run in its own words
        pass
    if not meta:
        return [] if run.config.get("build_scale") is not None else ["--build-if-missing", "--scale", str(scale)]
    if str(meta.get("scale")) != str(scale):
        raise TpsbenchError(f"run {run.id} ran {run.workload} at scale {scale}, but the database holds scale "
                            f"{meta.get('scale')}: build one at scale {scale} (tpsbench build {run.workload} "
                            f"--scale {scale}) to repeat it")
    return []


def _option(args: list[str], flag: str) -> tuple[str | None, list[str]]:
    """The value of ``flag`` in ``args`` (``--flag V`` or ``--flag=V``; the last wins) and
    ``args`` without it."""
    value, rest, i = None, [], 0
    while i < len(args):
        arg = args[i]
        if arg == flag:
            if i + 1 >= len(args):
                raise TpsbenchError(f"{flag} needs a value")
            value, i = args[i + 1], i + 2
            continue
        if arg.startswith(flag + "="):
            value = arg.partition("=")[2]
        else:
            rest.append(arg)
        i += 1
    return value, rest


def like_command_line(args: list[str]) -> list[str]:
    """``run --like RUN [OPTIONS]`` as ``run WORKLOAD [the stored run's options] [OPTIONS]``:
    the run read from ``--results`` (kept in OPTIONS, which the new run stores into too)."""
    source, rest = _option(args, "--like")
    if source is None or not source.strip():
        raise TpsbenchError("--like needs a run id: tpsbench run --like 12 --db URL")
    results, _ = _option(rest, "--results")
    db, _ = _option(rest, "--db")
    run = stored_run(results, int(source)) if source.strip().isdigit() else bundled_run(source)
    return [*like_arguments(run.config, run.seed), *check_scale(run, db), *rest]


def bundled_run(source: str) -> Run:
    """The run of a bundle (tpsbench export) named ``FILE`` (its only run) or ``FILE:ID``
    (the run's id where it was exported)."""
    path, _, wanted = source.rpartition(":") if not os.path.exists(source) else (source, "", "")
    if not path or not os.path.isfile(path):
        raise TpsbenchError(f"--like {source}: not a run id (a whole number, as `tpsbench runs` lists them) "
                            "nor a bundle file (tpsbench export)")
    runs = bundle_runs(path)
    if wanted:
        chosen = [run for run in runs if str(run.id) == wanted.strip()]
        if not chosen:
            raise TpsbenchError(f"--like {source}: the bundle holds no run {wanted} "
                                f"(it holds {', '.join(str(r.id) for r in runs) or 'none'})")
        return chosen[0]
    if len(runs) != 1:
        raise TpsbenchError(f"--like {path}: the bundle holds {len(runs)} runs ({', '.join(str(r.id) for r in runs)});"
                            f" name one as {path}:ID")
    return runs[0]
