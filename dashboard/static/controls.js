/* The control panels (see app.js for the module map): robot and joint, stiffness, PID gains,
 * reference, run (push, pause, reset, speed) and compare; applyState shows a state in them. */
import { $, act, api, app, clearError, handlers, looksLikeState, num, on, showError } from "./core.js";

const GAINS = ["kp", "ki", "kd"];  // the PID gain inputs #gain-kp, #gain-ki, #gain-kd

function control(body) { return act("/api/control", body); }

/* state.joints with each joint's preset (state.presets) and reference (state.reference). */
function normalizeJoints(state) {
  return state.joints.map((j) => {
    const spec = j.preset_range;  // asr.models()[model].preset: kind, soft, stiff, unit, meaning
    // what the preset is and its unit, as the package defines them
    const presetInfo = [spec.meaning, spec.unit].filter((s) => typeof s === "string" && s).join(", ");
    return { name: j.name, model: j.model, mode: j.mode, params: j.params,
             preset: num(state.presets[j.name]), range: [spec.soft, spec.stiff],
             reference: state.reference[j.name] || null, presetKind: spec.kind, presetInfo,
             motors: j.motors, buttons: j.presets || null };
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
const editing = (el) => document.activeElement === el;

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
    const ref = j.reference;
    if (ref && typeof ref === "object") {
      if (ref.kind && !editing($("ref-kind"))) $("ref-kind").value = ref.kind;
      if (num(ref.amplitude) !== null && !editing($("ref-amplitude"))) $("ref-amplitude").value = String(ref.amplitude);
      if (num(ref.frequency) !== null && !editing($("ref-frequency"))) $("ref-frequency").value = String(ref.frequency);
    }
    updatePresetSlider(j);
    showButtonPresets(j);
  }
  if (window.asrDatasheet) window.asrDatasheet.state(state, j ? j.name : null);  // datasheet.js

  // pause / speed
  const paused = !!state.paused;
  $("btn-pause").textContent = paused ? "resume" : "pause";
  $("btn-pause").classList.toggle("active", paused);
  if (state.speed !== undefined && !editing($("speed"))) $("speed").value = state.speed === "max" ? "max" : "1";
  if (Array.isArray(state.compare) && state.compare.length && !editing($("compare-presets"))) {
    $("compare-presets").value = state.compare.join(", ");
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

function hasPreset(j) {
  return !!j && j.presetKind !== "none" && j.range[0] !== j.range[1];
}

function updatePresetSlider(j) {
  const [lo, hi] = j.range;
  $("preset-lo").textContent = `soft ${lo}`;
  $("preset-hi").textContent = `stiff ${hi}`;
  const slider = $("preset-slider");
  slider.title = j.presetInfo || "";
  if (j.preset !== null && !editing(slider)) {
    const f = hi !== lo ? (j.preset - lo) / (hi - lo) : 0;
    slider.value = String(Math.min(1, Math.max(0, f)));
  }
  showPresetValue();
}

function showPresetValue() {
  const j = firstTarget();
  if (!j) return;
  const [lo, hi] = j.range;
  const v = lo + Number($("preset-slider").value) * (hi - lo);
  $("preset-value").textContent = `= ${+v.toPrecision(4)}`;
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
    act("/api/robot", body);
  });
  on("joint", "change", () => { if (app.state) applyState(app.state); });

  on("mode", "change", () => {
    const mode = Number($("mode").value);
    const j = firstTarget();
    if (j) showGains(j, mode);  // at once, before the server's answer
    control({ mode: perJoint(mode) });
  });

  // the joint selector: one joint, or every joint when "all"
  const stiffnessPath = (which) => {
    const sel = $("joint").value;
    return sel === "*" ? `/api/stiffness/${which}` : `/api/stiffness/${which}?joint=${encodeURIComponent(sel)}`;
  };
  on("btn-soft", "click", () => act(stiffnessPath("soft")));
  on("btn-stiff", "click", () => act(stiffnessPath("stiff")));
  on("preset-slider", "input", showPresetValue);
  on("preset-slider", "change", () => {
    const f = Number($("preset-slider").value);
    const preset = {};
    for (const name of targets()) {
      const j = app.joints.find((jj) => jj.name === name);
      if (!hasPreset(j)) continue;
      const [lo, hi] = j.range;
      preset[name] = +(lo + f * (hi - lo)).toPrecision(6);
    }
    if (!Object.keys(preset).length) { showError("no joint with a stiffness preset selected"); return; }
    control({ preset });
  });

  for (const g of GAINS) {
    const id = `gain-${g}`;
    on(id, "change", () => {
      const j = firstTarget();
      const prefix = j ? gainPrefix(Number($("mode").value)) : null;
      if (prefix === null) return;  // the section is hidden: no PID in this mode
      const key = prefix + g, v = Number($(id).value);
      if ($(id).value === "" || !isFinite(v)) { showError(`${key}: enter a number`); return; }
      control({ params: perJoint({ [key]: v }) });
    });
  }

  const sendReference = () => {
    const gen = { kind: $("ref-kind").value };
    const amp = Number($("ref-amplitude").value);
    const freq = Number($("ref-frequency").value);
    if ($("ref-amplitude").value !== "" && isFinite(amp)) gen.amplitude = amp;
    if ($("ref-frequency").value !== "" && isFinite(freq) && gen.kind !== "step" && gen.kind !== "hold" && gen.kind !== "minjerk") gen.frequency = freq;
    control({ reference: perJoint(gen) });
  };
  on("ref-kind", "change", sendReference);
  on("ref-amplitude", "change", sendReference);
  on("ref-frequency", "change", sendReference);
  on("btn-ref-apply", "click", sendReference);

  on("btn-push", "click", () => {
    const names = targets();
    if (!names.length) { showError("no joints yet"); return; }
    const torque = Number($("push-torque").value);
    act("/api/push", { joint: names[0], torque: isFinite(torque) ? torque : 1.0, duration: 0.05 });
  });
  on("btn-pause", "click", () => control({ paused: !(app.state && app.state.paused) }));
  on("btn-reset", "click", () => act("/api/reset"));
  on("speed", "change", () => control({ speed: $("speed").value === "max" ? "max" : Number($("speed").value) }));

  on("btn-compare", "click", () => {
    const parts = $("compare-presets").value.split(/[,;\s]+/).filter(Boolean);
    const presets = parts.map(Number);
    if (!presets.length || presets.some((v) => !isFinite(v))) {
      showError(`compare: expected comma-separated numbers, got "${$("compare-presets").value}"`);
      return;
    }
    act("/api/compare", { presets });
  });
  on("btn-compare-off", "click", () => act("/api/compare", { presets: [] }));
}

handlers.state = applyState;
