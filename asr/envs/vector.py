"""Gymnasium vector environments over one asr.Sim: N sub-environments stepped in one C call.

AsrVectorEnv is the base class: a task (asr.envs.tasks) says which robot it runs, how an action
becomes joint references (N, J, 2), what the observation and reward are and how a sub-env is
reset. step() holds the references of every sub-env over `frame_skip` simulation steps with a
single Sim.rollout (one C call for all N instances).

Autoreset: gymnasium's NEXT_STEP mode (gymnasium.vector.AutoresetMode), as SyncVectorEnv does it:
a step that ends sub-env i (terminated or truncated) returns its last observation; the next
step() resets sub-env i only (its action is ignored, reward 0, terminated = truncated = False, its
info the reset info) and steps the others. Sub-envs are reset one by one (Sim.reset with
`instances`), never all at once.

Seeding: reset(seed=s) seeds sub-env i with s + i (a list of seeds is taken as is), each with its
own numpy Generator, so sub-env i of a vector env equals a single env (AsrEnv) reset with seed
s + i, and both equal the i-th env of a SyncVectorEnv of single envs, bit for bit.

Randomisation (keyword `randomization`, asr.envs.randomization.Randomization; default off): start
pose, link masses, spring parameters and action latency drawn per episode, sensor noise per
observation, each from the sub-env's own generator (after the task's draws), so seeding keeps
its meaning. Off, no draw is made and every step is what it was without it, bit for bit.

Rendering: render_mode="rgb_array" (MuJoCo's offscreen Renderer, render_width x render_height
pixels): render() gives a tuple of N (H, W, 3) uint8 frames, AsrEnv.render() its one frame, so
gymnasium's RecordVideo records an AsrEnv. Headless machines need MUJOCO_GL=egl (or osmesa) set
before mujoco is first imported.
"""

import time

import gymnasium
import numpy as np
from gymnasium.error import ClosedEnvironmentError
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

import asr
from asr.envs.randomization import (
    SPRING_PARAMS,
    Randomization,
    draw_episode,
    draw_noise,
    moving_bodies,
)

RENDER_MODES = ["rgb_array"]
RENDER_SIZE_MAX = 2048  # pixels, the largest render_width / render_height taken


class AsrVectorEnv(gymnasium.vector.VectorEnv):
    """Base class: N sub-envs of one task over one asr.Sim of N instances.

    Subclasses (tasks) set: robot, variant, frame_skip, max_episode_steps, single spaces and
    implement the hooks _refs(actions) -> (N, J, 2), _sample(i, rng) (new episode of sub-env i),
    _observe() -> (N, obs_dim), _reward() -> (N,), _terminated() -> (N,), _infos() -> dicts
    of per-sub-env arrays.

    Public, for an agent that acts on a simulator other than the env's own (the dashboard's
    policy watch runs a trained policy on its live Sim through them): set_state(q, qd,
    env_step) writes the link state and the episode's time into the env, then observe(),
    refs(actions) and terminated() give the task's observation, joint references and end of
    episode for it, as step() computes them. N = num_envs, J = n_joints.
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": RENDER_MODES}

    robot: str | None = None
    variant: str | None = None
    timestep: float | None = None  # override of the MJCF timestep (s), None: keep it
    frame_skip = 20  # simulation steps per env step
    max_episode_steps = 100  # env steps, then truncated
    render_camera = (90.0, -15.0)  # azimuth, elevation (degrees) of the rendering's camera

    def __init__(
        self,
        num_envs=1,
        *,
        threads=1,
        render_mode=None,
        max_episode_steps=None,
        randomization=None,
        render_width=320,
        render_height=240,
    ):
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(
                f"render_mode: got {render_mode!r}, valid: None or one of {RENDER_MODES}"
            )
        for name, value in (("render_width", render_width), ("render_height", render_height)):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, np.integer))
                or not 16 <= value <= RENDER_SIZE_MAX
            ):
                raise ValueError(
                    f"{name}: got {value!r}, expected an int in [16, {RENDER_SIZE_MAX}] pixels"
                )
        self.randomization = Randomization.parse(randomization)
        if (
            isinstance(num_envs, bool)
            or not isinstance(num_envs, (int, np.integer))
            or num_envs < 1
        ):
            raise ValueError(f"num_envs: got {num_envs!r}, expected an int >= 1")
        self.num_envs = int(num_envs)
        self.render_mode = render_mode
        self.render_width, self.render_height = int(render_width), int(render_height)
        self._renderer = None
        if max_episode_steps is not None:
            self.max_episode_steps = int(max_episode_steps)
        robot = asr.load_robot(self.robot, self.variant)
        if self.timestep is not None:
            robot = with_timestep(robot, self.timestep)
        self._use_sim(self._make_sim(robot, threads))
        self.n_joints = self.sim.n_joints
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.env_dt = self.sim.dt * self.frame_skip
        self.metadata = {**type(self).metadata, "render_fps": round(1.0 / self.env_dt)}
        n = self.num_envs
        self._rngs = [None] * n
        self._seeds = [None] * n
        self._elapsed = np.zeros(n, dtype=np.int64)
        self._autoreset = np.zeros(n, dtype=bool)
        self._held = np.zeros((n, self.n_joints, 2))
        self._q0 = np.zeros((n, self.n_joints))
        self.q = np.zeros((n, self.n_joints))  # link state after the last reset / step
        self.qd = np.zeros((n, self.n_joints))
        self._refs0 = np.zeros((n, self.n_joints, 2))
        self._last = {}
        # what the task observes: the link state itself, or with sensor noise a copy of it
        r = self.randomization
        noisy = r.noise_q > 0 or r.noise_qd > 0
        self._q_obs = np.zeros((n, self.n_joints)) if noisy else self.q
        self._qd_obs = np.zeros((n, self.n_joints)) if noisy else self.qd
        self._start_dq = np.zeros((n, self.n_joints))  # start-angle offsets, rad
        self._latency = np.zeros(n, dtype=np.int64)  # env steps, per sub-env's episode
        self._actions = None  # (N, max latency + 1, act_dim) last actions, newest first
        if r.max_latency > 0:
            shape = (n, r.max_latency + 1) + self.single_action_space.shape
            self._actions = np.zeros(shape)

    # ------------------------------------------------------------ randomisation

    def _make_sim(self, robot, threads):
        """The asr.Sim of the sub-envs; with mass randomisation each instance gets its own
        MuJoCo model (Sim's mujoco_params), whose moving bodies' masses a reset then scales."""
        params = None
        if self.randomization.mass_scale > 0:
            m = robot.mj_model()
            names = [m.body(b).name for b in moving_bodies(m)]
            n = self.num_envs
            params = {"body_mass": {k: np.full(n, m.body(k).mass[0]) for k in names}}
        return asr.Sim(robot, self.num_envs, threads=threads, mujoco_params=params)

    def _use_sim(self, sim):
        """Take sim as the sub-envs' simulator and note the nominal values randomisation
        scales (masses, inertias, spring parameters)."""
        self.sim = sim
        r = self.randomization
        self._bodies = []
        if r.mass_scale > 0:
            self._bodies = moving_bodies(sim.models[0])
            self._mass0 = [np.array(m.body_mass[self._bodies]) for m in sim.models]
            self._inertia0 = [np.array(m.body_inertia[self._bodies]) for m in sim.models]
        self._spring_names = [()] * sim.n_joints
        self._spring0 = []
        if r.spring_scale > 0:
            b = sim.batch
            for j, spec in enumerate(b.specs):
                if spec.name not in SPRING_PARAMS:
                    raise ValueError(
                        f"randomization.spring_scale: got {r.spring_scale}, but joint {j} has "
                        f"model {spec.name!r}, whose springs are not randomised (models: "
                        f"{', '.join(SPRING_PARAMS)}); use spring_scale = 0"
                    )
            self._spring_names = [SPRING_PARAMS[spec.name] for spec in b.specs]
            self._spring0 = [
                {k: b.get_param(j, k) for k in names} for j, names in enumerate(self._spring_names)
            ]
        self._draws = [None] * self.num_envs

    def _rest_action(self, i):
        """(act_dim,) the action that holds sub-env i's initial references (what a delayed
        action is before the episode's first ones arrive): [equilibria, presets], clipped to
        the action space. A task whose actions are not these overrides it."""
        space = self.single_action_space
        a = np.concatenate([self._refs0[i, :, 0], self._refs0[i, :, 1]])
        if a.shape != space.shape:
            raise NotImplementedError(
                f"{type(self).__name__}: actions of shape {space.shape} are not [equilibria, "
                "presets]; define _rest_action(i) for the action latency"
            )
        return np.clip(a, space.low, space.high)

    def _randomize(self, idx):
        """New episodes of sub-envs idx: draw (after the task's _sample), then apply the
        masses and springs and reset the action queues."""
        r = self.randomization
        for i in idx:
            n_spring = [len(k) for k in self._spring_names]
            d = draw_episode(r, self._rngs[i], self.n_joints, len(self._bodies), n_spring)
            self._draws[i] = d
            self._start_dq[i] = d.start_dq
            self._latency[i] = d.latency
            if self._actions is not None:
                self._actions[i] = self._rest_action(int(i))
        if self._bodies:
            import mujoco

            for i in idx:
                m, d = self.sim.models[i], self.sim.datas[i]
                f = self._draws[i].mass
                m.body_mass[self._bodies] = self._mass0[i] * f
                m.body_inertia[self._bodies] = self._inertia0[i] * f[:, None]
                mujoco.mj_setConst(m, d)  # subtree masses and the like, from the new masses
        if self._spring0:
            b = self.sim.batch
            for j, names in enumerate(self._spring_names):
                for p, name in enumerate(names):
                    values = b.get_param(j, name)
                    for i in idx:
                        values[i] = self._spring0[j][name][i] * self._draws[i].spring[j][p]
                    b.set_param(j, name, values)

    def _measure(self, idx):
        """The observed state of sub-envs idx: the link state plus sensor noise, one draw per
        sub-env from its generator (only with noise)."""
        if self._q_obs is self.q:
            return
        r = self.randomization
        for i in idx:
            nq, nqd = draw_noise(r, self._rngs[i], self.n_joints)
            self._q_obs[i] = self.q[i] + nq
            self._qd_obs[i] = self.qd[i] + nqd

    def _delayed(self, actions, run):
        """The actions the sub-envs apply: with latency, each running sub-env's action of
        `latency` steps ago (its initial references before that), the new ones queued."""
        if self._actions is None:
            return actions
        queue = self._actions
        queue[run, 1:] = queue[run, :-1]
        queue[run, 0] = actions[run]
        applied = queue[np.arange(self.num_envs), self._latency]
        return np.where(run[:, None], applied, actions)

    # ------------------------------------------------------------ task hooks

    def _sample(self, i, rng):
        """Start a new episode of sub-env i: set self._q0[i], self._refs0[i] and task state."""
        raise NotImplementedError

    def _refs(self, actions):
        raise NotImplementedError

    def _observe(self):
        raise NotImplementedError

    def _reward(self):
        raise NotImplementedError

    def _terminated(self):
        return np.zeros(self.num_envs, dtype=bool)

    def _infos(self):
        """({key: (N, ...)} of reset and step infos, {key: (N, ...)} of step-only infos)."""
        return {}, {}

    def _read_state(self, idx=None):
        """Link state of sub-envs idx (all if None) from the Sim into self.q, self.qd."""
        q, qd = self.sim.q, self.sim.qd
        for i in range(self.num_envs) if idx is None else idx:
            self.q[i] = q[i]
            self.qd[i] = qd[i]

    def _make_infos(self, mask, with_step):
        """Infos as gymnasium's vector envs give them: arrays with "_key" masks (entries outside
        a mask are zero, as SyncVectorEnv leaves them)."""
        common, step_only = self._infos()
        infos = {}
        for key, value in list(common.items()) + (
            list(step_only.items()) if with_step is not None else []
        ):
            m = mask if key in common else with_step
            v = np.array(value)
            v[~m] = 0
            infos[key], infos[f"_{key}"] = v, m.copy()
        return infos

    # ------------------------------------------------------------ the task, public

    def set_state(self, q, qd, env_step=0):
        """Write the link state the task reads: q (N, J) joint angles (rad), qd (N, J) joint
        velocities (rad/s), env_step the env steps elapsed in each sub-env's episode (an int or
        (N,) ints >= 0; Throw observes the time env_step * env_dt). The env's own Sim is left
        as it is: step() overwrites this state with the Sim's."""
        n, nj = self.num_envs, self.n_joints
        arrays = {}
        for name, value in (("q", q), ("qd", qd)):
            a = np.asarray(value, dtype=np.float64)
            if a.shape != (n, nj):
                raise ValueError(
                    f"{name}: expected shape ({n}, {nj}) (num_envs, n_joints), got {a.shape}"
                )
            if not np.all(np.isfinite(a)):
                i, j = (int(k) for k in np.argwhere(~np.isfinite(a))[0])
                raise ValueError(f"{name}[{i}, {j}]: got {a[i, j]}, expected a finite value")
            arrays[name] = a
        steps = np.asarray(env_step)
        if (
            steps.dtype == np.bool_
            or not np.issubdtype(steps.dtype, np.integer)
            or steps.shape not in ((), (n,))
            or np.any(steps < 0)
        ):
            raise ValueError(
                f"env_step: got {env_step!r}, expected an int >= 0 or {n} of them (num_envs)"
            )
        self.q[...], self.qd[...] = arrays["q"], arrays["qd"]
        if self._q_obs is not self.q:  # with sensor noise: observed as set, without noise
            self._q_obs[...], self._qd_obs[...] = self.q, self.qd
        self._elapsed[:] = steps

    def observe(self):
        """(N, obs_dim) float64: the observation of every sub-env from the current link state
        (the last step or reset, or set_state) and the task's state (its targets), one column
        per entry of the task's OBSERVATION, in its (name, unit); what step() returns (with
        sensor noise: the last step's or reset's noisy reading, or set_state's state as set)."""
        return self._observe()

    def refs(self, actions):
        """(N, J, 2) float64: the joint references [equilibrium (rad), preset (rad)] each
        sub-env holds over its next env step for actions (N, act_dim) in the action space
        (checked: ValueError naming the entry and its valid range); the task records the
        command as step() does (Throw: a release). No action latency applies here."""
        return self._refs(self._check_actions(actions))

    def terminated(self):
        """(N,) bool: the sub-envs whose episode the task ends with the current step (Throw:
        the release was commanded); a failed simulation step ends one too in step()."""
        return np.asarray(self._terminated(), dtype=bool)

    # ------------------------------------------------------------ gymnasium API

    def reset(self, *, seed=None, options=None):
        """Reset all sub-envs (or those of options["reset_mask"]); seed: None, an int (sub-env i
        gets seed + i) or a list of num_envs ints / None."""
        self.sim  # noqa: B018 - raises once closed, before any state changes
        super().reset(seed=seed if isinstance(seed, (int, np.integer)) else None)
        n = self.num_envs
        if seed is None:
            seeds = [None] * n
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seeds = [int(seed) + i for i in range(n)]
        else:
            seeds = list(seed)
            if len(seeds) != n:
                raise ValueError(
                    f"seed: a list of seeds needs num_envs = {n} entries, got {len(seeds)}"
                )
        mask = np.ones(n, dtype=bool)
        if options is not None and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"])
            if mask.shape != (n,) or mask.dtype != np.bool_ or not mask.any():
                raise ValueError(
                    f"options['reset_mask']: expected a bool array of shape ({n},) "
                    f"with at least one True, got {mask!r}"
                )
        idx = np.flatnonzero(mask)
        for i in idx:
            if seeds[i] is not None or self._rngs[i] is None:
                self._rngs[i], self._seeds[i] = seeding.np_random(seeds[i])
        self._reset_subenvs(idx, full=mask.all())
        self._autoreset[idx] = False
        return self._observe(), self._make_infos(mask, None)

    def step(self, actions):
        self.sim  # noqa: B018 - raises once closed, before the actions are checked
        actions = self._check_actions(actions)
        n = self.num_envs
        reset_now = np.flatnonzero(self._autoreset)
        run = ~self._autoreset
        refs = self._refs(self._delayed(actions, run))
        self._held[run] = refs[run]  # sub-envs about to be reset keep their references
        out = self.sim.rollout(self.frame_skip, self._held, record=("q", "qd"), on_error="flag")
        self.q[...] = out["q"][:, -1]
        self.qd[...] = out["qd"][:, -1]
        self._elapsed[run] += 1
        self._measure(np.flatnonzero(run))
        if reset_now.size:  # NEXT_STEP: they were stepped with the others, now reset them
            self._reset_subenvs(reset_now, full=False)
        failed = self.sim.batch.status != 0
        rewards = np.where(run, self._reward(), 0.0)
        terminated = run & (self._terminated() | failed)
        truncated = run & ~terminated & (self._elapsed >= self.max_episode_steps)
        obs = self._observe()
        infos = self._make_infos(np.ones(n, dtype=bool), run)
        self._autoreset = terminated | truncated
        return obs, rewards, terminated, truncated, infos

    def close_extras(self, **kwargs):
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        self._sim = None

    def render(self):
        """With render_mode="rgb_array": a tuple of N frames, (render_height, render_width, 3)
        uint8 each, sub-env i's robot as its last step or reset left it; None without."""
        if self.render_mode is None:
            return None
        return tuple(self.render_frame(i) for i in range(self.num_envs))

    def render_frame(self, i=0):
        """(render_height, render_width, 3) uint8: sub-env i rendered by MuJoCo's offscreen
        Renderer from the task's camera (render_camera: azimuth, elevation in degrees, MuJoCo's
        free camera framing the model). The simulation's own data is not touched: the frame is
        made from a copy of its joint state."""
        import mujoco

        sim = self.sim
        if not 0 <= i < self.num_envs:
            raise ValueError(f"i: got {i!r}, valid range [0, {self.num_envs - 1}]")
        if self._renderer is None:
            m0 = sim.models[0]
            try:
                self._renderer = mujoco.Renderer(m0, self.render_height, self.render_width)
            except Exception as exc:
                raise RuntimeError(
                    f"render_mode='rgb_array': MuJoCo cannot render ({type(exc).__name__}: "
                    f"{exc}); on a machine without a display set MUJOCO_GL=egl (or osmesa) "
                    "before mujoco is first imported"
                ) from exc
            cam = mujoco.MjvCamera()
            mujoco.mjv_defaultFreeCamera(m0, cam)
            cam.azimuth, cam.elevation = self.render_camera
            self._camera = cam
            self._render_datas = [None] * self.num_envs
        m = sim.models[i]
        d = self._render_datas[i]
        if d is None:
            d = self._render_datas[i] = mujoco.MjData(m)
        d.qpos[:] = sim.datas[i].qpos
        d.qvel[:] = sim.datas[i].qvel
        mujoco.mj_forward(m, d)
        self._renderer.update_scene(d, camera=self._camera)
        return self._renderer.render()

    @property
    def sim(self):
        """The asr.Sim of the sub-envs; ClosedEnvironmentError once the env is closed (its
        simulator released), so that step, reset and the task's readings say so."""
        if getattr(self, "_sim", None) is None:
            raise ClosedEnvironmentError(
                f"{type(self).__name__}: the environment is closed "
                "(close() released its simulator); make a new one"
            )
        return self._sim

    @sim.setter
    def sim(self, sim):
        self._sim = sim

    # ------------------------------------------------------------ internals

    def _check_actions(self, actions):
        shape = self.action_space.shape
        try:
            a = np.asarray(actions, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"actions: expected a float array of shape {shape}, got {type(actions).__name__}"
            ) from exc
        if a.shape != shape:
            raise ValueError(
                f"actions: expected shape {shape} (num_envs, "
                f"{self.single_action_space.shape[0]}), got {a.shape}"
            )
        if not np.all(np.isfinite(a)):
            i = np.argwhere(~np.isfinite(a))[0]
            raise ValueError(
                f"actions: non-finite value {a[tuple(i)]} at {tuple(int(k) for k in i)}"
            )
        low, high = self.single_action_space.low, self.single_action_space.high
        bad = (a < low) | (a > high)
        if np.any(bad):
            i, k = (int(x) for x in np.argwhere(bad)[0])
            raise ValueError(
                f"actions[{i}, {k}]: got {a[i, k]}, valid range "
                f"[{low[k]}, {high[k]}] (clip to the action space)"
            )
        return a

    def _reset_subenvs(self, idx, full):
        """New episodes for sub-envs idx: task sample, then MuJoCo + asr reset of those
        instances."""
        for i in idx:
            self._sample(int(i), self._rngs[i])
        if self.randomization.active:
            self._randomize(idx)
        self._elapsed[idx] = 0
        self._held[idx] = self._refs0[idx]
        q0 = self._q0 if self.randomization.start_q == 0 else self._q0 + self._start_dq
        if full:
            self.sim.reset(q0, self._refs0)
        else:
            self.sim.reset(q0, self._refs0, instances=np.asarray(idx, dtype=np.intc))
        self._read_state(None if full else idx)
        self._measure(idx)


def with_timestep(robot, timestep):
    """The robot with its MJCF timestep replaced (public: the dashboard watches a policy at its
    task's timestep too)."""

    class _Robot(type(robot)):
        def mj_model(self):
            m = super().mj_model()
            m.opt.timestep = timestep
            return m

    import dataclasses

    return _Robot(**{f.name: getattr(robot, f.name) for f in dataclasses.fields(robot)})


class AsrEnv(gymnasium.Env):
    """One sub-env as a gymnasium.Env (for gymnasium.make, check_env and SyncVectorEnv): an
    AsrVectorEnv of one instance. reset(seed=s) equals sub-env i of a vector env reset with
    seed s - i."""

    metadata: dict[str, object] = {"render_modes": RENDER_MODES}

    def __init__(self, vector_cls, render_mode=None, **kwargs):
        self._vec = vector_cls(1, render_mode=render_mode, **kwargs)
        self.observation_space = self._vec.single_observation_space
        self.action_space = self._vec.single_action_space
        self.render_mode = render_mode
        self.metadata = {**type(self).metadata, "render_fps": self._vec.metadata["render_fps"]}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._vec._rngs[0] = self.np_random  # one generator, shared with the vector env
        self._vec._seeds[0] = self.np_random_seed
        obs, info = self._vec.reset(options=options)
        return obs[0], _unbatch(info)

    def step(self, action):
        a = np.asarray(action, dtype=np.float64)
        if a.shape != self.action_space.shape:
            raise ValueError(f"action: expected shape {self.action_space.shape}, got {a.shape}")
        obs, r, term, trunc, info = self._vec.step(a[None])
        return obs[0], float(r[0]), bool(term[0]), bool(trunc[0]), _unbatch(info)

    def render(self):
        """With render_mode="rgb_array": the (render_height, render_width, 3) uint8 frame of the
        robot now (AsrVectorEnv.render_frame); None without."""
        if self.render_mode is None:
            return None
        return self._vec.render_frame(0)

    def close(self):
        """Release the simulator; step and reset then raise ClosedEnvironmentError."""
        self._vec.close()


def _unbatch(info):
    return {k: v[0] for k, v in info.items() if not k.startswith("_") and info[f"_{k}"][0]}


def vecenv_steps_per_s(n, steps=50, env_id="asr/EquilibriumTracking-v0", sync=False, seed=0):
    """Env steps per second (sub-env steps: n * steps / time) of `env_id` with n sub-envs:
    asr's vector env (one C call per step), or with sync=True gymnasium's SyncVectorEnv of n
    single-instance envs. Random actions from the action space; one reset outside the timing."""
    from asr.learning.gym_registry import register_envs

    register_envs()
    mode = "sync" if sync else "vector_entry_point"
    env = gymnasium.make_vec(env_id, num_envs=n, vectorization_mode=mode)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    acts = [env.action_space.sample() for _ in range(steps)]
    env.step(acts[0])
    t = time.perf_counter()
    for a in acts:
        env.step(a)
    dt = time.perf_counter() - t
    env.close()
    return n * steps / dt


__all__ = ["AsrVectorEnv", "AsrEnv", "vecenv_steps_per_s", "with_timestep"]
