"""--help that teaches, and one spelling per idea (the newcomer's first hour).

Why: a newcomer learns tpsbench from --help. click's own TEXT, INTEGER and FLOAT do not
say what to type (is --duration 300 or 5m?), and one name for two ideas (--workers for
build's loaders and for run's processes) teaches the wrong one. These tests walk the
whole click tree, the subcommands generated per workload included (a workload of one's
own too), so that an option added without a metavar or help text fails here; and they
hold each idea to its one spelling: --loaders for build, --processes for run, the other
refused (neither shipped in a release under another name, so no old spelling is kept).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
import pytest
from test_own_workload import toy_folder  # noqa: F401  (the fixture: a workload of one's own, registered)

from tpsbench.cli.main import cli, main
from tpsbench.core.errors import TpsbenchError
from tpsbench.workloads import workload_classes
from tpsbench.workloads.tpcc import TpccWorkload

#: what click shows for an option that names no kind of its own
CLICK_KINDS = re.compile(r"\b(TEXT|INTEGER|FLOAT)\b")
DURATION_FORM = "DURATION like 30s, 5m or 1h"


def walk(command: click.Command, ctx: click.Context) -> Iterator[tuple[click.Command, click.Context]]:
    """Every command under ``command`` (itself first), each with its context."""
    yield command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, name
            yield from walk(sub, click.Context(sub, info_name=name, parent=ctx))


def tree() -> list[tuple[click.Command, click.Context]]:
    return list(walk(cli, click.Context(cli, info_name="tpsbench")))


def problems(command: click.Command, ctx: click.Context) -> list[str]:
    """What --help of ``command`` fails to teach: options without help text, and options
    taking a value that show click's TEXT, INTEGER or FLOAT instead of its kind."""
    found = []
    for param in command.get_params(ctx):
        if not isinstance(param, click.Option) or param.hidden:
            continue
        shown, _ = param.get_help_record(ctx) or ("", "")
        where = f"{ctx.command_path} {param.opts[0]}"
        if not (param.help or "").strip():
            found.append(f"{where}: no help text")
        if not param.is_flag and CLICK_KINDS.search(shown):
            found.append(f"{where}: shows {shown!r}")
    return found


def invoke(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    """The CLI in this process: exit code, stdout and the lines on stderr."""
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, [line for line in err.splitlines() if line.strip()]


# -- typed --help, everywhere ------------------------------------------------------------------

def test_every_option_names_its_kind_and_has_help(toy_folder: Path) -> None:  # noqa: F811 - the fixture imported above
    commands = tree()
    paths = {ctx.command_path for _, ctx in commands}
    for workload in ("tpcc", "sysbench", "kvtoy"):  # the walk reaches every generated subcommand
        assert {f"tpsbench {group} {workload}" for group in ("run", "build", "size")} <= paths
    assert {"tpsbench check", "tpsbench drop", "tpsbench presets", "tpsbench report", "tpsbench compare",
            "tpsbench runs"} <= paths
    valued = [p for c, ctx in commands for p in c.get_params(ctx) if isinstance(p, click.Option) and not p.is_flag]
    assert len(valued) > 60
    assert [problem for command, ctx in commands for problem in problems(command, ctx)] == []


def test_the_walk_catches_an_untyped_option() -> None:
    @click.command()
    @click.option("--when")
    @click.option("--count", type=int, help="How many.")
    @click.option("--ratio", type=float, help="How much.")
    def untyped(when: str, count: int, ratio: float) -> None:
        """A command as click types it by default."""

    assert len(problems(untyped, click.Context(untyped, info_name="untyped"))) == 4


def test_every_duration_says_its_form_once(toy_folder: Path) -> None:  # noqa: F811 - the fixture imported above
    durations = [(ctx.command_path, p) for c, ctx in tree() for p in c.get_params(ctx)
                 if isinstance(p, click.Option) and p.metavar == "DURATION"]
    expected = {(f"tpsbench run {workload}", name) for workload in ("tpcc", "sysbench", "kvtoy")
                for name in ("rampup", "duration", "interval")}
    assert {(path, p.name) for path, p in durations} >= expected
    assert [(path, p.name) for path, p in durations if (p.help or "").count(DURATION_FORM) != 1] == []


@pytest.mark.parametrize("group", ["run", "build", "size"])
def test_per_workload_groups_say_workload(group: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = invoke([group, "--help"], capsys)
    assert code == 0
    assert f"Usage: tpsbench {group} [OPTIONS] WORKLOAD [ARGS]..." in out, out
    assert "Commands:" not in out
    listed = out.split("Workloads:", 1)[1]
    assert re.search(r"^\s+tpcc\s", listed, re.MULTILINE) and re.search(r"^\s+sysbench\s", listed, re.MULTILINE)


def test_a_bare_group_shows_its_help_not_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = invoke(["run"], capsys)
    assert code != 0
    assert err[0] == "Usage: tpsbench run [OPTIONS] WORKLOAD [ARGS]..." and not any("error" in line for line in err)


# -- one spelling per idea ----------------------------------------------------------------------

def test_scale_is_spelt_scale_and_workers_is_gone_from_help(toy_folder: Path) -> None:  # noqa: F811 - the fixture imported above
    for command, ctx in tree():
        options = [p for p in command.get_params(ctx) if isinstance(p, click.Option)]
        shown = [opt for p in options if not p.hidden for opt in p.opts]
        assert "--workers" not in [opt for p in options for opt in p.opts], ctx.command_path  # hidden neither
        if re.fullmatch(r"tpsbench (run|build|size) \w+", ctx.command_path):
            assert "--scale" in shown, ctx.command_path


@pytest.mark.parametrize(("args", "shown", "hidden"), [
    (["build", "tpcc"], ["--loaders N", "--scale, --warehouses SCALE"], ["--workers", "--processes"]),
    (["build", "sysbench"], ["--loaders N", "--scale, --tables SCALE", "--table-size N"], ["--workers"]),
    (["size", "sysbench"], ["--scale, --tables SCALE", "--table-size N"], ["--loaders"]),
    (["run", "tpcc"], ["--processes N", "--scale SCALE", "--users LIST", "--seed SEED"], ["--workers", "--loaders"]),
])
def test_help_shows_the_new_spellings(args: list[str], shown: list[str], hidden: list[str],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = invoke([*args, "--help"], capsys)
    assert code == 0
    for text in shown:
        assert text in out, (text, out)
    for text in hidden:
        assert text not in out, (text, out)
    if args[0] == "run":  # a flag now: nothing follows it in the options column
        assert re.search(r"^  --build-if-missing {2,}Build", out, re.MULTILINE), out


@pytest.fixture
def build_calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What ``build`` hands the API, which builds nothing here."""
    calls: list[dict[str, Any]] = []

    def fake(workload: str, scale: int, url: str | None, **kwargs: Any) -> SimpleNamespace:
        calls.append({"scale": scale, **kwargs})
        return SimpleNamespace(workload=workload, scale=scale, seed=0, loaders=kwargs["loaders"] or 1, seconds=0.0,
                               rows={})
    monkeypatch.setattr("tpsbench.commands.build.build", fake)
    return calls


@pytest.mark.parametrize(("args", "loaders"), [(["--loaders", "3"], 3), ([], None)])
def test_build_takes_loaders(args: list[str], loaders: int | None, build_calls: list[dict[str, Any]],
                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = invoke(["build", "tpcc", "--scale", "2", *args], capsys)
    assert code == 0, err
    assert [call["loaders"] for call in build_calls] == [loaders]
    assert err == []
    assert "loader(s)" in out


@pytest.fixture
def run_configs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The RunConfig ``run`` hands the API, which then stops with a one-line error."""
    configs: list[Any] = []

    def fake(config: Any, **kwargs: Any) -> None:
        configs.append(config)
        raise TpsbenchError("stopped before the run")
    monkeypatch.setattr("tpsbench.commands.run.run", fake)
    return configs


@pytest.mark.parametrize(("args", "processes", "build_scale"), [
    (["--processes", "2"], 2, None),
    (["--build-if-missing", "--scale", "3"], None, 3),
    (["--build-if-missing", "--scale", "small"], None, TpccWorkload.scale_factors()["presets"]["small"]["scale"]),
])
def test_run_takes_processes_and_build_if_missing_with_scale(args: list[str], processes: int | None,
                                                             build_scale: int | None, run_configs: list[Any],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = invoke(["run", "tpcc", *args], capsys)
    assert code != 0
    assert err == ["tpsbench: error: stopped before the run"]
    assert [(c.processes, c.build_scale) for c in run_configs] == [(processes, build_scale)]


@pytest.mark.parametrize(("args", "needle"), [
    (["build", "tpcc", "--scale", "2", "--workers", "3"], "No such option '--workers'"),
    (["run", "tpcc", "--workers", "2"], "No such option '--workers'"),
    (["run", "tpcc", "--build-if-missing", "3"], "unexpected extra argument"),
])
def test_the_spellings_that_never_shipped_are_refused(args: list[str], needle: str, run_configs: list[Any],
                                                      build_calls: list[dict[str, Any]],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = invoke(args, capsys)
    assert code == 2 and any(needle in line for line in err), err
    assert run_configs == [] and build_calls == []


@pytest.mark.parametrize(("args", "needle"), [
    (["--build-if-missing"], "--build-if-missing needs --scale"),
    (["--scale", "2"], "give --build-if-missing too"),
    (["--build-if-missing", "--scale", "0"], "got 0"),
    (["--processes", "0"], "0 is not in the range x>=1"),
])
def test_scale_and_processes_slips_are_one_line(args: list[str], needle: str, run_configs: list[Any],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = invoke(["run", "tpcc", *args], capsys)
    assert code != 0 and run_configs == []
    assert len(err) == 1 and err[0].startswith("tpsbench: error: ") and needle in err[0], err


# -- presets and size for every workload --------------------------------------------------------

@pytest.mark.parametrize(("workload", "line"), [
    ("tpcc", r"^small\s+10\s"), ("sysbench", r"^sysbench has no named scales: --scale takes a number of tables$"),
    ("kvtoy", r"^toy\s+2\s+two thousand keys$"),
])
def test_presets_of_every_workload(workload: str, line: str, toy_folder: Path,  # noqa: F811 - the fixture imported above
                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = invoke(["presets", workload], capsys)
    assert code == 0 and err == []
    assert re.search(line, out, re.MULTILINE), out


def test_size_of_every_workload(toy_folder: Path, tmp_path: Path,  # noqa: F811 - the fixture imported above
                                capsys: pytest.CaptureFixture[str]) -> None:
    db = ["--db", f"sqlite:///{tmp_path / 'none.db'}"]
    code, out, _ = invoke(["size", "tpcc", "--scale", "tiny", *db], capsys)
    assert code == 0 and out.startswith("tpcc scale 1 on sqlite: about "), out
    small = invoke(["size", "sysbench", "--tables", "2", *db], capsys)[1]
    large = invoke(["size", "sysbench", "--tables", "2", "--table-size", "1000000", *db], capsys)[1]
    assert small.startswith("sysbench scale 2 on sqlite") and small != large  # the build option counts
    code, _, err = invoke(["size", "kvtoy", "--scale", "toy", *db], capsys)  # a workload that measured no sizes
    assert code != 0 and err == ["tpsbench: error: no measured kvtoy sizes for sqlite; measured: none"]
    assert list(tmp_path.iterdir()) == [toy_folder.parent]  # no database file created


@pytest.mark.parametrize("args", [["presets", "nosuch"], ["size", "nosuch", "--scale", "1"]])
def test_an_unknown_workload_is_one_line_naming_the_known(args: list[str], toy_folder: Path,  # noqa: F811 - the fixture imported above
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = invoke(args, capsys)
    assert code != 0
    known = sorted(workload_classes())
    assert "kvtoy" in known and {"sysbench", "tpcc"} <= set(known)  # one's own beside the shipped ones
    assert err == [f"tpsbench: error: unknown workload 'nosuch'; known: {', '.join(known)}"]
