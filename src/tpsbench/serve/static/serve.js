// tpsbench serve: fills the pages from the server's events. Every stored text is set as
// text (textContent), never as markup. No library: the charts are a few SVG lines.
"use strict";
(function () {
  const NS = "http://www.w3.org/2000/svg";
  const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];
  const body = document.body;

  function node(tag, attrs, text, ns) {
    const e = ns ? document.createElementNS(NS, tag) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function cell(tr, text) { tr.appendChild(node("td", {}, text)); }
  function links(tr, pairs) {
    const td = node("td");
    for (const [href, text] of pairs) { td.appendChild(node("a", {href: href}, text)); td.append(" "); }
    tr.appendChild(td);
  }
  function seconds(s) {
    if (s === null || s === undefined) return "?";
    const m = Math.floor(s / 60), r = Math.round(s % 60);
    return m ? `${m} min ${r} s` : `${r} s`;
  }
  function users(n) { return n === null || n === undefined ? "? users" : `${n} user${Number(n) === 1 ? "" : "s"}`; }
  function fixed(v, digits) { return v === null || v === undefined ? "" : Number(v).toFixed(digits); }

  function index() {
    const source = new EventSource("/events/listing");
    source.addEventListener("listing", (event) => {
      const d = JSON.parse(event.data);
      document.getElementById("problem").textContent = d.error || "";
      if (d.error) return;
      document.getElementById("unreadable").textContent = (d.unreadable || []).join("; ");
      // a campaign's page shows its own lines only
      const only = body.dataset.campaign === undefined ? null : Number(body.dataset.campaign);
      const runs = document.querySelector("#runs tbody");
      runs.replaceChildren();
      for (const r of d.runs.filter((r) => only === null || r.campaign === only)) {
        const tr = node("tr", {"data-run": r.id, "class": r.status});
        for (const v of [r.id, r.workload, r.storage, r.status, r.started, r.ended, r.database, r.campaign ?? ""])
          cell(tr, v);
        if (r.campaign !== null) tr.children[7].replaceChildren(node("a", {href: `/campaign/${r.campaign}`}, r.campaign));
        links(tr, [[`/run/${r.id}`, r.status === "running" ? "live" : "charts"], [`/report/run/${r.id}`, "report"]]);
        runs.appendChild(tr);
      }
      const campaigns = document.querySelector("#campaigns tbody");
      campaigns.replaceChildren();
      for (const c of d.campaigns.filter((c) => only === null || c.id === only)) {
        const tr = node("tr", {"data-campaign": c.id, "class": c.status});
        for (const v of [c.id, c.name, c.status, c.started, c.ended]) cell(tr, v);
        tr.firstChild.replaceChildren(node("a", {href: `/campaign/${c.id}`}, c.id));
        links(tr, c.runs.map((id) => [`/run/${id}`, `run ${id}`]));
        links(tr, c.runs.length ? [[`/report/campaign/${c.id}`, "report"]] : []);
        campaigns.appendChild(tr);
      }
    });
  }

  function chart(svg, series, markers) {
    const W = 900, H = 260, L = 60, R = 12, T = 12, B = 28;
    svg.replaceChildren();
    const all = series.flatMap((s) => s.values).filter((p) => p[1] !== null && p[1] !== undefined);
    const xmax = Math.max(1, ...all.map((p) => p[0]), ...markers.map((m) => m[0]));
    const ymax = Math.max(1e-9, ...all.map((p) => p[1])) * 1.1;
    const x = (v) => L + (W - L - R) * v / xmax, y = (v) => H - B - (H - T - B) * v / ymax;
    svg.appendChild(node("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#888"}, null, true));
    svg.appendChild(node("line", {x1: L, y1: T, x2: L, y2: H - B, stroke: "#888"}, null, true));
    for (const f of [0, 0.5, 1]) {
      const v = ymax / 1.1 * f;
      svg.appendChild(node("text", {x: L - 6, y: y(v) + 4, "text-anchor": "end", "class": "tick"},
                           v >= 100 ? v.toFixed(0) : v.toPrecision(2), true));
    }
    svg.appendChild(node("text", {x: W - R, y: H - 6, "text-anchor": "end", "class": "tick"},
                         `${xmax.toFixed(0)} s`, true));
    markers.forEach(([at, label, current]) => {
      svg.appendChild(node("line", {x1: x(at), y1: T, x2: x(at), y2: H - B, "stroke-dasharray": "4 3",
                                    stroke: current ? "#000" : "#aaa", "class": current ? "marker current" : "marker"},
                           null, true));
      svg.appendChild(node("text", {x: x(at) + 4, y: T + 10, "class": "tick"}, label, true));
    });
    series.forEach((s, i) => {
      const pts = s.values.filter((p) => p[1] !== null && p[1] !== undefined);
      svg.appendChild(node("polyline", {fill: "none", stroke: COLOURS[i], "stroke-width": 2, "class": "series",
                                        points: pts.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ")},
                           null, true));
      svg.appendChild(node("text", {x: L + 10 + 110 * i, y: H - 6, fill: COLOURS[i]}, s.name, true));
    });
    svg.setAttribute("data-points", series.length ? series[0].values.length : 0);
  }

  // the warm-up (--warmup) is stored as step 0: it is named as the warm-up, never as a step
  const phase = (s) => (Number(s) === 0 ? "warm-up" : `step ${s}`);

  function run() {
    const id = body.dataset.run, plan = JSON.parse(body.dataset.plan);
    const points = [];
    let starts = {}, step = null;
    const draw = () => {
      const t0 = points.length ? points[0].t_start : 0;
      const at = (key) => points.map((p) => [p.t_end - t0, key(p)]);
      const markers = Object.entries(starts).map(([s, t]) =>
        [t - t0, `${phase(s)}: ${users(plan.users[Math.max(Number(s), 1) - 1])}`, Number(s) === step]);
      chart(document.getElementById("chart-tps"), [{name: "TPS", values: at((p) => p.tps)}], markers);
      chart(document.getElementById("chart-latency"), [{name: "p95", values: at((p) => p.p95_ms)},
                                                       {name: "p99", values: at((p) => p.p99_ms)}], markers);
      chart(document.getElementById("chart-device"), [{name: "reads/s", values: at((p) => p.device["total.r_s"])},
                                                      {name: "writes/s", values: at((p) => p.device["total.w_s"])}],
            markers);
    };
    const source = new EventSource(`/events/run/${id}`);
    source.addEventListener("points", (event) => {
      const d = JSON.parse(event.data);
      points.push(...d.points);
      starts = d.starts;
      step = d.step;
      document.getElementById("status").textContent = d.run.status;
      const where = document.getElementById("step");
      if (step !== null) {
        const last = points[points.length - 1];
        where.textContent = `${step === 0 ? "the warm-up" : `step ${step} of ${plan.users.length}`} ` +
                            `(${users(last.users)}), interval ${last.interval}` +
                            `${last.steady ? "" : step === 0 ? " (before step 1, never measured)"
                                                             : " (outside the steady window)"}`;
        where.setAttribute("data-step", step);
      }
      document.getElementById("left").textContent = seconds(d.left_s);
      draw();
    });
    source.addEventListener("end", (event) => {
      source.close();
      const d = JSON.parse(event.data);
      document.getElementById("status").textContent = d.run.status;
      document.getElementById("steps-note").textContent = `run ${d.run.status}`;
      const tbody = document.querySelector("#steps tbody");
      tbody.replaceChildren();
      for (const s of d.steps) {
        const tr = node("tr", {"data-step": s.step, "data-tps": s.tps});
        for (const v of [s.step, s.users, fixed(s.tps, 1), fixed(s.p95_ms, 2), fixed(s.p99_ms, 2)]) cell(tr, v);
        tbody.appendChild(tr);
      }
      body.setAttribute("data-ended", "1");
    });
  }

  if (body.dataset.page === "index") index();
  else if (body.dataset.page === "run") run();
})();
