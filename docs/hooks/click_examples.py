"""MkDocs hook: the click help's example lines as code blocks in the CLI reference.

Why: every command's help keeps its examples as indented lines (click's ``\\b`` blocks),
and mkdocs-click copies them into the page as plain lines, which Markdown joins into one
paragraph. On the CLI reference page alone, each run of indented lines that starts a
block (after a blank line or a line ending in ":") becomes a code block, as --help shows it.
"""

from __future__ import annotations

import textwrap
from typing import Any

from markdown import Extension, Markdown
from markdown.preprocessors import Preprocessor

#: the page mkdocs-click writes (docs/reference/cli.md)
CLI_PAGE = "reference/cli.md"
_current: dict[str, str] = {"page": ""}


def examples_as_code(lines: list[str]) -> list[str]:
    """``lines`` with every run of indented example lines fenced as text."""
    out: list[str] = []
    fenced = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            fenced = not fenced
        starts = not out or not out[-1].strip() or out[-1].rstrip().endswith(":")
        if fenced or not line.startswith("  ") or not line.strip() or not starts:
            out.append(line)
            i += 1
            continue
        block = []
        while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
            block.append(lines[i])
            i += 1
        out += ["", "```text", *textwrap.dedent("\n".join(block)).splitlines(), "```", ""]
    return out


class _Examples(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        return examples_as_code(lines) if _current["page"] == CLI_PAGE else lines


class _ExamplesExtension(Extension):
    def extendMarkdown(self, md: Markdown) -> None:
        # after mkdocs-click has written the reference (141), before code fences are read
        md.preprocessors.register(_Examples(md), "click_examples", 100)


def on_config(config: Any) -> Any:
    config.markdown_extensions.append(_ExamplesExtension())
    return config


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    _current["page"] = page.file.src_uri
    return markdown
