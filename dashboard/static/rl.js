/* The RL panel (PROTOCOL.md "RL"; see app.js for the module map): training, its curve (smoothed
 * as TensorBoard's, the task metric on its own axis, the session's past runs overlaid on demand
 * with their hyperparameters: GET /api/rl/runs), the policy watch and the policy exports. */
import { $, act, api, app, fmt, hasPlotly, on, postDownload, showProgress } from "./core.js";

// ------------------------------------------------------------------ RL (PROTOCOL.md "RL")

const RL_FIELDS = [  // [element id, body key, parse]
  ["rl-task", "task", String], ["rl-algo", "algo", String],
  ["rl-num-envs", "num_envs", (v) => parseInt(v, 10)],
  ["rl-total-steps", "total_steps", (v) => parseInt(v, 10)],
  ["rl-learning-rate", "learning_rate", parseFloat], ["rl-n-steps", "n_steps", (v) => parseInt(v, 10)],
  ["rl-batch-size", "batch_size", (v) => parseInt(v, 10)], ["rl-gamma", "gamma", parseFloat],
];

// the runs' colours (plotly's D3, as the live plots), by run id
const RUN_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                     "#7f7f7f", "#bcbd22", "#17becf"];
// the hyperparameters the runs table shows: [config key, column]
const RUN_COLUMNS = [["task", "task"], ["algo", "algo"], ["num_envs", "envs"], ["total_steps", "steps"],
                     ["learning_rate", "lr"], ["n_steps", "n_steps"], ["batch_size", "batch"], ["gamma", "gamma"]];
// GET /api/rl/runs; the past runs drawn; seq: requests made (only the latest one's answer is shown)
const runs = { list: [], shown: new Set(), key: null, seq: 0 };

const runColour = (run) => RUN_COLOURS[(Math.max(1, run) - 1) % RUN_COLOURS.length];

/* TensorBoard's smoothing: an exponential moving average with weight w (0: the raw curve),
   debiased so that it starts at the first value; null values stay gaps. */
export function smooth(ys, w) {
  const out = [];
  let last = 0, n = 0;
  for (const v of ys) {
    if (v == null || !isFinite(v)) { out.push(null); continue; }
    last = last * w + (1 - w) * v;
    n += 1;
    out.push(w > 0 ? last / (1 - w ** n) : v);
  }
  return out;
}

function smoothing() {
  const v = parseFloat($("rl-smoothing").value);
  return isFinite(v) ? Math.min(0.99, Math.max(0, v)) : 0;
}

function hyperText(config) {
  return config ? RUN_COLUMNS.filter(([k]) => config[k] != null).map(([k, c]) => `${c} ${config[k]}`).join(", ") : "";
}

/* One run's traces: the return smoothed (its colour) over the raw one (faint), the metric on
   its own y axis (y2, dotted); the current run also its episode length (y3, in the legend). */
function runTraces(run, curve, metric, config, current) {
  const x = (curve && curve.steps) || [];
  if (!x.length) return [];
  const colour = runColour(run), tag = current ? "" : `run ${run} `;
  const hover = `run ${run}: %{y:.4g} at %{x} env-steps<br>${hyperText(config)}<extra></extra>`;
  const raw = curve.return || [];
  const out = [
    { type: "scatter", mode: "lines", x, y: raw, name: `${tag}return (raw)`, showlegend: false, connectgaps: true,
      line: { color: colour, width: 1 }, opacity: 0.25, hoverinfo: "skip", meta: { run, series: "raw" } },
    { type: "scatter", mode: "lines+markers", x, y: smooth(raw, smoothing()), name: `${tag}return`, connectgaps: true,
      line: { color: colour, width: 2 }, marker: { size: 4 }, hovertemplate: hover, meta: { run, series: "return" } },
    { type: "scatter", mode: "lines", x, y: curve.metric || [], name: `${tag}${metricLabel(metric)}`, yaxis: "y2",
      connectgaps: true, line: { color: colour, dash: "dot" }, hovertemplate: hover, meta: { run, series: "metric" } },
  ];
  if (current) {
    out.push({ type: "scatter", mode: "lines", x, y: curve.length || [], name: "length", yaxis: "y3", connectgaps: true,
               visible: "legendonly", line: { color: colour, dash: "dash", width: 1 }, meta: { run, series: "length" } });
  }
  return out;
}

// the task's held-out metric, e.g. "final joint error (rad)" or "distance thrown (m)"
function metricLabel(metric) {
  return metric && metric.name ? `${metric.name} (${metric.unit})` : "metric";
}

const POLL_MS = 3000;  // while a run trains: its status asked for when no rl message came this long
let lastRlAt = 0;

/* The statuses reach the page by two paths that can cross: the stream's rl messages and the REST
   answers (start / pause / stop, the status poll). An answer computed before the newest message
   shown can arrive after it (a poll answered under load while the next run started, or just
   before the run ended), and drawing it would take the page back to an older run or state. A
   status is placed by [run id, 1 once the run ended, its env-steps so far], each of which only
   grows on the server (a run never runs again, its curve never shrinks); one behind the one
   shown is ignored. A new WebSocket (a reconnect: perhaps a restarted server, its run ids from
   1 again) starts the order afresh. */
const seen = { order: null, ws: null };

function statusOrder(msg) {
  const steps = (msg.curve && msg.curve.steps) || [];
  return [Number(msg.run) || 0, msg.running ? 0 : 1, Number(steps[steps.length - 1]) || 0];
}

function olderThanShown(msg) {
  if (seen.ws !== app.ws) { seen.ws = app.ws; seen.order = null; }
  const order = statusOrder(msg), last = seen.order;
  const k = last ? order.findIndex((v, i) => v !== last[i]) : -1;
  if (k >= 0 && order[k] < last[k]) return true;
  seen.order = order;
  return false;
}

export function handleRl(msg) {
  if (!msg || typeof msg !== "object") return;
  lastRlAt = performance.now();
  if (olderThanShown(msg)) return;
  app.rl = msg;
  const curve = msg.curve || {};
  const rows = (curve.steps || []).length;
  const running = !!msg.running;
  let text = running ? (msg.paused ? "paused" : "training") : (msg.message || "idle");
  if (msg.run != null) text = `run ${msg.run}: ${text}`;
  if (rows) {
    const last = curve.steps[rows - 1];
    const ret = (curve.return || [])[rows - 1];
    text += `; ${last} steps` + (ret != null ? `, return ${fmt(ret)}` : "");
  }
  if (msg.watching) text += "; watching";
  $("rl-status").textContent = text;
  $("rl-status").dataset.rows = String(rows);
  $("rl-status").dataset.running = running ? "1" : "0";
  const total = msg.config && Number(msg.config.total_steps);
  showProgress("rl-progress", rows ? curve.steps[rows - 1] : 0, total > 0 ? total : null);
  $("btn-rl-start").disabled = running;
  $("btn-rl-pause").disabled = !running;
  $("btn-rl-pause").textContent = msg.paused ? "resume" : "pause";
  $("btn-rl-stop").disabled = !running;
  // a policy to watch: a finished PPO update of a run that did not fail (the server decides)
  $("btn-rl-watch").disabled = !msg.can_watch;
  drawRlCurve();
  const key = `${msg.run}:${running}:${msg.message}`;  // a new run or one that ended: the table
  if (msg.run != null && key !== runs.key) { runs.key = key; loadRuns(); }
}

// The current run is always drawn (a new run, or one without rows yet, starts the plot clean);
// the past runs checked in the runs table over it. Its zoom is kept within one run.
function drawRlCurve() {
  const msg = app.rl || {};
  const plot = $("plot-rl");
  const curve = msg.curve || {};
  const rows = (curve.steps || []).length;
  plot.dataset.run = msg.run == null ? "" : String(msg.run);
  plot.dataset.rows = String(rows);
  plot.dataset.smoothing = String(smoothing());
  if (!hasPlotly()) return;
  const data = [];
  for (const r of runs.list) {
    if (r.run !== msg.run && runs.shown.has(r.run)) data.push(...runTraces(r.run, r.curve, r.metric, r.config, false));
  }
  if (rows) data.push(...runTraces(msg.run, curve, msg.metric, msg.config, true));
  if (!data.length) {
    if (plot.data && plot.data.length) Plotly.react(plot, [], plot.layout || {});
    return;
  }
  Plotly.react(plot, data, {
    uirevision: `rl-${msg.run}`,
    margin: { l: 44, r: 44, t: 6, b: 28 },
    font: { size: 9 },
    xaxis: { title: { text: "env-steps", standoff: 2 } },
    yaxis: { title: { text: "return" } },
    // the task metric on its own axis, right; the episode length on a third, without ticks
    yaxis2: { overlaying: "y", side: "right", showgrid: false, title: { text: metricLabel(msg.metric) } },
    yaxis3: { overlaying: "y", side: "right", visible: false },
    showlegend: true,
    legend: { orientation: "h", x: 0, y: -0.25, yanchor: "top", font: { size: 9 } },
  }, { displaylogo: false, displayModeBar: false, responsive: true });
}

/* The session's runs (GET /api/rl/runs) in the runs table: a colour, a show toggle (the current
   run is always shown) and the hyperparameters of each. */
async function loadRuns() {
  const seq = ++runs.seq;
  let list;
  try {
    list = (await api("GET", "/api/rl/runs")).runs || [];
  } catch (e) { return; }
  if (seq !== runs.seq) return;  // a newer request is under way: its answer is newer
  runs.list = list;
  const current = app.rl ? app.rl.run : null;
  const body = $("rl-runs").querySelector("tbody");
  body.innerHTML = "";
  for (const r of runs.list) {
    const tr = document.createElement("tr");
    tr.dataset.run = String(r.run);
    const box = document.createElement("input");
    box.type = "checkbox";
    box.checked = r.run === current || runs.shown.has(r.run);
    box.disabled = r.run === current;
    box.title = r.run === current ? "the current run: always shown" : `overlay run ${r.run}`;
    box.addEventListener("change", () => {
      if (box.checked) runs.shown.add(r.run); else runs.shown.delete(r.run);
      drawRlCurve();
    });
    const first = document.createElement("td");
    first.appendChild(box);
    const swatch = document.createElement("span");
    swatch.className = "run-swatch";
    swatch.style.background = runColour(r.run);
    first.appendChild(swatch);
    first.appendChild(document.createTextNode(String(r.run)));
    tr.appendChild(first);
    for (const [k] of RUN_COLUMNS) {
      const td = document.createElement("td");
      td.textContent = r.config && r.config[k] != null ? String(r.config[k]).replace(/^asr\//, "") : "";
      tr.appendChild(td);
    }
    tr.title = `${r.status}: ${hyperText(r.config)}`;
    body.appendChild(tr);
  }
  $("rl-runs").hidden = !runs.list.length;
  drawRlCurve();
}

export async function loadRlTasks() {
  try {
    const t = await api("GET", "/api/rl/tasks");
    const sel = $("rl-task");
    sel.innerHTML = "";
    for (const id of t.tasks || []) {
      const o = document.createElement("option");
      o.value = id; o.textContent = id;
      sel.appendChild(o);
    }
    const d = t.defaults || {};
    for (const [id, key] of RL_FIELDS) if (d[key] !== undefined) $(id).value = String(d[key]);
    handleRl(await api("GET", "/api/rl/status"));
  } catch (e) { /* no RL on this server */ }
}

/* A busy page can miss an rl message (the stream drops what a slow client cannot take): while
   a run trains, its status is asked for after POLL_MS without one, so its end is always shown. */
function pollWhileTraining() {
  setInterval(async () => {
    if (!app.rl || !app.rl.running || performance.now() - lastRlAt < POLL_MS) return;
    lastRlAt = performance.now();
    try { handleRl(await api("GET", "/api/rl/status")); } catch (e) { /* shown by the next one */ }
  }, POLL_MS / 2);
}

function bindSmoothing() {
  const show = () => { $("rl-smoothing-value").textContent = smoothing().toFixed(2); };
  show();
  on("rl-smoothing", "input", () => { show(); drawRlCurve(); });
}


export function bindRl() {
  bindSmoothing();
  pollWhileTraining();
  on("btn-rl-start", "click", async () => {
    const body = {};
    for (const [id, key, parse] of RL_FIELDS) body[key] = parse($(id).value);
    $("rl-status").textContent = "starting...";
    const r = await act("/api/rl/start", body, { control: false });
    if (r) handleRl(r); else $("rl-status").textContent = "not started";
  });
  on("btn-rl-pause", "click", async () => {
    const paused = app.rl && app.rl.paused;
    const r = await act(paused ? "/api/rl/resume" : "/api/rl/pause", {}, { control: false });
    if (r) handleRl(r);
  });
  on("btn-rl-stop", "click", async () => {
    const r = await act("/api/rl/stop", {}, { control: false });
    if (r) handleRl(r);
  });
  on("btn-rl-watch", "click", () => act("/api/rl/watch", {}));
  on("btn-rl-manual", "click", () => act("/api/rl/manual", {}));
  on("btn-rl-onnx", "click", () => postDownload("/api/rl/policy.onnx", "policy.onnx"));
  on("btn-rl-ros", "click", () => postDownload(`/api/rl/policy.ros.zip?ros=${$("rl-ros-version").value}`, "ROS package"));
}
