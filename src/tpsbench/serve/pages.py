"""The pages' HTML: shells that the script (static/serve.js) fills from the events.

Why shells and text nodes: every label, note and message comes from users or servers;
here it goes through :func:`html.escape`, and the script sets it only as text
(``textContent``), never as markup, so a storage label holding ``<script>`` shows as text.
"""

from __future__ import annotations

import html
import json
from typing import Any

HEAD = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="/static/serve.css"><title>{title}</title></head>')


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _page(title: str, body: str, **data: object) -> str:
    attrs = "".join(f' data-{k}="{_e(v)}"' for k, v in data.items())
    return (HEAD.format(title=_e(title)) + f"<body{attrs}>{body}"
            '<script src="/static/serve.js"></script></body></html>\n')


TABLES = """<section><h2>Runs</h2><p id="unreadable" class="warn"></p><table id="runs"><thead><tr><th>id</th>
<th>workload</th><th>storage</th><th>status</th><th>started</th><th>ended</th><th>database</th><th>campaign</th><th></th></tr></thead>
<tbody></tbody></table></section>
<section><h2>Campaigns</h2><table id="campaigns"><thead><tr><th>id</th><th>name</th><th>status</th><th>started</th>
<th>ended</th><th>runs</th><th></th></tr></thead><tbody></tbody></table></section>"""


def index_page(store: str) -> str:
    """The listing of runs and campaigns (filled and kept current by the listing events)."""
    return _page("tpsbench results", f"""
<header><h1>tpsbench results</h1><p class="note">store <code>{_e(store)}</code>, read only;
the lists follow it as runs write to it.</p></header>
<section><h2>Compare two runs</h2>
<form action="/compare" method="get"><label>run <input name="a" type="number" min="1" required></label>
<label>with run <input name="b" type="number" min="1" required></label> <button>compare</button></form></section>
{TABLES}
<p id="problem" class="warn"></p>""", page="index")


CHARTS = (("tps", "TPS per interval"), ("latency", "p95 and p99 latency per interval (ms)"),
          ("device", "Device I/O per interval (reads/s, writes/s)"))


def run_page(header: dict[str, Any]) -> str:
    """A run followed live (or shown whole, once it has ended): charts per interval, step
    markers, where the run is and the time left, then each step's steady figures."""
    charts = "".join(f'<figure class="chart"><figcaption>{_e(caption)}</figcaption>'
                     f'<svg id="chart-{key}" viewBox="0 0 900 260" data-points="0"></svg></figure>'
                     for key, caption in CHARTS)
    users = ", ".join(map(str, header["plan"]["users"]))
    body = f"""
<header><p><a href="/">all runs</a> · <a href="/report/run/{header['id']}">HTML report</a></p>
<h1>Run {header['id']}: {_e(header['workload'])} on <span id="storage">{_e(header['storage'])}</span></h1>
<p class="note">{_e(header['database'])} · started {_e(header['started'])} · users {_e(users)}</p>
<p>status <b id="status">{_e(header['status'])}</b> · <span id="step">waiting for the first interval</span>
· time left <span id="left">?</span></p></header>
{charts}
<section><h2>Steady state per step</h2><p class="note" id="steps-note">when the run has ended</p>
<table id="steps"><thead><tr><th>step</th><th>users</th><th>TPS</th><th>p95 (ms)</th><th>p99 (ms)</th></tr></thead>
<tbody></tbody></table></section>"""
    return _page(f"tpsbench run {header['id']}", body, page="run", run=header["id"],
                 plan=json.dumps(header["plan"]))


def campaign_page(campaign: dict[str, Any]) -> str:
    """A campaign followed live: its line and its runs' lines, each run's page a click away."""
    body = f"""
<header><p><a href="/">all runs</a> · <a href="/report/campaign/{campaign['id']}">HTML report</a></p>
<h1>Campaign {campaign['id']}: {_e(campaign['name'])}</h1>
<p class="note">its lines follow the store as its runs write to it.</p></header>
{TABLES}
<p id="problem" class="warn"></p>"""
    return _page(f"tpsbench campaign {campaign['id']}", body, page="index", campaign=campaign["id"])


def error_page(message: str) -> str:
    return _page("tpsbench: not found", f'<p><a href="/">all runs</a></p><p class="warn">{_e(message)}</p>',
                 page="error")
