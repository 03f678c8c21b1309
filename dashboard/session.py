"""The live simulation's session: the robot, its configuration (presets, modes, parameters,
references, compare, speed, pause), the asr.Sim built from it and the plotted history. Its
serialisation is the workspace (GET / POST /api/workspace, PROTOCOL.md).

A Session is changed on the runner thread only (dashboard/runner.py), under the runner's lock.
A change is all or nothing (`all_or_nothing`): validated before anything changes and put back
exactly (a _snapshot) if applying it fails anyway. Robots are loaded by name only
(asr.load_robot(..., allow_path=False)).
"""

import collections
import contextlib
import copy
import dataclasses
import itertools
import math

import numpy as np

import asr
from asr.robots.robot import load_robot

from .errors import public_message
from .joint_params import check_params, compact, params_of, set_params
from .presets import choose_presets
from .references import (
    ControlError,
    check_preset,
    check_torques,
    first_view_motion,
    generator,
    preset_spec,
    reference_values,
    sim_references,
    torque_range,
)
from .robots import NotFound, motor_count
from .scene import SceneStream  # robot3d: poses in every frame

WORKSPACE_VERSION = "asr.dashboard/1"
# the controls a workspace holds besides robot, variant and compare (Session.apply_control's)
WORKSPACE_CONTROLS = ("preset", "mode", "params", "reference", "speed", "paused")


def num(x):
    """JSON-safe float (NaN/inf -> None)."""
    x = float(x)
    return x if math.isfinite(x) else None


class Session:
    """The live Sim and its configuration; see the module doc."""

    # the configuration: what a change that fails half-way puts back (_snapshot)
    CONFIG = (
        "robot",
        "joint_names",
        "models",
        "modes",
        "param_overrides",
        "presets",
        "eq0",
        "q0",
        "button_presets",
        "reference",
        "ref_t0",
        "compare",
        "speed",
        "paused",
        "sim",
        "time",
        "push",
        "history",
        "run_id",
        "last_eq",
        "last_change",
        "failed",
        "watcher",
        "robot3d",
    )

    def __init__(self, settings, robot, variant=None):
        self.settings = settings
        self._run_ids = itertools.count(1)
        self._scene_ids = itertools.count(1)  # robot3d: a new scene with every Sim
        self.robot = None  # asr Robot, known by the name it was asked for
        self.joint_names = []
        self.models = []  # per joint: its compliance model's name
        self.modes = []  # per joint: its control mode
        self.param_overrides = {}  # {joint: {param: value}} changed from robot.toml
        self.presets = {}  # {joint: stiffness preset}
        self.eq0 = []  # the first view's equilibria (rad)
        self.q0 = None  # the start (None: the robot's initial q)
        self.button_presets = {}  # {joint: {soft, stiff, clamp_free}}
        self.reference = {}  # {joint: reference generator}
        self.ref_t0 = {}  # {joint: sim time its generator started}
        self.compare = []  # presets of the compared instances ([]: one instance)
        self.speed = 1.0  # sim s per wall s, or "max"
        self.paused = False
        self.sim = None
        self.robot3d = None  # SceneStream of the Sim
        self.time = 0.0  # sim time (s)
        self.push = None  # (joint index, torque, remaining steps)
        self.history = collections.deque()  # the plotted frames
        self.run_id = 0
        self.last_eq = None  # (N, T, J) equilibria of the latest references
        self.last_change = None  # {joint: {param: (old, new)}} of the latest params change
        self.failed = False  # a rollout failed: the Sim restarts when it runs again
        self.watcher = None  # a dashboard.policy_watch.PolicyWatcher choosing the references
        self.watch_state = None  # (q, qd) at the watcher's next env step, or None
        self.load(robot, variant)

    # ------------------------------------------------------------ loading

    def load(self, robot, variant):
        """Load a robot: the configuration (presets, modes, params, references) starts from its
        robot.toml. Clients name robots: only the names of GET /api/robots load, never a path."""
        self.watcher = None  # another robot: back to manual control
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
        self.reference = {
            name: generator(offset=float(self.eq0[k])) for k, name in enumerate(self.joint_names)
        }
        self.ref_t0 = {name: 0.0 for name in self.joint_names}
        self.compare = []
        self.speed = 1.0
        self.paused = False
        self.last_change = None
        self.build_sim()

    def load_named(self, robot, variant):
        """load(), a robot that does not build raising ControlError naming it."""
        try:
            self.load(robot, variant)
        except (NotFound, ControlError):
            raise
        except Exception as exc:  # a robot that does not build (the old one is put back)
            raise ControlError(f"robot {robot!r}: {exc}") from None

    def _choose_presets(self):
        """{joint: {soft, stiff, clamp_free}}: the soft / stiff buttons' presets of the robot
        just loaded (dashboard/presets.py: the stiff one off the deflection clamp in the first
        view). A robot whose probe fails keeps its models' presets (the error shows when it
        runs)."""
        try:
            return choose_presets(
                self.robot,
                self.models,
                self.modes,
                self.param_overrides,
                self.eq0,
                self.settings.threads,
                q0=self.q0,
            )
        except Exception:  # noqa: BLE001 - the live Sim reports its own failure
            return {
                name: {
                    "soft": preset_spec(m)["soft"],
                    "stiff": preset_spec(m)["stiff"],
                    "clamp_free": None,
                }
                for name, m in zip(self.joint_names, self.models)
                if preset_spec(m)["kind"] != "none"
            }

    def build_sim(self):
        n = max(1, len(self.compare))
        self.sim = asr.Sim(self.robot, n, threads=self.settings.threads)
        self.robot3d = SceneStream(
            self.sim,
            self.settings.n_compare_max,  # robot3d
            next(self._scene_ids),
        )
        for k, name in enumerate(self.joint_names):
            if self.modes[k] != self.sim.batch.modes[k]:
                self.sim.batch.set_mode(k, self.modes[k])
            for p, v in self.param_overrides[name].items():
                self.sim.batch.set_param(k, p, v)
        self.apply_presets()
        self.restart()

    def restart(self):
        """Reset the Sim to the start (q0, or the robot's initial q; references at their t = 0
        values: every generator restarts at t = 0 before the motors are placed by them)."""
        self.ref_t0 = {name: 0.0 for name in self.joint_names}
        self.sim.reset(q0=self.q0, refs=self.refs_at(np.zeros(1))[:, 0])
        self.time = 0.0
        self.push = None
        self.history = collections.deque()
        self.run_id = next(self._run_ids)
        self.failed = False

    def start_first_view_motion(self):
        """robot3d / first view: every joint on a slow sine about its initial equilibrium and,
        where the joints share a stiffness preset, two instances, soft and stiff
        (references.first_view_motion), so the first view moves (PROTOCOL.md)."""
        reference, presets = first_view_motion(self.joint_names, self.eq0, self.models)
        self.reference.update(reference)
        if presets and len(presets) <= self.settings.n_compare_max:
            self.set_compare(presets)
        else:
            self.restart()  # the references at t = 0 of the new generators

    # ------------------------------------------------------------ presets and references

    def instance_presets(self, k):
        """(N,) preset of joint k per instance."""
        if self.compare:
            return np.asarray(self.compare, dtype=float)
        return np.full(self.sim.n_instances, self.presets[self.joint_names[k]])

    def apply_presets(self):
        """Presets of 'param' kind go into the Sim's parameters (ref kind: into the references)."""
        for k, model in enumerate(self.models):
            spec = preset_spec(model)
            if spec["kind"] == "param":
                v = self.instance_presets(k)
                self.sim.batch.set_param(k, spec["param"], v if v.size > 1 else float(v[0]))

    def check_preset(self, joint, value):
        check_preset(joint, self.models[self.joint_names.index(joint)], value)

    def joint(self, name):
        """Index of joint `name`; ControlError naming the robot's joints otherwise."""
        if name not in self.joint_names:
            raise ControlError(
                f"unknown joint {name!r}; joints of {self.robot.name}: "
                f"{', '.join(self.joint_names)}"
            )
        return self.joint_names.index(name)

    def _eq(self, t_abs):
        """(T, J) equilibrium references at absolute sim times t_abs."""
        cols = [
            reference_values(self.reference[name], t_abs - self.ref_t0[name])
            for name in self.joint_names
        ]
        return np.stack(cols, axis=-1)

    def refs_at(self, t_abs):
        """(N, T, J, 2) Sim references at absolute times t_abs, and keeps eq (N, T, J)."""
        t_abs = np.atleast_1d(np.asarray(t_abs, dtype=float))
        n, T, nj = self.sim.n_instances, t_abs.size, len(self.joint_names)
        eq = np.broadcast_to(self._eq(t_abs), (n, T, nj))
        presets = np.stack([self.instance_presets(k) for k in range(nj)], axis=1)
        self.last_eq = eq
        torques = [(g.get("torque", 0.0), g.get("torque2", 0.0)) for g in self.reference.values()]
        return sim_references(self.sim.batch, self.models, self.modes, eq, presets, torques)

    def take_push(self, steps):
        """(N, steps, J) external torques of the pending push for the next `steps` steps (the
        push's remaining steps count down), or None."""
        if self.push is None:
            return None
        k, torque, left = self.push
        m = min(left, steps)
        tau_ext = np.zeros((self.sim.n_instances, steps, len(self.joint_names)))
        tau_ext[:, :m, k] = torque
        self.push = (k, torque, left - m) if left > m else None
        return tau_ext

    # ------------------------------------------------------------ all or nothing

    def _snapshot(self):
        """The configuration (containers copied; a new Sim replaces the old one, never edits it)
        and the live Sim's modes and parameters, which commands change in place."""
        attrs = {
            a: copy.deepcopy(v) if isinstance(v, (dict, list)) else v
            for a, v in ((a, getattr(self, a)) for a in self.CONFIG)
        }
        batch = self.sim.batch
        params = [
            {p.name: batch.get_param(k, p.name) for p in spec.all_params}
            for k, spec in enumerate(batch.specs)
        ]
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
            changed = {p: v for p, v in old.items() if not np.array_equal(batch.get_param(k, p), v)}
            set_params(batch, k, {p: compact(v) for p, v in changed.items()})

    @contextlib.contextmanager
    def all_or_nothing(self):
        """A change made inside is kept whole or not at all: on any exception everything is put
        back as it was (_restore) and the exception is raised."""
        snap = self._snapshot()
        try:
            yield
        except BaseException:
            self._restore(snap)
            raise

    # ------------------------------------------------------------ controls

    def apply_control(self, c):
        """Apply a partial control update (models.Control.model_dump(exclude_none)): everything
        checked first, then applied (call inside all_or_nothing)."""
        c = {k: v for k, v in c.items() if v is not None}
        for joint, value in (c.get("preset") or {}).items():
            self.joint(joint)
            self.check_preset(joint, float(value))
        for joint, mode in (c.get("mode") or {}).items():
            k = self.joint(joint)
            asr.core.batch.check_mode(int(mode), self.sim.batch.specs[k], f"mode {joint}: ")
        params = check_params(self.sim.batch, self.joint, c.get("params"))
        refs = self._merged_references(c)
        # apply
        for joint, mode in (c.get("mode") or {}).items():
            k = self.joint(joint)
            self.sim.batch.set_mode(k, int(mode))
            self.modes[k] = int(mode)
        if params:  # the latest parameter change: named if the simulation fails after it
            self.last_change = {}
        for joint, values in params.items():
            k = self.joint(joint)
            self.last_change[joint] = {
                p: (float(self.sim.batch.get_param(k, p)[0]), v) for p, v in values.items()
            }
            set_params(self.sim.batch, k, values)
            self.param_overrides[joint].update(values)
        if c.get("preset"):
            for joint, value in c["preset"].items():
                self.presets[joint] = float(value)
            if self.compare:  # a single preset leaves compare mode
                self.compare = []
                self.build_sim()
            self.apply_presets()
        for joint, gen in refs.items():
            self.reference[joint] = gen
            self.ref_t0[joint] = self.time
        if "speed" in c:
            self.speed = c["speed"] if c["speed"] == "max" else float(c["speed"])
        if "paused" in c:
            self.paused = bool(c["paused"])

    def _merged_references(self, c):
        """{joint: generator} of a control's references, each the joint's generator in effect
        with the fields the control gives (what the user did not change stays: the offset of a
        joint whose frequency is re-entered), its torques checked against the joint's limits in
        the mode it will have."""
        modes = {**dict(zip(self.joint_names, self.modes)), **(c.get("mode") or {})}
        out = {}
        for joint, gen in (c.get("reference") or {}).items():
            k = self.joint(joint)
            merged = {**self.reference[joint], **{f: v for f, v in gen.items() if v is not None}}
            check_torques(joint, int(modes[joint]), merged, params_of(self.sim.batch, k))
            out[joint] = merged
        for joint in (c.get("mode") or {}).keys() - out.keys():  # the torques held, new mode
            k = self.joint(joint)
            check_torques(
                joint, int(modes[joint]), self.reference[joint], params_of(self.sim.batch, k)
            )
        return out

    def effective_presets(self):
        """{joint: [preset of each instance] in the model's unit, or None without a preset}:
        the presets in effect, the compare presets in compare mode, the watched policy's second
        references while it chooses them (modes 3 and 6, a preset of kind "ref")."""
        held = self.watcher.held if self.watcher is not None else None
        out = {}
        for k, (name, model) in enumerate(zip(self.joint_names, self.models)):
            kind = preset_spec(model)["kind"]
            if kind == "none":
                out[name] = None
            elif held is not None and kind == "ref" and self.modes[k] in (3, 6):
                out[name] = [num(v) for v in held[:, k, 1]]
            else:
                out[name] = [num(v) for v in self.instance_presets(k)]
        return out

    def stiffness_presets(self, which, joint=None):
        """{joint: preset} of the `which` ("soft" / "stiff") buttons of every joint (or only
        `joint`'s); a named joint without a preset raises ControlError."""
        names = self.joint_names if joint is None else [self.joint_names[self.joint(joint)]]
        if joint is not None:
            self.check_preset(joint, preset_spec(self.models[self.joint(joint)])[which])
        return {
            name: self.button_presets[name][which] for name in names if name in self.button_presets
        }

    def set_push(self, p):
        k = self.joint(p["joint"])
        if self.paused:  # a push waits for no one: said, not kept for later
            raise ControlError(f"push {p['joint']}: the simulation is paused; resume it, then push")
        steps = max(1, int(round(p["duration"] / self.sim.dt)))
        self.push = (k, float(p["torque"]), steps)
        return {
            "joint": p["joint"],
            "torque": p["torque"],
            "duration": p["duration"],
            "steps": steps,
        }

    def set_compare(self, presets):
        presets = [float(p) for p in presets]
        if len(presets) > self.settings.n_compare_max:
            raise ControlError(
                f"compare: {len(presets)} presets, at most n_compare_max = "
                f"{self.settings.n_compare_max}"
            )
        for p in presets:
            for name, model in zip(self.joint_names, self.models):
                if preset_spec(model)["kind"] != "none":
                    self.check_preset(name, p)
        self.compare = presets
        self.build_sim()

    # ------------------------------------------------------------ serialisation

    def workspace(self):
        """The session as a workspace (its serialisation, PROTOCOL.md "Workspace")."""
        return {
            "version": WORKSPACE_VERSION,
            "robot": self.robot.name,
            "variant": self.robot.variant,
            "preset": dict(self.presets),
            "mode": dict(zip(self.joint_names, self.modes)),
            "params": {k: dict(v) for k, v in self.param_overrides.items() if v},
            "reference": {k: dict(v) for k, v in self.reference.items()},
            "speed": self.speed,
            "paused": self.paused,
            "compare": list(self.compare),
        }

    def load_workspace(self, ws):
        """The session a workspace describes (call inside all_or_nothing)."""
        self.load_named(ws["robot"], ws.get("variant"))
        self.apply_control({k: ws.get(k) for k in WORKSPACE_CONTROLS})
        if ws.get("compare"):
            self.set_compare(ws["compare"])

    def state(self):
        """The session's part of the state message (PROTOCOL.md "State")."""
        batch = self.sim.batch
        joints = []
        for k, name in enumerate(self.joint_names):
            spec = batch.specs[k]
            joints.append(
                {
                    "name": name,
                    "model": self.models[k],
                    "mode": self.modes[k],
                    "params": {p.name: num(batch.get_param(k, p.name)[0]) for p in spec.all_params},
                    "preset_range": preset_spec(self.models[k]),
                    "motors": motor_count(self.models[k]),
                    "presets": self.button_presets.get(name),
                    "torque_range": torque_range(self.modes[k], params_of(self.sim.batch, k)),
                }
            )
        return {
            "robot": self.robot.name,
            "variant": self.robot.variant,
            "joints": joints,
            "presets": dict(self.presets),
            "presets_in_effect": self.effective_presets(),
            "reference": {k: dict(v) for k, v in self.reference.items()},
            "gains": {
                name: {g: num(batch.get_param(k, g)[0]) for g in ("kp", "ki", "kd")}
                for k, name in enumerate(self.joint_names)
            },
            "speed": self.speed,
            "paused": self.paused,
            "compare": list(self.compare),
            "n_instances": self.sim.n_instances,
            "time": self.time,
            "dt": self.sim.dt,
        }

    def failure_message(self, exc):
        """What a failed rollout says: where, what, its likely cause and how to recover."""
        joint = getattr(exc, "joint", None)
        where = (
            f" on {self.joint_names[joint]}"
            if isinstance(joint, int) and 0 <= joint < len(self.joint_names)
            else ""
        )
        if self.last_change:
            changes = ", ".join(
                f"{j}.{p} {old:g} -> {new:g}"
                for j, ps in self.last_change.items()
                for p, (old, new) in ps.items()
            )
            cause = (
                f"likely cause: the latest parameter change ({changes}); set it back and "
                "resume, or reset"
            )
        else:
            cause = "check the robot's parameters, then resume or reset"
        return public_message(
            f"paused at t = {self.time:.3f} s{where}: {type(exc).__name__}: {exc}; {cause} "
            "(it restarts from the initial state)"
        )
