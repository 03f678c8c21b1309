/* asr dashboard: the robot in 3-D (robot3d; PROTOCOL.md "Robot view").
 *
 * GET /api/scene gives each visible MuJoCo geom as a triangle mesh in its own frame (vertices
 * x, y, z in m; triangles i, j, k) once per scene; every extend frame carries `scene_id` and
 * `robot3d.poses[instance][geom]` = 12 numbers, position (m) then the rotation matrix R
 * row-major, so a vertex v is drawn at pos + R v. `robot3d.ghost` (same shape, every few
 * frames) is where each spring would hold no torque: drawn as semi-transparent copies, the gap
 * between the solid robot and its ghost is the spring deflection.
 *
 * One plotly mesh3d trace per (instance, geom), solid first then ghosts; instances stand side by
 * side along y (one scene extent apart) and are tinted by instance. A frame only stores the
 * newest poses; they are drawn (one Plotly.restyle) at most every DRAW_MS. A frame naming
 * another scene_id refetches the scene. The app.js WebSocket handler calls
 * window.asrRobot3d.handle(msg) for every extend message.
 *
 * #robot3d attributes: data-scene-id (the scene drawn), data-frames (pose updates drawn),
 * data-traces (solid traces), data-ghosts (ghost traces).
 */
(function () {
  "use strict";

  const DIV = "robot3d";
  const DRAW_MS = 33;            // at most ~30 draws a second, the server's frame rate
  const GHOST_OPACITY = 0.25;
  const TINTS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];
  const TINT = 0.35;             // how much of the instance's colour goes into each geom's

  const view = { scene: null, sceneId: null, loading: false, poses: null, ghost: null,
                 ghostDirty: false, timer: null, drawn: 0, built: 0, offsets: [] };

  function el() { return document.getElementById(DIV); }

  function hex(c) { return [1, 3, 5].map((k) => parseInt(c.slice(k, k + 2), 16) / 255); }

  function colour(rgba, instance) {
    const tint = hex(TINTS[instance % TINTS.length]);
    const c = [0, 1, 2].map((k) => Math.round(255 * ((1 - TINT) * rgba[k] + TINT * tint[k])));
    return `rgb(${c[0]},${c[1]},${c[2]})`;
  }

  /* Vertices of geom g placed by pose p (12 numbers), shifted by dy along y (m). */
  function place(g, p, dy) {
    const n = g.x.length, x = new Array(n), y = new Array(n), z = new Array(n);
    for (let k = 0; k < n; k++) {
      const vx = g.x[k], vy = g.y[k], vz = g.z[k];
      x[k] = p[0] + p[3] * vx + p[4] * vy + p[5] * vz;
      y[k] = p[1] + p[6] * vx + p[7] * vy + p[8] * vz + dy;
      z[k] = p[2] + p[9] * vx + p[10] * vy + p[11] * vz;
    }
    return [x, y, z];
  }

  /* [min, max] per axis of every placed vertex of the first instance and the last. */
  function bounds(poses) {
    const lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
    const geoms = view.scene.geoms;
    [0, poses.length - 1].forEach((i) => {
      geoms.forEach((g, gi) => {
        const xyz = place(g, poses[i][gi], view.offsets[i]);
        for (let a = 0; a < 3; a++) {
          for (const v of xyz[a]) { if (v < lo[a]) lo[a] = v; if (v > hi[a]) hi[a] = v; }
        }
      });
    });
    return [lo, hi];
  }

  function layout(poses) {
    const [lo, hi] = bounds(poses);
    const half = 0.55 * Math.max(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], 1e-3);
    const axis = (a, name) => ({ title: { text: `${name} (m)` }, range: [(lo[a] + hi[a]) / 2 - half, (lo[a] + hi[a]) / 2 + half],
                                 autorange: false, showspikes: false });
    return {
      margin: { l: 0, r: 0, t: 24, b: 0 }, showlegend: false, uirevision: `scene-${view.sceneId}`,
      title: { text: "robot (ghost: springs relaxed)", font: { size: 12 }, x: 0.02 },
      scene: { aspectmode: "cube", xaxis: axis(0, "x"), yaxis: axis(1, "y"), zaxis: axis(2, "z"),
               camera: { eye: { x: 0.2, y: -2.0, z: 0.6 } } },
    };
  }

  function traces(poses, ghost) {
    const out = [];
    const add = (set, kind, opacity) => set.forEach((inst, i) => view.scene.geoms.forEach((g, gi) => {
      const [x, y, z] = place(g, inst[gi], view.offsets[i]);
      out.push({ type: "mesh3d", x, y, z, i: g.i, j: g.j, k: g.k, color: colour(g.rgba, i),
                 opacity, flatshading: true, hoverinfo: "name", name: `${g.name} #${i}${kind === "ghost" ? " (relaxed)" : ""}`,
                 meta: { robot3d: kind, instance: i, geom: gi } });
    }));
    add(poses, "solid", 1.0);
    add(ghost || poses, "ghost", GHOST_OPACITY);
    return out;
  }

  /* The first frame of a scene: the whole figure (Plotly.react). */
  function build(poses) {
    const n = poses.length;
    view.offsets = Array.from({ length: n }, (_, i) => 1.2 * view.scene.extent * (i - (n - 1) / 2));
    const gd = el();
    Plotly.react(gd, traces(poses, view.ghost), layout(poses), { displaylogo: false, responsive: true });
    gd.dataset.sceneId = String(view.sceneId);
    gd.dataset.traces = String(n * view.scene.geoms.length);
    gd.dataset.ghosts = String(n * view.scene.geoms.length);
    view.built = n;
  }

  /* Later frames: only the vertices move (one Plotly.restyle of x, y, z). */
  function update(poses) {
    const G = view.scene.geoms.length, x = [], y = [], z = [], idx = [];
    const put = (set, base) => set.forEach((inst, i) => view.scene.geoms.forEach((g, gi) => {
      const xyz = place(g, inst[gi], view.offsets[i]);
      x.push(xyz[0]); y.push(xyz[1]); z.push(xyz[2]); idx.push(base + i * G + gi);
    }));
    put(poses, 0);
    if (view.ghostDirty && view.ghost) put(view.ghost, poses.length * G);
    view.ghostDirty = false;
    Plotly.restyle(el(), { x, y, z }, idx);
  }

  function draw() {
    view.timer = null;
    const poses = view.poses;
    if (!poses || !view.scene || typeof Plotly === "undefined" || !el()) return;
    if (poses.length !== view.built) {  // the scene's first frame
      if (view.ghost && view.ghost.length !== poses.length) view.ghost = null;
      build(poses);
      view.ghostDirty = false;
    } else {
      update(poses);
    }
    view.drawn += 1;
    el().dataset.frames = String(view.drawn);
  }

  async function loadScene() {
    view.loading = true;
    try {
      const r = await fetch("/api/scene", { credentials: "same-origin" });
      if (!r.ok) throw new Error(`GET /api/scene: ${r.status}`);
      const s = await r.json();
      view.scene = s;
      view.sceneId = s.scene_id;
      view.poses = null;
      view.ghost = null;
      view.built = 0;
    } catch (e) {
      console.warn("robot3d", e);
    } finally {
      view.loading = false;
    }
  }

  function handle(msg) {
    const r3 = msg && msg.robot3d;
    if (!r3 || !Array.isArray(r3.poses)) return;
    if (msg.scene_id !== view.sceneId) {  // a new robot or compare view: its scene first
      if (!view.loading) loadScene();
      return;
    }
    view.poses = r3.poses;
    if (Array.isArray(r3.ghost)) { view.ghost = r3.ghost; view.ghostDirty = true; }
    if (!view.timer) view.timer = setTimeout(() => requestAnimationFrame(draw), DRAW_MS);
  }

  window.asrRobot3d = { handle, view };
})();
