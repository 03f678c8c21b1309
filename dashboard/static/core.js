/* The page's shared state and helpers (see app.js for the module map): the `app` state object
 * (window.asrDebug), the stats (window.asrStats), REST calls (api, act) and the error box. */

/* Set by controls.js: applyState, called with every state a REST answer carries (act). */
export const handlers = { state: () => {} };


export const app = {
  ws: null,
  backoff: 500,
  connected: false,
  state: null,
  joints: [],           // [{name, model, mode, params, preset, range}]
  route: [],            // figure trace index -> {plot, local}
  plotted: false,       // a figure has been drawn
  uirevision: "asr",
  frames: 0,
  lastFrameAt: 0,
  frameTimes: [],
  pending: null,        // {t0, acked} of the last control click, for latencyMs
  buffer: {},           // plot -> local trace index -> {x: [...], y: [...]} not yet drawn
  maxPoints: 3000,
  flushTimer: null,
  lastFlush: 0,
  ilcPoll: null,
  rl: null,             // the latest rl message (PROTOCOL.md "RL")
  ilcSeen: { run: -1, seq: -1 },  // the newest ILC status shown (ilc.js)
  deflTraces: {},       // joint -> figure trace indices of its deflection (plots.js)
  clampLocal: null,     // the deflection plot's trace of the samples on the clamp (plots.js)
};
window.asrDebug = app;
export const stats = (window.asrStats = { fps: 0, latencyMs: null, latencies: [], frames: 0, figures: 0 });

export const $ = (id) => document.getElementById(id);
export const hasPlotly = () => typeof window.Plotly !== "undefined";

// ------------------------------------------------------------------ errors and status

let errorTimer = null;
export function showError(message) {
  const box = $("error");
  $("error-text").textContent = String(message);
  box.hidden = false;
  clearTimeout(errorTimer);
  errorTimer = setTimeout(() => { box.hidden = true; }, 10000);
}
export function clearError() { $("error").hidden = true; }

export function download(blob, name) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}

export function setStatus(text, cls) {
  const el = $("status");
  if (el.textContent !== text) el.textContent = text;
  el.className = "status " + (cls || text);
}

/* One error of a 422 list (pydantic): the parameter, the value refused and the rule it breaks. */
function detailLine(e) {
  if (!e || !e.msg) return JSON.stringify(e);
  const where = (e.loc || []).filter((x) => x !== "body").join(".");
  const got = e.input !== undefined && (typeof e.input !== "object" || e.input === null)
    ? ` got ${JSON.stringify(e.input).slice(0, 40)};` : "";
  return `${where}:${got} ${e.msg}`;
}

export function formatDetail(data) {
  if (data == null) return "";
  if (typeof data === "string") return data;
  const d = data.detail !== undefined ? data.detail : data;

  if (Array.isArray(d)) {
    return d.map(detailLine).join("\n");
  }
  return JSON.stringify(d);
}

// ------------------------------------------------------------------ REST

export async function api(method, path, body) {
  const opts = { method, headers: { Accept: "application/json" } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  let r;
  try {
    r = await fetch(path, opts);
  } catch (e) {
    const err = new Error(`${method} ${path}: ${e.message}`);
    err.network = true;
    throw err;
  }
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = text; }
  if (!r.ok) {
    const err = new Error(`${r.status} ${method} ${path}: ${formatDetail(data) || r.statusText}`);
    err.status = r.status;
    throw err;
  }
  return data;
}

/* A user action: POST, mark the click time for latencyMs, show 4xx/5xx errors in #error. */
export async function act(path, body, { control = true } = {}) {
  if (control) app.pending = { t0: performance.now(), acked: false };
  try {
    const data = await api("POST", path, body === undefined ? {} : body);
    clearError();
    if (app.pending) app.pending.acked = true;
    if (looksLikeState(data)) handlers.state(data);
    return data;
  } catch (e) {
    app.pending = null;
    showError(e.message);
    return null;
  }
}

export function looksLikeState(s) {
  return !!s && typeof s === "object" && Array.isArray(s.joints);
}

export function num(v) { return typeof v === "number" && isFinite(v) ? v : null; }

/* A number as a person writes it: at most 6 significant digits, no float noise (0.1 * 3 is
   "0.3", not "0.30000000000000004"); for labels and fields that echo values back. */
export function short(v) {
  return typeof v === "number" && Number.isFinite(v) ? String(+v.toPrecision(6)) : String(v);
}

export function fmt(v) {
  return typeof v === "number" ? v.toPrecision(3) : String(v);
}

/* <progress id=...>: value of max (a long computation's iterations / steps done); max null:
   keep the bar's own max. */
export function showProgress(id, value, max) {
  const bar = $(id);
  if (!bar) return;
  if (max != null) bar.max = max;
  bar.value = Math.min(Number(value) || 0, bar.max);
  bar.title = `${bar.value} of ${bar.max}`;
}

/* A download the server makes on request (exports): a POST (only the dashboard's own page
   may ask for work, dashboard/security.py), its 4xx reason shown instead of a saved error. */
export async function postDownload(path, fallback) {
  try {
    const r = await fetch(path, { method: "POST", credentials: "same-origin" });
    if (!r.ok) {
      let detail;
      try { detail = formatDetail(await r.json()); } catch (e) { detail = r.statusText; }
      showError(`${fallback}: ${detail}`);
      return;
    }
    const name = (/filename="([^"]+)"/.exec(r.headers.get("content-disposition") || "") || [])[1] || fallback;
    download(await r.blob(), name);
  } catch (e) { showError(`${fallback}: ${e.message}`); }
}

export function on(id, ev, fn) { $(id).addEventListener(ev, fn); }
