"""The live simulation's loop service: the runner thread that steps the Session's Sim
`update_hz` times a second (paced by dashboard/pacing.py), the queue of commands it applies
between rollouts, and the publisher of its messages to the subscribers.

Threads: the runner thread owns the Sim; REST and WebSocket handlers never touch it, they queue
commands (`submit`) that the runner applies before its next rollout and whose result (or
exception) comes back through a concurrent Future. Frames go to every subscriber through its own
bounded buffer filled on the subscriber's event loop with `loop.call_soon_threadsafe`; a slow
client loses old `extend` frames first, and waiting `figure` / `state` messages are replaced by
newer ones (dashboard/subscribers.py). A new client's first view is built on its own thread
(figure.FirstViews).

The session's history is the record of every simulation step of the last `window_s` (bounded:
frames.RECORD_MAX_BYTES), kept before the frame is decimated for the stream: a late tick's long
frame loses samples on the stream only, never in the history the exports and first views read.
"""

import concurrent.futures
import math
import queue
import threading
import time

from . import figure as fig
from . import frames, watch
from .commands import apply_pending, fail_pending
from .pacing import Pacer
from .subscribers import Subscriber, publish_threadsafe


class SimLoop:
    """The runner thread, its pacer and command queue, and the publisher (see the module doc).
    `session` is the dashboard.session.Session it steps, `lock` the lock of the session and the
    subscribers, `state()` the state message's body."""

    def __init__(self, settings, session, lock, state):
        self.settings = settings
        self.session = session
        self.lock = lock
        self.state = state
        self.frames = 0  # frames published since the server started
        self.error = None  # why the simulation paused after a failed rollout, or None
        self.pacer = Pacer()
        self.subscribers = set()
        self._commands = queue.Queue()
        self._stop = threading.Event()
        self._thread = None
        self._skeletons = fig.SkeletonCache()
        self._first_views = fig.FirstViews(self._take_first_view, settings)

    # ------------------------------------------------------------ lifecycle

    def start(self):
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="asr-dashboard-sim", daemon=True)
            self._thread.start()
            self._first_views.start()

    def stop(self, timeout):
        self._stop.set()
        self._first_views.stop(timeout)
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        fail_pending(self._commands, RuntimeError("the simulation runner has stopped"))

    def stopping(self):
        return self._stop.is_set()

    @property
    def running(self):
        return self._thread is not None and self._thread.is_alive()

    # ------------------------------------------------------------ commands

    def submit(self, fn):
        """Queue fn() for the runner thread; a concurrent Future with its result. If the loop is
        not running, fn is applied at once under the lock."""
        fut = concurrent.futures.Future()
        if not self.running:
            with self.lock:
                try:
                    fut.set_result(fn())
                except BaseException as exc:  # noqa: BLE001 - handed to the caller
                    fut.set_exception(exc)
            return fut
        self._commands.put((fn, fut))
        return fut

    def _run_locked(self, fn):
        with self.lock:
            return fn()

    # ------------------------------------------------------------ publishing

    def subscribe(self, loop):
        """A Subscriber whose first message is the current figure with the history (and the
        state), built by the first-view thread (figure.FirstViews), not on the event loop
        and not under the lock; the frames that follow it come after."""
        sub = Subscriber(loop, self.settings.client_queue, awaits_figure=True)
        self._first_views.request(sub)
        return sub

    def _take_first_view(self, subs):
        """(Snapshot, subscribers still open), registering them: called by FirstViews."""
        with self.lock:
            subs = [s for s in subs if not s.closed]
            self.subscribers.update(subs)
            return self.figure_snapshot(), subs

    def unsubscribe(self, sub):
        with self.lock:
            self.subscribers.discard(sub)
            sub.closed = True

    def publish(self, kind, msg):
        text = msg if isinstance(msg, str) else fig.dumps(msg)
        with self.lock:
            self.subscribers.difference_update(publish_threadsafe(self.subscribers, kind, text))

    def publish_figure(self):
        """The figure again, after a configuration change (history decimated as a first view;
        usually empty, the Sim having restarted)."""
        with self.lock:
            snap = self.figure_snapshot()
        self.publish("figure", fig.build_first_view(snap, self.settings))

    def publish_state(self):
        self.publish("state", {"type": "state", "state": self.state()})

    def view(self):
        s = self.session
        return fig.View(
            s.robot.name,
            s.robot.variant,
            tuple(s.joint_names),
            tuple(s.compare),
            tuple(s.presets.items()),
            s.run_id,
        )

    def figure_snapshot(self):
        """figure.Snapshot of the current configuration and history (call under the lock); the
        figure's trace styles and layout are built once per configuration change."""
        return fig.Snapshot(
            list(self.session.history), self._skeletons.get(self.view()), fig.dumps(self.state())
        )

    def max_points(self):
        return int(
            math.ceil(self.settings.window_s * self.settings.update_hz * self.settings.max_samples)
        )

    # ------------------------------------------------------------ the loop

    def _run(self):
        period = 1.0 / self.settings.update_hz
        next_tick = time.perf_counter()
        s = self.session
        while not self._stop.is_set():
            apply_pending(self._commands, self._run_locked)
            if s.paused:
                self.pacer.reset()
            else:
                try:
                    if s.failed:  # resumed after a failure: from the initial state
                        with self.lock:
                            s.restart()
                            self.publish_figure()
                    self._tick(period)
                except Exception as exc:  # noqa: BLE001 - reported once, the simulation pauses
                    with self.lock:
                        self._halt(exc)
                else:
                    if self.error is not None:  # running again
                        with self.lock:
                            self.error = None
                            self.publish_state()
            next_tick += period
            now = time.perf_counter()
            if next_tick < now - period:  # fell behind: do not try to catch up
                next_tick = now
            self._stop.wait(max(0.0, next_tick - now))

    def _halt(self, exc):
        """A rollout failed: pause (the Sim restarts from the initial state when it runs again),
        keep the error in the state and tell the clients once what failed, its likely cause
        and how to recover."""
        self.session.paused = True
        self.session.failed = True
        self.error = self.session.failure_message(exc)
        self.publish("error", {"type": "error", "message": f"simulation {self.error}"})
        self.publish_state()

    def _advance(self, steps):
        if self.session.watcher is not None:
            return watch.advance(self.session, steps)
        return frames.advance(self.session, steps, self.lock)

    def _tick(self, period):
        dt = self.session.sim.dt
        speed = self.session.speed
        if speed == "max":
            self.pacer.reset()
            deadline = time.perf_counter() + 0.8 * period
            chunk = max(1, int(round(period / dt)))
            parts = []
            while True:
                parts.append(self._advance(chunk))
                if time.perf_counter() >= deadline or self._stop.is_set():
                    break
            frame = frames.join(parts)
        else:
            steps = self.pacer.steps(time.perf_counter(), period, speed, dt)
            if steps == 0:  # a slow speed: less than a step due yet
                return
            frame = self._advance(steps)
        self._emit(frame)

    def _emit(self, frame):
        # the page shows the clamped joints in its status line
        f, clamped = frames.decimate(frame, self.session.joint_names, self.settings.max_samples)
        s = self.session
        kept = frames.record(frame)  # the history: every step, whatever the stream dropped
        steps = frames.record_steps(kept, self.settings.window_s, s.sim.dt)
        with self.lock:
            s.history.append(kept)
            frames.keep_newest(s.history, steps)
            self.frames += 1
            msg = fig.extend_message(f, self.view().n_traces)
            msg.update(
                maxPoints=self.max_points(),
                t=s.time,
                frame=self.frames,
                run_id=s.run_id,
                clamped=clamped,
            )
            # robot3d: scene_id, geom poses, ghost, the watched task's target
            msg.update(s.robot3d.frame(getattr(s.watcher, "target", None)))
        self.publish("extend", msg)
