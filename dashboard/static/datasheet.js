/* asr dashboard: the Datasheet panel (dashboard/PROTOCOL.md "Datasheet").
 *
 * #plot-datasheet shows POST /api/datasheet?joint=J for the joint selected in #joint (the first
 * joint when "all" is selected): torque vs deflection (one curve per preset), stiffness vs
 * deflection (one per preset) and stiffness vs preset at zero deflection, side by side. The
 * last three traces are the OPERATING POINT of the first shown instance: its deflection `defl`
 * (rad) from the streamed extend frames and its preset in effect (state.presets_in_effect[J][0]:
 * the first compare preset in compare mode, the policy's while watched), placed on the curves
 * by linear interpolation (between the two nearest preset curves, then along deflection),
 * redrawn with Plotly.restyle at most every DRAW_MS, every BEHIND_DRAW_MS while the live plots
 * are behind (plots.js app.plotsBehind: each restyle redraws the whole datasheet plot, which
 * cost a busy page about a sixth of its time at 10 a second). The datasheet is fetched again when the robot, the joint or its parameters change.
 *
 * controls.js calls datasheetState(state, joint) with every state, plots.js datasheetFigure(figure.data)
 * with every figure and stream.js datasheetExtend(msg) with every extend frame.
 * #plot-datasheet attributes: data-joint, data-curves (preset curves drawn), data-op
 * ("preset,deflection" of the marker), data-op-updates (marker redraws).
 */
import { $, app, hasPlotly } from "./core.js";

const DRAW_MS = 100;          // the marker moves at most 10 times per second
const BEHIND_DRAW_MS = 1000;  // ... once a second while the live plots are behind
const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                "#7f7f7f", "#bcbd22", "#17becf"];
const ds = {
  key: null,        // robot, variant, joint and parameters of the datasheet shown or asked for
  seq: 0,           // fetches started: only the answer of the latest is drawn
  sheet: null,      // the datasheet drawn (POST /api/datasheet's answer)
  joint: null,
  state: null,
  metas: [],        // meta of each figure trace (plots.js's figure), to find the deflection trace
  deflIndex: null,  // figure index of the deflection trace of instance 0 and the joint
  defl: null,       // its latest streamed sample, rad
  timer: null,
  lastDraw: 0,
  opTraces: [],     // indices of the three operating-point traces in #plot-datasheet
};
const plotDiv = () => $("plot-datasheet");

function setStatus(text) { if ($("datasheet-status")) $("datasheet-status").textContent = text; }

// ------------------------------------------------------------------ interpolation

/* y at x on the polyline (xs ascending, ys), x clamped to [xs[0], xs[n-1]]; null if unknown. */
function interp(xs, ys, x) {
  const n = xs.length;
  if (!n) return null;
  if (x <= xs[0]) return ys[0];
  if (x >= xs[n - 1]) return ys[n - 1];
  let lo = 0, hi = n - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] <= x) lo = mid; else hi = mid;
  }
  if (ys[lo] == null || ys[hi] == null) return null;
  const f = (x - xs[lo]) / (xs[hi] - xs[lo]);
  return ys[lo] + f * (ys[hi] - ys[lo]);
}

/* rows[k] (over deflection) at preset p and deflection d: along deflection on the two preset
   curves around p, then between them. */
function interpSheet(sheet, rows, p, d) {
  const along = rows.map((row) => interp(sheet.deflection, row, d));
  if (along.some((v) => v == null)) return null;
  return interp(sheet.presets, along, p);
}

// ------------------------------------------------------------------ the figure

function axisTitles(sheet) {
  const unit = sheet.preset_unit ? ` (${sheet.preset_unit})` : "";
  return {
    xaxis: { title: { text: "deflection (rad)", standoff: 2 }, automargin: true, anchor: "y" },
    yaxis: { title: { text: "torque (N m)" }, automargin: true, anchor: "x" },
    xaxis2: { title: { text: "deflection (rad)", standoff: 2 }, automargin: true, anchor: "y2" },
    yaxis2: { title: { text: "stiffness (N m/rad)" }, automargin: true, anchor: "x2" },
    xaxis3: { title: { text: `preset${unit}`, standoff: 2 }, automargin: true, anchor: "y3" },
    yaxis3: { title: { text: "stiffness at 0 rad (N m/rad)" }, automargin: true, anchor: "x3" },
  };
}

function traces(sheet) {
  const out = [];
  const unit = sheet.preset_unit ? ` ${sheet.preset_unit}` : "";
  sheet.presets.forEach((p, k) => {
    const line = { color: COLORS[k % COLORS.length], width: 1.5 };
    const name = sheet.preset_kind === "none" ? "no preset" : `${+p.toPrecision(4)}${unit}`;
    out.push({ type: "scatter", mode: "lines", x: sheet.deflection, y: sheet.torque[k], name,
               legendgroup: name, line, xaxis: "x", yaxis: "y", meta: { datasheet: "torque", preset: p } });
    out.push({ type: "scatter", mode: "lines", x: sheet.deflection, y: sheet.stiffness[k], name,
               legendgroup: name, showlegend: false, line, xaxis: "x2", yaxis: "y2",
               meta: { datasheet: "stiffness", preset: p } });
  });
  out.push({ type: "scatter", mode: "lines", x: sheet.preset_grid, y: sheet.stiffness_vs_preset,
             name: "stiffness vs preset", showlegend: false, line: { color: "black", width: 1.5 },
             xaxis: "x3", yaxis: "y3", meta: { datasheet: "stiffness_vs_preset" } });
  const marker = { symbol: "x", size: 11, color: "red" };
  [["x", "y"], ["x2", "y2"], ["x3", "y3"]].forEach(([xa, ya], k) => {
    out.push({ type: "scatter", mode: "markers", x: [], y: [], name: "operating point",
               legendgroup: "op", showlegend: k === 0, marker, xaxis: xa, yaxis: ya,
               meta: { datasheet: "operating_point" } });
  });
  return out;
}

function draw(sheet) {
  ds.sheet = sheet;
  const gd = plotDiv();
  gd.dataset.joint = sheet.joint;
  gd.dataset.curves = String(sheet.presets.length);
  setStatus(`${sheet.joint}: ${sheet.model}, stiffness ${+sheet.stiffness_range[0].toPrecision(3)}` +
            ` to ${+sheet.stiffness_range[1].toPrecision(3)} N m/rad`);
  if (!hasPlotly()) return;
  const data = traces(sheet);
  ds.opTraces = [data.length - 3, data.length - 2, data.length - 1];
  const layout = Object.assign({
    uirevision: ds.key,
    grid: { rows: 1, columns: 3, pattern: "independent", xgap: 0.22 },  // room for the y titles
    margin: { l: 52, r: 8, t: 10, b: 34 },
    font: { size: 10 },
    legend: { orientation: "v", x: 1.01, xanchor: "left", y: 1, yanchor: "top", font: { size: 9 },
              title: { text: "preset" } },
    hovermode: "closest",
  }, axisTitles(sheet));
  Plotly.react(gd, data, layout, { responsive: true, displaylogo: false });
  drawOperatingPoint();
}

function clear(message) {
  ds.sheet = null;
  const gd = plotDiv();
  gd.dataset.curves = "0";
  gd.dataset.op = "";
  setStatus(message);
  if (hasPlotly()) Plotly.purge(gd);
}

async function load(joint, key) {
  const seq = ++ds.seq;
  setStatus(`${joint}: loading...`);
  let r, body;
  try {
    r = await fetch(`/api/datasheet?joint=${encodeURIComponent(joint)}`, { method: "POST", headers: { Accept: "application/json" } });
    body = await r.json();
  } catch (e) {
    if (seq === ds.seq) { ds.key = null; clear(`${joint}: datasheet not loaded (${e.message})`); }
    return;
  }
  if (seq !== ds.seq) return;  // a newer request is under way
  if (!r.ok) {
    clear(`${joint}: ${typeof body.detail === "string" ? body.detail : "no datasheet"}`);
    return;
  }
  if (key === ds.key) draw(body);
}

// ------------------------------------------------------------------ the operating point

/* The preset in effect of the first instance: state.presets_in_effect (the compare preset in
   compare mode, the policy's while a policy is watched), else state.presets. */
function currentPreset() {
  const st = ds.state, sheet = ds.sheet;
  if (sheet.preset_kind === "none") return sheet.presets[0];
  const live = st && st.presets_in_effect ? st.presets_in_effect[ds.joint] : null;
  if (Array.isArray(live) && typeof live[0] === "number" && isFinite(live[0])) return live[0];
  if (st && Array.isArray(st.compare) && st.compare.length) return st.compare[0];
  const p = st && st.presets ? st.presets[ds.joint] : null;
  return typeof p === "number" && isFinite(p) ? p : null;
}

function drawOperatingPoint() {
  const sheet = ds.sheet, gd = plotDiv();
  if (!sheet || ds.defl == null || !hasPlotly() || !gd.data) return;
  const p = currentPreset();
  if (p == null) return;
  const d = ds.defl;
  const tau = interpSheet(sheet, sheet.torque, p, d);
  const k = interpSheet(sheet, sheet.stiffness, p, d);
  const k0 = interp(sheet.preset_grid, sheet.stiffness_vs_preset, p);
  Plotly.restyle(gd, { x: [[d], [d], [p]], y: [[tau], [k], [k0]] }, ds.opTraces);
  gd.dataset.op = `${p},${d}`;
  gd.dataset.opUpdates = String(Number(gd.dataset.opUpdates || 0) + 1);
}

function scheduleDraw() {
  if (ds.timer) return;
  const gap = app.plotsBehind ? BEHIND_DRAW_MS : DRAW_MS;
  const wait = Math.max(0, gap - (performance.now() - ds.lastDraw));
  ds.timer = setTimeout(() => {
    ds.timer = null;
    ds.lastDraw = performance.now();
    drawOperatingPoint();
  }, wait);
}

function findDeflIndex() {
  const k = ds.metas.findIndex((m) => m && m.field === "defl" && m.joint === ds.joint &&
                                      (m.instance || 0) === 0);
  return k >= 0 ? k : null;
}

// ------------------------------------------------------------------ the other modules' calls

/* A new state, or another joint selected: fetch the datasheet when the robot, the joint or
   its parameters changed. */
export function datasheetState(state, joint) {
  if (!state || !joint || !plotDiv()) return;
  ds.state = state;
  const j = (state.joints || []).find((x) => x.name === joint);
  const key = JSON.stringify([state.robot, state.variant, joint, j ? j.params : null]);
  if (joint !== ds.joint) {
    ds.joint = joint;
    ds.defl = null;
    ds.deflIndex = findDeflIndex();
  }
  if (key !== ds.key) {
    ds.key = key;
    load(joint, key);
  } else {
    scheduleDraw();  // the preset may have changed
  }
}

/* A new figure: its trace order (the deflection trace of instance 0 may have moved). */
export function datasheetFigure(data) {
  ds.metas = Array.isArray(data) ? data.map((t) => (t && t.meta) || {}) : [];
  ds.deflIndex = findDeflIndex();
}

/* An extend frame: the joint's latest deflection of instance 0. */
export function datasheetExtend(msg) {
  if (ds.deflIndex == null || !msg || !Array.isArray(msg.indices) || !msg.update) return;
  const pos = msg.indices.indexOf(ds.deflIndex);
  const ys = pos >= 0 && msg.update.y ? msg.update.y[pos] : null;
  if (!ys || !ys.length) return;
  const d = ys[ys.length - 1];
  if (typeof d !== "number" || !isFinite(d)) return;
  ds.defl = d;
  scheduleDraw();
}
