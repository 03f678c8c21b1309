"""The policy watcher of the RL watch (PROTOCOL.md "RL"): the latest checkpoint's policy
exported as ONNX in a child process (dashboard/exports.py, the same export as POST
/api/rl/policy.onnx: the SB3 actor's mean with the observation normaliser) and run in the server
with onnxruntime, so torch and Stable-Baselines3 never load into the server (they would hold
~500 MB for good); the runner asks it for references at every env step of the task
(dashboard/watch.py). Observation and references come from the task's own code: the watcher
keeps an instance of the task's vector env (never stepped), built with the keyword arguments the
policy was trained with (the ONNX file's env_kwargs: Periodic2DOF's frequency), writes the
runner's link state and the episode's env step into it (set_state) and calls its observe(),
refs() and terminated() (asr.envs.vector.AsrVectorEnv's public methods: [q, qd, target,
q - target] -> [equilibria, presets] for the reaching tasks, [q, qd, t] -> [equilibria,
presets, release] for Throw), so every registered task is watchable. A new episode (the env's
reset: a new random target) starts after max_episode_steps env steps or when the task ends it
(Throw: the release). Which run may be watched is the training manager's to say
(dashboard/rl.py: can_watch)."""

import os

import numpy as np

from .rl_tasks import RLInputError, task_class


class PolicyWatcher:
    """The policy of a training run acting on the runner's Sim as the task's agent, run with
    onnxruntime (asr.rl.OnnxPolicy: the observation normalisation and the action clip are in
    the graph) so that the server never imports torch. `policy`: the ONNX file's bytes (the
    server's export child made them), an OnnxPolicy, or a training folder (exported here in a
    child, dashboard/exports.py). Made off the runner thread; used on the runner thread only."""

    def __init__(self, policy, task, run_id=None, seed=0, export_timeout_s=120.0):
        from asr.rl.onnx_policy import OnnxPolicy

        self.task = task
        self.run = run_id
        cls = task_class(task)
        self.cls = cls
        self.robot, self.variant = cls.robot, cls.variant
        self.timestep = cls.timestep
        self.frame_skip = int(cls.frame_skip)
        space = cls.single_action_space
        self.low, self.high = np.asarray(space.low, float), np.asarray(space.high, float)
        if isinstance(policy, (str, os.PathLike)):
            from .exports import export_bytes

            policy = export_bytes("onnx", (os.fspath(policy), task), export_timeout_s)
        try:
            if not isinstance(policy, OnnxPolicy):
                policy = OnnxPolicy.from_bytes(policy, name=f"run {run_id}'s policy.onnx")
            self.model = policy.check_task(cls)
        except ValueError as exc:
            raise RLInputError(
                f"task: the policy of run {run_id} does not fit {task!r}: {exc}"
            ) from None
        self.rng = np.random.default_rng(seed)
        # the task as the policy was trained: its keyword arguments (the ONNX file's env_kwargs,
        # e.g. Periodic2DOF's frequency), its own observation and references (never stepped)
        self.env_kwargs = dict(self.model.env_kwargs)
        try:
            self.env = cls(1, **self.env_kwargs)
        except (TypeError, ValueError) as exc:
            raise RLInputError(
                f"task: the policy of run {run_id} was trained with env_kwargs "
                f"{self.env_kwargs!r}, which {task!r} refuses: {exc}"
            ) from None
        self.episode_steps = int(self.env.max_episode_steps)
        self.ended = True  # the current episode is over: the next act starts one
        self.episode = 0  # episodes started
        self.left = 0  # simulation steps left in the current env step
        self.env_step = 0  # env steps in the current episode
        self.held = None  # (N, J, 2) references of the current env step

    @property
    def target(self):
        """(N, J) or (N,) targets of the current episodes (rad), None for a task without."""
        return getattr(self.env, "target", None)

    def new_episode(self, n):
        """A new episode of n sub-envs: the task's reset (its random target), env step 0."""
        if self.env.num_envs != n:
            self.env.close()
            self.env = self.cls(n, **self.env_kwargs)
        self.env.reset(seed=int(self.rng.integers(2**31)))
        self.env_step = 0
        self.episode += 1
        self.ended = False

    def act(self, q, qd):
        """(N, J, 2) references for the next env step from the link state (N, J)."""
        n = q.shape[0]
        if self.ended or self.env.num_envs != n:
            self.new_episode(n)
        env = self.env
        env.set_state(q, qd, self.env_step)
        action = self.model(env.observe())  # (n, act_dim) float32, inside the action Box
        action = np.clip(np.asarray(action, float).reshape(n, -1), self.low, self.high)
        self.held = np.asarray(env.refs(action), float)
        self.left = self.frame_skip
        self.env_step += 1
        # the task ends the episode with this step (Throw: the release) or the time limit
        self.ended = bool(np.any(env.terminated())) or self.env_step >= self.episode_steps
        return self.held

    def info(self):
        target = self.target
        return {
            "task": self.task,
            "run": self.run,
            "target": None if target is None else np.atleast_1d(target[0]).tolist(),
            "env_step": self.env_step,
            "episode": self.episode,
        }
