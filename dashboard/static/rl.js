/* The RL panel (PROTOCOL.md "RL"; see app.js for the module map): training, its curve (smoothed
 * as TensorBoard's, each task metric on an axis of its own, the session's past runs overlaid on
 * demand with their hyperparameters: GET /api/rl/runs; the curves shown as CSV), the policy
 * watch (loading until the watched run's first frame) and the policy exports. Every button that
 * sends a request is disabled while it is in flight (whileSending, also used by ilc.js). */
import {
  $, act, api, app, clearError, download, fmt, handlers, hasPlotly, looksLikeState, on, postDownload,
  showError, showProgress,
} from "./core.js";

/* A button whose request is in flight: disabled and aria-busy from the click until the answer
   (success or error) is back, whoever else sets it meanwhile (an rl status, the state that
   controls.js applies: a MutationObserver puts `disabled` back at once, before any next event),
   so a double click sends one request; then `settle()` sets it from the server's latest status.
   `send()` makes the request; its value is answered (undefined for a click on a busy button). */
export async function whileSending(id, send, settle = () => {}) {
  const b = $(id);
  if (b.dataset.sending === "1") return undefined;
  b.dataset.sending = "1";
  b.setAttribute("aria-busy", "true");
  b.disabled = true;
  const keep = new MutationObserver(() => { if (!b.disabled) b.disabled = true; });
  keep.observe(b, { attributes: true, attributeFilter: ["disabled"] });
  try {
    return await send();
  } finally {
    keep.disconnect();
    delete b.dataset.sending;
    b.removeAttribute("aria-busy");
    b.disabled = false;
    settle();
  }
}

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
   its metric's own y axis (`axis`: "y2", "y4", ..., dotted); the current run also its episode
   length (y3, in the legend). */
function runTraces(run, curve, metric, config, current, axis) {
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
    { type: "scatter", mode: "lines", x, y: curve.metric || [], name: `${tag}${metricLabel(metric)}`, yaxis: axis,
      connectgaps: true, line: { color: colour, dash: "dot" }, hovertemplate: hover,
      meta: { run, series: "metric", metric: metricLabel(metric) } },
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

/* The runs drawn: the past runs ticked, then the current run when it has rows; each
   {run, curve, metric, config, current}. */
function shownRuns() {
  const msg = app.rl || {};
  const out = [];
  for (const r of runs.list) {
    if (r.run !== msg.run && runs.shown.has(r.run)) out.push({ ...r, current: false });
  }
  const curve = msg.curve || {};
  if ((curve.steps || []).length) {
    out.push({ run: msg.run, curve, metric: msg.metric, config: msg.config, current: true });
  }
  return out;
}

/* One y axis per distinct metric (name and unit) of the runs drawn, the current run's first:
   runs of the same metric share it, runs of different metrics never do. The first is yaxis2
   (right of the plot), the others yaxis4, yaxis5, ... (yaxis3 is the episode length's) side by
   side right of it, AXIS_GAP of the width apart. Answers {axis of a metric label, layout part}. */
const AXIS_GAP = 0.08;
function metricAxes(shown) {
  const labels = [];
  for (const r of [...shown].sort((a, b) => Number(b.current) - Number(a.current))) {
    const label = metricLabel(r.metric);
    if (!labels.includes(label)) labels.push(label);
  }
  const right = 1 - AXIS_GAP * Math.max(0, labels.length - 1);
  const axisOf = {}, layout = { xaxis: { domain: [0, right], title: { text: "env-steps", standoff: 2 } } };
  labels.forEach((label, i) => {
    const n = i === 0 ? 2 : i + 3;
    axisOf[label] = `y${n}`;
    layout[`yaxis${n}`] = {
      overlaying: "y", side: "right", showgrid: false, title: { text: label },
      ...(i === 0 ? {} : { anchor: "free", position: right + AXIS_GAP * i }),
    };
  });
  return { axisOf, layout };
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
  rlButtons();
  drawRlCurve();
  const key = `${msg.run}:${running}:${msg.message}`;  // a new run or one that ended: the table
  if (msg.run != null && key !== runs.key) { runs.key = key; loadRuns(); }
}

/* The training buttons as the latest status shown says (a button in flight stays disabled:
   whileSending). */
function rlButtons() {
  const msg = app.rl || {};
  const running = !!msg.running;
  $("btn-rl-start").disabled = running;
  $("btn-rl-pause").disabled = !running;
  $("btn-rl-pause").textContent = msg.paused ? "resume" : "pause";
  $("btn-rl-stop").disabled = !running;
  // a policy to watch: a finished PPO update of a run that did not fail (the server decides)
  $("btn-rl-watch").disabled = !msg.can_watch;
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
  const shown = shownRuns();
  $("btn-rl-csv").disabled = !shown.length;
  if (!hasPlotly()) return;
  const { axisOf, layout } = metricAxes(shown);
  const data = [];
  for (const r of shown) {
    data.push(...runTraces(r.run, r.curve, r.metric, r.config, r.current, axisOf[metricLabel(r.metric)]));
  }
  if (!data.length) {
    if (plot.data && plot.data.length) Plotly.react(plot, [], plot.layout || {});
    return;
  }
  Plotly.react(plot, data, {
    uirevision: `rl-${msg.run}`,
    margin: { l: 44, r: 44, t: 6, b: 28 },
    font: { size: 9 },
    yaxis: { title: { text: "return" } },
    // each task metric on an axis of its own, right; the episode length on a third, without ticks
    ...layout,
    yaxis3: { overlaying: "y", side: "right", visible: false },
    showlegend: true,
    legend: { orientation: "h", x: 0, y: -0.25, yanchor: "top", font: { size: 9 } },
  }, { displaylogo: false, displayModeBar: false, responsive: true });
}

/* The curves drawn as CSV (PROTOCOL.md "RL"): one row per run, curve and point, columns run,
   task, metric ("return" or the task metric's name), unit ("" for the return: a sum of
   dimensionless rewards), env_steps, value (the raw value, not smoothed; empty where the curve
   has none yet). Built here from what the plot shows. */
const CSV_COLUMNS = ["run", "task", "metric", "unit", "env_steps", "value"];
const csvField = (v) => {
  const s = v == null ? "" : String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

export function curvesCsv() {
  const lines = [CSV_COLUMNS.join(",")];
  for (const r of shownRuns()) {
    const steps = r.curve.steps || [];
    const task = (r.config && r.config.task) || "";
    const m = r.metric && r.metric.name ? r.metric : { name: "metric", unit: "" };
    for (const [name, unit, ys] of [["return", "", r.curve.return || []], [m.name, m.unit, r.curve.metric || []]]) {
      steps.forEach((x, i) => lines.push([r.run, task, name, unit, x, ys[i]].map(csvField).join(",")));
    }
  }
  return lines.join("\n") + "\n";
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


/* Watch: the first Watch of a checkpoint exports it in a child that imports torch (6 s idle,
   20 s and more on a loaded host), then the task's robot loads. The button reads "loading..."
   (aria-busy) and #rl-watch-status (data-state "loading") says so until the first frame of the
   watched run (an extend message whose run_id is the answer's, or a later one) has come; then
   data-state "watching" (data-run: that run id) or, when the request fails or no such frame comes
   in WATCH_FRAME_MS, "error" with the reason. */
const WATCH_FRAME_MS = 60000;

/* The run ids of the extend frames the stream brings from now on (frames may come before the
   answer that names their run); stop() ends the listening. */
function frameRuns() {
  const seen = { max: -Infinity, ws: null };
  const onMessage = (ev) => {
    if (typeof ev.data !== "string" || !ev.data.includes('"extend"')) return;
    try {
      const m = JSON.parse(ev.data);
      if (m.type === "extend" && typeof m.run_id === "number") seen.max = Math.max(seen.max, m.run_id);
    } catch (e) { /* not JSON: stream.js ignores it too */ }
  };
  const follow = () => {  // the page's WebSocket, a new one after a reconnect
    if (seen.ws === app.ws) return;
    if (seen.ws) seen.ws.removeEventListener("message", onMessage);
    seen.ws = app.ws;
    if (seen.ws) seen.ws.addEventListener("message", onMessage);
  };
  follow();
  const timer = setInterval(follow, 100);
  seen.stop = () => { clearInterval(timer); if (seen.ws) seen.ws.removeEventListener("message", onMessage); };
  return seen;
}

function watchLine(state, text) {
  const line = $("rl-watch-status");
  line.hidden = false;
  line.dataset.state = state;
  line.textContent = text;
}

/* The "watching" line goes once the state (controls.js keeps app.state; it polls it while a
   policy is watched) says no policy is watched: manual control, a robot switch, a load. */
let watchEndTimer = null;
function hideWhenWatchEnds() {
  clearInterval(watchEndTimer);
  watchEndTimer = setInterval(() => {
    const line = $("rl-watch-status");
    if (line.dataset.state !== "watching") { clearInterval(watchEndTimer); return; }
    if (app.state && !app.state.watch) { line.hidden = true; line.dataset.state = ""; clearInterval(watchEndTimer); }
  }, 500);
}

async function watch() {
  const button = $("btn-rl-watch");
  const t0 = performance.now();
  const frames = frameRuns();
  button.textContent = "loading...";
  watchLine("loading", "watch: exporting the policy and loading the task's robot (10-25 s)...");
  try {
    let st;
    try {
      st = await api("POST", "/api/rl/watch", {});
    } catch (e) {
      showError(e.message);
      watchLine("error", `watch failed: ${e.message}`);
      return;
    }
    clearError();
    if (looksLikeState(st)) handlers.state(st);
    const run = Number(st && st.run_id);
    while (!(frames.max >= run) && performance.now() - t0 < WATCH_FRAME_MS) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (!(frames.max >= run)) {
      watchLine("error", `watch failed: no frame of the watched run came in ${WATCH_FRAME_MS / 1000} s`);
      return;
    }
    const w = (st && st.watch) || {};
    $("rl-watch-status").dataset.run = String(run);
    watchLine("watching", `watching run ${w.run ?? "?"}'s policy on ${w.task || "its task"} ` +
              `(first frame after ${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    hideWhenWatchEnds();
  } finally {
    frames.stop();
    button.textContent = "watch";
  }
}

const rlSettle = () => rlButtons();

export function bindRl() {
  bindSmoothing();
  pollWhileTraining();
  on("btn-rl-start", "click", () => whileSending("btn-rl-start", async () => {
    const body = {};
    for (const [id, key, parse] of RL_FIELDS) body[key] = parse($(id).value);
    $("rl-status").textContent = "starting...";
    const r = await act("/api/rl/start", body, { control: false });
    if (r) handleRl(r); else $("rl-status").textContent = "not started";
  }, rlSettle));
  on("btn-rl-pause", "click", () => whileSending("btn-rl-pause", async () => {
    const paused = app.rl && app.rl.paused;
    const r = await act(paused ? "/api/rl/resume" : "/api/rl/pause", {}, { control: false });
    if (r) handleRl(r);
  }, rlSettle));
  on("btn-rl-stop", "click", () => whileSending("btn-rl-stop", async () => {
    const r = await act("/api/rl/stop", {}, { control: false });
    if (r) handleRl(r);
  }, rlSettle));
  on("btn-rl-watch", "click", () => whileSending("btn-rl-watch", watch, rlSettle));
  // manual control: enabled while a policy is watched (controls.js, from the state)
  on("btn-rl-manual", "click", () => whileSending("btn-rl-manual", () => act("/api/rl/manual", {}),
    () => { $("btn-rl-manual").disabled = !(app.state && app.state.watch); }));
  on("btn-rl-onnx", "click", () => whileSending("btn-rl-onnx", () => postDownload("/api/rl/policy.onnx", "policy.onnx")));
  on("btn-rl-ros", "click", () => whileSending("btn-rl-ros",
    () => postDownload(`/api/rl/policy.ros.zip?ros=${$("rl-ros-version").value}`, "ROS package")));
  on("btn-rl-csv", "click", () => download(new Blob([curvesCsv()], { type: "text/csv" }), "asr_rl_curves.csv"));
}
