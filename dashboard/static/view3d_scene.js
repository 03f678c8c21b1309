/* asr dashboard 3-D view: the three.js renderer, camera and overlays (robot3d; PROTOCOL.md
 * "Robot view"). One Model (view3d_model.js) is shown at a time: the main robot, or the
 * interaction panel's ur10 while its session runs.
 *
 * Camera: fitted to the robot's bounds (all instances) when a scene is first drawn and, until
 * the user turns the view (OrbitControls), eased towards the bounds of the last FIT_FRAMES
 * frames, so the robot fills the panel as it moves. Once the user has turned it, the view is
 * theirs ("reset view" or a new scene gives it back), but it still follows a base that moves
 * away (the snake crawls): its target shifts with the robot's horizontal centre beyond a
 * dead band. Drawing: on requestAnimationFrame, only when new poses arrived or the camera
 * moved, so a burst of frames costs one draw, and only when `gate(time, turned)` allows it
 * (robot3d.js sets it: at most at the plots' rate, never in a plot redraw's animation frame;
 * `turned`: the user turned the camera since the last draw, drawn at once).
 */
import * as THREE from "/static/vendor/three/build/three.module.js";
import { OrbitControls } from "/static/vendor/three/examples/jsm/controls/OrbitControls.js";
import { Model } from "./view3d_model.js";

const BACKGROUND = 0xf4f6f9;
const FOV = 35;               // deg, vertical
const FIT_MARGIN = 1.12;      // the bounds' projection fills 1 / FIT_MARGIN of the panel
const FIT_FRAMES = 60;        // frames of bounds the automatic camera frames (about 2 s)
const EASE = 0.15;            // share of the way to the fitted camera per draw
const FOLLOW_BAND = 0.25;     // of the robot's size: the base moves this far before following
const GRID_SCALE = 2.0;       // grid side in robot sizes: the floor never dominates
const ARROW_M_PER_N = 0.01;   // force arrow length per newton (m)
const ARROW_MAX_M = 0.5;
const ARROW_MIN_N = 0.5;      // below: no arrow

/* The F/T arrow: a unit-long shaft and head along +y (scaled and turned by setForce), drawn over
 * the robot (no depth test): the tool and sensor would hide it. */
function forceArrow() {
  const mat = new THREE.MeshBasicMaterial({ color: 0xd62728, depthTest: false, transparent: true });
  const shaft = new THREE.Mesh(new THREE.CylinderBufferGeometry(0.03, 0.03, 0.75, 12), mat);
  shaft.position.y = 0.375;
  const head = new THREE.Mesh(new THREE.ConeBufferGeometry(0.08, 0.25, 16), mat);
  head.position.y = 0.875;
  const arrow = new THREE.Group();
  arrow.add(shaft, head);
  arrow.renderOrder = shaft.renderOrder = head.renderOrder = 10;
  arrow.visible = false;
  arrow.userData = { direction: null, length: 0 };
  return arrow;
}

export class View3D {
  constructor(container) {
    this.el = container;
    this.renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
    this.renderer.setPixelRatio(Math.min(window.devicePixelRatio || 1, 2));
    this.renderer.setClearColor(BACKGROUND);
    this.renderer.domElement.className = "view3d-canvas";
    container.prepend(this.renderer.domElement);
    this.scene = new THREE.Scene();
    this.scene.add(new THREE.HemisphereLight(0xffffff, 0x777c88, 0.85));
    const sun = new THREE.DirectionalLight(0xffffff, 0.65);
    sun.position.set(1, -1.5, 2.5);
    this.scene.add(sun);
    this.camera = new THREE.PerspectiveCamera(FOV, 1, 0.005, 500);
    this.camera.up.set(0, 0, 1);
    this.controls = new OrbitControls(this.camera, this.renderer.domElement);
    this.controls.addEventListener("start", () => { this.userCamera = true; });
    this.controls.addEventListener("change", () => { this.dirty = true; this.turned = true; });
    this.arrow = forceArrow();
    this.scene.add(this.arrow);
    this.force = null;          // {origin, f} of the arrow drawn
    this.forceText = "";        // its value as text (the F/T readout's)
    this.models = {};           // source -> Model
    this.source = "main";
    this.grid = null;
    this.history = [];          // the last FIT_FRAMES bounds (Box3)
    this.userCamera = false;
    this.fitted = false;
    this.dirty = true;
    this.draws = 0;
    this.turned = false;        // the user turned the camera since the last draw
    this.gate = null;           // (time, turned) => whether to draw in this animation frame
    this.labels = [];
    this.info = document.createElement("div");
    this.info.className = "view3d-info";
    container.appendChild(this.info);
    new ResizeObserver(() => this.resize()).observe(container);
    this.resize();
    const loop = (time) => {
      if (this.dirty && (!this.gate || this.gate(time, this.turned))) this.frame();
      requestAnimationFrame(loop);
    };
    requestAnimationFrame(loop);
  }

  get model() { return this.models[this.source] || null; }

  resize() {
    const w = Math.max(1, this.el.clientWidth), h = Math.max(1, this.el.clientHeight);
    this.renderer.setSize(w, h);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
    this.dirty = true;
  }

  /* A new scene for `source` ("main" or "interaction"): its meshes replace the old ones. */
  setScene(source, scene, n) {
    const old = this.models[source];
    if (old) { this.scene.remove(old.root); old.dispose(); }
    const model = new Model(scene, n);
    this.models[source] = model;
    this.scene.add(model.root);
    if (source === this.source) this.restart();
    model.root.visible = source === this.source;
    return model;
  }

  /* Show the model of `source`; its camera fitted anew. */
  show(source) {
    if (source === this.source) return;
    this.source = source;
    for (const [s, m] of Object.entries(this.models)) m.root.visible = s === source;
    if (source !== "interaction") this.setForce(null);
    this.restart();
  }

  /* The camera back to automatic framing (a new scene or "reset view"). */
  restart() {
    this.userCamera = false;
    this.fitted = false;
    this.history = [];
    this.labelsFor(this.model);
    this.dirty = true;
  }

  poses(source, kind, poses) {
    const m = this.models[source];
    if (!m) return;
    m.set(kind, poses);
    if (source === this.source) this.dirty = true;
  }

  hide(source, kind) {
    const m = this.models[source];
    if (m && m.shown(kind)) { m.hide(kind); this.dirty = true; }
  }

  /* The F/T arrow: f (3,) N at origin (3,) m, both in the world frame; null hides it. */
  setForce(origin, f) {
    this.force = origin && f ? { origin, f } : null;
    const ok = Boolean(this.force && f.every(Number.isFinite) && origin.every(Number.isFinite));
    const mag = ok ? Math.hypot(f[0], f[1], f[2]) : 0;
    this.arrow.visible = ok && mag >= ARROW_MIN_N;
    if (this.arrow.visible) {
      const len = Math.min(ARROW_MAX_M, ARROW_M_PER_N * mag);
      this.arrow.position.set(origin[0], origin[1], origin[2]);
      this.arrow.quaternion.setFromUnitVectors(new THREE.Vector3(0, 1, 0),
                                               new THREE.Vector3(f[0], f[1], f[2]).divideScalar(mag));
      this.arrow.scale.setScalar(len);
      this.arrow.userData.direction = f.map((v) => v / mag);
      this.arrow.userData.length = len;
    }
    // the readout's value; robot3d.js writes it with its source and age (readout)
    this.forceText = ok ? `|f| = ${mag.toFixed(1)} N (${f.map((v) => v.toFixed(1)).join(", ")})` : "";
    if (!this.force) this.readout("", false);
    this.dirty = true;
  }

  /* The F/T readout over the panel's bottom left corner: `text`, marked stale (class "stale",
   * data-stale "1"; the arrow faded) when `stale`. */
  readout(text, stale) {
    if (this.info.textContent !== text) this.info.textContent = text;
    this.info.classList.toggle("stale", !!stale);
    this.info.dataset.stale = stale ? "1" : "0";
    const opacity = stale ? 0.35 : 1;
    for (const part of this.arrow.children) {
      if (part.material.opacity !== opacity) { part.material.opacity = opacity; this.dirty = true; }
    }
  }

  /* A line of text over the panel's bottom left corner ("" clears it). */
  note(text) {
    if (this.info.textContent !== text) this.info.textContent = text;
  }

  labelsFor(model) {
    for (const l of this.labels) l.remove();
    this.labels = [];
    if (!model || model.n < 2) return;
    this.labels = model.labels.map((text) => {
      const d = document.createElement("div");
      d.className = "view3d-label";
      d.textContent = text;
      this.el.appendChild(d);
      return d;
    });
  }

  frame() {
    const model = this.model;
    if (!this.dirty || !model || !model.laidOut) return;
    this.dirty = false;
    const box = model.allBounds(true);
    if (box.isEmpty()) return;
    this.history.push(box.clone());
    if (this.history.length > FIT_FRAMES) this.history.shift();
    if (!this.userCamera) this.aim(!this.fitted);
    else this.follow(box);
    this.fitted = true;
    this.floor(model, box);
    this.controls.update();
    this.turned = false;
    this.renderer.render(this.scene, this.camera);
    this.placeLabels(model);
    this.draws += 1;
    this.el.dataset.frames = String(this.draws);
  }

  /* The camera towards the one that frames the recent bounds (at once when `jump`). */
  aim(jump) {
    const box = new THREE.Box3();
    for (const b of this.history) box.union(b);
    const model = this.model, a = model.axis === 1 ? 1 : 0;
    // a tall robot seen across the layout axis (instance 0 on the left), a flat one across its
    // length from above (its instances one behind the other): from -y or from +x
    const side = model.tall ? 1 - a : a;
    const h = model.tall ? 0.45 : 1.1;
    const dir = side === 1 ? new THREE.Vector3(0.3, -1, h) : new THREE.Vector3(1, 0.3, h);
    dir.normalize();
    const centre = box.getCenter(new THREE.Vector3());
    const dist = this.fitDistance(box, centre, dir);
    const eye = centre.clone().addScaledVector(dir, dist);
    const k = jump ? 1 : EASE;
    this.controls.target.lerp(centre, k);
    this.camera.position.lerp(eye, k);
    if (!jump && this.camera.position.distanceTo(eye) > 1e-4 * dist) this.dirty = true;
  }

  /* Distance along dir from centre at which every corner of box is inside the view. */
  fitDistance(box, centre, dir) {
    const vt = Math.tan((FOV / 2) * Math.PI / 180) / FIT_MARGIN;
    const ht = vt * this.camera.aspect;
    const right = new THREE.Vector3().crossVectors(dir, new THREE.Vector3(0, 0, 1)).normalize().negate();
    const up = new THREE.Vector3().crossVectors(right, dir).negate().normalize();
    let d = 0.05;
    for (let c = 0; c < 8; c++) {
      const p = new THREE.Vector3(c & 1 ? box.max.x : box.min.x, c & 2 ? box.max.y : box.min.y,
                                  c & 4 ? box.max.z : box.min.z).sub(centre);
      const depth = p.dot(dir);  // towards the camera
      d = Math.max(d, Math.abs(p.dot(right)) / ht + depth, Math.abs(p.dot(up)) / vt + depth);
    }
    return d;
  }

  /* The user's camera keeps the robot: target and eye shift with its horizontal centre once
   * it has left a dead band around the target. */
  follow(box) {
    const c = box.getCenter(new THREE.Vector3()), t = this.controls.target;
    const size = box.getSize(new THREE.Vector3()).length();
    const dx = c.x - t.x, dy = c.y - t.y;
    if (Math.hypot(dx, dy) <= FOLLOW_BAND * size) return;
    const shift = new THREE.Vector3(dx, dy, 0).multiplyScalar(EASE);
    t.add(shift);
    this.camera.position.add(shift);
    this.dirty = true;
  }

  /* A grid under the robot, GRID_SCALE robot sizes wide, at the floor's height. */
  floor(model, box) {
    const size = box.getSize(new THREE.Vector3());
    const side = GRID_SCALE * Math.max(size.x, size.y, 0.2 * size.z, 0.05);
    if (!this.grid || Math.abs(this.grid.userData.side - side) > 0.25 * side) {
      if (this.grid) { this.scene.remove(this.grid); this.grid.geometry.dispose(); }
      this.grid = new THREE.GridHelper(side, 10, 0x9aa3b0, 0xd0d5dd);
      this.grid.rotation.x = Math.PI / 2;  // three's grid lies in x-z; the robots' floor is x-y
      this.grid.userData.side = side;
      this.scene.add(this.grid);
    }
    const c = box.getCenter(new THREE.Vector3());
    this.grid.position.set(c.x, c.y, model.floorZ == null ? box.min.z : Math.min(model.floorZ, box.min.z));
  }

  placeLabels(model) {
    if (!this.labels.length) return;
    const w = this.el.clientWidth, h = this.el.clientHeight;
    this.labels.forEach((d, i) => {
      const b = model.bounds(i);
      if (b.isEmpty()) return;
      const p = new THREE.Vector3((b.min.x + b.max.x) / 2, (b.min.y + b.max.y) / 2, b.max.z).project(this.camera);
      d.style.left = `${((p.x + 1) / 2 * w).toFixed(0)}px`;
      d.style.top = `${((1 - p.y) / 2 * h).toFixed(0)}px`;
    });
  }

  /* The share (0..1) of the panel's width and height that the robot's bounds cover on screen. */
  projectedShare() {
    const model = this.model;
    if (!model) return [0, 0];
    const box = model.allBounds(), lo = [Infinity, Infinity], hi = [-Infinity, -Infinity];
    for (let c = 0; c < 8; c++) {
      const p = new THREE.Vector3(c & 1 ? box.max.x : box.min.x, c & 2 ? box.max.y : box.min.y,
                                  c & 4 ? box.max.z : box.min.z).project(this.camera);
      lo[0] = Math.min(lo[0], p.x); hi[0] = Math.max(hi[0], p.x);
      lo[1] = Math.min(lo[1], p.y); hi[1] = Math.max(hi[1], p.y);
    }
    return [0, 1].map((k) => Math.max(0, Math.min(1, hi[k]) - Math.max(-1, lo[k])) / 2);
  }
}
