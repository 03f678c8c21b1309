/* asr dashboard: the robot in 3-D (robot3d; PROTOCOL.md "Robot view"), drawn with three.js
 * (Debian's libjs-three, served under /static/vendor/three/; view3d_scene.js, view3d_model.js).
 *
 * GET /api/scene gives each visible MuJoCo geom as a triangle mesh in its own frame once per
 * scene; every extend frame carries `scene_id` and `robot3d.poses[instance][geom]` = 12 numbers,
 * position (m) then the rotation matrix R row-major (a vertex v is drawn at pos + R v);
 * `robot3d.ghost` (every few frames) is where each spring would hold no torque, drawn
 * semi-transparent: the gap to the solid robot is the spring deflection; `robot3d.target`, while
 * a trained policy is watched, the task's joint-angle target (`target_q`), drawn as a purple
 * ghost and written in the panel. While the
 * interaction panel's session runs, its `interaction` messages (robot3d: the ur10's poses, f_e,
 * x_m) are drawn instead: the arm, the plate and the measured force as an arrow at the tool.
 *
 * Only the newest poses are kept; view3d_scene.js draws them on requestAnimationFrame. The
 * three.js modules are loaded with import() when the view starts, not imported statically: without
 * them (or without WebGL) the panel says what is missing and the rest of the page works on.
 * stream.js calls handleRobot3d(msg) for every extend message and handleInteractionView(msg) for
 * every interaction message; app.js calls startRobot3d once the page is parsed.
 *
 * The timeline (timeline.js): while the plots are frozen it calls replay(t) with the shared time
 * cursor; the main robot is then drawn at its pose at t (GET /api/plots/pose: the link angles
 * the run kept nearest t, and a free base's pose (the snake's) kept with them, at the archive's
 * resolution), the ghost and target hidden (they are the live state's), and the live frames
 * wait; live() draws the newest live poses again.
 *
 * #robot3d-caption names the simulation shown ("main simulation: <robot> (<variant>)" or
 * "interaction session: ur10 (<variant>)", the latter saying that the plots show the main one)
 * and its time (live, or the replayed step's time); it changes when the view's source or scene
 * changes, not before. The F/T readout (the interaction session's measured force) says its
 * source, simulated time and age, and is marked stale (class "stale", data-stale="1", the text
 * starting "stale") when its message is older than FT_STALE_MS or belongs to another session
 * than the scene drawn.
 *
 * #robot3d attributes: data-scene-id (the scene drawn), data-frames (draws), data-source
 * ("main" or "interaction"), data-time ("" live, else the replayed step's time, s), data-replay
 * ("1" while replaying). window.asrView3d (the View3D) and window.asrRobot3d.state: for tests
 * and the console; the page's modules do not read them.
 */
import { app, stats } from "./core.js";

const DIV = "robot3d";
const MISSING = "3-D view needs three.js: apt-get install libjs-three";
const SCENE_URL = { main: "/api/scene", interaction: "/api/scene/interaction" };
const FT_STALE_MS = 1000;      // an F/T readout older than this (wall time) is marked stale
const READOUT_POLL_MS = 250;   // the readout's age is shown this often
// the view draws at most at the plots' rate (issue 46: on a busy machine its draws took the
// plots' time): while the plots are live, no sooner than VIEW_MIN_MS (the plots' FLUSH_MS)
// after its last draw, or the plots' measured interval when they draw fewer updates/s
const VIEW_MIN_MS = 100;
const VIEW_MAX_MS = 1000;      // ... but at least once a second
const LIVE_MS = 2000;          // frames this recent: the plots are live

const st = { view: null, failed: false, want: { main: null, interaction: null },
             loading: { main: false, interaction: false }, pending: {}, interaction: false,
             lastTarget: null,  // the target angles (J,) rad drawn for instance 0
             names: { main: "", interaction: "" },  // what each scene shows (the caption)
             replay: null,      // {t, seq, shown: step time drawn} while the plots are frozen
             liveHeld: null,    // the newest live main frame held while replaying
             drawnAt: null,     // the animation frame time (ms) of the view's last draw (mayDraw)
             ft: null };        // {at (performance.now ms), t (s), sceneId, variant} of the F/T readout

function el() { return document.getElementById(DIV); }

async function loadScene(source, id) {
  st.loading[source] = true;
  try {
    const r = await fetch(SCENE_URL[source], { credentials: "same-origin" });
    if (!r.ok) throw new Error(`GET ${SCENE_URL[source]}: ${r.status}`);
    const s = await r.json();
    if (s.scene_id === id) {
      st.view.setScene(source, s, Math.max(1, s.n_instances || 1));
      st.want[source] = id;
      st.names[source] = sceneName(source, s);
      const p = st.pending[source];
      if (p) apply(source, p);
    }
  } catch (e) {
    console.warn("robot3d", e);
  } finally {
    st.loading[source] = false;
  }
}

/* robot3d part r3 of a message for source: poses into its model, its scene fetched first. */
function take(source, id, r3) {
  if (!st.view) { st.pending[source] = { id, r3 }; return; }
  const m = st.view.models[source];
  if (!m || m.sceneId !== id) {
    st.pending[source] = { id, r3 };
    if (!st.loading[source]) loadScene(source, id);
    return;
  }
  apply(source, { id, r3 });
}

function apply(source, { id, r3 }) {
  const m = st.view.models[source];
  if (!m || m.sceneId !== id) return;
  st.pending[source] = null;
  if (source === "main" && st.replay) {  // the plots are frozen: the past pose stays drawn
    st.liveHeld = { id, r3 };
    return;
  }
  st.view.poses(source, "solid", r3.poses);
  if (Array.isArray(r3.ghost)) {
    st.view.poses(source, "ghost", r3.ghost);
    if (Array.isArray(r3.target)) st.view.poses(source, "target", r3.target);
    else st.view.hide(source, "target");  // the watch ended
    st.lastTarget = Array.isArray(r3.target_q) ? r3.target_q[0] : null;
    if (source === "main" && st.view.source === "main") {
      st.view.note(st.lastTarget ? `target (purple): q = (${st.lastTarget.map((a) => a.toFixed(2)).join(", ")}) rad` : "");
    }
  }
  if (source === st.view.source) {
    el().dataset.sceneId = String(id);
    el().dataset.source = source;
    caption();
  }
}

/* What scene answer `s` of `source` shows: the robot (and variant) and its instances. */
function sceneName(source, s) {
  if (source === "interaction") return (s.labels && s.labels[0]) || "ur10";
  const state = app.state || {};
  const robot = state.robot ? `${state.robot}${state.variant ? ` (${state.variant})` : ""}` : "robot";
  const n = Math.max(1, s.n_instances || 1);
  return n > 1 ? `${robot}, ${n} instances` : robot;
}

/* The panel's caption: the simulation shown and its time. */
function caption() {
  const c = document.getElementById("robot3d-caption");
  if (!c || !st.view) return;
  const source = st.view.source;
  let text;
  if (source === "interaction") {
    const main = st.names.main ? ` (${st.names.main.split(",")[0]})` : "";
    const t = st.ft && st.ft.t != null ? `, t = ${Number(st.ft.t).toFixed(2)} s` : "";
    text = `interaction session: ${st.names.interaction || "ur10"}${t}; the plots show the main simulation${main}`;
  } else {
    const when = st.replay ? (st.replay.shown != null ? `t = ${st.replay.shown.toFixed(3)} s (paused view)` : "paused view") : "live";
    text = `main simulation: ${st.names.main || "robot"}, ${when}`;
  }
  if (c.textContent !== text) c.textContent = text;
  c.dataset.source = source;
}

// ------------------------------------------------------------------ the timeline

/* Draw the main robot at its pose at time t (s) of the run (the plots are frozen). Answers
   come in order of asking; an answer for another run or scene, or overtaken by a newer ask,
   is dropped. */
export async function replay(t) {
  if (st.failed || t == null || !Number.isFinite(t)) return;
  const seq = (st.replay ? st.replay.seq : 0) + 1;
  st.replay = Object.assign(st.replay || { shown: null }, { t, seq });
  if (el()) el().dataset.replay = "1";
  caption();
  let r;
  try {
    const resp = await fetch(`/api/plots/pose?t=${Math.max(0, t)}`, { credentials: "same-origin" });
    if (!resp.ok) throw new Error(`GET /api/plots/pose: ${resp.status}`);
    r = await resp.json();
  } catch (e) {
    console.warn("robot3d replay", e);
    return;
  }
  if (!st.replay || st.replay.seq !== seq || !st.view) return;
  if (app.runId != null && r.run_id !== app.runId) return;
  const m = st.view.models.main;
  if (!m || m.sceneId !== r.scene_id || r.t_sample == null) return;
  st.view.poses("main", "solid", r.robot3d.poses);
  st.view.hide("main", "ghost");   // the ghost and target are the live state's
  st.view.hide("main", "target");
  st.replay.shown = r.t_sample;
  el().dataset.time = String(r.t_sample);
  caption();
}

/* Back to the live poses (the plots are live again). */
export function live() {
  if (!st.replay) return;
  st.replay = null;
  const d = el();
  if (d) { d.dataset.time = ""; d.dataset.replay = "0"; }
  const held = st.liveHeld;
  st.liveHeld = null;
  if (held && st.view) apply("main", held);
  caption();
}

// ------------------------------------------------------------------ the F/T readout

/* The readout's text, age and staleness (every READOUT_POLL_MS and with each message). */
function readout() {
  if (!st.view || st.view.source !== "interaction" || !st.ft) return;
  const ageS = (performance.now() - st.ft.at) / 1000;
  const m = st.view.models.interaction;
  const other = !m || m.sceneId !== st.ft.sceneId;
  const stale = other || ageS * 1000 > FT_STALE_MS;
  const t = st.ft.t != null ? `t = ${Number(st.ft.t).toFixed(2)} s` : "t unknown";
  const text = `F/T: ${st.view.forceText || "no reading"} (ur10 interaction session, ${t}, received ${ageS.toFixed(1)} s ago)`;
  const why = other ? "another session's reading" : `no reading for ${ageS.toFixed(1)} s`;
  st.view.readout(stale ? `stale, ${why}: ${text}` : text, stale);
}

export function handleRobot3d(msg) {
  const r3 = msg && msg.robot3d;
  if (!r3 || !Array.isArray(r3.poses) || st.failed) return;
  take("main", msg.scene_id, r3);
}

/* An interaction message: while its session runs the view shows its ur10 and force. */
export function handleInteractionView(msg) {
  const r3 = msg && msg.robot3d;
  const running = !!(msg && msg.running && r3 && Array.isArray(r3.poses));
  if (st.failed) return;
  st.interaction = running;
  if (!st.view) return;
  const before = st.view.source;
  st.view.show(running ? "interaction" : "main");
  if (!running) {
    st.ft = null;
    if (before !== "main") { el().dataset.source = "main"; caption(); }
    return;
  }
  take("interaction", r3.scene_id, r3);
  st.view.setForce(msg.x_m, msg.f_e);
  st.ft = { at: performance.now(), t: msg.time, sceneId: r3.scene_id };
  readout();
  caption();  // its time
}

/* The view's gate (View3D.gate): whether it draws in the animation frame of time `time` (ms).
   Never in the frame of a plot redraw (one queued for it, or done in it: plots.js), and, while
   the plots are live, at most at their rate; a turn of the camera by the user (`turned`) is
   drawn at once, and anything while the plots are paused (the timeline's replay). */
function mayDraw(time, turned) {
  if (app.flushQueued || app.plotFrameTs === time) return false;
  const live = !app.view || app.view.mode === "live";
  if (turned || !live || performance.now() - app.lastFrameAt > LIVE_MS) return grant(time);
  const rate = stats.drawRate > 0 ? stats.drawRate : 1;
  const gap = Math.min(VIEW_MAX_MS, Math.max(VIEW_MIN_MS, 1000 / rate));
  return time - (st.drawnAt ?? -Infinity) >= gap - 1 ? grant(time) : false;
}

function grant(time) {
  st.drawnAt = time;
  return true;
}

function fail(text, e) {
  st.failed = true;
  console.warn("robot3d:", text, e);
  const d = el();
  if (!d) return;
  d.dataset.error = text;
  const p = document.createElement("p");
  p.className = "view3d-missing";
  p.textContent = text;
  d.appendChild(p);
}

export async function startRobot3d() {
  const d = el();
  if (!d) return;
  let View3D;
  try {
    ({ View3D } = await import("/static/view3d_scene.js"));
  } catch (e) {
    fail(MISSING, e);
    return;
  }
  try {
    st.view = new View3D(d);
  } catch (e) {  // three.js loaded, but the browser gave no WebGL context
    fail(`3-D view needs WebGL, which this browser did not provide (${e.message || e})`, e);
    return;
  }
  st.view.gate = mayDraw;
  window.asrView3d = st.view;
  const reset = document.getElementById("robot3d-reset");
  if (reset) reset.addEventListener("click", () => st.view.restart());
  for (const source of ["main", "interaction"]) {
    const p = st.pending[source];
    if (p) take(source, p.id, p.r3);
  }
  setInterval(readout, READOUT_POLL_MS);
}

window.asrRobot3d = { state: st };
