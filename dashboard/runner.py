"""The simulation runner: the dashboard's services around one live asr.Sim, and the commands the
routes submit to them (PROTOCOL.md).

- dashboard/session.py: the Session (robot, configuration, Sim, history; its serialisation is
  the workspace);
- dashboard/loop.py: the SimLoop service (the runner thread, its pacer and command queue, the
  publisher to the subscribers); dashboard/frames.py builds its frames;
- one service per feature: dashboard/ilc.py (ILCRun: the ILC on its own Sim in a worker
  thread), dashboard/watch.py (a trained policy choosing the references), dashboard/datasheet.py,
  dashboard/exports.py; interaction (dashboard/interaction.py) and training (dashboard/rl.py)
  run beside the runner and publish through it.

The routes call `submit(fn)`: fn(runner) runs on the runner thread under the lock, before the
next rollout. A command changes the Session all or nothing, then publishes the new figure (when
the Sim changed) and state.
"""

import threading

from . import datasheet, exports, watch
from .ilc import ILCRun
from .loop import SimLoop
from .robots import motor_count
from .session import Session


class SimRunner:
    """The dashboard's services around the live Sim; see the module doc and PROTOCOL.md."""

    def __init__(self, settings):
        self.settings = settings
        self.lock = threading.RLock()  # the session, its history, the subscribers
        self.session = Session(settings, settings.robot, settings.variant)
        self.loop = SimLoop(settings, self.session, self.lock, self.state)
        self.ilc = ILCRun(settings, self.loop.publish, self.loop.stopping)
        self.session.start_first_view_motion()

    # ------------------------------------------------------------ lifecycle

    def start(self):
        self.loop.start()

    def stop(self, timeout=5.0):
        self.loop.stop(timeout)
        self.ilc.shutdown(timeout)

    @property
    def running(self):
        return self.loop.running

    def submit(self, fn):
        """Queue fn(self) for the runner thread; a concurrent Future with its result. If the
        runner is not running, fn is applied at once under the lock."""
        return self.loop.submit(lambda: fn(self))

    def subscribe(self, loop):
        return self.loop.subscribe(loop)

    def unsubscribe(self, sub):
        self.loop.unsubscribe(sub)

    def publish(self, kind, msg):
        self.loop.publish(kind, msg)

    # ------------------------------------------------------------ commands (runner thread)

    def _changed(self, sim=None):
        """Publish the figure (unless the Sim is still `sim`) and the state; the new state."""
        if self.session.sim is not sim:
            self.loop.publish_figure()
        self.loop.publish_state()
        return self.state()

    def control(self, c):
        """Apply a partial control update (dict as models.Control.model_dump(exclude_none)),
        whole or not at all: validated completely (ranges, joints, modes, presets, the limit
        order) before anything changes, and put back exactly if applying it fails anyway.
        Returns the new state."""
        sim = self.session.sim
        with self.session.all_or_nothing():
            self.session.apply_control(c)
        return self._changed(sim)

    def set_stiffness(self, which, joint=None):
        """Every joint's preset (or only `joint`'s) to its `which` ("soft" / "stiff") button
        preset; a named joint without a preset raises ControlError."""
        return self.control({"preset": self.session.stiffness_presets(which, joint)})

    def do_push(self, p):
        return self.session.set_push(p)

    def reset(self):
        self.session.restart()
        return self._changed()

    def switch_robot(self, robot, variant=None):
        with self.session.all_or_nothing():
            self.session.load_named(robot, variant)
        return self._changed()

    def set_compare(self, presets):
        with self.session.all_or_nothing():
            self.session.set_compare(presets)
        return self._changed()

    def workspace(self):
        return self.session.workspace()

    def load_workspace(self, ws):
        """Load a saved configuration whole, or keep the current one exactly (robot, variant,
        presets, modes, params, references, speed, pause, compare and the running Sim)."""
        with self.session.all_or_nothing():
            self.session.load_workspace(ws)
        return self._changed()

    def scene(self):
        """robot3d: the current robot's scene for GET /api/scene (SceneStream.scene)."""
        return self.session.robot3d.scene()

    def datasheet_inputs(self, joint):
        return datasheet.datasheet_inputs(self.session, joint)

    def start_watch(self, watcher):
        """Load the watcher's task robot and let the policy choose the references from now on
        (PROTOCOL.md "RL")."""
        watch.start(self.session, watcher)
        return self._changed()

    def stop_watch(self):
        """Back to manual control: every joint holds the policy's last equilibrium."""
        watch.stop(self.session)
        self.loop.publish_state()
        return self.state()

    def watch_info(self):
        """The watched policy's {task, run, target, env_step}, or None (any thread)."""
        return watch.info(self.session)

    def start_ilc(self, cfg):
        """Start the ILC of [Mengacci2021] sec. 4.3 on a separate Sim of the current robot;
        raises Busy if one runs."""
        return self.ilc.start(self.session, cfg)

    def stop_ilc(self):
        return self.ilc.stop()

    def ilc_status(self):
        return self.ilc.status()

    def ilc_result_npz(self):
        return self.ilc.result_npz()

    # ------------------------------------------------------------ state and exports

    def state(self):
        s, loop = self.session, self.loop
        return dict(
            s.state(),
            lost_s=loop.pacer.lost_s,
            run_id=s.run_id,
            update_hz=self.settings.update_hz,
            window_s=self.settings.window_s,
            frames=loop.frames,
            clients=len(loop.subscribers),
            ilc=self.ilc.status(),
            error=loop.error,
            watch=self.watch_info(),
        )

    def export_npz(self):
        s = self.session
        with self.lock:
            frames = list(s.history)  # frames are never modified once kept
            meta = {
                "robot": s.robot.name,
                "variant": s.robot.variant,
                "joints": s.joint_names,
                "presets": s.presets,
                "compare": s.compare,
                "dt": s.sim.dt,
            }
            n = s.sim.n_instances
        return exports.history_npz(frames, meta, n)

    def export_html(self):
        s = self.session
        with self.lock:
            snap = self.loop.figure_snapshot()
            motors = {name: motor_count(m) for name, m in zip(s.joint_names, s.models)}
        return exports.history_html(snap, motors, self.settings)
