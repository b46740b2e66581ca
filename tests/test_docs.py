"""The README and the documentation site say what the code does.

The CLI reference (docs/reference/cli.md) is written by mkdocs-click from the click commands
when the site is built; these tests render it with the same code and the same directive, and
check that it shows every command and every option that ``tpsbench ... --help`` shows, so a
directive that stops short (a depth, a hidden subcommand) fails here. The README stays a
first screen: under 200 lines, starting with the Quick start's two commands. No network.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import click
import pytest
from mkdocs_click._extension import replace_command_docs

from tpsbench.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: the Quick start's two commands, as the README has always given them first
QUICK_START = [
    ("pip install . && tpsbench run tpcc --build-if-missing --scale 1 --users 1,4,8 --rampup 5s --duration 20s "
     "--interval 5s"),
    "pip install -e '.[test]' && python -m pytest",
]


def _directive() -> dict[str, str]:
    """The mkdocs-click directive's options, as docs/reference/cli.md writes them."""
    text = (DOCS / "reference" / "cli.md").read_text()
    block = text.split("::: mkdocs-click", 1)[1]
    options = {}
    for line in block.splitlines()[1:]:
        found = re.fullmatch(r"\s+:(\w+):\s*(.*)", line)
        if found is None:
            break
        options[found[1]] = found[2].strip()
    return options


def _commands(command: click.Command, path: str, parent: click.Context | None = None) -> dict[str, set[str]]:
    """Every command's full name under ``command``, with the options its --help shows."""
    ctx = click.Context(command, info_name=path.rsplit(" ", 1)[-1], parent=parent)
    shown = {opt for param in command.get_params(ctx) if param.get_help_record(ctx) is not None
             for opt in (*param.opts, *param.secondary_opts) if opt.startswith("-")}
    found = {path: shown}
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                found.update(_commands(sub, f"{path} {name}", ctx))
    return found


def _rendered() -> dict[str, str]:
    """The reference as mkdocs-click writes it, cut into one section per command (keyed by
    the command's full name, from the usage line it prints)."""
    text = "\n".join(replace_command_docs(has_attr_list=True, **_directive()))
    sections = {}
    for part in re.split(r"\n(?=#+ )", text):
        usage = re.search(r"```text\n(.+?)\n```", part)
        assert usage is not None, f"a section without a usage line: {part[:200]}"
        name = re.sub(r" \[OPTIONS\].*| [A-Z]+.*", "", usage[1]).strip()
        sections[name] = part
    return sections


def test_the_directive_documents_the_tpsbench_command() -> None:
    options = _directive()
    assert options["module"] == "tpsbench.cli.main" and options["command"] == "cli"
    assert options["prog_name"] == "tpsbench"


def test_cli_reference_lists_every_command_and_option() -> None:
    commands = _commands(cli, "tpsbench")
    # the walk itself: every workload under each of its groups, and run's own options
    assert {"tpsbench run tpcc", "tpsbench build tpce", "tpsbench size sysbench", "tpsbench report"} <= set(commands)
    assert {"--users", "--db", "--storage", "--cache"} <= commands["tpsbench run tpcc"]
    sections = _rendered()
    assert set(commands) - set(sections) == set(), "commands the CLI reference leaves out"
    for name, options in commands.items():
        table = sections[name]
        missing = sorted(opt for opt in options if f"`{opt}`" not in table)
        assert not missing, f"{name}: options --help shows and the CLI reference does not: {missing}"


def test_cli_reference_is_in_the_site() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    assert "reference/cli.md" in nav and "- mkdocs-click" in nav


def test_readme_is_a_first_screen_that_starts_with_the_quick_start() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    sections = re.findall(r"^## (.+)$", readme, flags=re.MULTILINE)
    assert sections[0] == "Quick start"
    first_block = re.search(r"^## Quick start\n+```sh\n(.*?)\n```", readme, flags=re.MULTILINE | re.DOTALL)
    assert first_block is not None and first_block[1].splitlines() == QUICK_START


def _parse(line: str) -> click.Context:
    """A command line as tpsbench parses it (options checked, nothing run)."""
    args = shlex.split(line, comments=True)
    assert args[0] == "tpsbench", line
    command: click.Command = cli
    path, parent = ["tpsbench"], None
    args = args[1:]
    while isinstance(command, click.Group):
        parent = click.Context(command, info_name=path[-1], parent=parent)
        found = command.get_command(parent, args[0])
        assert found is not None, line
        command, path = found, [*path, args.pop(0)]
    return command.make_context(path[-1], args, parent=parent)


def test_every_cheat_sheet_line_is_a_command_tpsbench_takes() -> None:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"^## Cheat-sheet\n+```sh\n(.*?)\n```", readme, flags=re.MULTILINE | re.DOTALL)
    assert block is not None
    lines = block[1].splitlines()
    assert len(lines) == 10
    for line in lines:
        _parse(line)
    with pytest.raises(click.NoSuchOption):  # the check itself: an option tpsbench lacks fails
        _parse("tpsbench runs --no-such-option")


#: pages whose examples their own tests run (the custom workload's file is built and run)
OWN_TESTS = {"docs/custom-workloads.md"}
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in DOCS.rglob("*.md"))]


@pytest.mark.parametrize("page", sorted(set(PAGES) - OWN_TESTS))
def test_every_example_command_parses(page: str) -> None:
    """Each ``tpsbench`` line of a page's shell examples names commands and options that
    exist, with values tpsbench takes (a line with ``...`` elided, or on a workload of
    one's own folder, is an illustration)."""
    for block in re.findall(r"```sh\n(.*?)\n```", (ROOT / page).read_text(), flags=re.DOTALL):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            while words and ("=" in words[0] or words[0] == "sudo"):
                words.pop(0)
            if words[:1] == ["tpsbench"] and "..." not in line and "TPSBENCH_WORKLOADS" not in line:
                _parse(line[line.index("tpsbench"):])


@pytest.mark.parametrize("page", PAGES)
def test_pages_cite_only_files_of_the_repository(page: str) -> None:
    """A bench/ or src/ path a page cites exists here, and no page points outside the
    repository (the site cannot link to them, so a stale path would go unnoticed)."""
    text = (ROOT / page).read_text()
    assert "../shared" not in text
    cited = set(re.findall(r"`((?:bench|src|tests|docs)/[\w./-]+?)`", text))
    missing = sorted(path for path in cited if not (ROOT / path).exists())
    assert not missing, f"{page} cites paths that do not exist: {missing}"


def test_the_reference_shows_help_examples_as_code() -> None:
    """The site's hook fences a help's indented example lines (which Markdown would join into
    one paragraph) and leaves a list item's continuation and a fenced block alone."""
    spec = importlib.util.spec_from_file_location("click_examples", DOCS / "hooks" / "click_examples.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    help_text = ["Run WORKLOAD.", "", "  tpsbench run tpcc --users 8", "  tpsbench runs", "", "**Usage:**"]
    assert hook.examples_as_code(help_text) == [
        "Run WORKLOAD.", "", "", "```text", "tpsbench run tpcc --users 8", "tpsbench runs", "```", "", "",
        "**Usage:**"]
    untouched = ["- an item", "  its second line", "", "```text", "  kept as it is", "```"]
    assert hook.examples_as_code(untouched) == untouched
