/* The plots (see app.js for the module map, the trace convention at its top): the figure
 * message (Plotly.react once per figure) and the extend frames (buffered, drawn at most every
 * FLUSH_MS). Which plots there are (div id, title, unit) and each series' plot and line style come
 * from the server's plot specification, GET /api/plots (dashboard/plot_specs.py), fetched once.
 * The shared time axis (live or a past window, one zoom for all) and the log y toggles are
 * timeline.js's; frames wait while it shows a past window. */
import { $, api, app, hasPlotly, num, setStatus, short, showError, stats } from "./core.js";
import { applyState } from "./controls.js";
import { datasheetFigure } from "./datasheet.js";
import { setPlotSpec, spec } from "./plot_spec.js";
import { afterFigure, holdFrames, newerThanDrawn, yType } from "./timeline.js";

let specLoading = null;    // the GET /api/plots in flight
let pendingFigure = null;  // a figure that came before the specification: drawn when it arrives
const SAMPLES_PER_FRAME = 10;  // drawn samples per frame and trace (about 300 per second at 30 fps)
const MAX_POINTS = 4000;       // drawn points per trace, at most
const FLUSH_MS = 100;          // redraw the plots at most 10 times per second
const HISTORY_POINTS = 3000;   // points per trace kept from a figure's history
const PLOT_CONFIG = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };

// ------------------------------------------------------------------ plot specification

/* Fetch the specification once (again after a failure); then draw a figure that waited for it. */
export function loadPlotSpec() {
  if (spec || specLoading) return;
  specLoading = api("GET", "/api/plots").then((served) => {
    setPlotSpec(served);
    specLoading = null;
    const figure = pendingFigure;
    pendingFigure = null;
    if (figure) drawFigure(figure);
  }, (e) => {
    specLoading = null;
    showError(`plot specification: ${e.message}`);
  });
}

// ------------------------------------------------------------------ figure and plots

/* {plot, field} of every trace of figure.data, from its meta (the convention at the top). */
function classify(data) {
  return data.map((tr) => ({ plot: spec.byDiv[tr.meta.plot].plot, field: tr.meta.field }));
}

/* The layout of plot `plot`; `ys` its traces' y arrays (the log default, timeline.js). */
function plotLayout(plot, uirevision, ys) {
  const info = spec.byKey[plot];
  return {
    uirevision,
    title: { text: info.title, font: { size: 12 }, x: 0.01, xanchor: "left", y: 0.98 },
    margin: { l: 52, r: 8, t: 26, b: 30 },
    font: { size: 10 },
    xaxis: { title: { text: "t (s)", standoff: 2 }, automargin: true },
    yaxis: { title: { text: info.unit }, automargin: true, zeroline: true, type: yType(plot, ys) },
    // outside the plot area, right of it (plotly widens the margin for it): never over a trace;
    // taller than the plot (16-48 traces of a compare), it scrolls; one group per instance
    legend: { orientation: "v", x: 1.01, xanchor: "left", y: 1, yanchor: "top", font: { size: 9 },
              tracegroupgap: 4, groupclick: "toggleitem", itemwidth: 24 },
    showlegend: true,
    hovermode: "x",
  };
}

/* False for a motor trace of a motor the joint does not have (th2 of a single-motor SEA, both
   of a rigid joint): such a trace would be a flat line. state.joints[j].motors gives the count. */
function motorExists(jointName, field) {
  const j = app.joints.find((jj) => jj.name === jointName);
  const motors = j && Number.isInteger(j.motors) ? j.motors : 2;
  return field === "th2" ? motors >= 2 : field === "th1" ? motors >= 1 : true;
}

export function handleFigure(figure, state) {
  if (state) applyState(state);
  if (!spec) {  // not yet fetched: frames wait for the figure, the figure for the specification
    app.plotted = false;
    pendingFigure = figure || {};
    loadPlotSpec();
    return;
  }
  drawFigure(figure || {});
}

function drawFigure(figure) {
  const layout = figure.layout || {};
  app.uirevision = layout.uirevision != null ? String(layout.uirevision) : "asr";
  const run = /^run-(\d+)$/.exec(app.uirevision);  // the figure's run (figure.py: "run-<id>")
  app.runId = run ? Number(run[1]) : null;
  const data = figure.data;
  const sharedX = Array.isArray(figure.x) ? figure.x : null;  // time axis of traces without x
  const cls = classify(data);
  const compare = data.some((tr) => tr.meta.instance > 0);  // several instances: grouped legends

  const perPlot = {};
  for (const p of spec.plots) perPlot[p.plot] = [];
  app.route = data.map((tr, k) => {
    const { plot, field } = cls[k];
    if (!motorExists(tr.meta.joint, field)) return null;  // left out: extends skip it
    const copy = Object.assign({}, tr);
    delete copy.xaxis; delete copy.yaxis;
    if (!copy.type) copy.type = "scatter";
    groupByInstance(copy, compare);
    if (!copy.mode) copy.mode = "lines";
    copy.line = Object.assign({}, copy.line, { dash: spec.byField[field].dash });  // the served style
    if (copy.x === undefined) copy.x = sharedX && Array.isArray(copy.y) ? sharedX.slice(0, copy.y.length) : [];
    if (copy.y === undefined) copy.y = [];
    if (Array.isArray(copy.x) && Array.isArray(copy.y) && copy.x.length > HISTORY_POINTS) {
      const stride = Math.ceil(copy.x.length / HISTORY_POINTS);
      const keep = (arr) => arr.filter((_, i) => (arr.length - 1 - i) % stride === 0);
      copy.x = keep(copy.x);
      copy.y = keep(copy.y);
    }
    perPlot[plot].push(copy);
    return { plot, local: perPlot[plot].length - 1 };
  });
  // deflection traces per joint, and one marker trace of the samples on the deflection clamp
  app.deflTraces = {};
  cls.forEach(({ field }, k) => {
    if (field === "defl" && app.route[k]) (app.deflTraces[data[k].meta.joint] ||= []).push(k);
  });
  perPlot.defl.push({ type: "scatter", mode: "markers", name: "on the deflection clamp", x: [], y: [],
                      meta: { field: "clamped" }, marker: { color: "#d62728", size: 7, symbol: "x" } });
  app.clampLocal = perPlot.defl.length - 1;
  app.tNewest = newestTime(perPlot);  // the shared window ends here (keepPoints)
  app.tFirst = sharedX && sharedX.length ? sharedX[0] : null;  // the run's first sample
  datasheetFigure(data);  // the datasheet finds its deflection trace by the trace order
  app.buffer = {};
  if (!hasPlotly()) return;
  for (const p of spec.plots) {
    const ys = perPlot[p.plot].map((tr) => tr.y);
    Plotly.react($(p.div), perPlot[p.plot], plotLayout(p.plot, app.uirevision, ys), PLOT_CONFIG);
  }
  app.plotted = true;
  stats.figures += 1;
  afterFigure();
}

/* In compare mode, a trace's legend entry under its instance's group ("preset 0.2"), named
   by joint and series only: short entries; a click on a group's title hides the instance. */
function groupByInstance(copy, compare) {
  if (!compare) return;
  const m = copy.meta;
  copy.legendgroup = `instance-${m.instance}`;
  copy.legendgrouptitle = { text: `preset ${short(m.preset)}`, font: { size: 9 } };
  copy.name = String(copy.name || "").replace(/^preset \S+ /, "");
}

export function handleExtend(msg) {
  const now = performance.now();
  app.frames += 1;
  stats.frames = app.frames;
  app.lastFrameAt = now;
  app.frameTimes.push(now);
  const st = $("status");
  st.setAttribute("data-frames", String(app.frames));
  // a spring on its deflection clamp (the stand-in for the mechanical stop): said in the status
  const clamped = Array.isArray(msg.clamped) ? msg.clamped : [];
  st.dataset.clamped = clamped.join(",");
  setStatus(clamped.length ? `live; on the deflection clamp: ${clamped.join(", ")}` : "live", "live");
  if (num(msg.t) !== null) $("sim-time").textContent = `t = ${msg.t.toFixed(1)} s`;

  if (app.pending && app.pending.acked) {
    stats.latencyMs = Math.round(now - app.pending.t0);
    stats.latencies.push(stats.latencyMs);
    if (stats.latencies.length > 20) stats.latencies.shift();
    app.pending = null;
  }

  if (!app.plotted || !hasPlotly()) return;
  // a frame of the run before the figure's (sent before a reset, arriving after its figure):
  // its times are another run's, they would move the shared window
  if (app.runId != null && msg.run_id != null && msg.run_id !== app.runId) return;
  const indices = Array.isArray(msg.indices) ? msg.indices : [];
  const update = msg.update || {};
  const keys = Object.keys(update);
  if (!keys.length) return;
  // decimate each frame to at most SAMPLES_PER_FRAME samples (keeping the last one) and scale
  // maxPoints by the same factor: the plotted window stays the server's, the browser draws less
  const first = update[keys[0]][0] || [];
  const n = first.length || 1;
  const stride = Math.max(1, Math.ceil(n / SAMPLES_PER_FRAME));
  const pick = (arr) => {
    if (stride === 1 || !arr || !arr.length) return arr || [];
    const out = [];
    for (let i = arr.length - 1; i >= 0; i -= stride) out.push(arr[i]);
    return out.reverse();
  };
  const kept = Math.ceil(n / stride);
  if (msg.maxPoints != null) {
    app.maxPoints = Math.min(MAX_POINTS, Math.max(10, Math.ceil((msg.maxPoints * kept) / n)));
  }
  const xs = Array.isArray(update.x) ? update.x.find((a) => Array.isArray(a) && a.length) : null;
  if (xs && num(xs[xs.length - 1]) !== null) {
    app.tNewest = Math.max(app.tNewest ?? -Infinity, xs[xs.length - 1]);
    if (app.tFirst == null) app.tFirst = xs[0];
  }
  markClamped(clamped, indices, update);
  indices.forEach((gi, k) => {
    const r = app.route[gi];
    if (!r) return;
    const plotBuf = app.buffer[r.plot] || (app.buffer[r.plot] = {});
    const tr = plotBuf[r.local] || (plotBuf[r.local] = {});
    for (const key of keys) {
      const vals = pick(update[key][k]);
      const acc = tr[key] || (tr[key] = []);
      for (let i = 0; i < vals.length; i++) acc.push(vals[i]);
    }
  });
  scheduleFlush();
}

/* A red marker on the deflection plot at the frame's last sample of each joint on its clamp
   (msg.clamped), on the instance trace deflected most: where the spring hit its stop. */
function markClamped(clamped, indices, update) {
  if (!clamped.length || app.clampLocal == null || !update.x || !update.y) return;
  const pos = new Map(indices.map((gi, k) => [gi, k]));
  const tr = ((app.buffer.defl ||= {})[app.clampLocal] ||= { x: [], y: [] });
  for (const name of clamped) {
    let best = null;
    for (const gi of app.deflTraces[name] || []) {
      const k = pos.get(gi);
      const ys = k === undefined ? null : update.y[k];
      if (!ys || !ys.length || ys[ys.length - 1] == null) continue;
      const y = ys[ys.length - 1], x = update.x[k][ys.length - 1];
      if (best === null || Math.abs(y) > Math.abs(best.y)) best = { x, y };
    }
    if (best) { tr.x.push(best.x); tr.y.push(best.y); }
  }
}

/* Draw the buffered samples: one Plotly.extendTraces per plot, at most every FLUSH_MS. */
function scheduleFlush() {
  if (app.flushTimer) return;
  const wait = Math.max(0, FLUSH_MS - (performance.now() - app.lastFlush));
  app.flushTimer = setTimeout(() => requestAnimationFrame(flush), wait);
}

/* The newest time of a figure's traces (their x arrays by plot), or null. */
function newestTime(perPlot) {
  let newest = null;
  for (const traces of Object.values(perPlot)) {
    for (const tr of traces) {
      const x = Array.isArray(tr.x) ? tr.x : [];
      if (x.length && num(x[x.length - 1]) !== null) newest = Math.max(newest ?? -Infinity, x[x.length - 1]);
    }
  }
  return newest;
}

/* The start of the plotted window: window_s before the newest sample of any trace (all live
   plots share it), or null before there is one. */
function windowStart() {
  const windowS = app.state ? num(app.state.window_s) : null;
  return windowS && app.tNewest != null ? app.tNewest - windowS : null;
}

/* Points trace `local` of plot div `gd` keeps after adding `add` ({x, y}): those within the
   shared window (windowStart), at most app.maxPoints. By time, not by count: the history of a
   first view is decimated, sparser than the frames that follow it; and a trace that gets no
   new points (the clamp markers once the spring is off its clamp) is cut to the same window. */
function keepPoints(gd, local, add, tMin) {
  const ax = Array.isArray(add.x) ? add.x : [];
  if (tMin === null) return app.maxPoints;
  const newer = (arr) => {  // points >= tMin of a sorted array
    let lo = 0, hi = arr.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (arr[mid] < tMin) lo = mid + 1; else hi = mid; }
    return arr.length - lo;
  };
  const cur = gd.data && gd.data[local] && Array.isArray(gd.data[local].x) ? gd.data[local].x : [];
  return Math.max(0, Math.min(app.maxPoints, newer(cur) + newer(ax)));
}

/* Traces of plot div `gd` not in `bufs` whose oldest point is before tMin: added with no new
   points, so that extendTraces cuts them to the shared window too. */
function addStale(gd, bufs, tMin) {
  if (tMin === null || !Array.isArray(gd.data)) return;
  gd.data.forEach((tr, local) => {
    const x = Array.isArray(tr.x) ? tr.x : [];
    if (!bufs[local] && x.length && x[0] < tMin) bufs[local] = { x: [], y: [] };
  });
}

/* The x autorange of plot div `gd` held within the shared window [lo, hi] s: plotly pads the
   range of a marker trace (the clamp markers) beyond its points, the line traces' not; so every
   live plot shows the same window. Set on the layout the next redraw (extendTraces) reads: no
   relayout event, and a user's zoom (autorange off) is left as it is. */
function shareWindow(gd, lo, hi) {
  if (!gd.layout || !(hi > lo)) return;
  const xa = gd.layout.xaxis || (gd.layout.xaxis = {});
  xa.autorangeoptions = { minallowed: lo, maxallowed: hi };
}

/* Cut the buffered samples a restored window already holds (timeline.js newerThanDrawn). */
function dropDrawn(buffer) {
  for (const bufs of Object.values(buffer)) {
    for (const tr of Object.values(bufs)) {
      const from = Array.isArray(tr.x) ? newerThanDrawn(tr.x) : 0;
      if (from === 0) continue;
      for (const key of Object.keys(tr)) tr[key] = from < 0 ? [] : tr[key].slice(from);
    }
  }
}

function flush() {
  app.flushTimer = null;
  app.lastFlush = performance.now();
  if (holdFrames()) {  // a past window shown: frames are dropped; restoring: kept for later
    if (app.view.mode === "past") app.buffer = {};
    return;
  }
  const buffer = app.buffer;
  app.buffer = {};
  if (!app.plotted || !hasPlotly()) return;
  dropDrawn(buffer);
  const tMin = windowStart();
  for (const { plot: p, div } of spec.plots) {
    const gd = $(div);
    if (!gd) continue;
    const bufs = buffer[p] || {};
    addStale(gd, bufs, tMin);
    const locals = Object.keys(bufs).map(Number);
    if (!locals.length) continue;
    if (tMin !== null) shareWindow(gd, Math.max(tMin, app.tFirst ?? tMin), app.tNewest);
    const upd = {}, maxPoints = {};
    for (const local of locals) {
      const keep = keepPoints(gd, local, bufs[local], tMin);
      for (const key of Object.keys(bufs[local])) {
        (upd[key] || (upd[key] = [])).push(bufs[local][key]);
        (maxPoints[key] || (maxPoints[key] = [])).push(keep);
      }
    }
    try {
      Plotly.extendTraces(gd, upd, locals, maxPoints);
    } catch (e) {
      console.warn("extendTraces", p, e);
    }
  }
}

loadPlotSpec();  // at once: the first figure then rarely waits for it
