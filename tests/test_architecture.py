"""The shape of the code: layers that import downwards only, modules that fit in a head.

The layers are pyproject.toml's import-linter contract (docs/architecture.md). These
tests run import-linter for real: on the tree as it is, and on a copy with one import
turned the wrong way, which must fail, so that the contract is known to bite.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "tpsbench"
#: the longest a module may be (the developers' guide: "modules fit in a head")
MAX_LINES = 400
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command;"
        " sys.exit(lint_imports_command())", "--no-cache"]


def lint(cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    return subprocess.run(LINT, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_layers_contract_is_kept() -> None:
    done = lint(ROOT, ROOT / "src")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Layers import downwards only KEPT" in done.stdout


def test_a_lower_layer_importing_a_higher_one_breaks_the_contract(tmp_path: Path) -> None:
    shutil.copytree(PACKAGE, tmp_path / "src" / "tpsbench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    errors = tmp_path / "src" / "tpsbench" / "core" / "errors.py"
    errors.write_text(errors.read_text() + "\nfrom tpsbench.engine import coordinator  # wrong way round\n")
    done = lint(tmp_path, tmp_path / "src")
    assert done.returncode != 0
    assert "BROKEN" in done.stdout and "tpsbench.core.errors -> tpsbench.engine.coordinator" in done.stdout


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_fit_in_a_head(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= MAX_LINES


@pytest.mark.parametrize("path", [p for p in modules() if p.name == "__init__.py"],
                         ids=lambda p: str(p.parent.relative_to(PACKAGE.parent)))
def test_every_package_says_what_it_owns(path: Path) -> None:
    docstring = ast.get_docstring(ast.parse(path.read_text()))
    assert docstring and len(docstring.split()) >= 8
