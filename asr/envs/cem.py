"""Cross-entropy method for a linear policy on asr's vector environments (NumPy only).

Policy: a = low + (high - low) * (1 + tanh(W [obs, 1])) / 2, W of shape (act_dim, obs_dim + 1),
so every action lies in the Box action space. Each iteration samples `population` parameter
vectors from a diagonal Gaussian, evaluates each on `episodes` sub-envs of ONE vector env of
population * episodes sub-envs (all candidates step together, one C call per env step), keeps the
`elite_frac` best by mean return and refits the Gaussian to them. All candidates of an iteration
see the same episode seeds (common random numbers), which makes the ranking less noisy.
"""

import numpy as np


def linear_policy(theta, obs, low, high):
    """Actions (N, act_dim) for parameters theta (N, act_dim, obs_dim + 1) and obs (N, obs_dim)."""
    x = np.concatenate([obs, np.ones((obs.shape[0], 1))], axis=1)
    z = np.einsum("nij,nj->ni", theta, x)
    return low + (high - low) * 0.5 * (1.0 + np.tanh(z))


def evaluate(env, theta, episodes, seeds):
    """Mean undiscounted return of each of the P candidates theta (P, act_dim, obs_dim + 1) over
    `episodes` episodes each; env has P * episodes sub-envs, candidate k drives the slice
    [k * episodes, (k + 1) * episodes) and that slice is reset with `seeds`."""
    p = theta.shape[0]
    n = env.num_envs
    if n != p * episodes:
        raise ValueError(f"env: num_envs = {n}, need population * episodes = {p * episodes}")
    low, high = env.single_action_space.low, env.single_action_space.high
    per_env = np.repeat(theta, episodes, axis=0)
    obs, _ = env.reset(seed=[int(s) for s in np.tile(seeds, p)])
    total = np.zeros(n)
    done = np.zeros(n, dtype=bool)
    while not done.all():
        obs, r, term, trunc, _ = env.step(linear_policy(per_env, obs, low, high))
        total += np.where(done, 0.0, r)
        done |= term | trunc
    return total.reshape(p, episodes).mean(axis=1)


def train(
    env,
    iterations=20,
    *,
    population=16,
    episodes=4,
    elite_frac=0.25,
    init_std=0.5,
    min_std=0.02,
    seed=0,
    fixed_seeds=True,
    callback=None,
):
    """CEM on vector env `env` (num_envs = population * episodes). Returns a dict:
    curve: mean return of the population per iteration (the learning curve), elite: mean return
    of the elites, best: best candidate's, mean / std: the final Gaussian (act_dim, obs_dim + 1),
    i.e. mean is the trained policy's W. fixed_seeds: every iteration uses the same episode seeds
    (targets), so the curve measures the policy, not the draw of targets; else new seeds each
    iteration. callback(it, result) is called after each iteration."""
    rng = np.random.default_rng(seed)
    obs_dim = env.single_observation_space.shape[0]
    act_dim = env.single_action_space.shape[0]
    shape = (act_dim, obs_dim + 1)
    mean = np.zeros(shape)
    std = np.full(shape, float(init_std))
    n_elite = max(1, int(round(elite_frac * population)))
    res = {"curve": [], "elite": [], "best": []}
    for it in range(int(iterations)):
        theta = mean + std * rng.standard_normal((population,) + shape)
        if it == 0 or not fixed_seeds:
            seeds = rng.integers(0, 2**31 - 1, episodes)
        returns = evaluate(env, theta, episodes, seeds)
        order = np.argsort(returns)[::-1][:n_elite]
        elite = theta[order]
        mean = elite.mean(axis=0)
        std = np.maximum(elite.std(axis=0), min_std)
        res["curve"].append(float(returns.mean()))
        res["elite"].append(float(returns[order].mean()))
        res["best"].append(float(returns[order[0]]))
        res["mean"], res["std"] = mean, std
        if callback is not None:
            callback(it, res)
    return res


__all__ = ["train", "evaluate", "linear_policy"]
