/* The live plots' shared time axis (see app.js for the module map; PROTOCOL.md "Plots"): one
 * window for all of them, live or past. Live, the window ends at the newest sample (plots.js
 * extends it). Frozen (the "pause view" toggle, or the simulation paused), the scrub slider
 * moves the window back over the whole run: GET /api/plots/range serves that window from the
 * server's record of the run, min/max decimated, and every live plot draws it. Zooming one plot
 * (drag, double-click) zooms all. The log y toggles: the stiffness plot and the datasheet's
 * stiffness panels (log at once where the drawn values span more than LOG_DECADES decades).
 *
 * One time cursor for every live plot and the 3-D view: while frozen it is a vertical line
 * (shape "cursor") at the same time on each live plot, at the shown window's end after a
 * scrub, at the hovered time while a plot is hovered (it stays there after); the 3-D view
 * draws the robot's pose at it (robot3d.js replay: GET /api/plots/pose) and names its time;
 * live again, the line goes and the 3-D view draws the live poses. Hovering one plot shows
 * the hover at the same time on every other (Plotly.Fx.hover), live or frozen.
 *
 * Labels that describe what the plots show change when it is drawn (whenDrawn): compare's
 * label (controls.js) switches when the first frame of the run its state describes is drawn,
 * not when the state arrives (the figure and frames of a new run follow it, late on a busy
 * stream). */
import { $, api, app, hasPlotly, num, showError } from "./core.js";
import { livePlots, routeOf } from "./plot_spec.js";
import { live as live3d, replay as replay3d } from "./robot3d.js";

const RANGE_POINTS = 1500;   // points per trace of a past window (the server bounds it too)
const SCRUB_WAIT_MS = 120;   // a past window is fetched at most this often while scrubbing
const LOG_DECADES = 2;       // a positive y range wider than this many decades: log by default
const DATASHEET_LOG_AXES = ["yaxis2", "yaxis3"];  // the datasheet's stiffness panels
const CURSOR_WAIT_MS = 60;   // the cursor line and the 3-D pose follow the hover at most this often
const CURSOR_COLOUR = "#d62728";

// mode: "live" (frames extend the plots), "past" (a window of the run drawn; frames wait) or
// "restoring" (the newest window asked for; frames are kept, drawn once it is there)
const view = (app.view = { mode: "live", span: null, t0: null, seq: 0, timer: null,
                           logTouched: { stiffness: false, datasheet: false },
                           cursor: null, cursorTimer: null, hoverSync: false,
                           drawnRun: null, labels: {} });

function windowS() {
  return (app.state && num(app.state.window_s)) || 10;
}

export function frozen() {
  return $("view-pause").checked || !!(app.state && app.state.paused);
}

/* "past" and "restoring" hold the frames back (plots.js flush asks). */
export function holdFrames() {
  return view.mode !== "live";
}

/* GET /api/plots/range for [t0, t1] s, or (t0 null) the span alone (an empty window at 0). */
async function getRange(t0, t1) {
  const q = t0 == null ? "t0=0&t1=0&points=2" : `t0=${Math.max(0, t0)}&t1=${Math.max(0, t1)}&points=${RANGE_POINTS}`;
  return api("GET", `/api/plots/range?${q}`);
}

// ------------------------------------------------------------------ drawing a window

/* Draw answer `r` of GET /api/plots/range on every live plot, the x axis held at [t0, t1]
   (or autorange when null). Rows are in the figure's trace order (routeOf). */
function drawRange(r, t0, t1) {
  if (!hasPlotly() || !app.plotted || (app.runId != null && r.run_id !== app.runId)) return false;
  const per = {};  // plot -> {x, y, idx}: Plotly.update's arrays for its traces
  const add = (plot, local, x, y) => {
    const p = (per[plot] ||= { x: [], y: [], idx: [] });
    p.x.push(x); p.y.push(y); p.idx.push(local);
  };
  (r.y || []).forEach((ys, gi) => { const to = routeOf(gi); if (to) add(to.plot, to.local, r.x, ys); });
  // no clamp bands in it: the record keeps no clamp flags (plots.js draws them live only)
  for (const local of app.clampLocals || []) add("defl", local, [], []);
  for (const { plot, div } of livePlots()) {
    const gd = $(div);
    if (!gd || !gd.data) continue;
    const q = per[plot];
    const lay = t0 == null ? { "xaxis.autorange": true } : { "xaxis.range": [t0, t1], "xaxis.autorange": false };
    if (q) Plotly.update(gd, { x: q.x, y: q.y }, lay, q.idx); else Plotly.relayout(gd, lay);
  }
  return true;
}

function showTimes(t0, t1) {
  const label = $("view-time");
  label.dataset.t0 = t0 == null ? "" : String(t0);
  label.dataset.t1 = t1 == null ? "" : String(t1);
  label.textContent = t0 == null ? "live" : `${t0.toFixed(2)} to ${t1.toFixed(2)} s`;
}

/* The window starting at t0 (s): fetched, then drawn if still the latest asked for. */
async function showPast(t0) {
  const seq = ++view.seq;
  const t1 = t0 + windowS();
  try {
    const r = await getRange(t0, t1);
    if (seq !== view.seq || view.mode !== "past") return;
    if (drawRange(r, t0, t1)) {
      showTimes(t0, t1);
      const label = $("view-time");
      label.dataset.windows = String(Number(label.dataset.windows || 0) + 1);  // past windows drawn
      setCursor(view.span ? Math.min(t1, view.span[1]) : t1);
    }
  } catch (e) {
    showError(`plot window: ${e.message}`);
  }
}

/* Back to live: the newest window drawn, then the frames kept meanwhile (newer only). */
async function restoreLive() {
  view.mode = "restoring";
  const seq = ++view.seq;
  setCursor(null);
  try {
    const span = (await getRange(null)).span;
    if (seq !== view.seq) return;
    if (span) {
      const t1 = span[1], t0 = Math.max(span[0], t1 - windowS());
      const r = await getRange(t0, t1);
      if (seq !== view.seq) return;
      drawRange(r, null, null);
      view.drawnTo = r.x.length ? r.x[r.x.length - 1] : null;
    }
  } catch (e) {
    showError(`plot window: ${e.message}`);
  }
  if (seq !== view.seq) return;
  view.mode = "live";
  showTimes(null, null);
}

// ------------------------------------------------------------------ freeze and scrub

async function freeze() {
  view.mode = "past";
  const seq = ++view.seq;
  let span = null;
  try { span = (await getRange(null)).span; } catch (e) { showError(`plot window: ${e.message}`); }
  if (seq !== view.seq) return;
  view.span = span;
  const s = $("view-scrub");
  const last = span ? Math.max(span[0], span[1] - windowS()) : 0;
  s.min = span ? String(span[0]) : "0";
  s.max = String(last);
  s.value = String(last);  // the window shown now: the newest
  s.disabled = !span;
  $("view-live").disabled = false;
  if (span) {
    showTimes(last, last + windowS());
    setCursor(span[1]);
  }
}

/* Freeze or go live as the toggle and the simulation's pause say (polled: the state arrives
   by several paths). Live again only once a frame newer than the frozen run's end came: a
   state older than the pause, late on a busy stream, does not unfreeze the view. A new figure
   (a reset, another robot) while frozen asks the span again. */
function syncMode() {
  const want = frozen();
  const ran = !view.span || (app.tNewest ?? -Infinity) > view.span[1];
  if (want && view.mode !== "past") freeze();
  else if (!want && view.mode === "past" && ran) {
    $("view-scrub").disabled = true;
    $("view-live").disabled = true;
    restoreLive();
  }
}

export function afterFigure() {
  view.drawnTo = null;
  if (view.mode === "past") freeze();
  else if (view.mode === "restoring") { view.seq += 1; view.mode = "live"; showTimes(null, null); setCursor(null); }
  for (const { div } of livePlots()) { bindZoom($(div)); bindHover($(div)); }
  runDrawn();  // a figure with samples of its run (a first view's history): that run is shown
}

// ------------------------------------------------------------------ the time cursor

/* The shared cursor at time t (s), or none (null, live): a line on every live plot, the 3-D
   view's pose at t. Drawn at most every CURSOR_WAIT_MS (a hover moves it at mouse rate). */
function setCursor(t) {
  view.cursor = t;
  if (t == null) {
    clearTimeout(view.cursorTimer);
    view.cursorTimer = null;
    drawCursor();
    live3d();
    return;
  }
  if (view.cursorTimer) return;
  view.cursorTimer = setTimeout(() => {
    view.cursorTimer = null;
    drawCursor();
    if (view.cursor != null) replay3d(view.cursor);
  }, CURSOR_WAIT_MS);
}

function drawCursor() {
  const t = view.cursor;
  const label = $("view-time");
  label.dataset.cursor = t == null ? "" : String(t);
  if (!hasPlotly()) return;
  const shapes = t == null ? [] : [{ type: "line", name: "cursor", xref: "x", yref: "paper", x0: t, x1: t,
                                     y0: 0, y1: 1, line: { color: CURSOR_COLOUR, width: 1.5, dash: "dot" } }];
  for (const { div } of livePlots()) {
    const gd = $(div);
    if (!gd || !gd.layout) continue;
    const had = (gd.layout.shapes || []).filter((sh) => sh.name === "cursor");
    if (!had.length && !shapes.length) continue;
    const others = (gd.layout.shapes || []).filter((sh) => sh.name !== "cursor");
    Plotly.relayout(gd, { shapes: [...others, ...shapes] });
  }
}

/* Hover synced across the live plots (the same time on each); while frozen it moves the
   cursor. */
function bindHover(gd) {
  if (!gd || !gd.on || gd.asrHoverBound) return;
  gd.asrHoverBound = true;
  gd.on("plotly_hover", (ev) => {
    if (view.hoverSync) return;  // our own Fx.hover on the other plots
    const x = ev && ev.points && ev.points.length ? +ev.points[0].x : NaN;
    if (!Number.isFinite(x)) return;
    view.hoverSync = true;
    try {
      for (const { div } of livePlots()) {
        const other = $(div);
        if (other === gd || !other || !other.data || other.hidden) continue;
        // noHoverEvent: no plotly_hover from the others (Fx.hover is throttled: its event would come
        // after this handler, unguarded, and hover back)
        try { Plotly.Fx.hover(other, { xval: x }, "xy", true); } catch (e) { /* a plot not drawn yet */ }
      }
    } finally {
      view.hoverSync = false;
    }
    if (view.mode === "past") setCursor(x);
  });
  gd.on("plotly_unhover", () => {
    if (view.hoverSync) return;
    view.hoverSync = true;
    try {
      for (const { div } of livePlots()) {
        const other = $(div);
        if (other !== gd && other && other.data) Plotly.Fx.unhover(other);
      }
    } finally {
      view.hoverSync = false;
    }
  });
}

// ------------------------------------------------------------------ labels of what is drawn

/* Whether a live plot shows samples (of the figure's run: a new figure replaces the traces). */
function samplesDrawn() {
  return livePlots().some(({ div }) => {
    const gd = $(div);
    return gd && Array.isArray(gd.data) && gd.data.some((tr) => Array.isArray(tr.x) && tr.x.length);
  });
}

/* After a draw (plots.js, afterFigure): once samples of the figure's run (app.runId) are on
   screen, the labels waiting for that run switch. */
export function runDrawn() {
  if (app.runId == null || view.drawnRun === app.runId || !samplesDrawn()) return;
  view.drawnRun = app.runId;
  for (const [id, { run, show }] of Object.entries(view.labels)) {
    if (run <= view.drawnRun) { delete view.labels[id]; show(); }
  }
}

/* show() now if run `run` (a state's run_id) is drawn already (or null: no run), else once
   the first frame of that run is drawn; a later call for the same label replaces it. */
export function whenDrawn(id, run, show) {
  if (run == null || (view.drawnRun != null && run <= view.drawnRun)) {
    delete view.labels[id];
    show();
    return;
  }
  view.labels[id] = { run, show };
}

/* Frames kept while restoring: drop the samples the drawn window already holds. */
export function newerThanDrawn(x) {
  return view.drawnTo == null ? 0 : x.findIndex((v) => v > view.drawnTo);
}

// ------------------------------------------------------------------ one zoom for all

/* {range} or {autorange} of a plotly_relayout event on the x axis, or null. */
function xChange(ev) {
  if (!ev) return null;
  if (ev["xaxis.autorange"]) return { autorange: true };
  const r = ev["xaxis.range"] || (ev["xaxis.range[0]"] != null ? [ev["xaxis.range[0]"], ev["xaxis.range[1]"]] : null);
  return r && num(+r[0]) !== null && num(+r[1]) !== null ? { range: [+r[0], +r[1]] } : null;
}

function bindZoom(gd) {
  if (!gd || !gd.on || gd.asrZoomBound) return;
  gd.asrZoomBound = true;
  gd.on("plotly_relayout", (ev) => {
    const ch = xChange(ev);
    if (!ch) return;
    for (const { div } of livePlots()) {
      const other = $(div);
      if (other === gd || !other || !other.layout) continue;
      const xa = other.layout.xaxis || {};
      if (ch.autorange ? xa.autorange === true
          : Array.isArray(xa.range) && Math.abs(xa.range[0] - ch.range[0]) < 1e-9 && Math.abs(xa.range[1] - ch.range[1]) < 1e-9) continue;
      Plotly.relayout(other, ch.autorange ? { "xaxis.autorange": true } : { "xaxis.range": ch.range.slice() });
    }
  });
}

// ------------------------------------------------------------------ log y

/* Whether positive values `ys` (arrays) span more than LOG_DECADES decades. */
function spansDecades(ys) {
  let lo = Infinity, hi = 0;
  for (const arr of ys) for (const v of arr || []) if (v > 0) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  return hi > 0 && hi / lo > 10 ** LOG_DECADES;
}

/* The y axis type plots.js gives plot `plot` (its toggle, or log by default for the stiffness
   when its figure's values span decades: `ys` its traces' y arrays). */
export function yType(plot, ys) {
  if (plot !== "stiffness") return "linear";
  const box = $("log-stiffness");
  if (!view.logTouched.stiffness && ys) box.checked = spansDecades(ys);
  return box.checked ? "log" : "linear";
}

function applyDatasheetLog() {
  const gd = $("plot-datasheet");
  if (!hasPlotly() || !gd || !gd.data || !gd.layout) return;
  const box = $("log-datasheet");
  if (!view.logTouched.datasheet) {
    box.checked = spansDecades(gd.data.filter((t) => t.yaxis === "y2" || t.yaxis === "y3").map((t) => t.y));
  }
  const type = box.checked ? "log" : "linear";
  const lay = {};
  for (const ax of DATASHEET_LOG_AXES) if ((gd.layout[ax] || {}).type !== type) lay[`${ax}.type`] = type;
  if (Object.keys(lay).length) Plotly.relayout(gd, lay);
}

function bindLog() {
  $("log-stiffness").addEventListener("change", () => {
    view.logTouched.stiffness = true;
    const gd = $("plot-stiffness");
    if (hasPlotly() && gd && gd.layout) Plotly.relayout(gd, { "yaxis.type": $("log-stiffness").checked ? "log" : "linear" });
  });
  $("log-datasheet").addEventListener("change", () => { view.logTouched.datasheet = true; applyDatasheetLog(); });
  // datasheet.js redraws its plot (Plotly.react, a fresh layout) when it loads a sheet and marks
  // it in data-curves: the log type is applied again after each such draw
  const gd = $("plot-datasheet");
  if (gd) new MutationObserver(() => setTimeout(applyDatasheetLog, 0)).observe(gd, { attributes: true, attributeFilter: ["data-curves", "data-joint"] });
}

// ------------------------------------------------------------------ binding

function bindView() {
  $("view-pause").addEventListener("change", syncMode);
  $("view-live").addEventListener("click", () => {
    $("view-pause").checked = false;
    if (app.state && app.state.paused) {  // the simulation stays paused: back to its newest window
      const s = $("view-scrub");
      s.value = s.max;
      showPast(+s.max);
      return;
    }
    syncMode();
  });
  $("view-scrub").addEventListener("input", () => {
    if (view.timer) return;
    view.timer = setTimeout(() => { view.timer = null; showPast(+$("view-scrub").value); }, SCRUB_WAIT_MS);
  });
  bindLog();
  setInterval(syncMode, 250);
}

bindView();
