/* asr dashboard 3-D view: one robot scene as three.js meshes (robot3d; PROTOCOL.md "Robot
 * view"). Built once per scene_id from GET /api/scene (or /api/scene/interaction): each geom's
 * triangle mesh becomes one BufferGeometry, shared by every instance and by the solid, ghost
 * (springs relaxed) and target (the watched task's joint targets, purple) copies. A frame only sets each
 * mesh's 4x4 matrix from its 12-number pose (position m, rotation row-major), so the vertices go
 * to the GPU once.
 *
 * Instances stand side by side, one robot extent apart, along the layout axis: for a tall robot
 * the horizontal axis across its view_axis (a planar arm is seen along its joints' axis, at the
 * plane it moves in) or else its longer side, seen across it; for a flat one (a crawling snake)
 * its shorter side, seen from above. Chosen from the first frame's bounds. Floor planes (scene geom `ground`) are not drawn: the view draws a small grid.
 */
import * as THREE from "/static/vendor/three/build/three.module.js";

const TINTS = [0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2, 0x7f7f7f];
const TINT = 0.3;            // share of the instance's colour in each geom's
const GHOST_OPACITY = 0.25;
const TARGET_COLOUR = 0x9c27b0;  // purple: apart from the instance tints and the robots' own
const TARGET_OPACITY = 0.35;
const SPACING = 1.25;        // instances' distance in robot extents
const TALL = 0.3;            // height / horizontal size above which a robot counts as tall
export const KINDS = ["solid", "ghost", "target"];

function geometryOf(g) {
  const n = g.x.length, pos = new Float32Array(3 * n), idx = [];
  for (let k = 0; k < n; k++) { pos[3 * k] = g.x[k]; pos[3 * k + 1] = g.y[k]; pos[3 * k + 2] = g.z[k]; }
  for (let t = 0; t < g.i.length; t++) idx.push(g.i[t], g.j[t], g.k[t]);
  const geo = new THREE.BufferGeometry();
  geo.setAttribute("position", new THREE.BufferAttribute(pos, 3));
  geo.setIndex(idx);
  geo.computeVertexNormals();
  geo.computeBoundingBox();
  return geo;
}

function tinted(rgba, instance) {
  const c = new THREE.Color(rgba[0], rgba[1], rgba[2]);
  return c.lerp(new THREE.Color(TINTS[instance % TINTS.length]), TINT);
}

/* mesh.matrix from a 12-number pose: a vertex v is drawn at p + R v. */
export function setPose(mesh, p) {
  mesh.matrix.set(p[3], p[4], p[5], p[0], p[6], p[7], p[8], p[1], p[9], p[10], p[11], p[2], 0, 0, 0, 1);
  mesh.matrixWorldNeedsUpdate = true;
}

export class Model {
  /* scene: the /api/scene answer; n: instances drawn. */
  constructor(scene, n) {
    this.scene = scene;
    this.sceneId = scene.scene_id;
    this.n = n;
    this.labels = Array.from({ length: n }, (_, i) => (scene.labels && scene.labels[i]) || `#${i}`);
    this.root = new THREE.Group();
    this.drawn = scene.geoms.map((g, gi) => (g.ground ? -1 : gi)).filter((gi) => gi >= 0);
    this.ground = scene.geoms.findIndex((g) => g.ground);
    this.geos = {};
    for (const gi of this.drawn) this.geos[gi] = geometryOf(scene.geoms[gi]);
    this.instances = [];
    this.laidOut = false;
    this.floorZ = null;
    this.tall = true;
    for (let i = 0; i < n; i++) this.instances.push(this.instance(i));
  }

  instance(i) {
    const group = new THREE.Group();
    const ghostMat = new THREE.MeshLambertMaterial({ color: TINTS[i % TINTS.length], transparent: true,
                                                      opacity: GHOST_OPACITY, depthWrite: false });
    const targetMat = new THREE.MeshLambertMaterial({ color: TARGET_COLOUR, transparent: true,
                                                       opacity: TARGET_OPACITY, depthWrite: false });
    const sets = {};
    for (const kind of KINDS) {
      sets[kind] = this.drawn.map((gi) => {
        const mat = kind === "solid"
          ? new THREE.MeshLambertMaterial({ color: tinted(this.scene.geoms[gi].rgba, i) })
          : (kind === "ghost" ? ghostMat : targetMat);
        const m = new THREE.Mesh(this.geos[gi], mat);
        m.matrixAutoUpdate = false;
        m.visible = false;
        m.userData = { kind, instance: i, geom: this.scene.geoms[gi].name };
        if (kind !== "solid") m.renderOrder = 1;  // transparent copies after the solid robot
        group.add(m);
        return m;
      });
    }
    this.root.add(group);
    return { group, sets };
  }

  /* Poses (n, G, 12) of one kind; the first solid poses also lay the instances out. */
  set(kind, poses) {
    if (!Array.isArray(poses)) return;
    if (kind === "solid" && !this.laidOut) this.layout(poses);
    const m = Math.min(this.n, poses.length);
    for (let i = 0; i < m; i++) {
      const meshes = this.instances[i].sets[kind], inst = poses[i];
      this.drawn.forEach((gi, k) => {
        // a ghost or target copy of a geom fixed to the world would only tint the solid one
        if (!inst[gi] || (kind !== "solid" && this.scene.geoms[gi].body === 0)) return;
        setPose(meshes[k], inst[gi]);
        meshes[k].visible = true;
      });
    }
  }

  hide(kind) {
    for (const inst of this.instances) for (const m of inst.sets[kind]) m.visible = false;
  }

  shown(kind) {
    return this.instances.reduce((a, inst) => a + inst.sets[kind].filter((m) => m.visible).length, 0);
  }

  /* Side by side along x (tall robot) or y (flat): SPACING robot extents apart, centred. */
  layout(poses) {
    const box = new THREE.Box3(), corner = new THREE.Box3(), mat = new THREE.Matrix4();
    this.drawn.forEach((gi) => {
      const p = poses[0][gi];
      if (!p) return;
      mat.set(p[3], p[4], p[5], p[0], p[6], p[7], p[8], p[1], p[9], p[10], p[11], p[2], 0, 0, 0, 1);
      box.union(corner.copy(this.geos[gi].boundingBox).applyMatrix4(mat));
    });
    if (box.isEmpty()) return;
    const size = box.getSize(new THREE.Vector3());
    this.tall = size.z > TALL * Math.max(size.x, size.y);
    this.axis = this.tall ? (size.x >= size.y ? 0 : 1) : (size.x >= size.y ? 1 : 0);
    const v = this.scene.view_axis || [0, 0, 0];  // a planar robot's: seen along it
    if (this.tall && Math.hypot(v[0], v[1]) > 0.7) this.axis = Math.abs(v[0]) > Math.abs(v[1]) ? 1 : 0;
    const step = SPACING * Math.max(size.x, size.y, size.z, 1e-3);
    this.instances.forEach((inst, i) => {
      const d = step * (i - (this.n - 1) / 2);
      inst.group.position.set(this.axis === 0 ? d : 0, this.axis === 1 ? d : 0, 0);
      inst.group.updateMatrixWorld(true);
    });
    const g = this.ground >= 0 ? poses[0][this.ground] : null;
    this.floorZ = g ? g[2] : box.min.z;
    this.laidOut = true;
  }

  /* World bounds (THREE.Box3) of instance i's solid meshes and, with `target`, of its target
   * copies shown (the camera frames both). */
  bounds(i, target = false) {
    const box = new THREE.Box3(), b = new THREE.Box3();
    const inst = this.instances[i];
    inst.group.updateMatrixWorld(true);
    for (const m of target ? inst.sets.solid.concat(inst.sets.target) : inst.sets.solid) {
      if (!m.visible) continue;
      box.union(b.copy(m.geometry.boundingBox).applyMatrix4(m.matrixWorld));
    }
    return box;
  }

  allBounds(target = false) {
    const box = new THREE.Box3();
    for (let i = 0; i < this.n; i++) box.union(this.bounds(i, target));
    return box;
  }

  dispose() {
    for (const geo of Object.values(this.geos)) geo.dispose();
    this.root.traverse((o) => { if (o.material) o.material.dispose(); });
  }
}
