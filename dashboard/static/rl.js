/* The RL panel (PROTOCOL.md "RL"; see app.js for the module map): training, its curve, the
 * policy watch and the policy exports. */
import { $, act, api, app, fmt, hasPlotly, on, postDownload, showProgress } from "./core.js";

// ------------------------------------------------------------------ RL (PROTOCOL.md "RL")

const RL_FIELDS = [  // [element id, body key, parse]
  ["rl-task", "task", String], ["rl-algo", "algo", String],
  ["rl-num-envs", "num_envs", (v) => parseInt(v, 10)],
  ["rl-total-steps", "total_steps", (v) => parseInt(v, 10)],
  ["rl-learning-rate", "learning_rate", parseFloat], ["rl-n-steps", "n_steps", (v) => parseInt(v, 10)],
  ["rl-batch-size", "batch_size", (v) => parseInt(v, 10)], ["rl-gamma", "gamma", parseFloat],
];

function rlTraces(curve, metric) {
  const x = (curve && curve.steps) || [];
  const out = [];
  if (!x.length) return out;
  out.push({ type: "scatter", mode: "lines+markers", x, y: curve.return || [], name: "return", connectgaps: true });
  out.push({ type: "scatter", mode: "lines", x, y: curve.length || [], name: "length", yaxis: "y2", connectgaps: true });
  out.push({ type: "scatter", mode: "lines", x, y: curve.metric || [], name: metricLabel(metric), yaxis: "y2", connectgaps: true, line: { dash: "dot" } });
  return out;
}

// the task's held-out metric, e.g. "final joint error (rad)" or "distance thrown (m)"
function metricLabel(metric) {
  return metric && metric.name ? `${metric.name} (${metric.unit})` : "metric";
}

export function handleRl(msg) {
  if (!msg || typeof msg !== "object") return;
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
  drawRlCurve(msg.run, curve, rows, msg.metric);
}

// The plot shows the current run only: a new run (or one without rows yet) starts it clean,
// and its zoom is kept only within one run (uirevision per run).
function drawRlCurve(run, curve, rows, metric) {
  const plot = $("plot-rl");
  plot.dataset.run = run == null ? "" : String(run);
  plot.dataset.rows = String(rows);
  if (!hasPlotly()) return;
  if (!rows) {
    if (plot.data && plot.data.length) Plotly.react(plot, [], plot.layout || {});
    return;
  }
  Plotly.react(plot, rlTraces(curve, metric), {
    uirevision: `rl-${run}`,
    margin: { l: 44, r: 40, t: 6, b: 28 },
    font: { size: 9 },
    xaxis: { title: { text: "env-steps", standoff: 2 } },
    yaxis: { title: { text: "return" } },
    yaxis2: { overlaying: "y", side: "right", title: { text: `length / ${metricLabel(metric)}` } },
    showlegend: true,
    legend: { x: 0, y: 1, font: { size: 9 } },
  }, { displaylogo: false, displayModeBar: false, responsive: true });
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


export function bindRl() {
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
