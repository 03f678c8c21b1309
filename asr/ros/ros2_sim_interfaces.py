"""The ROS 2 standard simulation interfaces (simulation_interfaces 1.x, the definitions Gazebo
and Isaac Sim implement) on asr's ROS 2 node (asr.ros.ros2_node.Ros2Node); docs/ros.md has the
table. simulation_interfaces is not on PyPI: asr/ros/interfaces/build.py builds it; without it
the node runs without these interfaces (`SimInterfaces.start` logs why once).

Names: the standard names no services; as Gazebo does (under its node), each is the interface's
name in snake_case, here in the node's namespace beside asr's own services: `<ns>/reset_simulation`,
`<ns>/simulate_steps`, ... (NAMES).

Simulation states (SimulationState):
- PLAYING: not paused; real time: periods run on the wall clock; lockstep: a `step` message or
  `step_period` call runs one period (playing does not step on its own there).
- PAUSED: asr's pause (`pause` true): no period runs but StepSimulation / SimulateSteps.
- STOPPED: paused at t = 0 in the reset state: SetSimulationState(STOPPED) resets (as
  ResetSimulation) and pauses; play, pause or a step leave it (pause(false) too, and a STOPPED
  node that was played and paused again before any period ran reads STOPPED again: t = 0 and
  the reset state are what STOPPED means). STOPPED -> PAUSED starts paused, without a step.
- QUITTING: the node answers, then its stepping loop ends and it exits (status 0).
NO_WORLD and LOADING_WORLD never hold (asr has one robot, loaded when the node starts).

One step of StepSimulation / SimulateSteps is one period of the node (1/rate s, the period of
`step_period`), its states published as any period's. Both need the simulation paused (or
stopped, which they leave for paused); else RESULT_OPERATION_FAILED, as the standard asks.

Entities: the robot's MuJoCo bodies but the world (engine='mujoco'; engine='gazebo' has none:
RESULT_FEATURE_UNSUPPORTED). Their states are the engine's own: MjData's body frame (xpos, xquat)
and its 6-D velocity (mj_objectVelocity of that frame, world-oriented) after the last period, with
kinematics recomputed from the current qpos/qvel (mj_kinematics, mj_comPos, mj_comVel: derived
quantities only, the state and the next step are unchanged), in frame "world", stamped with the
node's time (NodeCore.stamp_ns). Accelerations are not reported (zeros).
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import numpy as np

from asr.ros._ros2_types import CLOSING

MAX_STEPS = 1_000_000  # one StepSimulation call or SimulateSteps goal, periods
FRAME = "world"
# why a StepSimulation call or SimulateSteps goal stopped short (SimInterfaces._one_step), as
# its result's message, given the steps done and asked for
_STOPPED = {
    "played": lambda k, n: f"played after {k} of {n} steps",
    "closing": lambda k, n: f"{CLOSING}: stopped after {k} of {n} steps",
}
NAMES = {
    "features": "get_simulator_features",
    "reset": "reset_simulation",
    "step": "step_simulation",
    "simulate": "simulate_steps",
    "get_state": "get_simulation_state",
    "set_state": "set_simulation_state",
    "entities": "get_entities",
    "entity_state": "get_entity_state",
    "entities_states": "get_entities_states",
}


def features(engine: str) -> list[int]:
    """The SimulatorFeatures values asr supports (GetSimulatorFeatures), for `engine`."""
    from simulation_interfaces.msg import SimulatorFeatures as F

    out = [
        F.SIMULATION_RESET,
        F.SIMULATION_STATE_GETTING,
        F.SIMULATION_STATE_SETTING,
        F.SIMULATION_STATE_PAUSE,
        F.STEP_SIMULATION_SINGLE,
        F.STEP_SIMULATION_MULTIPLE,
        F.STEP_SIMULATION_ACTION,
    ]
    if engine == "mujoco":
        out.append(F.ENTITY_STATE_GETTING)
    return sorted(out)


def _split_ns(ns: int) -> tuple[int, int]:
    return ns // 1_000_000_000, ns % 1_000_000_000


class SimInterfaces:
    """The simulation_interfaces services and the SimulateSteps action of one Ros2Node.
    `start()` creates them (after the node's own services); it returns False, logging why,
    when simulation_interfaces does not import."""

    def __init__(self, node: Any) -> None:
        self.node = node  # the Ros2Node
        self.core = node.core
        self.stopped = False  # SetSimulationState(STOPPED) held (see the module docstring)
        self._goal_lock = threading.Lock()  # one SimulateSteps goal steps at a time
        self._busy = False
        self._bodies: list[tuple[str, int]] | None = None
        self._goals: list[threading.Thread] = []  # SimulateSteps goals' stepping threads

    # ------------------------------------------------------------ setup

    def start(self) -> bool:
        ros = self.node._node
        try:
            from simulation_interfaces import action, srv
        except ImportError as exc:
            ros.get_logger().warning(
                "asr ros2: simulation_interfaces is not installed, so the standard simulation "
                f"services are off (python asr/ros/interfaces/build.py builds it): {exc}"
            )
            return False
        from rclpy.action import ActionServer, CancelResponse, GoalResponse

        n, add = NAMES, self._add_service
        add(srv.GetSimulatorFeatures, n["features"], self._features)
        add(srv.ResetSimulation, n["reset"], self._reset)
        add(srv.StepSimulation, n["step"], self._step)
        add(srv.GetSimulationState, n["get_state"], self._get_state)
        add(srv.SetSimulationState, n["set_state"], self._set_state)
        add(srv.GetEntities, n["entities"], self._entities)
        add(srv.GetEntityState, n["entity_state"], self._entity_state)
        add(srv.GetEntitiesStates, n["entities_states"], self._entities_states)

        def on_goal(goal: Any) -> Any:
            with self._goal_lock:
                if self._busy:  # one goal at a time: a second is rejected, not queued
                    return GoalResponse.REJECT
                self._busy = True
            return GoalResponse.ACCEPT

        self._action = ActionServer(
            ros,
            action.SimulateSteps,
            n["simulate"],
            execute_callback=self._simulate,
            goal_callback=on_goal,
            cancel_callback=lambda goal_handle: CancelResponse.ACCEPT,
        )
        return True

    def _add_service(self, cls: Any, name: str, callback: Any) -> None:
        """Serve `callback` on `name`; an exception in it is logged and answered
        RESULT_OPERATION_FAILED (an exception out of a callback would stop the executor: the
        node would serve nothing more)."""
        from simulation_interfaces.msg import Result

        logger = self.node._node.get_logger()

        def guarded(request: Any, response: Any) -> Any:
            try:
                return callback(request, response)
            except Exception as exc:  # noqa: BLE001 - answered and logged, the node goes on
                logger.error(f"asr ros2: {name} failed: {exc!r}")
                if hasattr(response, "result"):
                    self._result(response, Result.RESULT_OPERATION_FAILED, f"failed: {exc!r}")
                return response

        self.node._node.create_service(cls, name, guarded)

    # ------------------------------------------------------------ state

    def state(self) -> int:
        """The SimulationState value now."""
        from simulation_interfaces.msg import SimulationState as S

        if not self.core.paused:
            return int(S.STATE_PLAYING)
        if self.stopped and self.core.periods == 0:
            return int(S.STATE_STOPPED)
        return int(S.STATE_PAUSED)

    def _result(self, response: Any, code: int, message: str = "") -> Any:
        response.result.result = code
        response.result.error_message = message
        return response

    def _set_paused(self, paused: bool) -> None:
        """As asr's `pause` service: under the stepping lock; resuming restarts the real-time
        schedule."""
        with self.node._lock:
            self.core.paused = paused
        if not paused:
            self.node._restart.set()

    def _reset(self, request: Any, response: Any) -> Any:
        from simulation_interfaces.msg import Result
        from simulation_interfaces.srv import ResetSimulation

        R = ResetSimulation.Request
        scope = int(request.scope)
        both = R.SCOPE_TIME | R.SCOPE_STATE
        if scope not in (R.SCOPE_DEFAULT, R.SCOPE_ALL) and scope & both != both:
            return self._result(
                response,
                Result.RESULT_FEATURE_UNSUPPORTED,
                f"scope: got {scope}; asr resets time and state together: SCOPE_DEFAULT (0), "
                f"SCOPE_ALL (255) or a scope with SCOPE_TIME | SCOPE_STATE ({both})",
            )
        self.node._srv_reset(None, _Reply())
        return self._result(response, Result.RESULT_OK)

    def _features(self, request: Any, response: Any) -> Any:
        response.features.features = features(self.core.engine)
        response.features.spawn_formats = []
        response.features.custom_info = (
            f"asr: robot {self.core.robot.name}; one step = one node period of "
            f"{self.core.period:g} s; entities: the robot's links (engine bodies); "
            "STOPPED = paused at t = 0 after a reset; docs/ros.md"
        )
        return response

    def _get_state(self, request: Any, response: Any) -> Any:
        from simulation_interfaces.msg import Result

        response.state.state = self.state()
        return self._result(response, Result.RESULT_OK)

    def _set_state(self, request: Any, response: Any) -> Any:
        from simulation_interfaces.msg import Result
        from simulation_interfaces.msg import SimulationState as S
        from simulation_interfaces.srv import SetSimulationState as R

        target, now = int(request.state.state), self.state()
        if target == now:
            return self._result(
                response, R.Response.ALREADY_IN_TARGET_STATE, f"already in state {now}"
            )
        if target == S.STATE_PLAYING:
            self.stopped = False
            self._set_paused(False)
        elif target == S.STATE_PAUSED:
            self.stopped = False
            self._set_paused(True)
        elif target == S.STATE_STOPPED:
            self._set_paused(True)
            self.node._srv_reset(None, _Reply())
            self.stopped = True
        elif target == S.STATE_QUITTING:
            self._set_paused(True)
            self.node._stop.set()  # the stepping loop ends; run_ros2_node closes and returns 0
        else:
            return self._result(
                response,
                Result.RESULT_FEATURE_UNSUPPORTED,
                f"state: got {target}; valid: STATE_STOPPED (0), STATE_PLAYING (1), "
                "STATE_PAUSED (2), STATE_QUITTING (3) (asr has one world, always loaded)",
            )
        return self._result(response, Result.RESULT_OK)

    # ------------------------------------------------------------ stepping

    def _check_steps(self, steps: int) -> str | None:
        if not 1 <= steps <= MAX_STEPS:
            return f"steps: got {steps}, valid range 1..{MAX_STEPS}"
        if not self.core.paused:
            return "the simulation is playing: pause it first (SetSimulationState PAUSED)"
        return None

    def _one_step(self) -> str | None:
        """One period while paused (its states published): None; else why none ran: "played"
        (no longer paused) or "closing" (the node is shutting down)."""
        with self.node._lock:
            if self.node.closing:
                return "closing"
            if not self.core.paused:
                return "played"
            self.stopped = False
            self.node._step_and_publish()
            return None

    @property
    def busy(self) -> bool:
        """A SimulateSteps goal runs or its result is not sent yet."""
        return self._busy

    def close(self, timeout: float) -> bool:
        """Wait (`timeout` s at most in all) for the SimulateSteps goals: their threads stop at
        their next period once the node is closing, and the goal's abort then goes out from
        the executor (still spinning); False when one still runs."""
        deadline = time.monotonic() + timeout
        for t in list(self._goals):
            t.join(max(deadline - time.monotonic(), 0.0))
        while self._busy and time.monotonic() < deadline:  # the result not sent yet
            time.sleep(0.01)
        return not self._busy and not any(t.is_alive() for t in self._goals)

    def _step(self, request: Any, response: Any) -> Any:
        from simulation_interfaces.msg import Result

        steps = int(request.steps)
        why = self._check_steps(steps)
        if why is not None:
            return self._result(response, Result.RESULT_OPERATION_FAILED, why)
        for k in range(steps):
            why = self._one_step()
            if why is not None:
                message = _STOPPED[why](k, steps)
                return self._result(response, Result.RESULT_OPERATION_FAILED, message)
        return self._result(response, Result.RESULT_OK)

    async def _simulate(self, goal_handle: Any) -> Any:
        """SimulateSteps: the periods run in a thread of their own, feedback after each, a
        cancel checked between them; this coroutine waits for it without holding the
        executor (which keeps serving the node's topics, services and the cancel)."""
        from rclpy.task import Future
        from simulation_interfaces.action import SimulateSteps
        from simulation_interfaces.msg import Result

        result = SimulateSteps.Result()
        try:
            steps = int(goal_handle.request.steps)
            why = self._check_steps(steps)
            if why is not None:
                goal_handle.abort()
                return self._result(result, Result.RESULT_OPERATION_FAILED, why)
            done: Future = Future(executor=self.node._executor)
            done.add_done_callback(lambda _: None)  # set_result wakes the executor
            goal = threading.Thread(
                target=self._run_goal, args=(goal_handle, steps, done), daemon=True
            )
            self._goals = [t for t in self._goals if t.is_alive()] + [goal]
            goal.start()
            outcome, completed = await done
            if outcome == "succeeded":
                goal_handle.succeed()
                return self._result(result, Result.RESULT_OK)
            if outcome == "canceled":
                goal_handle.canceled()
                return self._result(
                    result,
                    Result.RESULT_OPERATION_FAILED,
                    f"cancelled after {completed} of {steps} steps",
                )
            goal_handle.abort()
            return self._result(
                result, Result.RESULT_OPERATION_FAILED, _STOPPED[outcome](completed, steps)
            )
        finally:
            with self._goal_lock:
                self._busy = False

    def _run_goal(self, goal_handle: Any, steps: int, done: Any) -> None:
        from simulation_interfaces.action import SimulateSteps

        feedback = SimulateSteps.Feedback()
        outcome, k = "succeeded", 0
        try:
            for k in range(steps):
                if goal_handle.is_cancel_requested:
                    outcome = "canceled"
                    break
                why = self._one_step()
                if why is not None:
                    outcome = why
                    break
                feedback.completed_steps, feedback.remaining_steps = k + 1, steps - k - 1
                goal_handle.publish_feedback(feedback)
            else:
                k = steps
        finally:
            done.set_result((outcome, k))

    # ------------------------------------------------------------ entities

    def bodies(self) -> list[tuple[str, int]]:
        """[(name, MuJoCo body id)] of the robot's named bodies but the world; [] when the
        engine has no MuJoCo model."""
        if self._bodies is None:
            models = self.core.sim.models
            if not models:
                self._bodies = []
            else:
                import mujoco

                m = models[0]
                named = (
                    (mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b), b)
                    for b in range(1, m.nbody)
                )
                self._bodies = [(name, b) for name, b in named if name]
        return self._bodies

    def _match(self, filters: Any) -> tuple[int, str, list[tuple[str, int]]]:
        """(result code, message, matching bodies) for EntityFilters."""
        from simulation_interfaces.msg import Bounds, Result

        unsupported = []
        if len(filters.categories):
            unsupported.append("categories (ENTITY_CATEGORIES)")
        if len(filters.tags.tags):
            unsupported.append("tags (ENTITY_TAGS)")
        if filters.bounds.type != Bounds.TYPE_EMPTY or len(filters.bounds.points):
            unsupported.append("bounds (ENTITY_BOUNDS)")
        if unsupported:
            return Result.RESULT_FEATURE_UNSUPPORTED, f"filters: {', '.join(unsupported)}", []
        if not self.core.sim.models:
            return Result.RESULT_FEATURE_UNSUPPORTED, f"engine {self.core.engine}: no entities", []
        try:
            pattern = re.compile(filters.filter)
        except re.error as exc:
            return Result.RESULT_OPERATION_FAILED, f"filter: {filters.filter!r}: {exc}", []
        return Result.RESULT_OK, "", [(n, b) for n, b in self.bodies() if pattern.search(n)]

    def _entities(self, request: Any, response: Any) -> Any:
        code, why, found = self._match(request.filters)
        response.entities = [name for name, _ in found]
        return self._result(response, code, why)

    def _states(self, bodies: list[int]) -> tuple[int, np.ndarray]:
        """(stamp ns, (B, 13)): each body's position (3,) m, quaternion (4,) x y z w and
        velocity (6,): linear m/s, angular rad/s, world-oriented, at the node's time now."""
        import mujoco

        sim = self.core.sim
        out = np.empty((len(bodies), 13))
        with self.node._lock, sim.lock:
            m, d = sim.models[0], sim.datas[0]
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            mujoco.mj_comVel(m, d)
            vel = np.empty(6)
            for i, b in enumerate(bodies):
                mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_XBODY, b, vel, 0)
                w, x, y, z = d.xquat[b]
                out[i, :3], out[i, 3:7] = d.xpos[b], (x, y, z, w)
                out[i, 7:10], out[i, 10:] = vel[3:], vel[:3]
            stamp = self.core.stamp_ns
        return stamp, out

    def _fill(self, state: Any, stamp: int, row: np.ndarray) -> None:
        state.header.frame_id = FRAME
        state.header.stamp.sec, state.header.stamp.nanosec = _split_ns(stamp)
        p, q = state.pose.position, state.pose.orientation
        p.x, p.y, p.z = (float(v) for v in row[:3])
        q.x, q.y, q.z, q.w = (float(v) for v in row[3:7])
        lin, ang = state.twist.linear, state.twist.angular
        lin.x, lin.y, lin.z = (float(v) for v in row[7:10])
        ang.x, ang.y, ang.z = (float(v) for v in row[10:13])

    def _entity_state(self, request: Any, response: Any) -> Any:
        from simulation_interfaces.msg import Result

        if not self.core.sim.models:
            return self._result(
                response, Result.RESULT_FEATURE_UNSUPPORTED, f"engine {self.core.engine}"
            )
        ids = dict(self.bodies())
        if request.entity not in ids:
            return self._result(
                response,
                Result.RESULT_NOT_FOUND,
                f"entity: got {request.entity!r}; entities: {', '.join(ids)}",
            )
        stamp, rows = self._states([ids[request.entity]])
        self._fill(response.state, stamp, rows[0])
        return self._result(response, Result.RESULT_OK)

    def _entities_states(self, request: Any, response: Any) -> Any:
        from simulation_interfaces.msg import EntityState

        code, why, found = self._match(request.filters)
        response.entities = [name for name, _ in found]
        if found:
            stamp, rows = self._states([b for _, b in found])
            states = []
            for row in rows:
                states.append(EntityState())
                self._fill(states[-1], stamp, row)
            response.states = states
        return self._result(response, code, why)


class _Reply:
    """A stand-in for std_srvs' Trigger response (asr's `reset` service called in-process)."""

    success = False
    message = ""


__all__ = ["SimInterfaces", "features", "NAMES", "MAX_STEPS", "FRAME"]
