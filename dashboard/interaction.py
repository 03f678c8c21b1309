"""Interaction control from the dashboard (PROTOCOL.md "Interaction control"): one
InteractionSession at a time owns its own `asr.Sim("ur10", 1, variant=V, controller=...)`
(asr/controllers/interaction.py: admittance or direct force, docs/interaction.md), stepped at real
time in its
own thread (dashboard/pacing.py's Pacer), beside the main runner's Sim.

Start: the Sim is built (asr's constructors check the gains: their ValueError is the 422 text),
then a setpoint moves the tool over the plate (START_POSITION, START_DURATION_S) and the static
law holds there. Commands reach the session thread through a bounded queue (COMMAND_QUEUE; full:
Busy) and answer through a concurrent Future:

- law and gains: asr has no setter for the gains of a running controller, so the session builds
  a new Sim with the new controller (in the request's thread, so bad gains answer 422 at once),
  then on the session thread resets it to the present link angles (motors at zero deflection)
  and sends a setpoint to the present position reference x_d (SWITCH_DURATION_S): the sensor
  bias is taken there (asr's FSM assumes the tool at rest and free of contact at a setpoint) and
  the force reference is sent again once the FSM is back in "static". Simulated time goes on.
- force reference (3,) N along the task axes: set_references(force=...) (static state only).
- position reference (3,) m in the base frame, inside BOX: a straight trajectory from the present
  x_d at POSITION_SPEED (m/s, at least MIN_MOVE_S), the force reference held.
- stop: the thread ends.

A ControllerBusy (an input while a setpoint or trajectory runs) is a Busy with asr's message
(409), never a crash. Every 1 / update_hz s the session publishes an `interaction` message to every
client: the state now and the samples since the last message, decimated to at most
MAX_SAMPLES (time, f_e (3,), f_d (3,) each), and `robot3d`: the session Sim's geom poses for the
page's 3-D view (dashboard/scene.py; its meshes: GET /api/scene/interaction), which draws the arm,
the plate and f_e as an arrow at the tool.
"""

import concurrent.futures
import functools
import itertools
import math
import queue
import threading
import time

import numpy as np

import asr
from asr.robots.robot import variant_names

from .commands import apply_pending, fail_pending
from .errors import public_message
from .frames import RELEASE_TRIM_S, give_back_memory
from .pacing import Pacer
from .scene import SceneStream

ROBOT = "ur10"
LAWS = ("admittance", "direct_force")
# the box the position reference must stay in (m, base frame): over and around the plate
# (robots/ur10/README.md: top surface z = 0.05 at x 0.35 .. 1.05, y 0.05 .. 0.35; the tcp, the
# tip sphere's centre, touches it at z = 0.06)
BOX = {"x": (0.4, 1.0), "y": (-0.3, 0.35), "z": (0.055, 0.3)}
START_POSITION = (0.6, 0.2, 0.07)  # m: 1 cm above contact, over the plate
START_DURATION_S = 1.0
ELASTIC_START_S = 2.0  # an elastic arm's start move: slower, its links swing on the springs
SWITCH_DURATION_S = 0.5  # the setpoint after a law / gains change
POSITION_SPEED = 0.1  # m/s of a position reference move
MIN_MOVE_S = 0.2
COMMAND_QUEUE = 16
COMMAND_TIMEOUT_S = 10.0
MIN_YIELD_S = 2e-3  # s the session thread sleeps between ticks, at least (see _loop)
MAX_SAMPLES = 10  # samples per message (decimated)
DEFAULT_GAINS = {
    "admittance": {
        "mass": [1.0, 1.0, 1.0],
        "damping": [900.0, 900.0, 400.0],
        "stiffness": [1300.0, 1300.0, 0.0],
        "max_offset": 0.5,
    },
    "direct_force": {"kp": [0.0, 0.0, 0.0], "ki": [0.0, 0.0, 1e-3], "max_offset": 0.1},
}
GAIN_FIELDS = {"admittance": ("mass", "damping", "stiffness"), "direct_force": ("kp", "ki")}
# The valid range of each value per axis, {field: (low, high, unit, why)}. Gains: measured on
# every ur10 variant pressing 20 N on the plate from the start pose (direct force: kp 1e-4 m/N
# oscillates on the rigid arm, ki 5e-3 m/(N s) on vsa_stiff; admittance on z: mass 100 kg and
# damping 100 N s/m oscillate, damping 3e4 N s/m does not reach the plate in 6 s). Values that
# asr's constructors refuse (a mass <= 0, a negative gain) keep asr's message.
RANGES = {
    "force": (-100.0, 100.0, "N", "about the UR10's rated payload, 10 kg"),
    "mass": (1e-3, 10.0, "kg", "heavier oscillates in contact"),
    "damping": (150.0, 1e4, "N s/m", "lower oscillates in contact, higher barely moves"),
    "stiffness": (0.0, 1e5, "N/m", "the arm and plate together are about 1e5 N/m"),
    "kp": (0.0, 3e-5, "m/N", "higher oscillates in contact"),
    "ki": (0.0, 3e-3, "m/(N s)", "higher oscillates in contact"),
}
# asr's own rule per field (checked by asr, with its message): mass and damping > 0, else >= 0
_ASR_POSITIVE = ("mass", "damping")


@functools.lru_cache(maxsize=1)
def robot_variants(name=ROBOT):
    """The variant names of the robot (its robot.toml), loaded by name only, when first asked
    (not at import: a server whose robots folder lacks it still starts). Not loadable: a
    ValueError naming the robot (-> 422 at start), never a server path."""
    try:
        return variant_names(name, allow_path=False)
    except Exception as exc:  # noqa: BLE001 - reported as the panel's error
        raise InteractionInputError(
            public_message(f"the interaction panel needs robot {name!r}: {exc}")
        ) from None


class Busy(RuntimeError):
    """A session runs already, the command queue is full, or the controller is moving (-> 409)."""


class NotRunning(RuntimeError):
    """No session runs (-> 409)."""


class InteractionInputError(ValueError):
    """A value outside the dashboard's limits (-> 422, naming the field)."""


def _vec(x):
    """JSON-safe list (NaN / inf -> None; 7 decimals: um, uN)."""
    return [round(v, 7) if math.isfinite(v) else None for v in (float(a) for a in np.ravel(x))]


def law_config(law, gains=None):
    """{"law", gain fields, "max_offset"}: `gains` over the law's defaults (other laws' fields
    dropped)."""
    if law not in LAWS:
        raise InteractionInputError(f"law: got {law!r}, valid: {', '.join(LAWS)}")
    cfg = {k: (list(v) if isinstance(v, list) else v) for k, v in DEFAULT_GAINS[law].items()}
    for k, v in (gains or {}).items():
        if k in cfg and v is not None:
            cfg[k] = list(v) if isinstance(v, (list, tuple)) else v
    for k in GAIN_FIELDS[law]:
        check_range(k, cfg[k])
    return {"law": law, **cfg}


def check_range(field, values):
    """InteractionInputError naming the field, the axis, the value and RANGES' range when a
    value (3,) is outside it; not-a-number and values of the wrong sign are left to asr."""
    lo, hi, unit, why = RANGES[field]
    for axis, v in zip("xyz", values):
        v = float(v)
        asr_refuses = v <= 0 if field in _ASR_POSITIVE else v < 0 and lo >= 0
        if math.isfinite(v) and not asr_refuses and not lo <= v <= hi:
            raise InteractionInputError(
                f"{field}: {axis} = {v:g} {unit} is outside the valid range "
                f"[{lo:g}, {hi:g}] {unit} ({why})"
            )


def make_controller(cfg):
    """The asr controller of a law_config (asr's constructors)."""
    if cfg["law"] == "admittance":
        return asr.Admittance(
            cfg["mass"], cfg["damping"], cfg["stiffness"], max_offset=cfg["max_offset"]
        )
    return asr.DirectForce(cfg["kp"], cfg["ki"], max_offset=cfg["max_offset"])


def build_sim(variant, cfg, threads=1):
    """asr.Sim(ur10, 1, variant, controller) for a law_config; asr's ValueError / TypeError
    (naming the gain) pass through."""
    variants = robot_variants()
    if variant not in variants:
        raise InteractionInputError(f"variant: got {variant!r}, valid: {', '.join(variants)}")
    return asr.Sim(ROBOT, 1, variant=variant, controller=make_controller(cfg), threads=threads)


def check_position(position):
    """(3,) floats inside BOX, else InteractionInputError naming the axis and the range."""
    p = [float(v) for v in position]
    if len(p) != 3 or not all(math.isfinite(v) for v in p):
        raise InteractionInputError(f"position: expected 3 finite numbers (m), got {p[:3]}")
    for v, (axis, (lo, hi)) in zip(p, BOX.items()):
        if not lo <= v <= hi:
            raise InteractionInputError(
                f"position: {axis} = {v:g} m is outside [{lo:g}, "
                f"{hi:g}] m (the box around the plate)"
            )
    return p


def start_setpoint(sim, position):
    """Send the start setpoint to the tool position (3,) m; answers the joint tolerance (rad) of
    an elastic arm's setpoints, None for a rigid one. A rigid arm goes to the inverse
    kinematics' link angles. Elastic joints (modes 3, 6) sag under gravity below the
    equilibria they are sent (0.03 rad at ur10's stiff preset, 0.2 rad soft: the tool 3 / 26 cm
    low), so the arm gets the equilibria whose springs hold gravity at those link angles
    (asr's gravity_equilibria) and the FSM compares the link angles with them within the
    largest deflection plus the controller's setpoint_tol."""
    ctl = sim.controller
    if all(j.mode == 1 for j in sim.robot.joints):
        ctl.setpoint(position=position, duration=START_DURATION_S)
        return None
    orientation = ctl.task_frame[0]  # the tool frame at INIT: the orientation held
    q, ok = ctl.solve_ik(position, orientation)
    if not ok:
        raise InteractionInputError(f"position: {position} m is not reachable with the tool down")
    refs = np.array(sim.robot.initial_refs, float)  # in effect: the Sim is not stepped yet
    eq = ctl.gravity_equilibria(q, refs[:, 1])
    tol = float(np.max(np.abs(eq - q))) + ctl.spec.setpoint_tol
    ctl.setpoint(q=eq, duration=ELASTIC_START_S, tolerance=tol, start=refs[:, 0])
    return tol


def decimate_idx(n, points):
    """At most `points` indices of n samples, evenly spaced, the last kept."""
    if n <= points:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, points).round().astype(int))


class InteractionSession:
    """One interaction-control Sim at a time; see the module doc. `publish(msg)` sends an
    `interaction` message to every client (the runner's publish)."""

    def __init__(self, settings, publish):
        self.settings = settings
        self.publish = publish
        self._lock = threading.RLock()
        self._switch_lock = threading.Lock()  # one law change built at a time
        self._start_lock = threading.Lock()  # one session start built at a time
        self._thread = None
        self._stop = threading.Event()
        self._closed = False
        self._commands = queue.Queue(COMMAND_QUEUE)
        self._sim = None
        self._variant = None
        self._cfg = None
        self._time = 0.0
        self._f_ref = np.zeros(3)
        self._tol = None  # the setpoints' joint tolerance of an elastic arm (rad), else None
        self._offset = np.zeros(3)  # x_d - x_m at rest at the start pose (the sag), m
        self._await_offset = False
        self._resend_force = False
        self._message = None
        self._await_static = False  # the message says "holding" once the FSM is static again
        self._last = None  # the last published state
        self._scene = None  # SceneStream of the Sim (robot3d), a new scene_id per session
        self._scene_ids = itertools.count(1)

    # ------------------------------------------------------------ status

    @property
    def running(self):
        t = self._thread
        return t is not None and t.is_alive() and not self._stop.is_set()

    def status(self):
        with self._lock:
            last = dict(self._last) if self._last else {}
            cfg = dict(self._cfg) if self._cfg else None
        return {
            "running": self.running,
            "robot": ROBOT,
            "variant": self._variant,
            "law": cfg["law"] if cfg else None,
            "gains": {k: v for k, v in cfg.items() if k != "law"} if cfg else None,
            "time": last.get("time"),
            "fsm": last.get("fsm"),
            "f_e": last.get("f_e"),
            "f_d": last.get("f_d"),
            "x_m": last.get("x_m"),
            "x_d": last.get("x_d"),
            "force_reference": _vec(self._f_ref),
            "message": self._message,
        }

    def message(self, samples=None):
        return {
            "type": "interaction",
            **self.status(),
            "samples": samples or {"t": [], "f_e": [], "f_d": []},
            "robot3d": self.robot3d(),
        }

    def robot3d(self):
        """The 3-D view's part of a message: {"scene_id", "poses": (1, G, 12), "ghost" every
        few messages} (dashboard/scene.py SceneStream.frame), None before the first session."""
        with self._lock:
            stream = self._scene
        if stream is None:
            return None
        f = stream.frame()
        return dict(f["robot3d"], scene_id=f["scene_id"])

    def scene(self):
        """The session Sim's meshes for GET /api/scene/interaction (SceneStream.scene);
        NotRunning before the first session."""
        with self._lock:
            stream = self._scene
        if stream is None:
            raise NotRunning("no interaction session has run; POST /api/interaction/start first")
        return dict(stream.scene(), labels=[f"{ROBOT} ({self._variant})"])

    @staticmethod
    def options():
        try:
            variants = list(robot_variants())
        except InteractionInputError:
            variants = []
        return {
            "robot": ROBOT,
            "variants": variants,
            "laws": list(LAWS),
            "defaults": DEFAULT_GAINS,
            "gain_fields": {k: list(v) for k, v in GAIN_FIELDS.items()},
            "box": {k: list(v) for k, v in BOX.items()},
            "ranges": {
                k: {"min": lo, "max": hi, "unit": u} for k, (lo, hi, u, _) in RANGES.items()
            },
            "start_position": list(START_POSITION),
        }

    # ------------------------------------------------------------ control (request threads)

    def start(self, variant, law, gains=None, position=START_POSITION):
        """Build the Sim (asr checks the gains), move over the plate, hold; Busy if a session
        runs. Answers the status."""
        cfg = law_config(law, gains)
        position = check_position(position)
        # one start built at a time; the Sim and its scene are built outside self._lock, which
        # status() takes on the server's event loop: a build of seconds on a busy host would
        # hold every request and the stream
        if not self._start_lock.acquire(blocking=False):
            raise Busy("an interaction session is being started; try again")
        try:
            self._check_startable()
            sim = build_sim(variant, cfg, self.settings.threads)
            tol = start_setpoint(sim, position)
            scene = SceneStream(sim, 1, next(self._scene_ids))
            scene.scene()  # built here: the session thread holds the Sim while it steps
            self._install(sim, variant, cfg, tol, scene)
        finally:
            self._start_lock.release()
        self._publish()
        return self.status()

    def _check_startable(self):
        with self._lock:
            if self._closed:
                raise RuntimeError("the dashboard is stopping")
            if self._thread is not None and self._thread.is_alive():
                raise Busy(
                    "an interaction session is already running; POST /api/interaction/stop first"
                )

    def _install(self, sim, variant, cfg, tol, scene):
        """Make the built Sim the session's and start its thread."""
        with self._lock:
            self._check_startable()  # a stop or shutdown may have come while it was built
            self._tol = tol
            self._offset, self._await_offset = np.zeros(3), self._tol is not None
            self._sim, self._variant, self._cfg = sim, variant, cfg
            self._scene = scene
            self._time, self._f_ref, self._resend_force = 0.0, np.zeros(3), False
            self._message, self._await_static = "moving to the start pose", True
            self._last = self._snapshot()
            self._stop = threading.Event()
            self._commands = queue.Queue(COMMAND_QUEUE)
            self._thread = threading.Thread(
                target=self._loop, args=(self._stop,), name="asr-dashboard-interaction", daemon=True
            )
            self._thread.start()

    def stop(self, timeout=5.0):
        """End the thread (bounded wait); answers the status."""
        with self._lock:
            thread = self._thread
            self._stop.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        with self._lock:
            if thread is not None and self._message != "stopped":
                self._message = "stopped"
            fail_pending(self._commands, NotRunning("the interaction session stopped"))
            if thread is not None and not thread.is_alive():
                self._release()
        self._publish()
        return self.status()

    def _release(self):
        """The ended session's Sim released (call under the lock, its thread gone) and the
        memory it held given back (frames.give_back_memory): the 3-D view keeps its scene and
        last poses (SceneStream.release), the status its last state; a new start builds a new
        Sim."""
        if self._scene is not None:
            self._scene.release()
        self._sim = None
        give_back_memory(RELEASE_TRIM_S)

    def shutdown(self):
        with self._lock:
            self._closed = True
        self.stop()

    def set_law(self, law, gains=None):
        """A new law / gains: a new Sim built here (asr checks the gains), swapped in by the
        session thread (see the module doc)."""
        cfg = law_config(law, gains)
        self._require_running()
        if not self._switch_lock.acquire(blocking=False):
            raise Busy("a law change is being applied; try again")
        try:
            sim = build_sim(self._variant, cfg, self.settings.threads)
            return self._submit(lambda: self._swap(sim, cfg))
        finally:
            self._switch_lock.release()

    def set_reference(self, force=None, position=None):
        """New force reference (3,) N and / or position reference (3,) m (inside BOX)."""
        f = None if force is None else np.array([float(v) for v in force])
        if f is not None and (f.shape != (3,) or not np.all(np.isfinite(f))):
            raise InteractionInputError("force: expected 3 finite numbers (N)")
        if f is not None:
            check_range("force", f)
        p = None if position is None else check_position(position)
        self._require_running()
        return self._submit(lambda: self._reference(f, p))

    def _require_running(self):
        if not self.running:
            raise NotRunning("no interaction session is running; POST /api/interaction/start first")

    def _submit(self, fn):
        fut = concurrent.futures.Future()
        try:
            self._commands.put_nowait((fn, fut))
        except queue.Full:
            raise Busy("too many interaction commands waiting; try again") from None
        deadline = time.monotonic() + COMMAND_TIMEOUT_S
        while True:
            try:
                return fut.result(0.1)
            except concurrent.futures.TimeoutError:
                if not self.running:  # ended after the command was queued
                    fail_pending(self._commands, NotRunning("the interaction session stopped"))
                if time.monotonic() > deadline:
                    raise Busy("the interaction session did not answer in time") from None

    # ------------------------------------------------------------ session thread

    def _swap(self, sim, cfg):
        old = self._sim
        q = old.q[0].copy()
        refs = sim.robot.initial_refs
        refs = None if refs is None else np.array(refs, float).reshape(sim.n_joints, 2)
        if self._tol is None:  # rigid: motors at zero deflection at the present pose
            if refs is not None:
                refs[:, 0] = q
            sim.reset(q0=q, refs=refs)
            x_d = old.controller.x_d[0].copy()
            sim.controller.setpoint(position=x_d, duration=SWITCH_DURATION_S)
        else:  # elastic: the equilibria in effect, which hold gravity at the present pose
            q_c = old.controller.q_c[0].copy()
            refs[:, 0] = q_c
            sim.reset(q0=q, refs=refs)
            sim.controller.setpoint(q=q_c, duration=SWITCH_DURATION_S, tolerance=self._tol)
        with self._lock:
            self._sim, self._cfg = sim, cfg
            # the same arm and plate: the same scene
            self._scene = SceneStream(sim, 1, self._scene.scene_id, same_as=self._scene)
            self._resend_force = bool(np.any(self._f_ref != 0))
            self._message = f"{cfg['law']} gains applied; settling at the position reference"
            self._await_static = True
            self._last = self._snapshot()
        return self.status()

    def _reference(self, f, p):
        ctl = self._sim.controller
        try:
            if p is not None:
                x0 = ctl.x_d[0]
                goal = np.asarray(p) + self._offset  # the tool's position -> the reference's
                move = max(MIN_MOVE_S, float(np.linalg.norm(goal - x0)) / POSITION_SPEED)
                fd = ctl.f_d[0] if f is None else f
                ctl.trajectory([0.0, move], [x0, goal], [fd, fd])  # ControllerBusy unless static
            elif f is not None:
                ctl.set_references(force=f)
        except asr.controllers.interaction.ControllerBusy as exc:
            raise Busy(public_message(f"{exc}; try again once the state is 'static'")) from None
        with self._lock:
            if f is not None:
                self._f_ref = f.copy()
                self._resend_force = False
            if p is not None:
                self._message, self._await_static = "moving to the position reference", True
            else:
                self._message = "force reference set"
            self._last = self._snapshot()  # the answer shows the new references and state
        return self.status()

    def _snapshot(self):
        ctl = self._sim.controller
        cfg = self._cfg
        return {
            "time": round(self._time, 6),
            "fsm": ctl.fsm[0],
            "f_e": _vec(ctl.f_e[0]),
            "f_d": _vec(ctl.f_d[0]),
            "x_m": _vec(ctl.x_m[0]),
            "x_d": _vec(ctl.x_d[0] - self._offset),
            "law": cfg["law"],
        }

    def _apply_commands(self):
        apply_pending(self._commands, lambda fn: fn())

    def _loop(self, stop):
        period = 1.0 / self.settings.update_hz
        pacer = Pacer()
        try:
            while not stop.is_set():
                t0 = time.monotonic()
                self._apply_commands()
                samples = self._advance(pacer.steps(t0, period, 1.0, self._sim.dt))
                self._publish(samples)
                # at least MIN_YIELD_S asleep even when behind: Python's locks and the GIL are not
                # fair, and a loop that takes the lock again at once can starve the requests
                # waiting for it on a busy host (the Pacer makes up the time next tick)
                stop.wait(max(MIN_YIELD_S, period - (time.monotonic() - t0)))
        except Exception as exc:  # noqa: BLE001 - the session ends with its reason shown
            with self._lock:
                self._message = public_message(f"stopped by an error: {exc}", 300)
            stop.set()
        finally:
            fail_pending(self._commands, NotRunning("the interaction session stopped"))
            self._publish()

    def _advance(self, steps):
        sim = self._sim
        if steps <= 0:
            return None
        out = sim.rollout(steps)
        t = self._time + sim.dt * np.arange(1, steps + 1)
        with self._lock:
            self._time = float(t[-1])
            if self._resend_force and sim.controller.fsm[0] == "static":
                sim.controller.set_references(force=self._f_ref)
                self._resend_force = False
            if self._await_static and sim.controller.fsm[0] == "static":
                self._message, self._await_static = "holding (static law)", False
                if self._await_offset:  # at rest and free of contact at the start pose
                    self._offset = sim.controller.x_d[0] - sim.controller.x_m[0]
                    self._await_offset = False
            self._last = self._snapshot()
        idx = decimate_idx(steps, MAX_SAMPLES)
        return {
            "t": [round(float(x), 6) for x in t[idx]],
            "f_e": [_vec(v) for v in out["f_e"][0, idx]],
            "f_d": [_vec(v) for v in out["f_d"][0, idx]],
        }

    def _publish(self, samples=None):
        try:
            self.publish(self.message(samples))
        except Exception:  # noqa: BLE001 - a closed event loop: nobody to tell
            pass
