"""What both training backends' env adapters do after a step of an asr vector env: stop on a
failed simulation, and reset the sub-envs that ended in that same step.

asr's vector envs use gymnasium's NEXT_STEP autoreset (the step that ends sub-env i returns its
last observation; the next step() would reset it). The learners (Stable-Baselines3, rsl-rl-lib)
expect the ended sub-envs to start their next episode in the step that ends them, so the
adapters reset exactly those at once through AsrVectorEnv.reset(options={"reset_mask": ...})
(Sim.reset of those instances; no physics step for anyone): the asr env never enters its
NEXT_STEP reset step."""

import numpy as np

from asr.core.errors import SimulationError


def check_simulation(venv, env_steps, who):
    """asr.SimulationError naming the instance, joint, simulation step and the env step
    (env_steps of the adapter `who`) when an instance of venv's batch has failed: training must
    not learn from a failed simulation."""
    batch = venv.sim.batch
    if np.any(batch.status != 0):
        errors = batch.errors()
        e = errors[0]
        raise SimulationError(
            e["instance"],
            e["joint"],
            e["step"],
            e["code"],
            more=len(errors) - 1,
            hint=f"sub-env {e['instance']} at env step {env_steps} of this {who} (training "
            "stopped)",
        )


def reset_ended(venv, obs, dones):
    """Reset the sub-envs with dones[i] (bool (N,)) and write their first observations into obs
    ((N, obs_dim), changed in place). Returns the reset's info dict (gymnasium vector infos),
    or None when none ended."""
    if not dones.any():
        return None
    idx = np.flatnonzero(dones)
    new_obs, info = venv.reset(options={"reset_mask": dones.copy()})
    obs[idx] = new_obs[idx]
    return info
