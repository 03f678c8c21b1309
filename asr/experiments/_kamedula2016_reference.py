"""[Kamedula2016] sec. 5.1 (asr.experiments.kamedula2016): the independent reference, the
coupled link and motor equations integrated with scipy, not the C core."""

import math

import numpy as np

from asr.experiments._kamedula2016_setup import ATOL, CTRL_PERIOD, RTOL


def reference(plants, q_d, period=CTRL_PERIOD, rtol=RTOL, atol=ATOL, method="DOP853"):
    """Integrate the reference equations of every plant (all in one state vector) from rest at
    q = th = 0 over len(q_d) controller ticks with scipy, piecewise between ticks. q_d: (n,) or
    (n, P). Returns {q, qd, th, thd: (n + 1, P) at the ticks, tau_t: (n, P) at the start of each
    tick, tau_m: (n, P) held over it, nfev}."""
    from scipy.integrate import DOP853, Radau

    P = len(plants)
    q_d = np.broadcast_to(np.asarray(q_d, float).reshape(len(q_d), -1), (len(q_d), P))
    col = lambda name: np.array([getattr(p, name) for p in plants])
    I, G, B = col("inertia"), col("gravity"), col("damping")
    Kt, Dt, Bm, Dm = col("Kt"), col("Dt"), col("Bm"), col("Dm")
    Kp, Kd, tmax = col("Kp"), col("Kd"), col("tau_max")
    u = np.zeros(P)

    consts = [tuple(float(c[i]) for c in (I, G, B, Kt, Dt, Bm, Dm)) for i in range(P)]
    rng = range(P)

    def rhs(t, y):  # plain floats: a numpy call per term would cost more than the arithmetic
        y = y.tolist()
        f = [0.0] * (4 * P)
        for i in rng:
            Ii, Gi, Bi, Kti, Dti, Bmi, Dmi = consts[i]
            q, qd, th, thd = y[i], y[P + i], y[2 * P + i], y[3 * P + i]
            tau_t = Kti * (th - q) + Dti * (thd - qd)
            f[i] = qd
            f[P + i] = (tau_t + Gi * math.sin(q) - Bi * qd) / Ii
            f[2 * P + i] = thd
            f[3 * P + i] = (u[i] - Dmi * thd - tau_t) / Bmi
        return f

    def jac(t, y):
        q = y[:P]
        Z, E = np.zeros((P, P)), np.eye(P)
        d = np.diag
        return np.block(
            [
                [Z, E, Z, Z],
                [d((-Kt + G * np.cos(q)) / I), d((-Dt - B) / I), d(Kt / I), d(Dt / I)],
                [Z, Z, Z, E],
                [d(Kt / Bm), d(Dt / Bm), d(-Kt / Bm), d((-Dm - Dt) / Bm)],
            ]
        )

    n = q_d.shape[0]
    Y = np.zeros((n + 1, 4 * P))
    tau_t, tau_m = np.empty((n, P)), np.empty((n, P))
    nfev = 0
    y = Y[0]
    for k in range(n):
        q, qd, th, thd = y.reshape(4, P)
        ff = -G * np.sin(q_d[k])
        u[:] = np.clip(ff + Kp * (q_d[k] + ff / Kt - th) - Kd * thd, -tmax, tmax)
        tau_m[k] = u
        tau_t[k] = Kt * (th - q) + Dt * (thd - qd)
        if method == "DOP853":
            s = DOP853(rhs, 0.0, y, period, rtol=rtol, atol=atol, first_step=period)
        else:
            s = Radau(rhs, 0.0, y, period, rtol=rtol, atol=atol, jac=jac)
        while s.status == "running":
            s.step()
        if s.status != "finished":
            raise RuntimeError(f"reference: {method} failed in tick {k}")
        nfev += s.nfev
        y = Y[k + 1] = s.y
    q, qd, th, thd = (Y[:, i * P : (i + 1) * P] for i in range(4))
    return {"q": q, "qd": qd, "th": th, "thd": thd, "tau_t": tau_t, "tau_m": tau_m, "nfev": nfev}
