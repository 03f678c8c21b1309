"""Tasks: asr vector environments on the robots of robots/.

Actions are flat float64 vectors [equilibrium_1..J (rad), preset_1..J (rad)] in physical units,
held as the joints' references (mode 3 or 6) over one env step; observations are float64.

Each task names its entries: OBSERVATION and ACTION, tuples of (name, unit), one per entry in
order (what asr.rl.export_onnx writes into an exported policy's metadata).

Every task takes the keyword `randomization` (asr.envs.randomization.Randomization: start pose,
link masses, spring parameters, sensor noise, action latency; default off) and
render_mode="rgb_array" (asr.envs.vector). With sensor noise the observation's q and qd (and
what is computed from them, q - target) are the noisy readings; rewards and infos use the true
state.
"""

import numpy as np
from gymnasium import spaces

from asr.core.models import get_model
from asr.envs.metrics import FINAL_ERROR
from asr.envs.vector import AsrVectorEnv

# the qbmove Advanced soft / stiff presets (rad), from the model's own definition
_PRESET = get_model("qbmove_advanced").spec.preset
PRESET_SOFT, PRESET_STIFF = _PRESET.soft, _PRESET.stiff


class EquilibriumTracking(AsrVectorEnv):
    """1-DOF qbmove Advanced pendulum (robots/pendulum_1dof, variant qbmove_advanced, mode 3)
    holding a random target angle against gravity.

    observation (4,): q (rad), qd (rad/s), target (rad), q - target (rad).
    action (2,): equilibrium in [-1.5, 1.5] rad, preset in [0.2, 0.6] rad (soft .. stiff).
    reward per env step: -|q - target| - stiffness_cost * (preset - 0.2) / 0.4, with q at the
        end of the step: a stiff joint tracks better under gravity (soft ones sag 0.27 rad at
        preset 0.2) but costs; stiffness_cost = 0.1 by default.
    Episodes: 2 s = 100 env steps of 20 ms (20 sim steps of 1 ms), then truncated; target
    uniform in [-0.8, 0.8] rad; start at rest at the robot's initial state (q = -0.284 rad,
    equilibrium 0, soft preset). Never terminates (only on a simulation error).

    Timestep: the robot's MJCF uses 0.1 ms for its stiff SEA and AwAS-II variants; the qbmove
    Advanced variant at presets <= 0.6 rad has stiffness <= 3.8 N m/rad, omega = 109 rad/s, so
    1 ms (omega dt = 0.11) is stable and accurate, and 10x cheaper.
    """

    robot, variant, timestep = "pendulum_1dof", "qbmove_advanced", 1e-3
    frame_skip, max_episode_steps = 20, 100
    target_range = 0.8
    stiffness_cost = 0.1
    metric = FINAL_ERROR
    render_camera = (0.0, -10.0)  # the pendulum swings in the y-z plane: look along +x

    OBSERVATION = (("q", "rad"), ("qd", "rad/s"), ("target", "rad"), ("q - target", "rad"))
    ACTION = (("equilibrium", "rad"), ("preset", "rad"))

    single_observation_space = spaces.Box(-np.inf, np.inf, (4,), np.float64)
    single_action_space = spaces.Box(
        np.array([-1.5, PRESET_SOFT]), np.array([1.5, PRESET_STIFF]), (2,), np.float64
    )

    def __init__(self, num_envs=1, *, stiffness_cost=None, **kwargs):
        if stiffness_cost is not None:
            self.stiffness_cost = float(stiffness_cost)
        super().__init__(num_envs, **kwargs)
        self.target = np.zeros(self.num_envs)
        self._preset = np.full(self.num_envs, PRESET_SOFT)
        r = self.sim.robot
        self._q0[:] = r.initial_q
        self._refs0[:] = r.initial_refs

    def _sample(self, i, rng):
        self.target[i] = rng.uniform(-self.target_range, self.target_range)

    def _refs(self, actions):
        self._preset = np.where(self._autoreset, self._preset, actions[:, 1])
        return np.stack([actions[:, :1], actions[:, 1:]], axis=-1)  # (N, 1, 2)

    def _observe(self):
        q, qd = self._q_obs[:, 0], self._qd_obs[:, 0]
        return np.stack([q, qd, self.target, q - self.target], axis=1)

    def _reward(self):
        err = np.abs(self.q[:, 0] - self.target)
        return -err - self.stiffness_cost * (self._preset - PRESET_SOFT) / (
            PRESET_STIFF - PRESET_SOFT
        )

    def _infos(self):
        return (
            {"target": self.target},
            {
                "tracking_error": np.abs(self.q[:, 0] - self.target),
                "stiffness": self.sim.batch.stiffness[:, 0],
            },
        )


class Reach2DOF(AsrVectorEnv):
    """2-DOF qbmove Advanced arm (robots/qbmove_arm_2dof, variant horizontal, mode 6: motor PID
    and dynamics) reaching a random joint-space target.

    observation (8,): q1, q2 (rad), qd1, qd2 (rad/s), target1, target2 (rad), q - target (2).
    action (4,): equilibria in [-1.5, 1.5] rad, presets in [0.2, 0.6] rad.
    reward per env step: -||q - target|| - stiffness_cost * mean normalised preset (default 0.05).
    Episodes: 2.5 s = 125 env steps of 20 ms (20 sim steps of the MJCF's 1 ms), then truncated;
    targets uniform in [-1, 1] rad per joint; start at rest at the robot's initial state.
    """

    robot, variant = "qbmove_arm_2dof", "horizontal"
    frame_skip, max_episode_steps = 20, 125
    target_range = 1.0
    stiffness_cost = 0.05
    metric = FINAL_ERROR
    render_camera = (90.0, -75.0)  # the arm moves in the horizontal plane: look from above

    OBSERVATION = (
        ("q1", "rad"),
        ("q2", "rad"),
        ("qd1", "rad/s"),
        ("qd2", "rad/s"),
        ("target1", "rad"),
        ("target2", "rad"),
        ("q1 - target1", "rad"),
        ("q2 - target2", "rad"),
    )
    ACTION = (
        ("equilibrium1", "rad"),
        ("equilibrium2", "rad"),
        ("preset1", "rad"),
        ("preset2", "rad"),
    )

    single_observation_space = spaces.Box(-np.inf, np.inf, (8,), np.float64)
    single_action_space = spaces.Box(
        np.array([-1.5, -1.5, PRESET_SOFT, PRESET_SOFT]),
        np.array([1.5, 1.5, PRESET_STIFF, PRESET_STIFF]),
        (4,),
        np.float64,
    )

    def __init__(self, num_envs=1, *, stiffness_cost=None, **kwargs):
        if stiffness_cost is not None:
            self.stiffness_cost = float(stiffness_cost)
        super().__init__(num_envs, **kwargs)
        self.target = np.zeros((self.num_envs, 2))
        self._preset = np.full((self.num_envs, 2), PRESET_SOFT)
        r = self.sim.robot
        self._q0[:] = r.initial_q
        self._refs0[:] = r.initial_refs

    def _sample(self, i, rng):
        self.target[i] = rng.uniform(-self.target_range, self.target_range, 2)

    def _refs(self, actions):
        self._preset = np.where(self._autoreset[:, None], self._preset, actions[:, 2:])
        return np.stack([actions[:, :2], actions[:, 2:]], axis=-1)  # (N, 2, 2)

    def _observe(self):
        q, qd = self._q_obs, self._qd_obs
        return np.concatenate([q, qd, self.target, q - self.target], axis=1)

    def _reward(self):
        dist = np.linalg.norm(self.q - self.target, axis=1)
        return -dist - self.stiffness_cost * np.mean(
            (self._preset - PRESET_SOFT) / (PRESET_STIFF - PRESET_SOFT), axis=1
        )

    def _infos(self):
        return (
            {"target": self.target},
            {
                "distance": np.linalg.norm(self.q - self.target, axis=1),
                "stiffness": self.sim.batch.stiffness,
            },
        )


__all__ = ["EquilibriumTracking", "Reach2DOF"]


from asr.envs.vector import AsrEnv  # noqa: E402


class EquilibriumTrackingEnv(AsrEnv):
    """EquilibriumTracking as a single gymnasium.Env (gymnasium.make, SyncVectorEnv)."""

    def __init__(self, render_mode=None, **kwargs):
        super().__init__(EquilibriumTracking, render_mode=render_mode, **kwargs)


class Reach2DOFEnv(AsrEnv):
    """Reach2DOF as a single gymnasium.Env (gymnasium.make, SyncVectorEnv)."""

    def __init__(self, render_mode=None, **kwargs):
        super().__init__(Reach2DOF, render_mode=render_mode, **kwargs)


__all__ += ["EquilibriumTrackingEnv", "Reach2DOFEnv"]
