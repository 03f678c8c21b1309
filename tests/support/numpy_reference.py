"""The parameters and inputs of the NumPy and Numba references of benchmarks/ that
tests/core/test_numpy_reference.py and test_numba_reference.py compare with the core."""

import numpy as np

# Instances with different parameters: no friction / default friction / strong friction with a
# bounded integral / a tight torque limit, a motor-coupling spring, a clamping spring, and
# velocity and position limits that are reached.
PARAMS = {
    "friction": np.array([0.0, 0.02, 0.3, 0.05, 0.02]),
    "tau_max": np.array([6.0, 0.3, 6.0, 1.0, 6.0]),
    "kp": np.array([125.0, 80.0, 200.0, 125.0, 125.0]),
    "ki": np.array([0.0, 0.0, 20.0, 50.0, 5.0]),
    "i_max": np.array([np.inf, np.inf, 0.5, 0.02, np.inf]),
    "kd": np.array([4.5, 2.0, 4.5, 6.0, 4.5]),
    "kc": np.array([0.0, 0.0, 0.01, 0.0, 0.002]),
    "max_def": np.array([0.8, 0.8, 0.8, 0.3, 0.8]),
    "k2": np.array([0.0019, 0.0019, 0.003, 0.0019, 0.0019]),
    "a1": np.array([8.9992, 8.9992, 8.9992, 7.0, 8.9992]),
    "vel_max": np.array([np.inf, np.inf, np.inf, np.inf, 3.0]),
    "pos_min": np.array([-np.inf, -np.inf, -np.inf, -np.inf, -0.2]),
    "pos_max": np.array([np.inf, np.inf, np.inf, np.inf, 0.9]),
}
N = 5


def reference_inputs(steps, dt):
    t = np.arange(steps) * dt
    refs = np.empty((steps, N, 2))
    phase = np.linspace(0.0, 2.0, N)
    refs[..., 0] = 0.6 * np.sin(2 * np.pi * 3.0 * t[:, None] + phase) + 0.5 * (t[:, None] > 0.2)
    refs[..., 1] = np.linspace(0.1, 0.6, N)
    q = 0.1 * np.sin(5.0 * t[:, None] + phase)
    qd = 0.5 * np.cos(5.0 * t[:, None] + phase)
    return refs, q, qd
