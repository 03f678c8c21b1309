/* The control panels (see app.js for the module map): robot and joint, stiffness, PID gains,
 * reference, run (push, pause, reset, speed) and compare; applyState shows a state in them. */
import { $, act, api, app, clearError, handlers, looksLikeState, num, on, short, showError } from "./core.js";
import { datasheetState } from "./datasheet.js";
import { whenDrawn } from "./timeline.js";

const GAINS = ["kp", "ki", "kd"];  // the PID gain inputs #gain-kp, #gain-ki, #gain-kd

/* A command whose refusal puts every field back to the value in effect (the server keeps it). */
async function command(path, body) {
  const data = await act(path, body);
  if (data === null) restoreFields();
  return data;
}
function control(body) { return command("/api/control", body); }
/* A value refused on the page (not a number): said, and the fields back to the values in effect. */
function refuse(message) { showError(message); restoreFields(); }

/* state.joints with each joint's preset (state.presets) and reference (state.reference). */
function normalizeJoints(state) {
  return state.joints.map((j) => {
    const spec = j.preset_range;  // asr.models()[model].preset: kind, soft, stiff, unit, meaning
    // what the preset is and its unit, as the package defines them
    const presetInfo = [spec.meaning, spec.unit].filter((s) => typeof s === "string" && s).join(", ");
    const live = (state.presets_in_effect || {})[j.name];  // per instance, the policy's in watch
    return { name: j.name, model: j.model, mode: j.mode, params: j.params,
             preset: num(state.presets[j.name]), range: [spec.lo, spec.hi], unit: spec.unit || "",
             live: Array.isArray(live) ? live : null,
             reference: state.reference[j.name] || null, presetKind: spec.kind, presetInfo,
             motors: j.motors, buttons: j.presets || null, torqueRange: j.torque_range || null };
  });
}

function targets() {
  const sel = $("joint").value;
  const names = app.joints.map((j) => j.name);
  return sel === "*" || !names.includes(sel) ? names : [sel];
}
function perJoint(value) {
  const out = {};
  for (const name of targets()) out[name] = typeof value === "function" ? value(name) : value;
  return out;
}
export function firstTarget() {
  const names = targets();
  return app.joints.find((j) => j.name === names[0]) || null;
}
// restoreFields sets every field, also the one focused (the one whose value was refused)
let forcing = false;
const editing = (el) => !forcing && document.activeElement === el;
const lastAccepted = { push: "2", compare: "0.2, 0.6" };  // fields the state does not hold

/* Every field back to the value in effect (the last state), after a refused command. */
export function restoreFields() {
  if (!app.state) return;
  forcing = true;
  try {
    applyState(app.state);
    $("push-torque").value = lastAccepted.push;
    if (!app.state.compare.length) $("compare-presets").value = lastAccepted.compare;
  } finally { forcing = false; }
}

export function applyState(state) {
  if (!looksLikeState(state)) return;
  app.state = state;
  app.joints = normalizeJoints(state);
  if ($("btn-rl-manual")) $("btn-rl-manual").disabled = !state.watch;  // the RL panel's watch
  if (app.pending) app.pending.acked = true;

  // joint select
  const jsel = $("joint");
  const want = ["*"].concat(app.joints.map((j) => j.name));
  const have = Array.from(jsel.options).map((o) => o.value);
  if (want.join("|") !== have.join("|")) {
    const keep = jsel.value;
    jsel.innerHTML = "";
    for (const v of want) jsel.add(new Option(v === "*" ? "all" : v, v));
    jsel.value = want.includes(keep) ? keep : "*";
  }

  // robot select and info
  ensureRobotOption(state.robot, state.variant || "", true);
  const models = Array.from(new Set(app.joints.map((j) => j.model).filter(Boolean)));
  $("robot-info").textContent = `${app.joints.length} joint${app.joints.length === 1 ? "" : "s"}` +
    (models.length ? ` (${models.join(", ")})` : "");

  const j = firstTarget();
  if (j) {
    if (j.mode !== null && !editing($("mode"))) $("mode").value = String(j.mode);
    showGains(j);
    showReference(j);
    updatePresetSlider(j);
    showButtonPresets(j);
    showModeOptions();
  }
  showAvailability(state);
  hideUnusedTraces();
  followWatch(state);
  datasheetState(state, j ? j.name : null);

  // pause / speed
  const paused = !!state.paused;
  $("btn-pause").textContent = paused ? "resume" : "pause";
  $("btn-pause").classList.toggle("active", paused);
  if (state.speed !== undefined && !editing($("speed"))) $("speed").value = state.speed === "max" ? "max" : "1";
  if (Array.isArray(state.compare) && state.compare.length && !editing($("compare-presets"))) {
    $("compare-presets").value = state.compare.map(short).join(", ");
    lastAccepted.compare = $("compare-presets").value;
  }
  if (num(state.time) !== null) $("sim-time").textContent = `t = ${state.time.toFixed(1)} s`;
}

/* The PID a mode uses (docs/models.md sec. 4): the motor PID (kp, ki, kd) in modes 5 and 6, the
   link PID (link_kp, link_ki, link_kd) in mode 1, none in the others. */
const MOTOR_PID_MODES = [5, 6], LINK_PID_MODE = 1;
function gainPrefix(mode) {
  if (MOTOR_PID_MODES.includes(mode)) return "";
  return mode === LINK_PID_MODE ? "link_" : null;
}

/* The gains section for joint j in `mode` (default: its own): hidden when the mode uses no
   PID, else titled and filled with that PID's gains. */
function showGains(j, mode = j.mode) {
  const prefix = gainPrefix(mode);
  const section = $("gains");
  section.hidden = prefix === null;
  section.dataset.gains = prefix === null ? "none" : prefix ? "link" : "motor";
  if (prefix === null) return;
  $("gains-title").textContent = prefix ? "Link PID gains" : "Motor PID gains";
  for (const g of GAINS) {
    const el = $(`gain-${g}`), v = num(j.params[prefix + g]);
    if (!editing(el) && v !== null) el.value = String(v);
  }
}

/* The soft / stiff buttons' presets (state.joints[j].presets, PROTOCOL.md "Presets") as
   their tooltips. */
function showButtonPresets(j) {
  const b = j.buttons;
  $("btn-soft").title = b ? `${j.name}: preset ${b.soft}` : "";
  $("btn-stiff").title = !b ? "" : b.clamp_free === false
    ? `${j.name}: preset ${b.stiff} (its spring reaches the deflection clamp in the first view even when soft)`
    : `${j.name}: preset ${b.stiff}, the largest off the deflection clamp in the first view`;
}

// ------------------------------------------------------------------ reference

const TORQUE_MODES = [0, 4];  // their inputs are torques, not an equilibrium (docs/models.md sec. 4)
const NO_FREQUENCY = ["step", "hold", "minjerk"];  // kinds without a frequency
const REF_FIELDS = { amplitude: "ref-amplitude", frequency: "ref-frequency", offset: "ref-offset",
                     torque: "ref-torque", torque2: "ref-torque2" };

/* `field` of the targets' generators: the value when they agree, "mixed" when they differ. */
function targetValue(field) {
  const vals = targets().map((n) => (app.state.reference[n] || {})[field]).filter((v) => v !== undefined);
  if (!vals.length) return null;
  return vals.every((v) => v === vals[0]) ? vals[0] : "mixed";
}

function setField(id, value) {
  const el = $(id);
  if (editing(el) || value === null) return;
  el.value = value === "mixed" ? "" : String(value);
  el.placeholder = value === "mixed" ? "mixed" : "";
}

/* The reference inputs of joint j's mode (`mode`, default its own): equilibrium generator in
   modes 1, 2, 3, 5, 6; the torque inputs with their range in modes 0 and 4. */
function showReference(j, mode = j.mode) {
  const torque = TORQUE_MODES.includes(mode);
  for (const id of ["ref-kind", "ref-amplitude", "ref-offset"]) $(id).closest(".row").hidden = torque;
  $("ref-torque-row").hidden = !torque;
  $("ref-torque2-label").hidden = mode !== 4 || j.motors < 2;
  const rng = j.torqueRange;
  if (torque && rng && j.mode === mode) {
    const [lo, hi, unit] = rng;
    for (const id of ["ref-torque", "ref-torque2"]) {
      $(id).min = String(lo); $(id).max = String(hi);
      $(id).title = `valid [${lo}, ${hi}] ${unit}`;
    }
    $("ref-torque-label").firstChild.textContent = mode === 0 ? `link torque (${unit}) ` : `motor 1 (${unit}) `;
  }
  if (!app.state) return;
  const kind = targetValue("kind");
  if (kind && kind !== "mixed" && !editing($("ref-kind"))) $("ref-kind").value = kind;
  for (const [field, id] of Object.entries(REF_FIELDS)) setField(id, targetValue(field));
  const k = $("ref-kind").value;
  $("ref-frequency").disabled = NO_FREQUENCY.includes(k);
  $("ref-frequency").title = NO_FREQUENCY.includes(k) ? `a ${k} has no frequency` : "";
  $("ref-amplitude").disabled = k === "hold";
  $("ref-amplitude").title = k === "hold" ? "a hold has no amplitude: it holds the offset" : "";
}

/* A reference change of the fields named: only they change, the others stay as in effect. */
function sendReference(fields) {
  const gen = {};
  for (const f of fields) {
    if (f === "kind") { gen.kind = $("ref-kind").value; continue; }
    const el = $(REF_FIELDS[f]);
    if (el.value === "" && el.placeholder === "mixed") continue;  // left as each joint has it
    const v = Number(el.value);
    if (el.value === "" || !isFinite(v)) { refuse(`reference ${f}: enter a number, got "${el.value}"`); return; }
    gen[f] = v;
  }
  if (Object.keys(gen).length) control({ reference: perJoint(gen) });
}

// ------------------------------------------------------------------ what each state offers

/* Mode options a selected joint's model does not support are disabled (no spring: 0 and 1). */
function showModeOptions() {
  const rigid = targets().some((n) => (app.joints.find((j) => j.name === n) || {}).motors === 0);
  for (const o of $("mode").options) {
    o.disabled = rigid && Number(o.value) > 1;
    o.title = o.disabled ? "a joint without a spring has modes 0 and 1 only" : "";
  }
}

/* Disable the elements `ids` with `reason` as their title ("" enables them, their own title back). */
function disable(ids, reason) {
  for (const id of ids) {
    const el = $(id);
    if (el.dataset.reason && el.title === el.dataset.reason) el.title = el.dataset.base || "";
    else el.dataset.base = el.title;
    el.disabled = !!reason;
    el.dataset.reason = reason || "";
    if (reason) el.title = reason;
  }
}
function note(id, text) { $(id).textContent = text || ""; $(id).hidden = !text; }

/* Why joint j's preset does nothing ("" when it acts): no stiffness control, or a preset of kind
   "ref" (a second reference) in a torque mode, where the references are torques. */
function presetIdle(j) {
  if (!hasPreset(j)) return `model ${j.model} has no stiffness control`;
  if (j.presetKind === "ref" && TORQUE_MODES.includes(j.mode)) return `mode ${j.mode} takes torques: its preset is not an input`;
  return "";
}

/* Controls that do nothing in the current state are disabled with their reason beside them; the
   plots a robot without springs cannot fill are hidden. */
function showAvailability(state) {
  const sel = targets().map((n) => app.joints.find((j) => j.name === n)).filter(Boolean);
  const reasons = sel.map((j) => presetIdle(j) && `${j.name}: ${presetIdle(j)}`).filter(Boolean);
  const springless = app.joints.length > 0 && app.joints.every((j) => j.motors === 0);
  // disabled when no selected joint's preset acts; the note names those whose does not
  let stiff = sel.length && reasons.length === sel.length ? reasons.join("; ") : "";
  if (state.watch) stiff = "the watched policy chooses the preset (manual control to set it)";
  disable(["btn-soft", "btn-stiff", "preset-slider"], stiff);
  const why = stiff || reasons.join("; ");
  note("stiffness-note", springless ? `${why}; no spring on any joint: the stiffness and motor plots are hidden` : why);
  for (const id of ["plot-stiffness", "plot-motors"]) if ($(id)) $(id).style.display = springless ? "none" : "";
  const ref = state.watch ? "the watched policy chooses the references (manual control to set them)" : "";
  disable(["ref-kind", "ref-offset", "ref-torque", "ref-torque2", "btn-ref-apply"], ref);
  if (ref) disable(["ref-amplitude", "ref-frequency"], ref);
  note("ref-note", ref);
  const push = state.paused ? "paused: resume to push" : "";
  disable(["btn-push"], push);
  note("push-note", push);
  const springs = app.joints.some(hasPreset);
  disable(["btn-compare"], springs ? "" : "no joint has a stiffness preset to compare");
  disable(["btn-compare-off"], state.compare.length ? "" : "one instance already (not comparing)");
  // compare's label names the instances the plots show: it switches once the first frame of
  // the state's run (a compare change starts one) is drawn, not when the state arrives
  const instances = state.compare.length ? `instances: preset ${state.compare.map(short).join(" / ")}` : "";
  whenDrawn("compare-note", state.run_id, () => note("compare-note", instances));
}

/* Modes 0 and 4 take torques: their equilibrium (and q - eq) is not used, so not drawn. */
function hideUnusedTraces() {
  const modes = Object.fromEntries(app.joints.map((j) => [j.name, j.mode]));
  for (const id of ["plot-q", "plot-defl"]) {
    const gd = $(id);
    if (!gd || !Array.isArray(gd.data) || !window.Plotly) continue;
    if (!gd.asrShows && gd.on) { gd.asrShows = true; gd.on("plotly_afterplot", hideUnusedTraces); }
    const idx = [], vis = [];
    gd.data.forEach((tr, k) => {
      const m = tr.meta || {};
      const want = !((m.field === "eq" || m.field === "defl") && TORQUE_MODES.includes(modes[m.joint]));
      if ((tr.visible !== false) !== want) { idx.push(k); vis.push(want); }
    });
    if (idx.length) window.Plotly.restyle(gd, { visible: vis }, idx);
  }
}

/* While a policy is watched the preset changes every env step: the state is polled. */
let watchPoll = null;
function followWatch(state) {
  if (state.watch && !watchPoll) {
    watchPoll = setInterval(async () => {
      try { applyState(await api("GET", "/api/state")); } catch (e) { /* the next poll */ }
    }, 500);
  } else if (!state.watch && watchPoll) { clearInterval(watchPoll); watchPoll = null; }
}

function hasPreset(j) {
  return !!j && j.presetKind !== "none" && j.range[0] !== j.range[1];
}

/* The slider spans the model's preset range (asr.models()[model].preset lo .. hi) and stands at
   the joint's preset. */
function updatePresetSlider(j) {
  const [lo, hi] = j.range;
  const slider = $("preset-slider");
  $("preset-lo").textContent = hasPreset(j) ? `${lo} ${j.unit}` : "";
  $("preset-hi").textContent = hasPreset(j) ? `${hi} ${j.unit}` : "";
  slider.min = String(lo);
  slider.max = String(hi);
  slider.step = hi > lo ? String((hi - lo) / 200) : "any";
  slider.title = j.presetInfo ? `${j.presetInfo}, ${lo} to ${hi} ${j.unit}` : "";
  if (j.preset !== null && !editing(slider)) slider.value = String(j.preset);
  showPresetValue();
}

/* The preset label: the value in effect, each instance's in compare mode ("0.2 / 0.6"), the
   policy's while a policy is watched (live, GET /api/state polled), the slider's while dragged. */
function showPresetValue() {
  const j = firstTarget();
  const label = $("preset-value");
  if (!j || !hasPreset(j)) { label.textContent = ""; return; }
  const p = (v) => (num(v) === null ? "?" : String(+v.toPrecision(4)));
  const st = app.state || {};
  if (editing($("preset-slider"))) label.textContent = `= ${p(Number($("preset-slider").value))} ${j.unit}`;
  else if (st.watch && j.presetKind === "ref") label.textContent = `= ${(j.live || []).map(p).join(" / ")} ${j.unit} (policy)`;
  else if (st.compare && st.compare.length) label.textContent = `= ${st.compare.map(p).join(" / ")} ${j.unit} (compare)`;
  else label.textContent = `= ${p(j.preset)} ${j.unit}`;
  label.dataset.value = label.textContent;
}

// ------------------------------------------------------------------ robots

function ensureRobotOption(robot, variant, select) {
  const sel = $("robot");
  const value = `${robot}|${variant || ""}`;
  let opt = Array.from(sel.options).find((o) => o.value === value);
  if (!opt) {
    opt = new Option(variant ? `${robot} / ${variant}` : robot, value);
    sel.add(opt);
  }
  if (select && !editing(sel)) sel.value = value;
}

export async function loadRobots() {
  let data;
  try { data = await api("GET", "/api/robots"); } catch (e) { return; }
  const robots = (data && data.robots) || [];
  const sel = $("robot");
  const current = sel.value;
  sel.innerHTML = "";
  for (const r of robots) {
    const name = r.name;
    if (r.error) {  // a broken robot folder: shown, not selectable, its error as the tooltip
      const opt = new Option(`${name} (broken)`, `${name}|`);
      opt.disabled = true;
      opt.title = String(r.error);
      sel.add(opt);
      continue;
    }
    const variants = r.variants.length ? r.variants : [""];
    for (const v of variants) sel.add(new Option(v ? `${name} / ${v}` : name, `${name}|${v}`));
  }
  if (current) {
    if (!Array.from(sel.options).some((o) => o.value === current)) sel.add(new Option(current.replace("|", " / "), current));
    sel.value = current;
  }
  if (app.state) applyState(app.state);
}


export function bindControls() {
  $("error-close").addEventListener("click", clearError);

  on("robot", "change", () => {
    const [robot, variant] = $("robot").value.split("|");
    const body = { robot };
    if (variant) body.variant = variant;
    command("/api/robot", body);
  });
  on("joint", "change", () => { if (app.state) applyState(app.state); });

  on("mode", "change", () => {
    const mode = Number($("mode").value);
    const j = firstTarget();
    if (j) { showGains(j, mode); showReference(j, mode); }  // at once, before the server's answer
    control({ mode: perJoint(mode) });
  });

  // the joint selector: one joint, or every joint when "all"
  const stiffnessPath = (which) => {
    const sel = $("joint").value;
    return sel === "*" ? `/api/stiffness/${which}` : `/api/stiffness/${which}?joint=${encodeURIComponent(sel)}`;
  };
  on("btn-soft", "click", () => command(stiffnessPath("soft")));
  on("btn-stiff", "click", () => command(stiffnessPath("stiff")));
  on("preset-slider", "input", showPresetValue);
  on("preset-slider", "change", () => {
    const first = firstTarget();
    if (!first) return;
    const [lo0, hi0] = first.range;  // the same fraction of each joint's own model range
    const f = hi0 > lo0 ? (Number($("preset-slider").value) - lo0) / (hi0 - lo0) : 0;
    const preset = {};
    for (const name of targets()) {
      const j = app.joints.find((jj) => jj.name === name);
      if (!hasPreset(j)) continue;
      const [lo, hi] = j.range;
      preset[name] = +(lo + f * (hi - lo)).toPrecision(6);
    }
    if (!Object.keys(preset).length) { refuse("no joint with a stiffness preset selected"); return; }
    control({ preset });
  });

  for (const g of GAINS) {
    const id = `gain-${g}`;
    on(id, "change", () => {
      const j = firstTarget();
      const prefix = j ? gainPrefix(Number($("mode").value)) : null;
      if (prefix === null) return;  // the section is hidden: no PID in this mode
      const key = prefix + g, v = Number($(id).value);
      if ($(id).value === "" || !isFinite(v)) { refuse(`${key}: enter a number`); return; }
      control({ params: perJoint({ [key]: v }) });
    });
  }

  on("ref-kind", "change", () => sendReference(["kind"]));
  for (const [field, id] of Object.entries(REF_FIELDS)) on(id, "change", () => sendReference([field]));
  on("btn-ref-apply", "click", () => {
    const torque = TORQUE_MODES.includes(Number($("mode").value));
    sendReference(torque ? ["torque", "torque2"] : ["kind", "amplitude", "frequency", "offset"]);
  });

  on("btn-push", "click", async () => {
    const names = targets();
    if (!names.length) { showError("no joints yet"); return; }
    const text = $("push-torque").value, torque = Number(text);
    if (text === "" || !isFinite(torque)) { refuse(`push torque: enter a number (N m), got "${text}"`); return; }
    const done = await command("/api/push", { joint: names[0], torque, duration: 0.05 });
    if (done) lastAccepted.push = text;
  });
  on("btn-pause", "click", () => control({ paused: !(app.state && app.state.paused) }));
  on("btn-reset", "click", () => act("/api/reset"));
  on("speed", "change", () => control({ speed: $("speed").value === "max" ? "max" : Number($("speed").value) }));

  on("btn-compare", "click", () => {
    const parts = $("compare-presets").value.split(/[,;\s]+/).filter(Boolean);
    const presets = parts.map(Number);
    if (!presets.length || presets.some((v) => !isFinite(v))) {
      refuse(`compare: expected comma-separated numbers, got "${$("compare-presets").value}"`);
      return;
    }
    command("/api/compare", { presets });
  });
  on("btn-compare-off", "click", () => command("/api/compare", { presets: [] }));
}

handlers.state = applyState;
