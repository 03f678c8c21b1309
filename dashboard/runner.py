"""The simulation runner: one asr.Sim stepped in its own thread, frames published to subscribers.

Threads: the runner thread owns the Sim; REST and WebSocket handlers never touch it, they queue
commands (`submit`) that the runner applies before its next rollout and whose result (or
exception) comes back through a concurrent Future. Frames go to every subscriber through its own
bounded buffer filled on the subscriber's event loop with `loop.call_soon_threadsafe`; a slow
client loses old `extend` frames first, and waiting `figure` / `state` messages are replaced by
newer ones (dashboard/subscribers.py). Reference generators and stiffness presets are in
dashboard/references.py. The ILC runs on its own Sim in a worker thread (asr's C core
releases the GIL). Robots are loaded by name only (asr.load_robot(..., allow_path=False)).
"""
import collections
import concurrent.futures
import contextlib
import copy
import dataclasses
import io
import itertools
import json
import math
import queue
import threading
import time

import numpy as np

import asr
from asr.references import min_jerk
from asr.robot import load_robot, robot_names, variant_names
from dashboard import figure as fig
from dashboard import ilc as ilc_rules
from dashboard.errors import public_message, short
from dashboard.figure import FRAME_FIELDS, SERIES  # noqa: F401 - part of this module's API
from dashboard.commands import apply_pending, fail_pending
from dashboard.pacing import Pacer
from dashboard.presets import choose_presets
from dashboard.references import (ControlError, check_preset, first_view_motion, preset_spec,
                                  reference_values, sim_references)
from dashboard.scene import SceneStream  # robot3d: poses in every frame
from dashboard.subscribers import Subscriber, publish_threadsafe


RECORD = ("q", "tau_joint", "stiffness", "th1", "th2", "clamped")


class NotFound(LookupError):
    """Unknown robot or variant (-> 404)."""


class Busy(RuntimeError):
    """The ILC is already running (-> 409)."""


def list_robots():
    """[{name, variants, joints, default_variant, description}] of every robot folder
    (asr.robot_names()). A robot whose robot.toml or default variant does not load (its MJCF
    compiled too) is listed as {name, variants: [], joints: [], error}; a good robot's variants
    that do not load are left out of its variants and named in variant_errors. Errors name the
    robot, never a server path."""
    out = []
    for name in robot_names():
        try:
            out.append(_robot_entry(name))
        except Exception as exc:  # noqa: BLE001 - a broken robot folder is listed with its error
            out.append({"name": name, "variants": [], "joints": [],
                        "error": _robot_error(name, exc)})
    return out


def _robot_entry(name):
    default = load_robot(name, allow_path=False)
    default.mj_model()
    names = variant_names(name, allow_path=False)
    variants, broken = [], {}
    for variant in names:
        try:
            if variant != default.variant:
                load_robot(name, variant, allow_path=False).mj_model()
            variants.append(variant)
        except Exception as exc:  # noqa: BLE001 - listed with its error
            broken[variant] = _robot_error(name, exc)
    entry = {"name": name, "variants": variants, "default_variant": default.variant,
             "description": default.description,
             "joints": [{"name": j.name, "model": j.model, "mode": j.mode,
                         "preset_range": preset_spec(j.model)} for j in default.joints]}
    if broken:
        entry["variant_errors"] = broken
    return entry


def _robot_error(name, exc):
    """The error of a robot that does not load, naming the robot (not its folder's path)."""
    text = public_message(exc)
    return text if text.startswith(f"robot {name!r}") else public_message(f"robot {name!r}: "
                                                                             f"{text}")


def _num(x):
    """JSON-safe float (NaN/inf -> None)."""
    x = float(x)
    return x if math.isfinite(x) else None


def _compact(values):
    """A parameter's (N,) values as one float when they are all equal."""
    values = np.asarray(values, dtype=float)
    return float(values.flat[0]) if np.all(values == values.flat[0]) else values


_dumps = fig.dumps


def _motor_count(model):
    """Motors of a joint model (0 rigid, 1 single-motor SEA, 2 antagonistic); 2 if unknown, so
    that nothing is hidden by mistake."""
    spec = asr.models().get(model)
    return int(spec.nmotor) if spec is not None else 2


class SimRunner:
    """Owns the live asr.Sim and its configuration; see the module doc and PROTOCOL.md."""

    def __init__(self, settings):
        self.settings = settings
        self._commands = queue.Queue()
        self._lock = threading.RLock()        # configuration, history, subscribers
        self._stop = threading.Event()
        self._thread = None
        self._subscribers = set()
        self._run_ids = itertools.count(1)
        self._ilc = {"running": False, "stopping": False, "iteration": 0, "errors": [],
                     "message": None, "verdict": None, "seq": 0, "run": 0, "config": None}
        self._ilc_result = None
        self._ilc_thread = None
        self._ilc_stop = threading.Event()
        self._watch = None      # a dashboard.rl.PolicyWatcher choosing the references, or None
        self._watch_state = None
        self.frames = 0
        self.error = None
        self._pacer = Pacer()
        self._skeletons = fig.SkeletonCache()
        self._first_views = fig.FirstViews(self._take_first_view, settings)
        self._scene_ids = itertools.count(1)  # robot3d: a new scene with every Sim
        self._load(settings.robot, settings.variant)
        self._start_first_view_motion()

    # ------------------------------------------------------------ lifecycle

    def start(self):
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="asr-dashboard-sim",
                                            daemon=True)
            self._thread.start()
            self._first_views.start()

    def stop(self, timeout=5.0):
        self._stop.set()
        self._ilc_stop.set()
        self._first_views.stop(timeout)
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        if self._ilc_thread is not None:
            self._ilc_thread.join(timeout)
        fail_pending(self._commands, RuntimeError("the simulation runner has stopped"))

    @property
    def running(self):
        return self._thread is not None and self._thread.is_alive()

    # ------------------------------------------------------------ configuration (runner thread)

    def _load(self, robot, variant, *, keep=None):
        """Load a robot: the configuration (presets, modes, params, references) starts from its
        robot.toml; `keep` (a workspace dict) is applied after. Clients name robots: only the
        names of GET /api/robots load, never a path."""
        self._watch = None  # another robot: back to manual control
        try:
            # the robot is known by the name it was asked for (the one that loads it again)
            r = dataclasses.replace(load_robot(robot, variant, allow_path=False), name=robot)
        except FileNotFoundError as exc:
            raise NotFound(str(exc)) from None
        except ValueError as exc:
            if "unknown variant" in str(exc):
                raise NotFound(str(exc)) from None
            raise ControlError(str(exc)) from None
        init = r.initial_refs
        self.robot = r
        self.joint_names = list(r.joint_names)
        self.models = [j.model for j in r.joints]
        self.modes = [j.mode for j in r.joints]
        self.param_overrides = {name: {} for name in self.joint_names}
        self.presets = {}
        for k, j in enumerate(r.joints):
            spec = preset_spec(j.model)
            if spec["kind"] == "ref":
                self.presets[j.name] = float(init[k][1]) if init else spec["soft"]
            elif spec["kind"] == "param":
                self.presets[j.name] = float(j.params.get(spec["param"], spec["soft"]))
            else:
                self.presets[j.name] = 0.0
        # the first view's equilibria and start (robot.toml initial.first_view, at rest there),
        # else the initial ones (q0 None: the robot's initial q)
        if r.first_view_eq is not None:
            self.eq0, self.q0 = list(r.first_view_eq), np.array(r.first_view_eq)
        else:
            self.eq0 = [float(init[k][0]) if init else 0.0 for k in range(len(r.joints))]
            self.q0 = None
        self.button_presets = self._choose_presets()
        self.reference = {name: {"kind": "hold", "amplitude": 0.0, "frequency": 0.5,
                                 "frequency_end": 2.0, "period": 5.0, "offset": self.eq0[k]}
                          for k, name in enumerate(self.joint_names)}
        self.ref_t0 = {name: 0.0 for name in self.joint_names}
        self.compare = []
        self.speed = 1.0
        self.paused = False
        self._last_change = None  # {joint: {param: (old, new)}} of the latest params change
        self._build_sim()

    def _choose_presets(self):
        """{joint: {soft, stiff, clamp_free}}: the soft / stiff buttons' presets of the robot
        just loaded (dashboard/presets.py: the stiff one off the deflection clamp in the first
        view). A robot whose probe fails keeps its models' presets (the error shows when it
        runs)."""
        try:
            return choose_presets(self.robot, self.models, self.modes, self.param_overrides,
                                  self.eq0, self.settings.threads, q0=self.q0)
        except Exception:  # noqa: BLE001 - the live Sim reports its own failure
            return {name: {"soft": preset_spec(m)["soft"], "stiff": preset_spec(m)["stiff"],
                           "clamp_free": None}
                    for name, m in zip(self.joint_names, self.models)
                    if preset_spec(m)["kind"] != "none"}

    def _build_sim(self):
        n = max(1, len(self.compare))
        self.sim = asr.Sim(self.robot, n, threads=self.settings.threads)
        self._robot3d = SceneStream(self.sim, self.settings.n_compare_max,  # robot3d
                                    next(self._scene_ids))
        for k, name in enumerate(self.joint_names):
            if self.modes[k] != self.sim.batch.modes[k]:
                self.sim.batch.set_mode(k, self.modes[k])
            for p, v in self.param_overrides[name].items():
                self.sim.batch.set_param(k, p, v)
        self._apply_presets()
        self._restart()

    def _restart(self):
        """Reset the Sim to the start (q0, or the robot's initial q; references at their t = 0
        values)."""
        self.sim.reset(q0=self.q0, refs=self._refs_at(np.zeros(1))[:, 0])
        self.time = 0.0
        self.ref_t0 = {name: 0.0 for name in self.joint_names}
        self.push = None  # (joint index, torque, remaining steps)
        self.history = collections.deque()
        self.run_id = next(self._run_ids)
        self._failed = False  # a rollout failed: the Sim restarts when it runs again

    def _instance_presets(self, k):
        """(N,) preset of joint k per instance."""
        n = self.sim.n_instances
        if self.compare:
            return np.asarray(self.compare, dtype=float)
        return np.full(n, self.presets[self.joint_names[k]])

    def _apply_presets(self):
        """Presets of 'param' kind go into the Sim's parameters (ref kind: into the references)."""
        for k, model in enumerate(self.models):
            spec = preset_spec(model)
            if spec["kind"] == "param":
                v = self._instance_presets(k)
                self.sim.batch.set_param(k, spec["param"], v if v.size > 1 else float(v[0]))

    def _check_preset(self, joint, value):
        check_preset(joint, self.models[self.joint_names.index(joint)], value)

    def _joint(self, name):
        if name not in self.joint_names:
            raise ControlError(f"unknown joint {name!r}; joints of {self.robot.name}: "
                               f"{', '.join(self.joint_names)}")
        return self.joint_names.index(name)

    def _eq(self, t_abs):
        """(T, J) equilibrium references at absolute sim times t_abs."""
        cols = [reference_values(self.reference[name], t_abs - self.ref_t0[name])
                for name in self.joint_names]
        return np.stack(cols, axis=-1)

    def _refs_at(self, t_abs):
        """(N, T, J, 2) Sim references at absolute times t_abs, and keeps eq (N, T, J)."""
        t_abs = np.atleast_1d(np.asarray(t_abs, dtype=float))
        n, T, nj = self.sim.n_instances, t_abs.size, len(self.joint_names)
        eq = np.broadcast_to(self._eq(t_abs), (n, T, nj))
        presets = np.stack([self._instance_presets(k) for k in range(nj)], axis=1)
        self._last_eq = eq
        return sim_references(self.sim.batch, self.models, self.modes, eq, presets)

    # ------------------------------------------------------------ commands

    def submit(self, fn):
        """Queue fn(self) for the runner thread; a concurrent Future with its result. If the
        runner is not running, fn is applied at once under the lock."""
        fut = concurrent.futures.Future()
        if not self.running:
            with self._lock:
                try:
                    fut.set_result(fn(self))
                except BaseException as exc:  # noqa: BLE001 - handed to the caller
                    fut.set_exception(exc)
            return fut
        self._commands.put((fn, fut))
        return fut

    def _apply_commands(self):
        apply_pending(self._commands, self._run_locked)

    def _run_locked(self, fn):
        with self._lock:
            return fn(self)

    # the operations below run on the runner thread (through submit), under the lock

    # the runner's configuration: what a command that fails half-way puts back (_snapshot)
    _CONFIG = ("robot", "joint_names", "models", "modes", "param_overrides", "presets", "eq0",
               "q0", "button_presets",
               "reference", "ref_t0", "compare", "speed", "paused", "sim", "time", "push",
               "history", "run_id", "_last_eq", "_last_change", "_failed", "_watch",
               "_robot3d")

    def _snapshot(self):
        """The configuration (containers copied; a new Sim replaces the old one, never edits it)
        and the live Sim's modes and parameters, which commands change in place."""
        attrs = {a: copy.deepcopy(v) if isinstance(v, (dict, list)) else v
                 for a, v in ((a, getattr(self, a, None)) for a in self._CONFIG)}
        batch = self.sim.batch
        params = [{p.name: batch.get_param(k, p.name) for p in spec.all_params}
                  for k, spec in enumerate(batch.specs)]
        return attrs, np.array(batch.modes), params

    def _restore(self, snap):
        """Back to a _snapshot exactly (commands publish nothing before they succeed)."""
        attrs, modes, params = snap
        for a, v in attrs.items():
            setattr(self, a, v)
        batch = self.sim.batch
        for k, mode in enumerate(modes):
            if batch.modes[k] != mode:
                batch.set_mode(k, int(mode))
        for k, old in enumerate(params):
            self._set_params(k, {p: _compact(v) for p, v in old.items()
                                 if not np.array_equal(batch.get_param(k, p), v)})

    @contextlib.contextmanager
    def _all_or_nothing(self):
        """A change made inside is kept whole or not at all: on any exception everything is put
        back as it was (_restore) and the exception is raised."""
        snap = self._snapshot()
        try:
            yield
        except BaseException:
            self._restore(snap)
            raise

    def _set_params(self, k, values):
        """Set joint k's parameters {name: value}. The motor limits go in an order whose every
        intermediate state is valid (pos_min < pos_max), given that the old and the new pair
        both are: pos_min first to the lower of old and new, then pos_max, then pos_min."""
        batch = self.sim.batch
        values = dict(values)
        if "pos_min" in values and "pos_max" in values:
            batch.set_param(k, "pos_min", _compact(np.minimum(batch.get_param(k, "pos_min"),
                                                              values["pos_min"])))
            batch.set_param(k, "pos_max", values.pop("pos_max"))
        for p, v in values.items():
            batch.set_param(k, p, v)

    def _check_params(self, c):
        """{joint: {param: float}} of a control's params, each checked against its model's
        range, and the cross-parameter rule asr checks too (pos_min < pos_max, with the other
        bound as it will be)."""
        params = {}
        for joint, values in (c.get("params") or {}).items():
            k = self._joint(joint)
            spec = self.sim.batch.specs[k]
            for p, v in values.items():
                if v is None:
                    continue
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise ControlError(f"params {joint}.{p}: expected a number, got {short(v)}")
                try:
                    v = float(v)
                except OverflowError:
                    raise ControlError(f"params {joint}.{p}: got {short(v)}, too large for a "
                                       "float") from None
                spec.param(p).check(v, f"params {joint}: ")
                params.setdefault(joint, {})[p] = v
            new = params.get(joint, {})
            if "pos_min" in new or "pos_max" in new:
                lo = new.get("pos_min", self.sim.batch.get_param(k, "pos_min"))
                hi = new.get("pos_max", self.sim.batch.get_param(k, "pos_max"))
                if not np.all(np.less(lo, hi)):
                    p = "pos_max" if "pos_max" in new else "pos_min"
                    raise ControlError(f"params {joint}.{p}: got {new[p]:g}, valid range: "
                                       f"pos_min < pos_max (they would be {np.max(lo):g} and "
                                       f"{np.min(hi):g})")
        return params

    def control(self, c):
        """Apply a partial control update (dict as models.Control.model_dump(exclude_none)),
        whole or not at all: validated completely (ranges, joints, modes, presets, the limit
        order) before anything changes, and put back exactly if applying it fails anyway.
        Returns the new state."""
        sim = self.sim
        with self._all_or_nothing():
            self._control(c)
        if self.sim is not sim:
            self._publish_figure()
        self._publish_state()
        return self.state()

    def _control(self, c):
        c = {k: v for k, v in c.items() if v is not None}
        for joint, value in (c.get("preset") or {}).items():
            self._joint(joint)
            self._check_preset(joint, float(value))
        for joint, mode in (c.get("mode") or {}).items():
            k = self._joint(joint)
            asr.batch.check_mode(int(mode), self.sim.batch.specs[k], f"mode {joint}: ")
        params = self._check_params(c)
        for joint in (c.get("reference") or {}):
            self._joint(joint)
        # apply
        for joint, mode in (c.get("mode") or {}).items():
            k = self._joint(joint)
            self.sim.batch.set_mode(k, int(mode))
            self.modes[k] = int(mode)
        if params:  # the latest parameter change: named if the simulation fails after it
            self._last_change = {}
        for joint, values in params.items():
            k = self._joint(joint)
            self._last_change[joint] = {p: (float(self.sim.batch.get_param(k, p)[0]), v)
                                        for p, v in values.items()}
            self._set_params(k, values)
            self.param_overrides[joint].update(values)
        if c.get("preset"):
            for joint, value in c["preset"].items():
                self.presets[joint] = float(value)
            if self.compare:  # a single preset leaves compare mode
                self.compare = []
                self._build_sim()
            self._apply_presets()
        for joint, gen in (c.get("reference") or {}).items():
            self.reference[joint] = dict(gen)
            self.ref_t0[joint] = self.time
        if "speed" in c:
            self.speed = c["speed"] if c["speed"] == "max" else float(c["speed"])
        if "paused" in c:
            self.paused = bool(c["paused"])

    def set_stiffness(self, which, joint=None):
        """Every joint's preset (or only `joint`'s) to its `which` ("soft" / "stiff") button
        preset (self.button_presets); a named joint without a preset raises ControlError."""
        names = self.joint_names if joint is None else [self.joint_names[self._joint(joint)]]
        if joint is not None:
            self._check_preset(joint, preset_spec(self.models[self._joint(joint)])[which])
        presets = {name: self.button_presets[name][which] for name in names
                   if name in self.button_presets}
        return self.control({"preset": presets})

    def do_push(self, p):
        k = self._joint(p["joint"])
        steps = max(1, int(round(p["duration"] / self.sim.dt)))
        self.push = (k, float(p["torque"]), steps)
        return {"joint": p["joint"], "torque": p["torque"], "duration": p["duration"],
                "steps": steps}

    def reset(self):
        self._restart()
        self._publish_figure()
        self._publish_state()
        return self.state()

    def switch_robot(self, robot, variant=None):
        with self._all_or_nothing():
            self._load_robot(robot, variant)
        self._publish_figure()
        self._publish_state()
        return self.state()

    def _load_robot(self, robot, variant):
        try:
            self._load(robot, variant)
        except (NotFound, ControlError):
            raise
        except Exception as exc:  # a robot that does not build (the old one is put back)
            raise ControlError(f"robot {robot!r}: {exc}") from None

    def _start_first_view_motion(self):
        """robot3d / first view: the server starts with every joint on a slow sine about its
        initial equilibrium and, where the joints share a stiffness preset, two instances, soft
        and stiff (references.first_view_motion), so the first view moves (PROTOCOL.md)."""
        reference, presets = first_view_motion(self.joint_names, self.eq0, self.models)
        self.reference.update(reference)
        if presets and len(presets) <= self.settings.n_compare_max:
            self._set_compare(presets)
        else:
            self._restart()  # the references at t = 0 of the new generators

    def scene(self):
        """robot3d: the current robot's scene for GET /api/scene (SceneStream.scene)."""
        return self._robot3d.scene()

    def set_compare(self, presets):
        with self._all_or_nothing():
            self._set_compare(presets)
        self._publish_figure()
        self._publish_state()
        return self.state()

    def _set_compare(self, presets):
        presets = [float(p) for p in presets]
        if len(presets) > self.settings.n_compare_max:
            raise ControlError(f"compare: {len(presets)} presets, at most n_compare_max = "
                               f"{self.settings.n_compare_max}")
        for p in presets:
            for name, model in zip(self.joint_names, self.models):
                if preset_spec(model)["kind"] != "none":
                    self._check_preset(name, p)
        self.compare = presets
        self._build_sim()

    def workspace(self):
        return {"version": "asr.dashboard/1", "robot": self.robot.name,
                "variant": self.robot.variant, "preset": dict(self.presets),
                "mode": dict(zip(self.joint_names, self.modes)),
                "params": {k: dict(v) for k, v in self.param_overrides.items() if v},
                "reference": {k: dict(v) for k, v in self.reference.items()},
                "speed": self.speed, "paused": self.paused, "compare": list(self.compare)}

    def load_workspace(self, ws):
        """Load a saved configuration whole, or keep the current one exactly (robot, variant,
        presets, modes, params, references, speed, pause, compare and the running Sim)."""
        with self._all_or_nothing():
            self._load_robot(ws["robot"], ws.get("variant"))
            self._control({k: ws.get(k) for k in ("preset", "mode", "params", "reference",
                                                  "speed", "paused")})
            if ws.get("compare"):
                self._set_compare(ws["compare"])
        self._publish_figure()
        self._publish_state()
        return self.state()

    def datasheet_inputs(self, joint):
        """Inputs of POST /api/datasheet for `joint` (a name of this robot; ControlError
        otherwise): {"robot", "variant", "joint", "model", "params": the model's own parameters
        as the Sim has them now (robot.toml and the parameter changes, instance 0; a "param"-kind
        preset left out: the curves are the presets), "buttons": the soft / stiff presets}."""
        k = self._joint(joint)
        model = self.models[k]
        spec = self.sim.batch.specs[k]
        preset = preset_spec(model)
        skip = preset.get("param") if preset["kind"] == "param" else None
        params = {p.name: float(self.sim.batch.get_param(k, p.name)[0])
                  for p in spec.params if p.name != skip}
        buttons = self.button_presets.get(joint)
        return {"robot": self.robot.name, "variant": self.robot.variant, "joint": joint,
                "model": model, "params": params,
                "buttons": {b: buttons[b] for b in ("soft", "stiff")} if buttons else None}

    # ------------------------------------------------------------ state, figure, export

    def state(self):
        batch = self.sim.batch
        joints = []
        for k, name in enumerate(self.joint_names):
            spec = batch.specs[k]
            joints.append({
                "name": name, "model": self.models[k], "mode": self.modes[k],
                "params": {p.name: _num(batch.get_param(k, p.name)[0])
                           for p in spec.all_params},
                "preset_range": preset_spec(self.models[k]),
                "motors": _motor_count(self.models[k]),
                "presets": self.button_presets.get(name)})
        return {
            "robot": self.robot.name, "variant": self.robot.variant,
            "joints": joints, "presets": dict(self.presets),
            "reference": {k: dict(v) for k, v in self.reference.items()},
            "gains": {name: {g: _num(batch.get_param(k, g)[0]) for g in ("kp", "ki", "kd")}
                      for k, name in enumerate(self.joint_names)},
            "speed": self.speed, "paused": self.paused, "compare": list(self.compare),
            "n_instances": self.sim.n_instances, "time": self.time, "dt": self.sim.dt,
            "lost_s": self._pacer.lost_s,
            "run_id": self.run_id, "update_hz": self.settings.update_hz,
            "window_s": self.settings.window_s, "frames": self.frames,
            "clients": len(self._subscribers),
            "ilc": self.ilc_status(), "error": self.error,
            "watch": self.watch_info()}

    def _view(self):
        return fig.View(self.robot.name, self.robot.variant, tuple(self.joint_names),
                        tuple(self.compare), tuple(self.presets.items()), self.run_id)

    def _skeleton(self):
        """The figure's trace styles and layout, built once per configuration change."""
        return self._skeletons.get(self._view())

    def max_points(self):
        return int(math.ceil(self.settings.window_s * self.settings.update_hz
                             * self.settings.max_samples))

    def _figure_snapshot(self):
        """figure.Snapshot of the current configuration and history (call under the lock)."""
        return fig.Snapshot(list(self.history), self._skeleton(), _dumps(self.state()))

    def _history_arrays(self):
        """{t: (T,), field: (N, T, J)} of the plotted history at full resolution, or None."""
        with self._lock:
            frames = list(self.history)
        return fig.history_arrays(frames)

    def export_npz(self):
        hist = self._history_arrays()  # a copy: frames are never modified once kept
        with self._lock:
            meta = {"robot": self.robot.name, "variant": self.robot.variant,
                    "joints": self.joint_names, "presets": self.presets,
                    "compare": self.compare, "dt": self.sim.dt}
        buf = io.BytesIO()
        arrays = hist or {"t": np.zeros(0), **{f: np.zeros((self.sim.n_instances, 0,
                                                            len(self.joint_names)))
                                               for f in FRAME_FIELDS}}
        np.savez_compressed(buf, **arrays, joints=np.array(meta["joints"]),
                            metadata=np.array(json.dumps(meta)))
        return buf.getvalue()

    def export_html(self):
        """A standalone plotly HTML file of the history, decimated as a first view (at most
        figure_points points per trace; the .npz export holds every sample), one subplot per
        quantity with its unit, plotly.js (minified) inline once: it opens offline."""
        import plotly.io as pio

        with self._lock:
            snap = self._figure_snapshot()
            motors = {name: _motor_count(m) for name, m in zip(self.joint_names, self.models)}
        points = fig.points_per_trace(len(snap.skeleton.data), self.settings)
        f = fig.export_figure(snap.skeleton, fig.decimated_history(snap.frames, points), motors)
        return pio.to_html(f, include_plotlyjs=True, full_html=True, validate=False,
                           config={"displaylogo": False})

    # ------------------------------------------------------------ subscribers

    def subscribe(self, loop):
        """A Subscriber whose first message is the current figure with the history (and the
        state), built by the first-view thread (figure.FirstViews), not on the event loop
        and not under the lock; the frames that follow it come after."""
        sub = Subscriber(loop, self.settings.client_queue, awaits_figure=True)
        self._first_views.request(sub)
        return sub

    def _take_first_view(self, subs):
        """(Snapshot, subscribers still open), registering them: called by FirstViews."""
        with self._lock:
            subs = [s for s in subs if not s.closed]
            self._subscribers.update(subs)
            return self._figure_snapshot(), subs

    def unsubscribe(self, sub):
        with self._lock:
            self._subscribers.discard(sub)
            sub.closed = True

    def publish(self, kind, msg):
        text = msg if isinstance(msg, str) else _dumps(msg)
        with self._lock:
            self._subscribers.difference_update(publish_threadsafe(self._subscribers, kind, text))

    def _publish_figure(self):
        """The figure again, after a configuration change (history decimated as a first view;
        usually empty, the Sim having restarted)."""
        with self._lock:
            snap = self._figure_snapshot()
        self.publish("figure", fig.build_first_view(snap, self.settings))

    def _publish_state(self):
        self.publish("state", {"type": "state", "state": self.state()})

    # ------------------------------------------------------------ the loop

    def _loop(self):
        period = 1.0 / self.settings.update_hz
        next_tick = time.perf_counter()
        while not self._stop.is_set():
            self._apply_commands()
            if self.paused:
                self._pacer.reset()
            else:
                try:
                    if self._failed:  # resumed after a failure: from the initial state
                        with self._lock:
                            self._restart()
                            self._publish_figure()
                    self._tick(period)
                except Exception as exc:  # noqa: BLE001 - reported once, the simulation pauses
                    with self._lock:
                        self._halt(exc)
                else:
                    if self.error is not None:  # running again
                        with self._lock:
                            self.error = None
                            self._publish_state()
            next_tick += period
            now = time.perf_counter()
            if next_tick < now - period:  # fell behind: do not try to catch up
                next_tick = now
            self._stop.wait(max(0.0, next_tick - now))

    def _halt(self, exc):
        """A rollout failed: pause (the Sim restarts from the initial state when it runs again),
        keep the error in the state and tell the clients once what failed, its likely cause
        and how to recover."""
        self.paused = True
        self._failed = True
        joint = getattr(exc, "joint", None)
        where = f" on {self.joint_names[joint]}" if isinstance(joint, int) and \
            0 <= joint < len(self.joint_names) else ""
        if self._last_change:
            changes = ", ".join(f"{j}.{p} {old:g} -> {new:g}"
                                for j, ps in self._last_change.items()
                                for p, (old, new) in ps.items())
            cause = (f"likely cause: the latest parameter change ({changes}); set it back and "
                     "resume, or reset")
        else:
            cause = "check the robot's parameters, then resume or reset"
        self.error = public_message(
            f"paused at t = {self.time:.3f} s{where}: {type(exc).__name__}: {exc}; {cause} "
            "(it restarts from the initial state)")
        self.publish("error", {"type": "error", "message": f"simulation {self.error}"})
        self._publish_state()

    def _tick(self, period):
        dt = self.sim.dt
        if self.speed == "max":
            self._pacer.reset()
            deadline = time.perf_counter() + 0.8 * period
            chunk = max(1, int(round(period / dt)))
            parts = []
            while True:
                parts.append(self._advance(chunk))
                if time.perf_counter() >= deadline or self._stop.is_set():
                    break
            frame = {k: (np.concatenate([p[k] for p in parts])) if k == "t" else
                     np.concatenate([p[k] for p in parts], axis=1) for k in parts[0]}
        else:
            steps = self._pacer.steps(time.perf_counter(), period, self.speed, dt)
            if steps == 0:  # a slow speed: less than a step due yet
                return
            frame = self._advance(steps)
        self._emit(frame)

    def _advance(self, steps):
        """One rollout of `steps` steps; the recorded arrays (N, steps, J) and times."""
        if self._watch is not None:
            return self._advance_watch(steps)
        dt, n, nj = self.sim.dt, self.sim.n_instances, len(self.joint_names)
        t = self.time + dt * np.arange(steps)          # start time of each step
        with self._lock:
            refs = self._refs_at(t)
            eq = np.array(self._last_eq)
            tau_ext = None
            if self.push is not None:
                k, torque, left = self.push
                m = min(left, steps)
                tau_ext = np.zeros((n, steps, nj))
                tau_ext[:, :m, k] = torque
                self.push = (k, torque, left - m) if left > m else None
        out = self.sim.rollout(steps, refs, tau_ext=tau_ext, record=RECORD)
        self.time += steps * dt
        q = out["q"]
        return {"t": t + dt, "q": q, "eq": eq, "defl": q - eq, "tau": out["tau_joint"],
                "stiffness": out["stiffness"], "th1": out["th1"], "th2": out["th2"],
                "clamped": out["clamped"]}

    def _emit(self, frame):
        # joints whose spring reached its deflection clamp in any sample of the frame (before
        # decimation drops samples), any instance: the page shows them in its status line
        hit = np.any(frame.pop("clamped") > 0, axis=(0, 1))   # (J,)
        clamped = [name for name, h in zip(self.joint_names, hit) if h]
        T = frame["t"].size
        stride = int(math.ceil(T / self.settings.max_samples))
        # keep the last sample of the frame
        idx = np.arange(T - 1, -1, -stride)[::-1]
        f = {k: (v[idx] if k == "t" else v[:, idx]) for k, v in frame.items()}
        with self._lock:
            self.history.append(f)
            keep = self.settings.window_s
            while self.history and self.history[0]["t"][-1] < f["t"][-1] - keep:
                self.history.popleft()
            self.frames += 1
            msg = fig.extend_message(f, self._view().n_traces)
            msg.update(maxPoints=self.max_points(), t=self.time, frame=self.frames,
                       run_id=self.run_id, clamped=clamped)
            msg.update(self._robot3d.frame())  # robot3d: scene_id, geom poses, ghost
        self.publish("extend", msg)

    # ------------------------------------------------------------ RL watch hook (dashboard/rl.py)

    def start_watch(self, watcher):
        """Runner thread: load the watcher's task robot (with the task's timestep) and let the
        policy choose the references from now on (PROTOCOL.md "RL")."""
        self._load(watcher.robot, watcher.variant)
        if watcher.timestep is not None and abs(self.sim.dt - watcher.timestep) > 1e-12:
            from asr.envs.vector import with_timestep

            self.robot = with_timestep(self.robot, watcher.timestep)
            self._build_sim()
        self._watch, self._watch_state = watcher, None
        self._publish_figure()
        self._publish_state()
        return self.state()

    def watch_info(self):
        """The watched policy's {task, run, target, env_step}, or None (any thread)."""
        w = self._watch
        return w.info() if w is not None else None

    def stop_watch(self):
        """Back to manual control: every joint holds the policy's last equilibrium."""
        w, self._watch = self._watch, None
        if w is not None and w.held is not None:
            for k, name in enumerate(self.joint_names):
                self.reference[name] = dict(self.reference[name], kind="hold", offset=float(
                    np.clip(w.held[0, k, 0], -10, 10)))
                self.ref_t0[name] = self.time
        self._publish_state()
        return self.state()

    def _advance_watch(self, steps):
        """_advance with the watched policy's references: one rollout per (part of an) env step,
        each env step's action from the link state at its start (as the task builds it)."""
        w, sim = self._watch, self.sim
        n, parts = sim.n_instances, []
        while sum(p["q"].shape[1] for p in parts) < steps:
            if w.left == 0 or w.held is None or w.held.shape[0] != n:
                st = self._watch_state
                if st is None or st[0].shape[0] != n:
                    q = np.array([d.qpos[sim.qpos_adr] for d in sim.datas])
                    qd = np.array([d.qvel[sim.dof_adr] for d in sim.datas])
                    st = (q, qd)
                w.act(*st)
            m = min(w.left, steps - sum(p["q"].shape[1] for p in parts))
            refs = np.ascontiguousarray(np.broadcast_to(w.held[:, None], (n, m) + w.held.shape[1:]))
            out = sim.rollout(m, refs, record=RECORD + ("qd",))
            w.left -= m
            self._watch_state = (out["q"][:, -1].copy(), out["qd"][:, -1].copy())
            parts.append(dict(out, eq=refs[..., 0]))
        dt = sim.dt
        t = self.time + dt * np.arange(steps)
        self.time += steps * dt
        cat = {k: np.concatenate([p[k] for p in parts], axis=1) for k in
               ("q", "eq", "tau_joint", "stiffness", "th1", "th2", "clamped")}
        q = cat["q"]
        return {"t": t + dt, "q": q, "eq": cat["eq"], "defl": q - cat["eq"],
                "tau": cat["tau_joint"], "stiffness": cat["stiffness"], "th1": cat["th1"],
                "th2": cat["th2"], "clamped": cat["clamped"]}

    # ------------------------------------------------------------ ILC (worker thread)

    def ilc_status(self):
        """The ILC run's status (PROTOCOL.md "ILC"); `seq` grows with every change, so a client
        keeps the newest of the answers and events it gets (they may cross)."""
        with self._lock:
            s = dict(self._ilc, errors=list(self._ilc["errors"]))
        s["has_result"] = self._ilc_result is not None
        return s

    def start_ilc(self, cfg):
        """Start the ILC of [Mengacci2021] sec. 4.3 (min-jerk 0 -> target on every joint) on a
        separate Sim of the current robot in a worker thread. Raises Busy if one runs."""
        with self._lock:
            if self._ilc["running"]:
                raise Busy("an ILC run is already in progress; POST /api/ilc/stop first")
            robot, modes = self.robot, list(self.modes)
            bad = [n for n, m in zip(self.joint_names, modes) if m not in (3, 6)]
            if bad:
                raise ControlError(f"ilc: every joint must be in mode 3 or 6 (equilibrium, "
                                   f"preset); not: {', '.join(bad)}")
            for name, model in zip(self.joint_names, self.models):
                if preset_spec(model)["kind"] == "ref":
                    self._check_preset(name, cfg["preset"])
            ilc_rules.update_filter(cfg.get("lowpass_hz"), self.sim.dt)  # a bad cut-off: 422
            overrides = {k: dict(v) for k, v in self.param_overrides.items()}
            self._ilc = {"running": True, "stopping": False, "iteration": 0, "errors": [],
                         "message": "running", "verdict": None, "tol": cfg["tol"],
                         "seq": self._ilc["seq"] + 1, "run": self._ilc["run"] + 1,
                         "config": dict(cfg), "robot": robot.name, "variant": robot.variant}
            self._ilc_result = None
            self._ilc_stop.clear()
            self._ilc_thread = threading.Thread(target=self._run_ilc,
                                                args=(robot, modes, overrides, dict(cfg)),
                                                name="asr-dashboard-ilc", daemon=True)
            self._ilc_thread.start()
        return self.ilc_status()

    def stop_ilc(self):
        """Ask the run to stop after its current trial; its final event follows."""
        self._ilc_stop.set()
        with self._lock:
            running = self._ilc["running"]
        if running:
            self._ilc_event(stopping=True, message="stopping after the current iteration")
        return self.ilc_status()

    def _ilc_event(self, **kw):
        """Update the ILC status and send it to every client as an `ilc` message. A finished
        run's status is final: nothing changes it until the next start."""
        with self._lock:
            if not self._ilc["running"]:
                return
            self._ilc.update(kw, seq=self._ilc["seq"] + 1)
        self.publish("ilc", dict(self.ilc_status(), type="ilc"))

    def _run_ilc(self, robot, modes, overrides, cfg):
        from asr.iterative_learning import ilc

        errors, diverged = [], [False]
        try:
            sim = asr.Sim(robot, 1, threads=self.settings.threads)
            for k, name in enumerate(robot.joint_names):
                if sim.batch.modes[k] != modes[k]:
                    sim.batch.set_mode(k, modes[k])
                for p, v in overrides.get(name, {}).items():
                    sim.batch.set_param(k, p, v)
            T = int(round(cfg["duration"] / sim.dt))
            t = (np.arange(T) + 1) * sim.dt
            q = min_jerk(t, 0.0, cfg["target"], cfg["duration"])
            ref = np.repeat(q[:, None], sim.n_joints, axis=1)

            def callback(n, row, converged):
                errors.append(_num(row[0]))
                diverged[0] = not converged[0] and ilc_rules.diverging(errors)
                self._ilc_event(iteration=n, errors=list(errors))
                return diverged[0] or self._ilc_stop.is_set() or self._stop.is_set()

            res = ilc(sim, ref, schedule=ilc_rules.gain_schedule(cfg["gain"], cfg["gain_decay"]),
                      filter=ilc_rules.update_filter(cfg["lowpass_hz"], sim.dt),
                      preset=cfg["preset"], tol=cfg["tol"], max_iter=cfg["iterations"],
                      settle_s=cfg["settle_s"], callback=callback)
            with self._lock:
                self._ilc_result = res
            kind = ilc_rules.verdict(bool(res.converged[0]), diverged[0],
                                     self._ilc_stop.is_set() or self._stop.is_set(),
                                     len(errors), cfg["iterations"])
            message = ilc_rules.final_message(kind, errors, cfg["tol"])
            self._ilc_event(running=False, stopping=False, converged=bool(res.converged[0]),
                            verdict=kind, message=message)
        except Exception as exc:  # noqa: BLE001 - reported to the clients
            self._ilc_event(running=False, stopping=False, verdict="failed",
                            message=public_message(f"failed: {type(exc).__name__}: {exc}"))

    def ilc_result_npz(self):
        with self._lock:
            res = self._ilc_result
        if res is None:
            return None
        buf = io.BytesIO()
        np.savez_compressed(buf, input=res.input, reference=res.reference, output=res.output,
                            errors=res.errors, errors_joint=res.errors_joint,
                            presets=res.presets, dt=np.array(res.dt),
                            metadata=np.array(json.dumps(res.metadata)))
        return buf.getvalue()
