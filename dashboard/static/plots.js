/* The plots (see app.js for the module map, the trace convention at its top): the figure
 * message (Plotly.react once per figure) and the extend frames (buffered, drawn at most every
 * FLUSH_MS). Which plots there are (div id, title, unit) and each series' plot and line style come
 * from the server's plot specification, GET /api/plots (dashboard/plot_specs.py), fetched once.
 * The shared time axis (live or a past window, one zoom for all) and the log y toggles are
 * timeline.js's; frames wait while it shows a past window.
 * Compare mode (several instances): one colour per instance, one dash style per joint, the
 * second series of a plot (eq, th2) faded, one legend group per instance (the specification's
 * `compare`). The legends are HTML beside each plot (legend.js), built once per figure: Plotly's
 * own would be drawn again with every redraw. The deflection clamp: a shaded band per joint over #plot-defl where its spring was
 * on the clamp (contiguous frames merged into one interval). A plot whose every series needs an
 * equilibrium (q - eq) is hidden, a note in its place, while every joint is in a torque mode. */
import { $, api, app, hasPlotly, num, setStatus, short, showError, stats } from "./core.js";
import { applyState } from "./controls.js";
import { datasheetFigure } from "./datasheet.js";
import { buildLegend, legendMargin } from "./legend.js";
import { setPlotSpec, spec } from "./plot_spec.js";
import { afterFigure, holdFrames, newerThanDrawn, runDrawn, yType } from "./timeline.js";

let specLoading = null;    // the GET /api/plots in flight
let pendingFigure = null;  // a figure that came before the specification: drawn when it arrives
const SAMPLES_PER_FRAME = 10;  // drawn samples per frame and trace (about 300 per second at 30 fps)
const MAX_POINTS = 4000;       // drawn points per trace, at most
const FLUSH_MS = 100;          // redraw the plots at most 10 times per second
const HISTORY_POINTS = 3000;   // points per trace kept from a figure's history
// Drawing at what the machine allows (issue 46: compare of 8 drew 0.66 updates/s on a busy
// machine). A redraw costs about its points, so the points kept per trace share POINT_BUDGET
// among the traces drawn (compare of 8 on the 2-joint arm: 112 traces, about 360 points each
// over the window; one instance: MAX_POINTS), scaled by drawScale, which the measured redraw
// time moves: above FLUSH_TARGET_MS it shrinks (to MIN_SCALE), well below it grows back to 1.
// New samples are then kept one per window_s / points s (by time: a merged frame from the
// server, several frames' samples, thins the same way).
const POINT_BUDGET = 40000;     // drawn points per redraw, all plots and traces together
const MIN_TRACE_POINTS = 150;   // points per trace over the window, at least
const FLUSH_TARGET_MS = 60;     // a redraw taking longer than this: fewer points
const MIN_SCALE = 0.125;        // drawScale's floor
const BEHIND_RATE = 5;          // updates/s drawn below which, frames arriving, the plots say they are behind
const BEHIND_WINDOW_MS = 2000;  // the draw rate and the server's merging are judged over this span
app.drawScale = 1;      // the share of POINT_BUDGET the plots keep (tracePoints)
app.drawTimes = [];     // performance.now() of the redraws within BEHIND_WINDOW_MS
app.mergedTimes = [];   // [performance.now(), frames] of the merged frames within it
Object.assign(stats, { draws: 0, drawRate: 0, drawMs: null, drawScale: 1, merged: 0 });
// Plots off screen (issue 46: each live plot's redraw costs 15-27 ms, the whole plot redrawn):
// a plot whose div is out of the viewport (IntersectionObserver), hidden, or in a hidden tab
// keeps taking samples (its buffer, cut to the shared window) but is not redrawn; when it comes
// into view one redraw brings it up to date with everything buffered, the same window as the
// others. stats.plotDraws: redraws per plot div; stats.skipped: plot redraws left out off
// screen; stats.offscreen: the live plots off screen now; stats.caughtUp: plots brought up to
// date on coming into view.
Object.assign(stats, { plotDraws: {}, skipped: 0, offscreen: 0, caughtUp: 0 });
const onScreen = new Map();  // plot div id -> whether it intersects the viewport (observer's word)
const behindScreen = new Set();  // plot div ids skipped since their last redraw (to catch up)
let observer = null;
const PLOT_CONFIG = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
const BAND_ALPHA = 0.2;             // the clamp bands' fill opacity
const BAND_GREY = "rgb(110,110,110)";  // their colour in compare mode (the colours are instances')
const MODE_POLL_MS = 250;           // the joints' modes are checked this often (plots shown/hidden)

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

/* The layout of plot `plot`; `ys` its traces' y arrays (the log default, timeline.js); `right`
   the right margin, px, that its HTML legend (legend.js) takes. No Plotly legend: plotly.js
   draws it anew with every redraw (extendTraces), legend.js draws it once per figure. */
function plotLayout(plot, uirevision, ys, right) {
  const info = spec.byKey[plot];
  return {
    uirevision,
    title: { text: info.title, font: { size: 12 }, x: 0.01, xanchor: "left", y: 0.98 },
    margin: { l: 52, r: right, t: 26, b: 30 },
    font: { size: 10 },
    // ticklabeloverflow "allow": plotly.js's default ("hide past div") measures every tick
    // label's box on every redraw (about a tenth of a busy page's time)
    xaxis: { title: { text: "t (s)", standoff: 2 }, automargin: true, ticklabeloverflow: "allow" },
    yaxis: { title: { text: info.unit }, automargin: true, zeroline: true, type: yType(plot, ys),
             ticklabeloverflow: "allow" },
    // the clamp bands' axis (#plot-defl): 0 .. 1 over the plot's full height, not drawn
    ...(plot === "defl" ? { yaxis2: { overlaying: "y", range: [0, 1], visible: false, fixedrange: true } } : {}),
    showlegend: false,
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
  const jointIndex = new Map();  // joint name -> its index (the trace order: instance, joint, series)
  for (const tr of data) if (!jointIndex.has(tr.meta.joint)) jointIndex.set(tr.meta.joint, jointIndex.size);

  const perPlot = {};
  for (const p of spec.plots) perPlot[p.plot] = [];
  app.tracesDrawn = data.filter((tr, k) => motorExists(tr.meta.joint, cls[k].field)).length;
  const historyPoints = Math.min(HISTORY_POINTS, tracePoints());
  app.keepFrom = null;  // the next sample kept (handleExtend): any, after a figure
  app.route = data.map((tr, k) => {
    const { plot, field } = cls[k];
    if (!motorExists(tr.meta.joint, field)) return null;  // left out: extends skip it
    const copy = Object.assign({}, tr);
    delete copy.xaxis; delete copy.yaxis;
    if (!copy.type) copy.type = "scatter";
    groupByInstance(copy, compare);
    if (!copy.mode) copy.mode = "lines";
    styleTrace(copy, field, compare, jointIndex.get(tr.meta.joint));
    if (copy.x === undefined) copy.x = sharedX && Array.isArray(copy.y) ? sharedX.slice(0, copy.y.length) : [];
    if (copy.y === undefined) copy.y = [];
    if (Array.isArray(copy.x) && Array.isArray(copy.y) && copy.x.length > historyPoints) {
      const stride = Math.ceil(copy.x.length / historyPoints);
      const keep = (arr) => arr.filter((_, i) => (arr.length - 1 - i) % stride === 0);
      copy.x = keep(copy.x);
      copy.y = keep(copy.y);
    }
    perPlot[plot].push(copy);
    return { plot, local: perPlot[plot].length - 1 };
  });
  // deflection traces per joint, and one band trace per joint of its time on the deflection clamp
  app.deflTraces = {};
  cls.forEach(({ field }, k) => {
    if (field === "defl" && app.route[k]) (app.deflTraces[data[k].meta.joint] ||= []).push(k);
  });
  app.clampBands = {};  // joint -> its band's trace index in #plot-defl
  app.bandOpen = {};    // joint -> whether its band's last interval is open (the last frame on the clamp)
  for (const [joint, ks] of Object.entries(app.deflTraces)) {
    const colour = compare ? BAND_GREY : (perPlot.defl[app.route[ks[0]].local].line || {}).color;
    perPlot.defl.push(bandTrace(joint, colour || BAND_GREY, compare));
    app.clampBands[joint] = perPlot.defl.length - 1;
  }
  app.clampLocals = Object.values(app.clampBands);  // timeline.js empties them in a past window
  app.tNewest = newestTime(perPlot);  // the shared window ends here (keepPoints)
  app.bandFrom = app.tNewest;  // the next frame's interval starts here (extendBands)
  app.tFirst = sharedX && sharedX.length ? sharedX[0] : null;  // the run's first sample
  datasheetFigure(data);  // the datasheet finds its deflection trace by the trace order
  app.buffer = {};
  behindScreen.clear();  // every plot drawn anew by the figure
  if (!hasPlotly()) return;
  // the legends (legend.js): built once here, beside each plot; in compare mode headed by the
  // joints' dash styles
  const dashes = compare ? spec.compare.joint_dashes : null;
  const joints = compare ? [...jointIndex].map(([name, k]) => ({ name, dash: dashes[k % dashes.length] })) : null;
  for (const p of spec.plots) {
    const gd = $(p.div);
    const ys = perPlot[p.plot].map((tr) => tr.y);
    const right = buildLegend(gd, perPlot[p.plot], joints);
    Plotly.react(gd, perPlot[p.plot], plotLayout(p.plot, app.uirevision, ys, right), PLOT_CONFIG);
  }
  app.plotted = true;
  observePlots();
  stats.figures += 1;
  app.modesShown = null;  // the new plots: shown or hidden as the modes say
  syncModes();
  afterFigure();
}

/* A figure trace's line style: outside compare mode its series' (the specification's dash, the
   server's colour); in compare mode its instance's colour, its joint's dash (joint index `k`)
   and its series' compare opacity. */
function styleTrace(copy, field, compare, k) {
  const series = spec.byField[field];
  if (!compare) {
    copy.line = Object.assign({}, copy.line, { dash: series.dash });
    return;
  }
  const { instance_colours: colours, joint_dashes: dashes } = spec.compare;
  copy.line = Object.assign({}, copy.line, { color: colours[copy.meta.instance % colours.length],
                                             dash: dashes[k % dashes.length] });
  copy.opacity = series.compare_opacity;
}

/* `colour` ("#rrggbb" or "rgb(r,g,b)") with opacity `alpha`, as "rgba(...)". */
function withAlpha(colour, alpha) {
  const hex = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(colour);
  const rgb = hex ? hex.slice(1).map((h) => parseInt(h, 16)) : (colour.match(/\d+(\.\d+)?/g) || [0, 0, 0]).slice(0, 3);
  return `rgba(${rgb.join(",")},${alpha})`;
}

/* The band trace of `joint`'s time on its deflection clamp: on the hidden 0 .. 1 axis y2, filled
   down to 0 from a step line (shape "vh": a point (t, 1) covers the frame ending at t), so it
   spans the plot's height wherever the spring was on its clamp; y 0 between intervals. */
function bandTrace(joint, colour, compare) {
  const fill = withAlpha(colour, BAND_ALPHA);
  const tr = { type: "scatter", mode: "lines", name: `${joint} on the deflection clamp`, x: [], y: [],
               yaxis: "y2", fill: "tozeroy", fillcolor: fill, line: { shape: "vh", width: 0, color: fill },
               hoverinfo: "skip", meta: { field: "clamped", joint } };
  if (compare) {  // the server reports the clamp per joint, for any instance: a group of its own
    tr.legendgroup = "clamp";
    tr.legendgrouptitle = { text: "deflection clamp (any instance)", font: { size: 9 } };
    tr.name = joint;
  }
  return tr;
}

/* In compare mode, a trace's legend entry under its instance's group ("preset 0.2"), named
   by joint and series only: short entries; a click on the group's title hides the instance
   (legend.js). */
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
  if (Number.isInteger(msg.merged) && msg.merged > 1) {  // the server merged frames for this page
    stats.merged += msg.merged;
    app.mergedTimes.push([now, msg.merged]);
  }
  const xs = Array.isArray(update.x) ? update.x.find((a) => Array.isArray(a) && a.length) : null;
  // keep at most SAMPLES_PER_FRAME samples of a frame and one per window_s / tracePoints() s
  // (the newest always once that time has come): the window's points stay within the budget
  const first = update[keys[0]][0] || [];
  const n = first.length || 1;
  const points = tracePoints();
  const idx = keptSamples(xs, n, points);
  const pick = (arr) => (!arr || !arr.length ? [] : idx.length === arr.length ? arr : idx.map((i) => arr[i]));
  app.maxPoints = Math.min(MAX_POINTS, Math.max(10, Math.ceil(points * 1.25)));
  if (xs && num(xs[xs.length - 1]) !== null) {
    app.tNewest = Math.max(app.tNewest ?? -Infinity, xs[xs.length - 1]);
    if (app.tFirst == null) app.tFirst = xs[0];
  }
  syncModes();
  extendBands(clamped, xs);
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

/* The points per trace the plots keep over their window: POINT_BUDGET x drawScale shared by the
   traces drawn, within [MIN_TRACE_POINTS, MAX_POINTS]. */
function tracePoints() {
  const traces = Math.max(1, app.tracesDrawn || 1);
  return Math.max(MIN_TRACE_POINTS, Math.min(MAX_POINTS, Math.floor((POINT_BUDGET * app.drawScale) / traces)));
}

/* Indices of the samples of a frame (times `xs`, s, `n` samples) to keep: at most
   SAMPLES_PER_FRAME, none closer than window_s / points s after the last kept one (the newest
   of the frame kept when its time has come); every index without times. */
function keptSamples(xs, n, points) {
  const stride = Math.max(1, Math.ceil(n / SAMPLES_PER_FRAME));
  const windowS = (app.state && num(app.state.window_s)) || 10;
  const gap = windowS / points;
  const out = [];
  if (!xs || xs.length !== n) {
    for (let i = n - 1; i >= 0; i -= stride) out.push(i);
    return out.reverse();
  }
  // from the newest back: the newest if its time has come, then one per gap (and per stride)
  let next = Infinity;
  const from = app.keepFrom ?? -Infinity;
  for (let i = n - 1; i >= 0; i--) {
    const t = xs[i];
    if (!(t >= from)) break;
    if (t <= next && (out.length === 0 || out[out.length - 1] - i >= stride)) {
      out.push(i);
      next = t - gap;
    }
  }
  if (out.length) app.keepFrom = xs[out[0]] + gap;
  return out.reverse();
}

/* The clamp bands of a frame (times `xs`, s, newest last; `clamped` the joints on their clamp in
   any of its samples): the frame covers (app.bandFrom, its last time]. A joint on its clamp gets
   (from, 0) opening an interval, when none is open, and (last, 1); a joint off it closes its open
   interval with (from, 0). So contiguous frames on the clamp make one interval, and a band gets
   points only while it changes or is on (keepPoints cuts them to the window as every trace's).
   A joint in a torque mode gets none (no deflection plotted, syncModes). */
function extendBands(clamped, xs) {
  if (!xs || !xs.length || num(xs[xs.length - 1]) === null || !app.clampBands) return;
  const last = xs[xs.length - 1];
  const from = app.bandFrom != null && app.bandFrom < last ? app.bandFrom : xs[0];
  app.bandFrom = last;
  const on = new Set(clamped);
  const torque = torqueJoints();
  for (const [joint, local] of Object.entries(app.clampBands)) {
    const hit = on.has(joint) && !torque.has(joint);
    if (!hit && !app.bandOpen[joint]) continue;
    const tr = ((app.buffer.defl ||= {})[local] ||= { x: [], y: [] });
    if (hit && !app.bandOpen[joint]) { tr.x.push(from); tr.y.push(0); }
    tr.x.push(hit ? last : from);
    tr.y.push(hit ? 1 : 0);
    app.bandOpen[joint] = hit;
  }
}

// ------------------------------------------------------------------ torque modes

/* The joints whose mode takes torques (the specification's torque_modes: no equilibrium, so no
   eq nor q - eq), from the latest state. */
function torqueJoints() {
  const modes = spec ? spec.torqueModes : [];
  return new Set(app.joints.filter((j) => modes.includes(j.mode)).map((j) => j.name));
}

/* Where the joints' modes changed: a joint now in a torque mode loses its clamp band (stale:
   its deflection is not plotted), and a plot whose every series needs an equilibrium
   (#plot-defl) is hidden, a note in its place, while every joint is in a torque mode. */
function syncModes() {
  if (!spec || !app.plotted) return;
  const torque = torqueJoints();
  const key = app.joints.map((j) => `${j.name}:${j.mode}`).join(",");
  if (key === app.modesShown) return;
  app.modesShown = key;
  const stale = Object.entries(app.clampBands || {}).filter(([joint]) => torque.has(joint));
  for (const [joint, local] of stale) {
    app.bandOpen[joint] = false;
    if (app.buffer.defl) delete app.buffer.defl[local];
  }
  const gdDefl = $(spec.byKey.defl.div);
  if (stale.length && hasPlotly() && gdDefl && gdDefl.data) {
    Plotly.restyle(gdDefl, { x: stale.map(() => []), y: stale.map(() => []) }, stale.map(([, local]) => local));
  }
  const joints = Object.keys(app.deflTraces || {});
  const noEq = joints.length > 0 && joints.every((joint) => torque.has(joint));
  const modes = [...new Set(app.joints.map((j) => j.mode))];
  for (const p of spec.plots) {
    const series = Object.values(spec.byField).filter((s) => s.plot === p.plot);
    if (series.length && series.every((s) => s.needs_eq)) showPlot(p, !noEq, modes);
  }
}

/* Plot `p` ({div, title}) shown, or hidden with a note in its place saying why (`modes`: the
   joints' modes, each once). */
function showPlot(p, show, modes) {
  const gd = $(p.div);
  if (!gd) return;
  let note = $(`${p.div}-note`);
  if (!note) {
    note = document.createElement("div");
    note.id = `${p.div}-note`;
    note.className = "plot-note";
    note.hidden = true;
    gd.after(note);
  }
  note.textContent = `no ${p.title} in mode${modes.length > 1 ? "s" : ""} ${modes.join(", ")}: ` +
    `the torque modes (${spec.torqueModes.join(", ")}) take torques, not an equilibrium eq, ` +
    "so there is no q - eq to plot";
  note.hidden = show;
  if (gd.hidden === !show) return;
  gd.hidden = !show;
  if (!show || !hasPlotly() || !gd.data) return;
  // its legend measured now that it is laid out (a figure drawn while hidden assumed a width)
  const right = legendMargin(gd);
  if (gd.layout && gd.layout.margin && gd.layout.margin.r !== right) Plotly.relayout(gd, { "margin.r": right });
  Plotly.Plots.resize(gd);
}

/* Draw the buffered samples: one Plotly.extendTraces per plot, all in one animation frame, at
   most every FLUSH_MS. app.flushQueued (an animation frame asked for the redraw) and
   app.plotFrameTs (the frame time of the last redraw) keep the 3-D view's draws out of that
   frame (robot3d.js mayDraw). */
function scheduleFlush() {
  if (app.flushTimer) return;
  const wait = Math.max(0, FLUSH_MS - (performance.now() - app.lastFlush));
  app.flushTimer = setTimeout(() => {
    // a hidden tab gets no animation frames: its plots are off screen, their buffers cut now
    if (document.hidden) { flush(performance.now()); return; }
    app.flushQueued = true;
    requestAnimationFrame(flush);
  }, wait);
}

// ------------------------------------------------------------------ plots off screen

/* Watch the live plots' divs (once): a plot coming into view is redrawn at the next flush with
   what it buffered meanwhile. */
function observePlots() {
  if (observer || typeof IntersectionObserver === "undefined") return;
  observer = new IntersectionObserver((entries) => {
    let back = false;
    for (const e of entries) {
      if (e.isIntersecting && onScreen.get(e.target.id) === false) back = true;
      onScreen.set(e.target.id, e.isIntersecting);
    }
    countOffscreen();
    if (back) scheduleFlush();
  });
  for (const p of spec.plots) {
    const gd = $(p.div);
    if (gd) observer.observe(gd);
  }
  document.addEventListener("visibilitychange", () => {
    countOffscreen();
    if (!document.hidden) scheduleFlush();
  });
}

/* Whether live plot div `div` is on screen: in the viewport (as far as the observer has said),
   not hidden, in a visible tab. */
function plotOnScreen(div) {
  const gd = $(div);
  return !document.hidden && !!gd && !gd.hidden && onScreen.get(div) !== false;
}

function countOffscreen() {
  stats.offscreen = spec ? spec.plots.filter((p) => !plotOnScreen(p.div)).length : 0;
}

/* The buffered samples of an off-screen plot (`bufs`: local trace -> {x, y, ...}) cut to what
   its next redraw would keep: times >= tMin (the shared window's start), at most
   app.maxPoints per trace, so a plot off screen for long holds a window's points, no more. */
function trimToWindow(bufs, tMin) {
  for (const tr of Object.values(bufs)) {
    const x = Array.isArray(tr.x) ? tr.x : null;
    let from = 0;
    if (x && tMin !== null) {
      let lo = 0, hi = x.length;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (x[mid] < tMin) lo = mid + 1; else hi = mid; }
      from = lo;
    }
    const n = x ? x.length : Math.max(0, ...Object.values(tr).map((a) => a.length));
    from = Math.max(from, n - (app.maxPoints || MAX_POINTS));
    if (from <= 0) continue;
    for (const key of Object.keys(tr)) tr[key] = tr[key].slice(from);
  }
  return bufs;
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
   new points (a clamp band once the spring is off its clamp) is cut to the same window. */
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

/* The x autorange of plot div `gd` held within the shared window [lo, hi] s, whatever its
   traces (a clamp band's opening point not yet cut, say): every live plot shows the same window. Set on the layout the next redraw (extendTraces) reads: no
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

function flush(frameTime) {
  app.flushTimer = null;
  app.flushQueued = false;
  app.plotFrameTs = frameTime;
  app.lastFlush = performance.now();
  const { drew, skippedOnly } = drawBuffered();
  // nothing on screen to draw (every plot with samples off screen) is not being behind
  if (skippedOnly) app.drawTimes.push(app.lastFlush);
  if (drew) {
    const ms = performance.now() - app.lastFlush;
    stats.draws += 1;
    app.drawTimes.push(app.lastFlush);
    stats.drawMs = Math.round(ms);
    // fewer points when a redraw takes longer than FLUSH_TARGET_MS, more again when it is fast
    if (ms > FLUSH_TARGET_MS) app.drawScale = Math.max(MIN_SCALE, app.drawScale * 0.7);
    else if (ms < FLUSH_TARGET_MS / 3) app.drawScale = Math.min(1, app.drawScale * 1.1);
    stats.drawScale = app.drawScale;
  }
  showBehind();
}

/* The plots' marker (#plots-behind, made once beside #fps): shown while the page draws fewer
   than BEHIND_RATE updates/s with frames arriving, or the server merged frames for it (it read
   slower than they came) within BEHIND_WINDOW_MS; it says by how much. */
export function showBehind() {
  const now = performance.now();
  for (const list of [app.drawTimes, app.mergedTimes]) {
    while (list.length && now - (Array.isArray(list[0]) ? list[0][0] : list[0]) > BEHIND_WINDOW_MS) list.shift();
  }
  const rate = (app.drawTimes.length * 1000) / BEHIND_WINDOW_MS;
  stats.drawRate = Math.round(rate * 10) / 10;
  const receiving = app.connected && now - app.lastFrameAt < BEHIND_WINDOW_MS;
  const merged = app.mergedTimes.reduce((a, [, k]) => a + k, 0);
  const slow = receiving && app.plotted && app.view && app.view.mode === "live" && rate < BEHIND_RATE;
  const behind = receiving && (slow || app.mergedTimes.length > 0);
  let el = $("plots-behind");
  if (!el) {
    const fps = $("fps");
    if (!fps) return;
    el = document.createElement("span");
    el.id = "plots-behind";
    el.hidden = true;
    el.style.cssText = "color:#b45309;font-weight:600;margin-left:0.5em";
    el.title = "the page draws what this machine allows: fewer points per trace, and the " +
      "server merges the frames this page could not take in time";
    fps.after(el);
  }
  app.plotsBehind = behind;  // the datasheet's marker moves less often meanwhile (datasheet.js)
  el.dataset.behind = behind ? "1" : "0";
  el.dataset.rate = String(stats.drawRate);
  el.hidden = !behind;
  if (behind) {
    const parts = [`plots behind: ${stats.drawRate} updates/s drawn`];
    if (app.mergedTimes.length) parts.push(`server merged ${Math.round(merged / app.mergedTimes.length)} frames per update`);
    if (app.drawScale < 1) parts.push(`${tracePoints()} points per trace`);
    el.textContent = parts.join("; ");
  }
}

/* Draw the buffered samples (one Plotly.extendTraces per plot); whether anything was drawn. */
function drawBuffered() {
  if (holdFrames()) {  // a past window shown: frames are dropped; restoring: kept for later
    if (app.view.mode === "past") { app.buffer = {}; app.bandOpen = {}; behindScreen.clear(); }
    return { drew: false, skippedOnly: false };
  }
  const buffer = app.buffer;
  app.buffer = {};
  if (!app.plotted || !hasPlotly()) return { drew: false, skippedOnly: false };
  dropDrawn(buffer);
  const tMin = windowStart();
  let drew = false, skipped = false;
  countOffscreen();
  for (const { plot: p, div } of spec.plots) {
    const gd = $(div);
    if (!gd || gd.hidden) continue;  // hidden (no deflection in the torque modes): not drawn
    const bufs = buffer[p] || {};
    if (!plotOnScreen(div)) {  // off screen: its samples kept for when it comes into view
      if (Object.keys(bufs).length) {
        app.buffer[p] = trimToWindow(bufs, tMin);
        behindScreen.add(div);
        stats.skipped += 1;
        skipped = true;
      }
      continue;
    }
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
      drew = true;
      stats.plotDraws[div] = (stats.plotDraws[div] || 0) + 1;
      if (behindScreen.delete(div)) stats.caughtUp += 1;
    } catch (e) {
      console.warn("extendTraces", p, e);
    }
  }
  // timeline.js (labels of what is drawn): samples of the figure's run are on screen now
  runDrawn();
  return { drew, skippedOnly: skipped && !drew };
}

loadPlotSpec();  // at once: the first figure then rarely waits for it
setInterval(syncModes, MODE_POLL_MS);  // a mode change arrives by several paths (REST, stream)
