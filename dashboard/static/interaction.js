/* Interaction control panel (PROTOCOL.md "Interaction control"): a ur10 session on its own Sim
 * with admittance or direct force control. Options from GET /api/interaction/options; commands
 * POST /api/interaction/{start,stop,law,reference}; the live state arrives as `interaction`
 * messages on the page's WebSocket (stream.js passes them to handleInteraction).
 * The plot (#plot-ic) shows f_e z and f_d z over the last WINDOW_S seconds of simulated time,
 * redrawn at most every DRAW_MS; #ic-fsm shows the controller's FSM state (data-state too).
 * A refused command (422: a value outside its range, named with the range by the server) shows
 * in #ic-error and its fields go back to the values in effect (the last status); the inputs'
 * titles give the valid ranges of GET /api/interaction/options.
 * app.js calls startInteraction once the page is parsed. */
import { $, hasPlotly } from "./core.js";

const WINDOW_S = 10;
const DRAW_MS = 200;
const MAX_POINTS = 2000;           // per trace, kept in the browser
const AXES = ["x", "y", "z"];
const ic = { options: null, last: null, t: [], fe: [], fd: [], drawTimer: null, lastDraw: 0, running: false, revision: 0 };

function showError(text) {
  const el = $("ic-error");
  el.textContent = text ? String(text) : "";
  el.hidden = !text;
}

function detailText(data) {
  if (data == null) return "";
  const d = data.detail !== undefined ? data.detail : data;
  if (typeof d === "string") return d;
  if (Array.isArray(d)) return d.map((e) => (e && e.msg ? `${(e.loc || []).filter((x) => x !== "body").join(".")}: ${e.msg}` : JSON.stringify(e))).join("; ");
  return JSON.stringify(d);
}

async function call(method, path, body) {
  const opts = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  let r;
  try { r = await fetch(path, opts); } catch (e) { showError(`${path}: ${e.message}`); return null; }
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (!r.ok) { showError(`${r.status}: ${detailText(data) || r.statusText}`); return null; }
  showError("");
  return data;
}

function rangeText(field) {  // "[lo, hi] unit" of options.ranges, "" without one
  const r = ic.options && ic.options.ranges && ic.options.ranges[field];
  return r ? `valid [${r.min}, ${r.max}] ${r.unit}` : "";
}

function setVec(prefix, values, digits) {  // fill `${prefix}-x` ... (no-op without values)
  if (!Array.isArray(values)) return;
  AXES.forEach((a, k) => {
    const v = values[k];
    if (v != null) $(`${prefix}-${a}`).value = String(digits ? Number(Number(v).toFixed(digits)) : v);
  });
}

// the fields of a refused command back to the values in effect (the last status)
function restoreGains() {
  const law = $("ic-law").value;
  const last = ic.last;
  const values = last && last.running && last.law === law ? last.gains : ic.options && ic.options.defaults[law];
  for (const f of (ic.options && ic.options.gain_fields[law]) || []) setVec(`ic-gain-${f}`, values && values[f]);
}
const restoreForce = () => setVec("ic-force", ic.last && ic.last.force_reference);
const restorePosition = () => { if (ic.last && ic.last.running) setVec("ic-pos", ic.last.x_d, 4); };

function vec(prefix) {  // [x, y, z] from inputs `${prefix}-x` ...; null when one is not a number
  const v = AXES.map((a) => Number($(`${prefix}-${a}`).value));
  return v.some((x) => !isFinite(x)) || AXES.some((a) => $(`${prefix}-${a}`).value === "") ? null : v;
}

function gainInputs(law, values) {
  const box = $("ic-gains");
  box.innerHTML = "";
  const fields = (ic.options && ic.options.gain_fields[law]) || [];
  for (const f of fields) {
    const row = document.createElement("div");
    row.className = "row";
    const label = document.createElement("span");
    label.className = "small";
    label.textContent = f;
    row.appendChild(label);
    AXES.forEach((a, k) => {
      const inp = document.createElement("input");
      inp.type = "number"; inp.step = "any"; inp.id = `ic-gain-${f}-${a}`;
      inp.title = `${f} ${a}, ${rangeText(f)}`;
      inp.className = "ic-axis";
      inp.value = values && values[f] ? String(values[f][k]) : "";
      row.appendChild(inp);
    });
    box.appendChild(row);
  }
}

function lawBody() {
  const law = $("ic-law").value;
  const body = { law };
  for (const f of (ic.options && ic.options.gain_fields[law]) || []) {
    const v = vec(`ic-gain-${f}`);
    if (!v) { showError(`${f}: enter three numbers`); return null; }
    body[f] = v;
  }
  return body;
}

function draw() {
  ic.drawTimer = null;
  ic.lastDraw = performance.now();
  $("plot-ic").dataset.points = String(ic.t.length);
  if (!hasPlotly()) return;
  Plotly.react($("plot-ic"), [
    { type: "scatter", mode: "lines", x: ic.t, y: ic.fe, name: "f_e z" },
    { type: "scatter", mode: "lines", x: ic.t, y: ic.fd, name: "f_d z", line: { dash: "dot" } },
  ], {  // the arrays are mutated in place: datarevision tells Plotly.react they changed
    uirevision: "ic", datarevision: ++ic.revision, margin: { l: 44, r: 6, t: 6, b: 28 }, font: { size: 9 },
    xaxis: { title: { text: "time (s)", standoff: 2 } }, yaxis: { title: { text: "force z (N)" } },
    showlegend: true, legend: { x: 0, y: 1, font: { size: 9 } },
  }, { displaylogo: false, displayModeBar: false, responsive: true });
}

function scheduleDraw() {
  if (ic.drawTimer) return;
  ic.drawTimer = setTimeout(draw, Math.max(0, DRAW_MS - (performance.now() - ic.lastDraw)));
}

function addSamples(s) {
  if (!s || !Array.isArray(s.t)) return;
  if (s.t.length && ic.t.length && s.t[0] < ic.t[ic.t.length - 1]) { ic.t = []; ic.fe = []; ic.fd = []; }  // a new session
  s.t.forEach((t, k) => {
    ic.t.push(t);
    ic.fe.push(s.f_e[k] ? s.f_e[k][2] : null);
    ic.fd.push(s.f_d[k] ? s.f_d[k][2] : null);
  });
  const last = ic.t.length ? ic.t[ic.t.length - 1] : 0;
  let cut = 0;
  while (cut < ic.t.length && (ic.t[cut] < last - WINDOW_S || ic.t.length - cut > MAX_POINTS)) cut++;
  if (cut) { ic.t.splice(0, cut); ic.fe.splice(0, cut); ic.fd.splice(0, cut); }
  if (s.t.length) scheduleDraw();
}

const fmt = (v) => (v == null ? "-" : Number(v).toFixed(2));

export function handleInteraction(msg) {
  if (!msg || typeof msg !== "object") return;
  ic.last = msg;
  ic.running = !!msg.running;
  const fsm = msg.fsm || "-";
  $("ic-fsm").textContent = ic.running ? fsm : `${fsm} (stopped)`;
  $("ic-fsm").dataset.state = ic.running ? fsm : "";
  let text = msg.running ? `${msg.law} on ${msg.variant}, t ${fmt(msg.time)} s` : (msg.message || "idle");
  if (msg.running && msg.f_e) text += `; f_e z ${fmt(msg.f_e[2])} N, f_d z ${fmt(msg.f_d && msg.f_d[2])} N`;
  if (msg.running && msg.message) text += ` (${msg.message})`;
  $("ic-status").textContent = text;
  $("ic-status").dataset.running = ic.running ? "1" : "0";
  $("btn-ic-start").disabled = ic.running;
  for (const id of ["btn-ic-stop", "btn-ic-law", "btn-ic-force", "btn-ic-position"]) $(id).disabled = !ic.running;
  addSamples(msg.samples);
}

async function load() {
  const o = await call("GET", "/api/interaction/options");
  if (!o) return;
  ic.options = o;
  const vs = $("ic-variant");
  vs.innerHTML = "";
  for (const v of o.variants) { const op = document.createElement("option"); op.value = v; op.textContent = v; vs.appendChild(op); }
  const ls = $("ic-law");
  ls.innerHTML = "";
  for (const l of o.laws) { const op = document.createElement("option"); op.value = l; op.textContent = l.replace("_", " "); ls.appendChild(op); }
  ls.value = "direct_force";
  gainInputs(ls.value, o.defaults[ls.value]);
  AXES.forEach((a, k) => {
    $(`ic-pos-${a}`).value = String(o.start_position[k]);
    $(`ic-force-${a}`).title = `${a} (z: the tool axis, down), ${rangeText("force")}`;
  });
  const st = await call("GET", "/api/interaction/status");
  if (st) handleInteraction(st);
}

function bind() {
  $("ic-law").addEventListener("change", () => gainInputs($("ic-law").value, ic.options && ic.options.defaults[$("ic-law").value]));
  $("btn-ic-start").addEventListener("click", async () => {
    const body = lawBody();
    if (!body) return;
    body.variant = $("ic-variant").value;
    $("ic-status").textContent = "starting...";
    const r = await call("POST", "/api/interaction/start", body);
    if (r) handleInteraction(r); else { $("ic-status").textContent = "not started"; restoreGains(); }
  });
  $("btn-ic-stop").addEventListener("click", async () => { const r = await call("POST", "/api/interaction/stop", {}); if (r) handleInteraction(r); });
  $("btn-ic-law").addEventListener("click", async () => {
    const body = lawBody();
    if (!body) return;
    const r = await call("POST", "/api/interaction/law", body);
    if (r) handleInteraction(r); else restoreGains();
  });
  $("btn-ic-force").addEventListener("click", async () => {
    const force = vec("ic-force");
    if (!force) { showError("force: enter three numbers (N)"); return; }
    const r = await call("POST", "/api/interaction/reference", { force });
    if (r) handleInteraction(r); else restoreForce();
  });
  $("btn-ic-position").addEventListener("click", async () => {
    const position = vec("ic-pos");
    if (!position) { showError("position: enter three numbers (m)"); return; }
    const r = await call("POST", "/api/interaction/reference", { position });
    if (r) handleInteraction(r); else restorePosition();
  });
}

export function startInteraction() {
  if (!$("ic-panel")) return;
  bind();
  load();
}
