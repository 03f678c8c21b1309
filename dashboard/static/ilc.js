/* The ILC panel (PROTOCOL.md "ILC"; see app.js for the module map): its start / stop, status
 * and error plot. Its buttons are disabled while their request is in flight (rl.js's
 * whileSending). */
import {
  $, act, api, app, fmt, hasPlotly, num, on, postDownload, showError, showProgress,
} from "./core.js";
import { whileSending } from "./rl.js";

let lastIlc = null;  // the newest ILC status shown

// ------------------------------------------------------------------ ILC

function ilcTraces(errors, tol) {
  if (!Array.isArray(errors) || !errors.length) return [];
  const x = errors.map((_, i) => i + 1);
  const out = [{ type: "scatter", mode: "lines+markers", x, y: errors, name: "max |e|" }];
  if (num(tol) !== null) {
    out.push({ type: "scatter", mode: "lines", x: [1, Math.max(2, x.length)], y: [tol, tol],
               name: "tol", line: { dash: "dash", color: "gray" } });
  }
  return out;
}


/* The ILC status (an `ilc` event, or the answer of GET /api/ilc, start or stop). Events and
   answers may cross: only a newer one (run, then seq) is shown, so the text never goes back,
   and a finished run's text is final. */
export function handleIlc(msg) {
  if (!msg || typeof msg !== "object") return;
  const run = Number(msg.run) || 0, seq = Number(msg.seq) || 0;
  const seen = app.ilcSeen;
  if (run < seen.run || (run === seen.run && seq < seen.seq)) return;
  app.ilcSeen = { run, seq };
  lastIlc = msg;
  const errors = Array.isArray(msg.errors) ? msg.errors : [];
  const n = errors.length;
  const running = !!msg.running;
  let text;
  if (running) {
    text = `${msg.stopping ? "stopping" : "running"}, iteration ${msg.iteration ?? n}`;
    if (n) text += `; last max |e| ${fmt(errors[n - 1])} rad`;
  } else {
    text = msg.message || (n ? `done, ${n} iteration${n === 1 ? "" : "s"}` : "idle");
  }
  const el = $("ilc-status");
  el.textContent = text;
  el.dataset.running = running ? "1" : "0";
  el.dataset.verdict = msg.verdict || "";
  ilcButtons();
  const iterations = msg.config && Number(msg.config.iterations);
  showProgress("ilc-progress", n, iterations > 0 ? iterations : null);
  if (hasPlotly() && n) {
    Plotly.react($("plot-ilc"), ilcTraces(errors, msg.tol), {
      uirevision: "ilc",
      margin: { l: 44, r: 6, t: 24, b: 28 },
      font: { size: 9 },
      xaxis: { title: { text: "iteration", standoff: 2 }, dtick: n > 20 ? 5 : 1 },
      yaxis: { title: { text: "max |e| (rad)" }, rangemode: "tozero" },
      showlegend: true,
      legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom", font: { size: 9 } },
    }, { displaylogo: false, displayModeBar: false, responsive: true });
  }
  if (!running && app.ilcPoll) { clearInterval(app.ilcPoll); app.ilcPoll = null; }
}


/* The start and download buttons as the newest status shown says (a button in flight stays
   disabled: whileSending). */
function ilcButtons() {
  const running = !!(lastIlc && lastIlc.running);
  $("btn-ilc-start").disabled = running;
  $("btn-ilc-download").disabled = running || !(lastIlc && lastIlc.has_result);
}


/* The settings of a run (its config, from the server) back into the inputs: a reload shows the
   last run's. Empty decay / cut-off: a constant gain / no filter. */
const SETTINGS = [["ilc-iterations", "iterations"], ["ilc-gain", "gain"], ["ilc-decay", "gain_decay"],
                  ["ilc-lowpass", "lowpass_hz"], ["ilc-tol", "tol"]];

function showSettings(config) {
  if (!config || typeof config !== "object") return;
  for (const [id, key] of SETTINGS) {
    if (!(key in config)) continue;
    const v = config[key];
    $(id).value = v === null || v === undefined ? "" : String(v);
  }
}


/* Backup to the WebSocket ilc events: poll GET /api/ilc while a run is going. */
function pollIlc() {
  if (app.ilcPoll) clearInterval(app.ilcPoll);
  app.ilcPoll = setInterval(async () => {
    try {
      const st = await api("GET", "/api/ilc");
      handleIlc(st);
      if (st && !st.running) { clearInterval(app.ilcPoll); app.ilcPoll = null; }
    } catch (e) { /* the stream may still report */ }
  }, 1000);
}

export function bindIlc() {

  on("btn-ilc-start", "click", () => whileSending("btn-ilc-start", startIlc, ilcButtons));
  on("btn-ilc-download", "click", () => whileSending("btn-ilc-download",
    () => postDownload("/api/ilc/result.npz", "asr_ilc.npz"), ilcButtons));
  on("btn-ilc-stop", "click", () => whileSending("btn-ilc-stop", async () => {
    const r = await act("/api/ilc/stop", {}, { control: false });
    if (r && "running" in r) { handleIlc(r); if (r.running) pollIlc(); }
  }));
}

async function startIlc() {
  const n = parseInt($("ilc-iterations").value, 10);
  if (!(n >= 1)) { showError("ILC: iterations must be a positive integer"); return; }
  const body = { iterations: n };
  // empty decay: a constant gain; empty cut-off: no filter
  for (const [id, key, optional] of [["ilc-gain", "gain", false], ["ilc-decay", "gain_decay", true],
                                     ["ilc-lowpass", "lowpass_hz", true], ["ilc-tol", "tol", false]]) {
    const raw = $(id).value.trim();
    if (raw === "") { if (optional) body[key] = null; continue; }
    const v = Number(raw);
    if (!isFinite(v)) { showError(`ILC ${key}: expected a number, got "${raw}"`); return; }
    body[key] = v;
  }
  $("ilc-status").textContent = "starting...";
  const r = await act("/api/ilc/start", body, { control: false });
  if (r !== null) { if (r && "running" in r) handleIlc(r); pollIlc(); }
  else $("ilc-status").textContent = "not started";
}

/* The run's status at start (a run may be going, or done with errors to show) and its
   settings in the inputs. */
export async function loadIlc() {
  try {
    const st = await api("GET", "/api/ilc");
    if (st) showSettings(st.config);
    if (st && Array.isArray(st.errors) && st.errors.length) handleIlc(st);
    if (st && st.running) pollIlc();
  } catch (e) { /* no ILC yet */ }
}
