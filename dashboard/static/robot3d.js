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
 * #robot3d attributes: data-scene-id (the scene drawn), data-frames (draws), data-source
 * ("main" or "interaction"). window.asrView3d (the View3D) and window.asrRobot3d.state: for tests
 * and the console; the page's modules do not read them.
 */

const DIV = "robot3d";
const MISSING = "3-D view needs three.js: apt-get install libjs-three";
const SCENE_URL = { main: "/api/scene", interaction: "/api/scene/interaction" };

const st = { view: null, failed: false, want: { main: null, interaction: null },
             loading: { main: false, interaction: false }, pending: {}, interaction: false,
             lastTarget: null };  // the target angles (J,) rad drawn for instance 0

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
  }
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
  st.view.show(running ? "interaction" : "main");
  if (!running) return;
  take("interaction", r3.scene_id, r3);
  st.view.setForce(msg.x_m, msg.f_e);
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
  window.asrView3d = st.view;
  const reset = document.getElementById("robot3d-reset");
  if (reset) reset.addEventListener("click", () => st.view.restart());
  for (const source of ["main", "interaction"]) {
    const p = st.pending[source];
    if (p) take(source, p.id, p.r3);
  }
}

window.asrRobot3d = { state: st };
