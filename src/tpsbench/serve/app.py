"""The web application: pages, the reports of tpsbench.report.html, and server-sent
events that follow the store.

Why polling the store for events: the store is the only source of truth, whichever
process or host writes to it; a run started from another terminal is followed exactly
as one started beside the viewer, and the viewer needs nothing from the run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from tpsbench.core.errors import TpsbenchError
from tpsbench.report.html import to_html
from tpsbench.results.live import ReadOnlyStore, list_campaigns, points_after, read_run
from tpsbench.serve import pages, views

STATIC = Path(__file__).parent / "static"
#: the files under /static/, by name and type: nothing else is served from disk
ASSETS = {"serve.js": "text/javascript", "serve.css": "text/css"}
#: how often an open page's events look at the store again, in seconds
POLL_S = 0.5


def _listing(store: ReadOnlyStore) -> dict[str, Any]:
    runs = store.list_runs()
    return {"runs": [views.run_row(r) for r in reversed(runs)],
            "campaigns": [views.campaign_row(c, runs) for c in reversed(list_campaigns(store))],
            "unreadable": list(store.unreadable)}


def _run_id(request: Request, name: str = "run_id") -> int:
    try:
        return int(request.path_params.get(name) or request.query_params.get(name) or "")
    except ValueError:
        raise TpsbenchError(f"{name.replace('_', ' ')} must be a run number") from None


def _error(exc: TpsbenchError) -> HTMLResponse:
    return HTMLResponse(pages.error_page(str(exc)), status_code=404)


def make_app(store: ReadOnlyStore, poll_s: float = POLL_S) -> Starlette:
    """The application over ``store``, which it only reads."""

    def guarded(handler: Callable[[Request], Response]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            try:
                return await run_in_threadpool(handler, request)
            except TpsbenchError as exc:
                return _error(exc)
        return endpoint

    def index(request: Request) -> Response:
        return HTMLResponse(pages.index_page(store.url))

    def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ASSETS:
            return Response("not found", status_code=404, media_type="text/plain")
        return Response((STATIC / name).read_bytes(), media_type=ASSETS[name])

    def live(request: Request) -> Response:
        run = read_run(store, _run_id(request))
        return HTMLResponse(pages.run_page(views.header(run)))

    def campaign(request: Request) -> Response:
        wanted = _run_id(request, "campaign_id")
        found = [c for c in list_campaigns(store) if c.id == wanted]
        if not found:
            raise TpsbenchError(f"results store {store.url} has no campaign {wanted}")
        return HTMLResponse(pages.campaign_page(views.campaign_row(found[0], [])))

    def run_report(request: Request) -> Response:
        data = store.load_run(_run_id(request))
        return HTMLResponse(to_html([data], histograms=store.load_histogram, title=f"tpsbench run {data.run.id}"))

    def campaign_report(request: Request) -> Response:
        campaign = _run_id(request, "campaign_id")
        runs = [store.load_run(r.id) for r in store.campaign_runs(campaign)]
        return HTMLResponse(to_html(runs, histograms=store.load_histogram, title=f"tpsbench campaign {campaign}"))

    def comparison(request: Request) -> Response:
        first, second = _run_id(request, "a"), _run_id(request, "b")
        runs = [store.load_run(first), store.load_run(second)]
        return HTMLResponse(to_html(runs, histograms=store.load_histogram, title=f"run {first} vs run {second}"))

    async def listing_events(request: Request) -> Response:
        async def events() -> AsyncIterator[dict[str, str]]:
            said = None
            while True:
                try:
                    text = json.dumps(await run_in_threadpool(_listing, store))
                except TpsbenchError as exc:
                    text = json.dumps({"error": str(exc)})
                if text != said:
                    said = text
                    yield {"event": "listing", "data": text}
                await asyncio.sleep(poll_s)
        return EventSourceResponse(events())

    async def run_events(request: Request) -> Response:
        try:
            run_id = _run_id(request)
            await run_in_threadpool(read_run, store, run_id)
        except TpsbenchError as exc:
            return _error(exc)
        return EventSourceResponse(_follow(store, run_id, poll_s))

    return Starlette(routes=[
        Route("/", guarded(index)),
        Route("/static/{name}", guarded(asset)),
        Route("/run/{run_id}", guarded(live)),
        Route("/campaign/{campaign_id}", guarded(campaign)),
        Route("/report/run/{run_id}", guarded(run_report)),
        Route("/report/campaign/{campaign_id}", guarded(campaign_report)),
        Route("/compare", guarded(comparison)),
        Route("/events/listing", listing_events),
        Route("/events/run/{run_id}", run_events),
    ])


async def _follow(store: ReadOnlyStore, run_id: int, poll_s: float) -> AsyncIterator[dict[str, str]]:
    """Events of one run: ``points`` (new intervals, where the run is, the time left) as
    they are stored, then ``end`` with each step's steady figures once it has ended."""
    after, last_end = 0, 0.0
    starts: dict[int, float] = {}  # each step's first interval's start: where its marker goes
    step: int | None = None
    while True:
        run = await run_in_threadpool(read_run, store, run_id)
        points = await run_in_threadpool(points_after, store, run_id, after)
        for p in points:
            starts.setdefault(p.step, p.t_start)
            after, step, last_end = p.id, p.step, p.t_end
        if points or run.status != "running":
            left = views.time_left(run, step, starts.get(step or 0, 0.0), last_end)
            yield {"event": "points", "data": json.dumps({
                "run": views.header(run), "points": [views.point(p) for p in points], "step": step,
                "starts": starts, "left_s": left})}
        if run.status != "running":
            data = await run_in_threadpool(store.load_run, run_id)
            yield {"event": "end", "data": json.dumps({"run": views.header(run), "steps": views.step_figures(data)})}
            return
        await asyncio.sleep(poll_s)
