"""Writing a report, a comparison or a plan to ``--output FILE`` without destroying anything.

Why: ``--output`` used to write over whatever FILE was, the results store being read and
a built database included (every run lost, exit 0). A file is now replaced only when it
is a previous report of the same kind (recognised by a marker in what tpsbench writes:
the JSON ``schema``, the HTML generator meta tag, the CSV header, a closing marker line
in the text kinds); any other existing file needs ``--force``; a SQLite database (its
first bytes are "SQLite format 3") is refused even then, as it is a store or a database.
"""

from __future__ import annotations

from pathlib import Path

from tpsbench.core.errors import TpsbenchError

#: the first bytes of every SQLite database file
SQLITE_HEADER = b"SQLite format 3\x00"
#: the generator meta tag an HTML report carries in its head (report.html writes it)
HTML_GENERATOR = '<meta name="generator" content="tpsbench report">'
#: what the start of a report of each kind holds (found in its first bytes)
HEAD_MARKS = {"report --format json": b'"schema": "tpsbench-report/',
              "report --format html": HTML_GENERATOR.encode(), "report --format csv": b"storage,run,metric,"}
#: how much of the start and of the end of an existing file is read to recognise it
PEEK = 4096


def end_mark(kind: str) -> str:
    """The closing line of a text report of ``kind`` written to a file (Markdown hides it)."""
    if kind == "report --format markdown":  # no "--" inside an HTML comment
        return "<!-- written by tpsbench report in Markdown -->"
    return f"(written by tpsbench {kind})"


def marked(text: str, kind: str) -> str:
    """``text`` as it goes to a file: the text kinds get their closing marker line."""
    if kind in HEAD_MARKS:
        return text
    return f"{text}{'' if text.endswith(chr(10)) else chr(10)}{end_mark(kind)}\n"


def _peek(path: Path) -> tuple[bytes, bytes]:
    """The first and the last bytes of the file at ``path``."""
    with path.open("rb") as f:
        head = f.read(PEEK)
        f.seek(max(0, path.stat().st_size - PEEK))
        return head, f.read(PEEK)


def is_report(head: bytes, tail: bytes, kind: str) -> bool:
    """Whether a file starting with ``head`` and ending with ``tail`` is a report of ``kind``."""
    if kind in HEAD_MARKS:
        return HEAD_MARKS[kind] in head
    return tail.rstrip().endswith(end_mark(kind).encode())


def check_output(output: str, kind: str, force: bool) -> None:
    """Refuse ``output`` in one line unless writing ``kind`` there loses nothing: a new
    file, a previous report of the same kind, or (``force``) any file but a database."""
    path = Path(output)
    if not path.exists() or path.is_dir():
        return  # a folder: the write says so
    try:
        head, tail = _peek(path)
    except OSError as exc:
        raise TpsbenchError(f"cannot read {output} to check what it is: {exc.strerror or exc}") from None
    if head.startswith(SQLITE_HEADER):
        raise TpsbenchError(f"refusing to write over {output}: it is a SQLite database (a results store or a "
                            "benchmark database), never replaced by a report; name another --output")
    if not force and not is_report(head, tail, kind):
        raise TpsbenchError(f"refusing to write over {output}: it exists and is not a previous tpsbench {kind}; "
                            "name another --output, or add --force to replace it")


def write_output(output: str, text: str, kind: str, force: bool) -> int:
    """Write ``text`` (a ``kind``: "report --format html", "compare", "plan") to ``output`` once
    :func:`check_output` allows it; returns the bytes written. One line on any failure."""
    check_output(output, kind, force)
    data = marked(text, kind).encode("utf-8")
    try:
        Path(output).write_bytes(data)
    except OSError as exc:
        raise TpsbenchError(f"cannot write {output}: {exc.strerror or exc}") from None
    return len(data)
