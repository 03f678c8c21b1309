"""Iterative learning control (ILC) of the equilibrium reference of articulated soft robots.

[Mengacci2021] sec. 4.3 (after [Angelini2018]): the feed-forward input is the time profile of
the link equilibrium reference eq(t) of joints in mode 3 or 6 (the preset, the second reference,
is held fixed); after every trial it is corrected with the tracking error of the link angles,

    eq_n = eq_{n-1} + K(n) e_{n-1} [+ kd de_{n-1}/dt],     e = q_ref - q   (rad),

filtered, if asked, by a zero-phase filter. `ilc` runs N independent ILC problems at once (the
instances of one asr.Sim, which may differ in preset, gains, actuator parameters (Sim params) or
link masses (Sim mujoco_params)): every trial of every instance is one `sim.rollout` call.

    from asr.learning.iterative_learning import ilc, lowpass
    sim = asr.Sim("qbmove_arm_2dof", 1)
    res = ilc(sim, q_ref, schedule=lambda n: 0.5 * np.exp(-n / 10), preset=0.2, tol=0.08)
    res.iterations, res.errors, res.input      # trials, max |e| per trial (rad), eq(t) (rad)
    res.save("arm_ilc")                        # arm_ilc.json + arm_ilc.<hash>.npz

Time base: the trajectory has T samples at the Sim's time step dt. Input sample k, eq[k], is
held over step k (from t = k dt to (k + 1) dt); output sample k is the link angle recorded at the
end of that step, t = (k + 1) dt, and is compared with reference[k].

Initial condition: every trial starts from the same state, as the real robot does between
hardware trials ([Mengacci2021] fig. 15: the arm starts at rest in its start pose). The Sim is reset
(link angles q0, default the robot's [initial] q; motors placed by the references) and then run
for `settle_s` seconds with the references held at the learned first sample (eq[0], preset), so
that the links, motors and friction states come to rest where the learned input holds them. The
settling is not part of the trajectory and not part of the error. Without it the trial would
start wherever q0 puts the links (for the vertical 2-DOF arm 0.6 rad below the start pose of
the reference) and the first samples would carry a transient that no feed-forward can remove.
"""

import dataclasses
import datetime
import io
import math
import os
import time
from typing import Any

import numpy as np

from asr.common import validate as V
from asr.common.files import read_pair, write_pair
from asr.common.version import __version__

ILC_MODES = (3, 6)  # equilibrium + preset references
KINDS = ("P", "PD")
FORMAT = "asr.ilc/1"


# ---------------------------------------------------------------- filters


def lowpass(cutoff_hz, dt, order=2):
    """A zero-phase low-pass filter(x) -> x acting along axis 1 (time) of an (N, T, J) update:
    a Butterworth filter of `order` run forwards and backwards (scipy.signal.filtfilt), cut-off
    `cutoff_hz` (Hz) at the sample time `dt` (s). Without scipy: a centred moving average over
    one cut-off period (also zero-phase). Each instance and joint is filtered on its own."""
    cutoff_hz = V.positive_float(cutoff_hz, "lowpass cutoff_hz")
    dt = V.positive_float(dt, "lowpass dt")
    nyquist = 0.5 / dt
    if cutoff_hz >= nyquist:
        raise ValueError(
            f"lowpass cutoff_hz: got {cutoff_hz!r} Hz, valid range (0, {nyquist!r}) "
            f"(the Nyquist frequency for dt = {dt!r} s)"
        )
    if not isinstance(order, (int, np.integer)) or isinstance(order, bool) or order < 1:
        raise ValueError(f"lowpass order: got {order!r}, valid: an integer >= 1")
    try:
        from scipy.signal import butter, filtfilt
    except ImportError:  # pragma: no cover - scipy is installed with asr's experiments
        width = max(1, int(round(1.0 / (cutoff_hz * dt))))
        return moving_average(width)
    b, a = butter(int(order), cutoff_hz / nyquist)

    def filt(x):
        x = np.asarray(x, dtype=float)
        if x.shape[1] <= 3 * max(len(a), len(b)):
            raise ValueError(
                f"lowpass: the trajectory has {x.shape[1]} samples, too few for a "
                f"order-{order} filtfilt"
            )
        return filtfilt(b, a, x, axis=1)

    filt.description = (
        f"lowpass(cutoff_hz={cutoff_hz!r}, dt={dt!r}, order={order}) Butterworth filtfilt"
    )
    return filt


def moving_average(width):
    """A zero-phase centred moving average over `width` samples along axis 1 (edges: the window
    shrinks to the samples available)."""
    if not isinstance(width, (int, np.integer)) or isinstance(width, bool) or width < 1:
        raise ValueError(f"moving_average width: got {width!r}, valid: an integer >= 1")
    width = int(width)

    def filt(x):
        x = np.asarray(x, dtype=float)
        c = np.cumsum(np.pad(x, ((0, 0), (1, 0), (0, 0))), axis=1)
        T = x.shape[1]
        k = np.arange(T)
        lo = np.clip(k - (width - 1) // 2, 0, T)
        hi = np.clip(k + width // 2 + 1, 0, T)
        return (c[:, hi] - c[:, lo]) / (hi - lo)[None, :, None]

    filt.description = f"moving_average(width={width})"
    return filt


# ---------------------------------------------------------------- result


@dataclasses.dataclass
class ILCResult:
    """What `ilc` learned. Arrays (saved to path.<hash>.npz):

    input       (N, T, J) learned equilibrium reference eq(t), rad: the input of each instance's
                last trial (the converged one where converged). Sample k is held from t = k dt
                to (k + 1) dt, with the preset below as second reference (mode 3 / 6).
    presets     (N, J) preset (second reference) held during the trials, rad (model units).
    reference   (N, T, J) desired link angles q_ref, rad; sample k at t = (k + 1) dt.
    output      (N, T, J) link angles of each instance's last trial, rad.
    errors      (n_iter, N) max over time and joints of |q_ref - q| of trial n, rad; NaN after
                the instance converged (it is no longer updated).
    errors_joint (n_iter, N, J) the same per joint, rad.
    gains       (n_iter - 1, N, J) K(n) used for the update that produced the input of trial n
                (row n - 1), 1/1 (rad per rad); NaN where the instance was not updated.
    iterations  (N,) trials run per instance (the first trial uses the initial input; an
                instance converged at trial n has iterations n).
    converged   (N,) bool, max |e| <= tol reached.
    error_traces (n_iter, N, T, J) q_ref - q of every trial, rad, or None (keep_traces=False).
    Scalars: dt (s, the Sim's time step), wall_s (s, wall time of the whole run), tol (rad).
    metadata    JSON-able dict: robot, variant, joints, modes, kind, kd, filter, settle_s,
                max_iter, schedule, asr and mujoco versions, created (UTC ISO time).
    """

    input: np.ndarray
    errors: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray
    reference: np.ndarray
    dt: float
    wall_s: float
    tol: float
    presets: np.ndarray
    output: np.ndarray | None = None
    errors_joint: np.ndarray | None = None
    gains: np.ndarray | None = None
    error_traces: np.ndarray | None = None
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)

    ARRAYS = (
        "input",
        "errors",
        "iterations",
        "converged",
        "reference",
        "presets",
        "output",
        "errors_joint",
        "gains",
        "error_traces",
    )

    @property
    def n_iter(self):
        """Trials run (the longest instance)."""
        return int(self.errors.shape[0])

    @property
    def final_error(self):
        """(N,) max |e| of each instance's last trial, rad."""
        return self.errors[np.maximum(self.iterations - 1, 0), np.arange(self.errors.shape[1])]

    @property
    def time(self):
        """(T,) times of the output samples, s: (k + 1) dt."""
        return (np.arange(self.input.shape[1]) + 1) * self.dt

    @staticmethod
    def _stem(path):
        path = os.fspath(path)
        for ext in (".npz", ".json"):
            if path.endswith(ext):
                return path[: -len(ext)]
        return path

    def save(self, path):
        """Write path.json (metadata, units, per-trial errors, per-instance summary; human-
        readable) and path.<hash>.npz (every array above, plus dt, wall_s, tol), named in the
        .json with its SHA-256. The .npz is written first, the .json last
        (asr.common.files.write_pair:
        a kill leaves the old pair or the new one). Returns the two paths."""
        stem = self._stem(path)
        arrays = {k: getattr(self, k) for k in self.ARRAYS if getattr(self, k) is not None}
        n_inst = self.input.shape[0]
        doc = {
            "format": FORMAT,
            "units": {
                "input": "rad (equilibrium reference, held over each step)",
                "presets": "rad (second reference of the joint's model, held)",
                "reference": "rad",
                "output": "rad",
                "errors": "rad (max |q_ref - q|)",
                "dt": "s",
                "wall_s": "s",
                "tol": "rad",
                "gains": "rad/rad",
            },
            "time_base": "input[k] held from k*dt to (k+1)*dt; output[k], reference[k] at (k+1)*dt",
            "shape": {
                "instances": n_inst,
                "samples": int(self.input.shape[1]),
                "joints": int(self.input.shape[2]),
            },
            "dt": self.dt,
            "wall_s": self.wall_s,
            "tol": self.tol,
            "instances": [
                {
                    "index": i,
                    "iterations": int(self.iterations[i]),
                    "converged": bool(self.converged[i]),
                    "final_error": _json_float(self.final_error[i]),
                    "presets": [float(p) for p in self.presets[i]],
                    "errors": [_json_float(e) for e in self.errors[: self.iterations[i], i]],
                }
                for i in range(n_inst)
            ],
            "metadata": self.metadata,
        }

        def write(f):
            np.savez(
                f,
                dt=np.float64(self.dt),
                wall_s=np.float64(self.wall_s),
                tol=np.float64(self.tol),
                **arrays,
            )

        return write_pair(stem + ".json", ".npz", write, doc)

    @classmethod
    def load(cls, path):
        """Read what `save(path)` wrote (files of earlier versions, path.json naming path.npz,
        too). A truncated or corrupted file, or an .npz that is not the one its .json names,
        raises ValueError saying so."""
        stem = cls._stem(path)
        doc, data = read_pair(stem + ".json", "ILC result")
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or data is None:
            raise ValueError(
                f"{stem}.json: not an asr ILC result (format "
                f"{doc.get('format') if isinstance(doc, dict) else None!r}, "
                f"expected {FORMAT!r})"
            )
        with np.load(io.BytesIO(data)) as z:
            arrays = {k: z[k] for k in z.files}
        kw = {k: arrays.get(k) for k in cls.ARRAYS}
        return cls(
            dt=float(arrays["dt"]),
            wall_s=float(arrays["wall_s"]),
            tol=float(arrays["tol"]),
            metadata=doc["metadata"],
            **kw,
        )


def _json_float(x):
    x = float(x)
    return x if math.isfinite(x) else None


# ---------------------------------------------------------------- validation helpers


def _array(x, name):
    if callable(x) or isinstance(x, (str, bytes, dict)):
        raise TypeError(f"{name}: expected a number or an array, got {type(x).__name__}")
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name}: expected a number or an array of numbers, got {type(x).__name__}"
        ) from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or inf")
    return arr


def _per_joint(x, name, n, nj, nonneg=True):
    """A scalar, (J,) shared, (N, 1), (1, J) or (N, J) value broadcast to (N, J)."""
    arr = _array(x, name)
    if arr.ndim > 2:
        raise ValueError(
            f"{name}: expected a scalar, (J,) = ({nj},) or (N, J) = ({n}, {nj}), "
            f"got shape {arr.shape}"
        )
    try:
        out = np.array(np.broadcast_to(arr, (n, nj)), dtype=float)
    except ValueError:
        raise ValueError(
            f"{name}: expected a scalar, (J,) = ({nj},) or (N, J) = ({n}, {nj}), "
            f"got shape {arr.shape}"
        ) from None
    if nonneg and np.any(out < 0):
        raise ValueError(f"{name}: got {float(out.min())!r}, valid range [0, inf)")
    return out


def _trajectory(x, name, n, nj):
    arr = _array(x, name)
    if arr.ndim == 2 and arr.shape[1] == nj:
        arr = np.broadcast_to(arr, (n,) + arr.shape)
    if arr.ndim != 3 or arr.shape[0] != n or arr.shape[2] != nj:
        raise ValueError(
            f"{name}: expected shape (T, J) = (T, {nj}) or (N, T, J) = "
            f"({n}, T, {nj}), got {np.shape(x)}"
        )
    if arr.shape[1] < 2:
        raise ValueError(f"{name}: needs at least 2 samples, got {arr.shape[1]}")
    return np.array(arr, dtype=float)


# ---------------------------------------------------------------- ILC


def ilc(
    sim,
    reference,
    *,
    gain=None,
    schedule=None,
    kind="P",
    kd=0.0,
    filter=None,
    preset=None,
    initial_input=None,
    q0=None,
    max_iter=50,
    tol=0.08,
    settle_s=3.0,
    keep_traces=False,
    callback=None,
    progress=False,
) -> ILCResult:
    """Learn the equilibrium-reference feed-forward eq(t) that makes the links of every instance
    of `sim` follow `reference`.

    sim: an asr.Sim whose actuated joints are all in mode 3 or 6 (equilibrium, preset). Its
        instances are N independent ILC problems (differing in params / mujoco_params, preset,
        gain...); it is reset before every trial.
    reference: desired link angles q_ref, rad, (T, J) shared or (N, T, J); sample k is compared
        with the link angle at the end of step k, t = (k + 1) dt (dt: the Sim's time step).
    gain: the learning gain K, a scalar or (J,) / (N, J) array (default 0.5); or use
    schedule: a callable schedule(n) -> K(n) (scalar or (J,) / (N, J)) for the update producing
        the input of trial n = 1, 2, ..., e.g. the paper's lambda n: 0.5 * np.exp(-n / 10).
        Give one of gain and schedule.
    kind: "P" (eq_n = eq_{n-1} + K(n) e_{n-1}) or "PD" (adds kd * de_{n-1}/dt, the derivative by
        central differences, np.gradient).
    kd: derivative gain, s, scalar or (J,) / (N, J); must be 0 for kind "P".
    filter: None or a callable filter(update) -> update on the (N, T, J) update (K e + kd de/dt),
        applied before it is added, e.g. lowpass(cutoff_hz, sim.dt) (zero-phase). It must treat
        instances independently (filter along axis 1) for the problems to stay independent.
    preset: second reference of every joint, held (rad for qbmove), scalar, (J,) or (N, J);
        default: the robot's [initial] refs, else 0.
    initial_input: eq_0, (T, J) or (N, T, J), rad; default the reference itself.
    q0: link angles at reset before settling, (J,) or (N, J), rad; default the robot's initial q.
    max_iter: most trials per instance (>= 1). tol: an instance converges when the max over time
        and joints of |e| <= tol (rad); it then keeps its input and is no longer updated (it is
        still simulated, with the same result, while others learn).
    settle_s: s, held at (eq[0], preset) before every trial (see the module doc), >= 0.
    keep_traces: keep the error trace of every trial (result.error_traces).
    callback: callable(n, result_so_far_errors (N,), converged (N,)) after every trial n = 1..;
        returning True stops the learning.
    progress: print one line per trial.

    Returns an ILCResult. Simulation failures raise asr.SimulationError.
    """
    from asr.sim.simulation import Sim

    if not isinstance(sim, Sim):
        raise TypeError(f"sim: expected an asr.Sim, got {type(sim).__name__}")
    n, nj = sim.n_instances, sim.n_joints
    modes = [int(m) for m in sim.batch.modes]
    bad = [(sim.robot.joint_names[j], m) for j, m in enumerate(modes) if m not in ILC_MODES]
    if bad:
        raise ValueError(
            "sim: ILC learns the equilibrium reference, every joint must be in mode "
            f"3 or 6; got {', '.join(f'{name!r} in mode {m}' for name, m in bad)}"
        )
    ref = _trajectory(reference, "reference", n, nj)
    T = ref.shape[1]

    if kind not in KINDS:
        raise ValueError(f"kind: got {kind!r}, valid: {KINDS}")
    kd_arr = _per_joint(kd, "kd", n, nj)
    if kind == "P" and np.any(kd_arr != 0):
        raise ValueError("kd: a derivative gain needs kind='PD'")
    if schedule is not None and gain is not None:
        raise ValueError("gain and schedule: give one (schedule(n) is the gain of update n)")
    if schedule is not None and not callable(schedule):
        raise TypeError(
            f"schedule: expected a callable schedule(n) -> gain, got {type(schedule).__name__}"
        )
    const_gain = (
        None if schedule is not None else _per_joint(0.5 if gain is None else gain, "gain", n, nj)
    )
    if filter is not None and not callable(filter):
        raise TypeError(f"filter: expected a callable filter(x) -> x, got {type(filter).__name__}")
    if callback is not None and not callable(callback):
        raise TypeError(f"callback: expected a callable, got {type(callback).__name__}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter: got {max_iter!r}, valid: an integer >= 1")
    tol = V.positive_float(tol, "tol")
    if isinstance(settle_s, bool) or not isinstance(
        settle_s, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"settle_s: expected a number, got {type(settle_s).__name__}")
    settle_s = float(settle_s)
    if not (math.isfinite(settle_s) and settle_s >= 0):
        raise ValueError(f"settle_s: got {settle_s!r}, valid range [0, inf)")
    if preset is None:
        preset = (
            [r[1] for r in sim.robot.initial_refs] if sim.robot.initial_refs is not None else 0.0
        )
    presets = _per_joint(preset, "preset", n, nj, nonneg=False)
    u = ref.copy() if initial_input is None else _trajectory(initial_input, "initial_input", n, nj)
    if u.shape != ref.shape:
        raise ValueError(f"initial_input: {u.shape[1]} samples, the reference has {T}")
    q_start = None if q0 is None else _per_joint(q0, "q0", n, nj, nonneg=False)

    dt = sim.dt
    settle_steps = int(round(settle_s / dt))
    refs = np.empty((n, T, nj, 2))
    refs[..., 1] = presets[:, None, :]

    active = np.ones(n, dtype=bool)
    converged = np.zeros(n, dtype=bool)
    iterations = np.zeros(n, dtype=np.int64)
    errors, errors_joint, gains, traces = [], [], [], []
    output = np.empty((n, T, nj))
    t_start = time.perf_counter()
    for it in range(1, int(max_iter) + 1):
        # one trial of every instance: reset, settle at the learned eq(0), the trajectory
        first = np.stack([u[:, 0], presets], axis=-1)
        sim.reset(q_start, first)
        if settle_steps:
            sim.rollout(settle_steps, first, record=())
        refs[..., 0] = u
        q = sim.rollout(T, refs, record=("q",))["q"]
        e = ref - q
        ej = np.abs(e).max(axis=1)  # (N, J)
        emax = ej.max(axis=1)  # (N,)
        iterations[active] = it
        output[active] = q[active]
        row = np.full(n, np.nan)
        row[active] = emax[active]
        rowj = np.full((n, nj), np.nan)
        rowj[active] = ej[active]
        errors.append(row)
        errors_joint.append(rowj)
        if keep_traces:
            tr = np.full((n, T, nj), np.nan)
            tr[active] = e[active]
            traces.append(tr)
        newly = active & (emax <= tol)
        converged |= newly
        active &= ~newly
        if progress:
            shown = ", ".join(f"{x:.4f}" if np.isfinite(x) else "-" for x in row[:8])
            print(
                f"ILC trial {it}: max |e| = [{shown}{', ...' if n > 8 else ''}] rad, "
                f"{int(converged.sum())}/{n} converged",
                flush=True,
            )
        stop = callback(it, row.copy(), converged.copy()) if callback is not None else False
        if not active.any() or stop or it == max_iter:
            break
        # update producing the input of trial it + 1 (the paper's n = it)
        # const_gain is None exactly when a schedule is given
        k = _per_joint(schedule(it), f"schedule({it})", n, nj) if const_gain is None else const_gain
        upd = k[:, None, :] * e
        if kind == "PD":
            upd = upd + kd_arr[:, None, :] * np.gradient(e, dt, axis=1)
        if filter is not None:
            upd = np.asarray(filter(upd), dtype=float)
            if upd.shape != e.shape:
                raise ValueError(f"filter: returned shape {upd.shape}, expected {e.shape}")
            if not np.all(np.isfinite(upd)):
                raise ValueError("filter: returned NaN or inf")
        u[active] = u[active] + upd[active]
        g = np.full((n, nj), np.nan)
        g[active] = k[active]
        gains.append(g)
    wall = time.perf_counter() - t_start

    import mujoco

    meta = {
        "robot": sim.robot.name,
        "variant": sim.robot.variant,
        "joints": list(sim.robot.joint_names),
        "models": [j.model for j in sim.robot.joints],
        "modes": modes,
        "dt": dt,
        "kind": kind,
        "gain": None if const_gain is None else const_gain.tolist(),
        "schedule": None if schedule is None else getattr(schedule, "description", repr(schedule)),
        "kd": kd_arr.tolist(),
        "filter": None if filter is None else getattr(filter, "description", repr(filter)),
        "tol": tol,
        "max_iter": int(max_iter),
        "settle_s": settle_s,
        "initial_input": "reference" if initial_input is None else "given",
        "q0": None if q_start is None else q_start.tolist(),
        "asr_version": __version__,
        "mujoco_version": mujoco.__version__,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    return ILCResult(
        input=u,
        errors=np.array(errors),
        iterations=iterations,
        converged=converged,
        reference=ref,
        dt=dt,
        wall_s=wall,
        tol=tol,
        presets=presets,
        output=output,
        errors_joint=np.array(errors_joint),
        gains=np.array(gains) if gains else np.zeros((0, n, nj)),
        error_traces=np.array(traces) if keep_traces else None,
        metadata=meta,
    )


__all__ = ["ilc", "ILCResult", "lowpass", "moving_average", "ILC_MODES"]
