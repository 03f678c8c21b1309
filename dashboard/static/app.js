/* asr dashboard page: live plots over the /ws/stream WebSocket, controls over REST.
 *
 * Trace / plot convention (also in dashboard/PROTOCOL.md, "WebSocket"):
 *
 *   The server sends ONE figure; the page splits its traces over five plots:
 *     "q"         #plot-q          link angle q and equilibrium reference eq, per instance and joint
 *     "defl"      #plot-defl       deflection q - eq
 *     "tau"       #plot-tau        link torque
 *     "stiffness" #plot-stiffness  joint stiffness
 *     "motors"    #plot-motors     motor angles th1, th2
 *   Trace k of figure.data goes to the plot named by trace.meta.plot (the element id
 *   "plot-q", "plot-defl", ...), and trace.meta.field (q, eq, defl, tau, stiffness, th1, th2)
 *   sets its line style. A trace without x takes figure.x (the server sends the decimated
 *   history's time axis once, PROTOCOL.md "First view").
 *   An extend message's indices are indices into figure.data ("trace order as in the figure");
 *   the page maps each to (plot, trace within plot) and calls Plotly.extendTraces once per plot,
 *   keeping per trace the points within state.window_s of its newest sample (at most
 *   maxPoints): by time, since the first view's history is sparser than the frames.
 *   Plotly.react is called once per figure message, with the figure's layout.uirevision on
 *   every plot so zoom/pan survive; never Plotly.newPlot per update.
 *   To stay light in the browser, each frame is decimated to SAMPLES_PER_FRAME samples per trace
 *   (maxPoints scaled by the same factor, so the plotted time window is the server's) and
 *   frames are buffered and drawn at most every FLUSH_MS (one extendTraces per plot per draw).
 *
 * window.asrStats = {fps, latencyMs, frames, ...}: fps = extend messages per second (2 s window);
 * latencyMs = time from the last control click to the first extend frame received after the
 * server acknowledged the change (REST answer or "state" message), i.e. the first frame the
 * runner computed with the change applied.
 */
"use strict";

(function () {
  const PLOTS = ["q", "defl", "tau", "stiffness", "motors"];
  const PLOT_INFO = {
    q: { div: "plot-q", title: "link angle q (solid) and equilibrium reference eq (dotted)", unit: "rad" },
    defl: { div: "plot-defl", title: "deflection q - eq", unit: "rad" },
    tau: { div: "plot-tau", title: "link torque", unit: "N m" },
    stiffness: { div: "plot-stiffness", title: "stiffness", unit: "N m/rad" },
    motors: { div: "plot-motors", title: "motor angles th1, th2", unit: "rad" },
  };
  const SAMPLES_PER_FRAME = 10;  // drawn samples per frame and trace (about 300 per second at 30 fps)
  const MAX_POINTS = 4000;       // drawn points per trace, at most
  const FLUSH_MS = 100;          // redraw the plots at most 10 times per second
  const HISTORY_POINTS = 3000;   // points per trace kept from a figure's history
  const GAINS = ["kp", "ki", "kd"];  // the PID gain inputs #gain-kp, #gain-ki, #gain-kd
  const PLOT_CONFIG = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };

  const app = {
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
  };
  window.asrDebug = app;
  const stats = (window.asrStats = { fps: 0, latencyMs: null, latencies: [], frames: 0, figures: 0 });

  const $ = (id) => document.getElementById(id);
  const hasPlotly = () => typeof window.Plotly !== "undefined";

  // ------------------------------------------------------------------ errors and status

  let errorTimer = null;
  function showError(message) {
    const box = $("error");
    $("error-text").textContent = String(message);
    box.hidden = false;
    clearTimeout(errorTimer);
    errorTimer = setTimeout(() => { box.hidden = true; }, 10000);
  }
  function clearError() { $("error").hidden = true; }

  function download(blob, name) {
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = name;
    document.body.appendChild(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }

  function setStatus(text, cls) {
    const el = $("status");
    if (el.textContent !== text) el.textContent = text;
    el.className = "status " + (cls || text);
  }

  function formatDetail(data) {
    if (data == null) return "";
    if (typeof data === "string") return data;
    const d = data.detail !== undefined ? data.detail : data;
    if (typeof d === "string") return d;
    if (Array.isArray(d)) {
      return d.map((e) => (e && e.msg ? `${(e.loc || []).filter((x) => x !== "body").join(".")}: ${e.msg}` : JSON.stringify(e))).join("\n");
    }
    return JSON.stringify(d);
  }

  // ------------------------------------------------------------------ REST

  async function api(method, path, body) {
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
  async function act(path, body, { control = true } = {}) {
    if (control) app.pending = { t0: performance.now(), acked: false };
    try {
      const data = await api("POST", path, body === undefined ? {} : body);
      clearError();
      if (app.pending) app.pending.acked = true;
      if (looksLikeState(data)) applyState(data);
      return data;
    } catch (e) {
      app.pending = null;
      showError(e.message);
      return null;
    }
  }

  function control(body) { return act("/api/control", body); }

  // ------------------------------------------------------------------ state

  function looksLikeState(s) {
    return !!s && typeof s === "object" && Array.isArray(s.joints);
  }

  function num(v) { return typeof v === "number" && isFinite(v) ? v : null; }

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
  function firstTarget() {
    const names = targets();
    return app.joints.find((j) => j.name === names[0]) || null;
  }
  const editing = (el) => document.activeElement === el;

  function applyState(state) {
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

  async function loadRobots() {
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

  // ------------------------------------------------------------------ figure and plots

  /* {plot, field} of every trace of figure.data, from its meta (the convention at the top). */
  function classify(data) {
    return data.map((tr) => ({ plot: tr.meta.plot.replace(/^plot-/, ""), field: tr.meta.field }));
  }

  function plotLayout(plot, uirevision) {
    const info = PLOT_INFO[plot];
    return {
      uirevision,
      title: { text: info.title, font: { size: 12 }, x: 0.01, xanchor: "left", y: 0.98 },
      margin: { l: 52, r: 8, t: 26, b: 30 },
      font: { size: 10 },
      xaxis: { title: { text: "t (s)", standoff: 2 }, automargin: true },
      yaxis: { title: { text: info.unit }, automargin: true, zeroline: true },
      // outside the plot area, right of it (plotly widens the margin for it): never over a trace
      legend: { orientation: "v", x: 1.01, xanchor: "left", y: 1, yanchor: "top", font: { size: 9 } },
      showlegend: true,
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

  function handleFigure(figure, state) {
    if (state) applyState(state);
    figure = figure || {};
    const layout = figure.layout || {};
    app.uirevision = layout.uirevision != null ? String(layout.uirevision) : "asr";
    const data = figure.data;
    const sharedX = Array.isArray(figure.x) ? figure.x : null;  // time axis of traces without x
    const cls = classify(data);

    const perPlot = {};
    for (const p of PLOTS) perPlot[p] = [];
    app.route = data.map((tr, k) => {
      const { plot, field } = cls[k];
      if (!motorExists(tr.meta.joint, field)) return null;  // left out: extends skip it
      const copy = Object.assign({}, tr);
      delete copy.xaxis; delete copy.yaxis;
      if (!copy.type) copy.type = "scatter";
      if (!copy.mode) copy.mode = "lines";
      if (field === "eq" || field === "th2") copy.line = Object.assign({ dash: field === "eq" ? "dot" : "dash" }, copy.line || {});
      if (copy.x === undefined) copy.x = sharedX && Array.isArray(copy.y) ? sharedX.slice(0, copy.y.length) : [];
      if (copy.y === undefined) copy.y = [];
      if (Array.isArray(copy.x) && Array.isArray(copy.y) && copy.x.length > HISTORY_POINTS) {
        const stride = Math.ceil(copy.x.length / HISTORY_POINTS);
        const keep = (arr) => arr.filter((_, i) => (arr.length - 1 - i) % stride === 0);
        copy.x = keep(copy.x);
        copy.y = keep(copy.y);
      }
      perPlot[plot].push(copy);
      return { plot, local: perPlot[plot].length - 1 };
    });
    // deflection traces per joint, and one marker trace of the samples on the deflection clamp
    app.deflTraces = {};
    cls.forEach(({ field }, k) => {
      if (field === "defl" && app.route[k]) (app.deflTraces[data[k].meta.joint] ||= []).push(k);
    });
    perPlot.defl.push({ type: "scatter", mode: "markers", name: "on the deflection clamp", x: [], y: [],
                        meta: { field: "clamped" }, marker: { color: "#d62728", size: 7, symbol: "x" } });
    app.clampLocal = perPlot.defl.length - 1;
    if (window.asrDatasheet) window.asrDatasheet.figure(data);  // datasheet.js: trace order
    app.buffer = {};
    if (!hasPlotly()) return;
    for (const p of PLOTS) Plotly.react($(PLOT_INFO[p].div), perPlot[p], plotLayout(p, app.uirevision), PLOT_CONFIG);
    app.plotted = true;
    stats.figures += 1;
  }

  function handleExtend(msg) {
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
    const indices = Array.isArray(msg.indices) ? msg.indices : [];
    const update = msg.update || {};
    const keys = Object.keys(update);
    if (!keys.length) return;
    // decimate each frame to at most SAMPLES_PER_FRAME samples (keeping the last one) and scale
    // maxPoints by the same factor: the plotted window stays the server's, the browser draws less
    const first = update[keys[0]][0] || [];
    const n = first.length || 1;
    const stride = Math.max(1, Math.ceil(n / SAMPLES_PER_FRAME));
    const pick = (arr) => {
      if (stride === 1 || !arr || !arr.length) return arr || [];
      const out = [];
      for (let i = arr.length - 1; i >= 0; i -= stride) out.push(arr[i]);
      return out.reverse();
    };
    const kept = Math.ceil(n / stride);
    if (msg.maxPoints != null) {
      app.maxPoints = Math.min(MAX_POINTS, Math.max(10, Math.ceil((msg.maxPoints * kept) / n)));
    }
    markClamped(clamped, indices, update);
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

  /* A red marker on the deflection plot at the frame's last sample of each joint on its clamp
     (msg.clamped), on the instance trace deflected most: where the spring hit its stop. */
  function markClamped(clamped, indices, update) {
    if (!clamped.length || app.clampLocal == null || !update.x || !update.y) return;
    const pos = new Map(indices.map((gi, k) => [gi, k]));
    const tr = ((app.buffer.defl ||= {})[app.clampLocal] ||= { x: [], y: [] });
    for (const name of clamped) {
      let best = null;
      for (const gi of app.deflTraces[name] || []) {
        const k = pos.get(gi);
        const ys = k === undefined ? null : update.y[k];
        if (!ys || !ys.length || ys[ys.length - 1] == null) continue;
        const y = ys[ys.length - 1], x = update.x[k][ys.length - 1];
        if (best === null || Math.abs(y) > Math.abs(best.y)) best = { x, y };
      }
      if (best) { tr.x.push(best.x); tr.y.push(best.y); }
    }
  }

  /* Draw the buffered samples: one Plotly.extendTraces per plot, at most every FLUSH_MS. */
  function scheduleFlush() {
    if (app.flushTimer) return;
    const wait = Math.max(0, FLUSH_MS - (performance.now() - app.lastFlush));
    app.flushTimer = setTimeout(() => requestAnimationFrame(flush), wait);
  }

  /* Points trace `local` of plot div `gd` keeps after adding `add` ({x, y}): those within the
     server's window_s of the newest sample, at most app.maxPoints. By time, not by count: the
     history of a first view is decimated, sparser than the frames that follow it. */
  function keepPoints(gd, local, add) {
    const windowS = app.state ? num(app.state.window_s) : null;
    const ax = Array.isArray(add.x) ? add.x : [];
    if (!windowS || !ax.length) return app.maxPoints;
    const tMin = ax[ax.length - 1] - windowS;
    const newer = (arr) => {  // points >= tMin of a sorted array
      let lo = 0, hi = arr.length;
      while (lo < hi) { const mid = (lo + hi) >> 1; if (arr[mid] < tMin) lo = mid + 1; else hi = mid; }
      return arr.length - lo;
    };
    const cur = gd.data && gd.data[local] && Array.isArray(gd.data[local].x) ? gd.data[local].x : [];
    return Math.max(1, Math.min(app.maxPoints, newer(cur) + newer(ax)));
  }

  function flush() {
    app.flushTimer = null;
    app.lastFlush = performance.now();
    const buffer = app.buffer;
    app.buffer = {};
    if (!app.plotted || !hasPlotly()) return;
    for (const p of Object.keys(buffer)) {
      const locals = Object.keys(buffer[p]).map(Number);
      if (!locals.length) continue;
      const gd = $(PLOT_INFO[p].div);
      const upd = {}, maxPoints = {};
      for (const local of locals) {
        const keep = keepPoints(gd, local, buffer[p][local]);
        for (const key of Object.keys(buffer[p][local])) {
          (upd[key] || (upd[key] = [])).push(buffer[p][local][key]);
          (maxPoints[key] || (maxPoints[key] = [])).push(keep);
        }
      }
      try {
        Plotly.extendTraces(gd, upd, locals, maxPoints);
      } catch (e) {
        console.warn("extendTraces", p, e);
      }
    }
  }

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

  function fmt(v) {
    return typeof v === "number" ? v.toPrecision(3) : String(v);
  }

  /* The ILC status (an `ilc` event, or the answer of GET /api/ilc, start or stop). Events and
     answers may cross: only a newer one (run, then seq) is shown, so the text never goes back,
     and a finished run's text is final. */
  app.ilcSeen = { run: -1, seq: -1 };
  function handleIlc(msg) {
    if (!msg || typeof msg !== "object") return;
    const run = Number(msg.run) || 0, seq = Number(msg.seq) || 0;
    const seen = app.ilcSeen;
    if (run < seen.run || (run === seen.run && seq < seen.seq)) return;
    app.ilcSeen = { run, seq };
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
    $("btn-ilc-start").disabled = running;
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

  /* <progress id=...>: value of max (a long computation's iterations / steps done); max null:
     keep the bar's own max. */
  function showProgress(id, value, max) {
    const bar = $(id);
    if (!bar) return;
    if (max != null) bar.max = max;
    bar.value = Math.min(Number(value) || 0, bar.max);
    bar.title = `${bar.value} of ${bar.max}`;
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

  // ------------------------------------------------------------------ RL (PROTOCOL.md "RL")

  const RL_FIELDS = [  // [element id, body key, parse]
    ["rl-task", "task", String], ["rl-algo", "algo", String],
    ["rl-num-envs", "num_envs", (v) => parseInt(v, 10)],
    ["rl-total-steps", "total_steps", (v) => parseInt(v, 10)],
    ["rl-learning-rate", "learning_rate", parseFloat], ["rl-n-steps", "n_steps", (v) => parseInt(v, 10)],
    ["rl-batch-size", "batch_size", (v) => parseInt(v, 10)], ["rl-gamma", "gamma", parseFloat],
  ];

  function rlTraces(curve) {
    const x = (curve && curve.steps) || [];
    const out = [];
    if (!x.length) return out;
    out.push({ type: "scatter", mode: "lines+markers", x, y: curve.return || [], name: "return", connectgaps: true });
    out.push({ type: "scatter", mode: "lines", x, y: curve.length || [], name: "length", yaxis: "y2", connectgaps: true });
    out.push({ type: "scatter", mode: "lines", x, y: curve.metric || [], name: "metric", yaxis: "y2", connectgaps: true, line: { dash: "dot" } });
    return out;
  }

  function handleRl(msg) {
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
    $("btn-rl-watch").disabled = !msg.has_checkpoint;
    if (hasPlotly() && rows) {
      Plotly.react($("plot-rl"), rlTraces(curve), {
        uirevision: "rl",
        margin: { l: 44, r: 40, t: 6, b: 28 },
        font: { size: 9 },
        xaxis: { title: { text: "env-steps", standoff: 2 } },
        yaxis: { title: { text: "return" } },
        yaxis2: { overlaying: "y", side: "right", title: { text: "length / metric" } },
        showlegend: true,
        legend: { x: 0, y: 1, font: { size: 9 } },
      }, { displaylogo: false, displayModeBar: false, responsive: true });
    }
  }

  async function loadRlTasks() {
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

  /* A download the server makes on request (exports): a POST (only the dashboard's own page
     may ask for work, dashboard/security.py), its 4xx reason shown instead of a saved error. */
  async function postDownload(path, fallback) {
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

  function bindRl() {
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
    on("btn-rl-ros", "click", () => postDownload("/api/rl/policy.ros.zip", "ROS package"));
  }

  // ------------------------------------------------------------------ WebSocket

  function connect() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const url = `${proto}//${location.host}/ws/stream`;
    let ws;
    try { ws = new WebSocket(url); } catch (e) { scheduleReconnect(); return; }
    app.ws = ws;
    if (app.frames === 0) setStatus("connecting");
    ws.onopen = () => {
      app.connected = true;
      app.backoff = 500;
      setStatus("connected", "idle");
    };
    ws.onmessage = (ev) => {
      let msg;
      try { msg = JSON.parse(ev.data); } catch (e) { return; }
      try {
        switch (msg.type) {
          case "figure": handleFigure(msg.figure, msg.state); break;
          case "extend":
            handleExtend(msg);
            if (window.asrRobot3d) window.asrRobot3d.handle(msg); // robot3d: geom poses
            if (window.asrDatasheet) window.asrDatasheet.extend(msg); // the operating point
            break;
          case "state": applyState(msg.state); break;
          case "ilc": handleIlc(msg); break;
          case "rl": handleRl(msg); break;
          case "interaction": if (window.asrInteraction) window.asrInteraction.handle(msg); break;
          case "error": showError(msg.message || JSON.stringify(msg)); break;
          default: break;
        }
      } catch (e) {
        console.error("message", msg.type, e);
      }
    };
    ws.onclose = () => {
      if (app.ws !== ws) return;
      app.connected = false;
      app.ws = null;
      scheduleReconnect();
    };
    ws.onerror = () => { /* onclose follows */ };
  }

  function scheduleReconnect() {
    const delay = app.backoff;
    app.backoff = Math.min(app.backoff * 2, 10000);
    setStatus(`reconnecting in ${(delay / 1000).toFixed(1)} s`, "reconnecting");
    setTimeout(connect, delay);
  }

  // status watchdog and fps
  setInterval(() => {
    const now = performance.now();
    while (app.frameTimes.length && now - app.frameTimes[0] > 2000) app.frameTimes.shift();
    stats.fps = Math.round((app.frameTimes.length / 2) * 10) / 10;
    $("fps").textContent = app.connected ? `${stats.fps} fps` : "";
    if (app.connected && now - app.lastFrameAt > 2000) {
      setStatus(app.state && app.state.paused ? "paused" : "waiting for frames", "idle");
    } else if (!app.connected && !app.ws && $("status").className.indexOf("reconnecting") < 0) {
      setStatus("disconnected");
    }
  }, 500);

  // ------------------------------------------------------------------ controls

  function on(id, ev, fn) { $(id).addEventListener(ev, fn); }

  function bindControls() {
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

    on("btn-ilc-start", "click", async () => {
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
    });
    on("btn-ilc-stop", "click", async () => {
      const r = await act("/api/ilc/stop", {}, { control: false });
      if (r && "running" in r) { handleIlc(r); if (r.running) pollIlc(); }
    });

    on("btn-save-workspace", "click", async () => {
      try {
        const ws = await api("GET", "/api/workspace");
        const blob = new Blob([JSON.stringify(ws, null, 2)], { type: "application/json" });
        const robot = (app.state && app.state.robot) || "asr";
        download(blob, `${robot}-workspace.json`);
      } catch (e) { showError(e.message); }
    });
    // exports: a workspace the ROS package cannot express (a time-varying reference: 422)
    // shows its reason instead of downloading an error
    on("btn-export-npz", "click", () => postDownload("/api/export.npz", "asr_history.npz"));
    on("btn-export-html", "click", () => postDownload("/api/export.html", "asr_history.html"));
    on("btn-export-ros", "click", () => postDownload("/api/export.ros.zip", "export to ROS"));
    on("workspace-file", "change", async (ev) => {
      const file = ev.target.files && ev.target.files[0];
      if (!file) return;
      let body;
      try { body = JSON.parse(await file.text()); } catch (e) { showError(`${file.name}: not JSON (${e.message})`); ev.target.value = ""; return; }
      await act("/api/workspace", body);
      ev.target.value = "";
    });
  }

  // ------------------------------------------------------------------ start

  async function start() {
    if (!hasPlotly()) showError("plotly.js did not load from /static/plotly.min.js");
    bindControls();
    bindRl();
    connect();
    try { applyState(await api("GET", "/api/state")); } catch (e) { /* the figure message carries it too */ }
    loadRobots();
    loadRlTasks();
    try {
      const st = await api("GET", "/api/ilc");
      if (st && Array.isArray(st.errors) && st.errors.length) handleIlc(st);
      if (st && st.running) pollIlc();
    } catch (e) { /* no ILC yet */ }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => { start(); });
  else start();
})();
