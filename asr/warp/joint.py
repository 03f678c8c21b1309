# mypy: ignore-errors
# (the kernels are Warp's language: annotations such as wp.array3d(dtype=F) are calls mypy cannot
# read, and the bodies follow Warp's typing, not Python's)
"""One actuator step in Warp: a hand-kept port of csrc/core/joint_kernel.h (the seven operation
modes, the PID controllers, the drive, the motor sub-steps) and of the per-instance logic of
csrc/core/joint.c and batch.c around it (status codes, frozen instances, non-finite inputs,
diverged links, tau_ext, tau_ff, output-shaft friction, clamp counters, reset), generic over the
float type.

One Warp thread steps one instance through its joints in order, as the C core's lanes do: an
instance frozen at joint j skips the later joints and applies zero torque (tau_joint and tau_link
are zeroed for all its joints) until it is reset. Statuses are the C core's (asr.Batch.status):
ASR_ERR_INPUT for a NaN/inf input (that joint's state is left as it was), ASR_ERR_DIVERGED for a
link faster than link_vel_max (the inputs are copied, nothing is stepped), ASR_ERR_RANGE where the
model or reference map is undefined and ASR_ERR_NONFINITE for a NaN/inf in the checked state
fields after the step (both keep the state the step left).

The operations follow the C lane formulas in order (selects become branches); float64 on Warp's
CPU device matches the C core to rounding (tests/warp/test_kernels.py compares every model and
mode with asr.Batch on random states and prescribed link motion). Field, parameter, mode, scheme
and status numbers are the C core's, read from the cffi module (asr.core.ffi.lib) when this
module loads.

`build(F)` returns for float type F: Arrays, the struct of a batch's device arrays, and the
kernels step (one step of every instance), count (the step counter's increment, a separate
launch so that no host value changes per step) and reset (the instances of a mask to q0 and
references).
"""

import types
from typing import Any

from asr.core.ffi import lib
from asr.warp import motor, springs
from asr.warp.runtime import warp

wp = warp()


def _c(value: int) -> Any:
    return wp.constant(int(value))


# state fields (csrc/core/asr_fields.h)
TAU_JOINT = _c(lib.ASR_F_TAU_JOINT)
TAU_LINK = _c(lib.ASR_F_TAU_LINK)
STIFFNESS = _c(lib.ASR_F_STIFFNESS)
TAU_EL1 = _c(lib.ASR_F_TAU_EL1)
TAU_EL2 = _c(lib.ASR_F_TAU_EL2)
DEFL1 = _c(lib.ASR_F_DEFL1)
DEFL2 = _c(lib.ASR_F_DEFL2)
TH1 = _c(lib.ASR_F_TH1)
TH2 = _c(lib.ASR_F_TH2)
TH1D = _c(lib.ASR_F_TH1D)
TH2D = _c(lib.ASR_F_TH2D)
TAU_M1 = _c(lib.ASR_F_TAU_M1)
TAU_F1 = _c(lib.ASR_F_TAU_F1)
TAU_FQ = _c(lib.ASR_F_TAU_FQ)
W1 = _c(lib.ASR_F_W1)
W2 = _c(lib.ASR_F_W2)
WQ = _c(lib.ASR_F_WQ)
INT1 = _c(lib.ASR_F_INT1)
INTQ = _c(lib.ASR_F_INTQ)
CMD1 = _c(lib.ASR_F_CMD1)
CTRL_TIMER = _c(lib.ASR_F_CTRL_TIMER)
Q = _c(lib.ASR_F_Q)
QD = _c(lib.ASR_F_QD)
REF1 = _c(lib.ASR_F_REF1)
REF2 = _c(lib.ASR_F_REF2)
TAU_EXT = _c(lib.ASR_F_TAU_EXT)
CLAMPED = _c(lib.ASR_F_CLAMPED)
CLAMP_STEPS = _c(lib.ASR_F_CLAMP_STEPS)
NFIELD = _c(lib.ASR_NFIELD)
NCHECKED = _c(lib.ASR_NCHECKED)
# motor m's field is motor 1's plus m (the field enum interleaves nothing between the pair)
assert lib.ASR_F_TH2 == lib.ASR_F_TH1 + 1 and lib.ASR_F_TH2D == lib.ASR_F_TH1D + 1
assert lib.ASR_F_W2 == lib.ASR_F_W1 + 1 and lib.ASR_F_INT2 == lib.ASR_F_INT1 + 1
assert lib.ASR_F_CMD2 == lib.ASR_F_CMD1 + 1 and lib.ASR_F_TAU_M2 == lib.ASR_F_TAU_M1 + 1
assert lib.ASR_F_TAU_F2 == lib.ASR_F_TAU_F1 + 1

# common parameters (csrc/core/asr_model.h)
P_MOTOR_J = _c(lib.ASR_P_MOTOR_J)
P_MOTOR_D = _c(lib.ASR_P_MOTOR_D)
P_TAU_MAX = _c(lib.ASR_P_TAU_MAX)
P_VEL_MAX = _c(lib.ASR_P_VEL_MAX)
P_POS_MIN = _c(lib.ASR_P_POS_MIN)
P_POS_MAX = _c(lib.ASR_P_POS_MAX)
P_FRICTION = _c(lib.ASR_P_FRICTION)
P_FRICTION_K = _c(lib.ASR_P_FRICTION_K)
P_KP = _c(lib.ASR_P_KP)
P_KI = _c(lib.ASR_P_KI)
P_KD = _c(lib.ASR_P_KD)
P_I_MAX = _c(lib.ASR_P_I_MAX)
P_CTRL_PERIOD = _c(lib.ASR_P_CTRL_PERIOD)
P_LINK_KP = _c(lib.ASR_P_LINK_KP)
P_LINK_KI = _c(lib.ASR_P_LINK_KI)
P_LINK_KD = _c(lib.ASR_P_LINK_KD)
P_LINK_TAU_MAX = _c(lib.ASR_P_LINK_TAU_MAX)
P_DRIVE = _c(lib.ASR_P_DRIVE)
P_KT = _c(lib.ASR_P_KT)
P_KB = _c(lib.ASR_P_KB)
P_R = _c(lib.ASR_P_R)
P_V_SUPPLY = _c(lib.ASR_P_V_SUPPLY)
P_DEAD_ZONE = _c(lib.ASR_P_DEAD_ZONE)
P_LINK_FRICTION = _c(lib.ASR_P_LINK_FRICTION)
P_LINK_FRICTION_K = _c(lib.ASR_P_LINK_FRICTION_K)
P_LINK_VEL_MAX = _c(lib.ASR_P_LINK_VEL_MAX)

# operation modes (ASR_MODES)
LINK_TORQUE = _c(lib.ASR_MODE_LINK_TORQUE)
LINK_PID = _c(lib.ASR_MODE_LINK_PID)
MOTOR_POS = _c(lib.ASR_MODE_MOTOR_POS)
EQ_PRESET = _c(lib.ASR_MODE_EQ_PRESET)
MOTOR_TORQUE = _c(lib.ASR_MODE_MOTOR_TORQUE)
EQ_PRESET_PID = _c(lib.ASR_MODE_EQ_PRESET_PID)

# statuses (csrc/core/asr_status.h)
OK = _c(lib.ASR_OK)
ERR_RANGE = _c(lib.ASR_ERR_RANGE)
ERR_NONFINITE = _c(lib.ASR_ERR_NONFINITE)
ERR_INPUT = _c(lib.ASR_ERR_INPUT)
ERR_DIVERGED = _c(lib.ASR_ERR_DIVERGED)

# A controller tick is due when its timer is within this fraction of a sub-step of zero: the C
# core's 1e-9 in float64; in float32 the timer's rounding (about 1e-7 of the period per update)
# would move a tick that lands on a sub-step boundary by a whole sub-step, so 1e-4 there.
TIMER_TOLERANCE = {"float64": 1e-9, "float32": 1e-4}

_BUILT: dict[Any, types.SimpleNamespace] = {}


def build(F: Any) -> types.SimpleNamespace:
    """The step, count and reset kernels for float type F, built once per type."""
    if F in _BUILT:
        return _BUILT[F]
    S = springs.build(F)
    M = motor.build(F)
    P3 = wp.array3d(dtype=F)
    tick_tolerance = TIMER_TOLERANCE["float64" if F is wp.float64 else "float32"]
    # no adjoint (nothing differentiates through the step; half the compile time); in float64 no
    # fused multiply-add, as the C core is built (-ffp-contract=off), so that CUDA's float64
    # differs from the C core only by its sin/cos (AwAS-II); float32 may fuse (faster, and no
    # less accurate)
    options = {"enable_backward": False, "fuse_fp": F is not wp.float64}

    @wp.func
    def pid(
        kp: F, ki: F, kd: F, i_max: F, u_max: F, e: F, v: F, ff: F, dt: F, integral: F, tick: bool
    ):
        """pid of joint_kernel.h: (output, integral); the integral is updated where tick."""
        if ki == F(0.0):  # no integral action: nothing to wind up
            return kp * e - kd * v + ff, integral
        i_lim = F(0.0)
        if ki > F(0.0):
            i_lim = i_max / ki
        i_new = S.sat(integral + e * dt, i_lim)
        u = kp * e + ki * i_new - kd * v + ff
        i_kept = i_new
        if wp.abs(u) > u_max and e * u > F(0.0):
            i_kept = integral
        out = kp * e + ki * i_kept - kd * v + ff
        i_out = integral
        if tick:
            i_out = i_kept
        return out, i_out

    @wp.struct
    class Ctx:
        """joint_ctx of joint_kernel.h for one instance: what its joint j shares in a step."""

        i: int  # instance
        r: int  # its parameter row
        j: int  # joint
        kind: int  # springs.KIND
        mode: int
        nmotor: int
        kin_th2: int  # 1: th2 is a kinematic input (AwAS-II pivot)
        nsub: int  # motor sub-steps per step
        scheme: int
        dt: F  # step, s
        h: F  # sub-step, s

    @wp.struct
    class Inputs:
        """lane_step_in: one joint's inputs of a step."""

        q: F
        qd: F
        r1: F
        r2: F
        ext: F
        tff: F

    @wp.func
    def drive_torque(p: P3, c: Ctx, u: F):
        """drive_torque: (torque, d torque/du, back-EMF damping)."""
        r = c.r
        j = c.j
        tau_max = p[r, j, P_TAU_MAX]
        gain = S.one_if(wp.abs(u) < tau_max)
        tau = S.sat(u, tau_max)
        if p[r, j, P_DRIVE] == F(0.0):
            return tau, gain, F(0.0)
        kr = p[r, j, P_KT] / p[r, j, P_R]
        volt, gain_v = M.drive_voltage(u, p[r, j, P_DEAD_ZONE], p[r, j, P_V_SUPPLY])
        return kr * volt, gain_v * kr, kr * p[r, j, P_KB]

    @wp.func
    def motor_substep(
        s: P3, p: P3, c: Ctx, m: int, tick: bool, target: F, ff: F, load: F, kl: F, cl: F, rate: F
    ):
        """motor_substep: one sub-step of motor m (0 or 1) toward target under its load (load,
        its stiffness kl and damping cl, the rate of change from the link's motion)."""
        i = c.i
        r = c.r
        j = c.j
        position_loop = c.mode != MOTOR_TORQUE
        period = p[r, j, P_CTRL_PERIOD]
        continuous = period == F(0.0)
        th = s[i, j, TH1 + m]
        v = s[i, j, TH1D + m]
        u = target
        if position_loop:
            u_max = F(1.0)
            if p[r, j, P_DRIVE] == F(0.0):
                u_max = p[r, j, P_TAU_MAX]
            dt_ctrl = period
            if continuous:
                dt_ctrl = c.h
            kp = p[r, j, P_KP]
            ki = p[r, j, P_KI]
            kd = p[r, j, P_KD]
            integral = s[i, j, INT1 + m]
            u, integral = pid(
                kp, ki, kd, p[r, j, P_I_MAX], u_max, target - th, v, ff, dt_ctrl, integral, tick
            )
            s[i, j, INT1 + m] = integral
        if tick:
            s[i, j, CMD1 + m] = u
        tau, gain, c_bemf = drive_torque(p, c, s[i, j, CMD1 + m])
        implicit = F(0.0)  # a controller run every sub-step is part of the linearisation
        if position_loop and continuous:
            implicit = gain
        motor_d = p[r, j, P_MOTOR_D]
        ms = M.Step()
        ms.J = p[r, j, P_MOTOR_J]
        ms.torque = tau + load - (motor_d + c_bemf) * v
        ms.k = implicit * p[r, j, P_KP] + kl
        ms.c = motor_d + c_bemf + implicit * p[r, j, P_KD] + cl
        ms.r = rate
        ms.vel_max = p[r, j, P_VEL_MAX]
        ms.pos_min = p[r, j, P_POS_MIN]
        ms.pos_max = p[r, j, P_POS_MAX]
        ms.tau_fs = p[r, j, P_FRICTION]
        ms.K = p[r, j, P_FRICTION_K]
        ms.z = ms.tau_fs / ms.K
        ms.z_edge = ms.z - ms.z * F(motor.EDGE_ALLOWANCE)
        ms.scheme = c.scheme
        th_n, v_n, w_n, tau_f = M.advance(th, v, s[i, j, W1 + m], c.h, ms)
        s[i, j, TH1 + m] = th_n
        s[i, j, TH1D + m] = v_n
        s[i, j, W1 + m] = w_n
        s[i, j, TAU_M1 + m] = tau
        s[i, j, TAU_F1 + m] = tau_f

    @wp.func
    def elastic_at(s: P3, p: P3, c: Ctx, q: F, qd: F):
        """elastic_at: the joint's model at link angle q and the motor state in s."""
        i = c.i
        j = c.j
        th1 = s[i, j, TH1]
        th2 = s[i, j, TH2]
        return S.spring(c.kind, p, c.r, j, q, qd, th1, th2, s[i, j, TH1D], s[i, j, TH2D])

    @wp.func
    def compliant_step(s: P3, p: P3, c: Ctx, x: Inputs):
        """compliant_step (modes 2-6): (elastic link torque, status: 0 or ASR_ERR_RANGE)."""
        i = c.i
        r = c.r
        j = c.j
        mode = c.mode
        code = int(OK)
        t0 = x.r1
        t1 = x.r2
        if mode == EQ_PRESET or mode == EQ_PRESET_PID:
            t0, t1, bad = S.refmap(c.kind, p, r, j, x.r1, x.r2)
            if bad != 0:
                code = int(ERR_RANGE)
        if c.nmotor == 1 and c.kin_th2 == 0:
            t1 = F(0.0)
        if mode <= EQ_PRESET:  # motors as ideal position sources
            s[i, j, TH1D] = (t0 - s[i, j, TH1]) / c.dt
            s[i, j, TH2D] = (t1 - s[i, j, TH2]) / c.dt
            s[i, j, TH1] = t0
            s[i, j, TH2] = t1
        elif c.nmotor < 2:  # th2: kinematic stiffness input, or unused
            s[i, j, TH2D] = (t1 - s[i, j, TH2]) / c.dt
            s[i, j, TH2] = t1
        tau1, tau2, stiff, damp, ld1, ld2, kl1, kl2, cl1, cl2, d1, d2, clamped, bad2 = elastic_at(
            s, p, c, x.q, x.qd
        )
        if bad2 != 0 and code == OK:
            code = int(ERR_RANGE)
        s[i, j, STIFFNESS] = stiff
        s[i, j, TAU_EL1] = tau1
        s[i, j, TAU_EL2] = tau2
        s[i, j, DEFL1] = d1
        s[i, j, DEFL2] = d2
        s[i, j, CLAMPED] = clamped
        s[i, j, CLAMP_STEPS] = s[i, j, CLAMP_STEPS] + S.one_if(clamped > F(0.0))
        tau = tau1 + tau2
        if mode >= MOTOR_TORQUE:
            ff = F(0.0)
            if c.nmotor == 1 and mode != MOTOR_TORQUE:
                # [Kamedula2016] eq. 4: th_d = q_d + g(q_d)/K; no offset without stiffness
                offset = F(0.0)
                if kl1 > F(0.0):
                    offset = x.tff / kl1
                t0 = t0 + offset
                ff = x.tff
            period = p[r, j, P_CTRL_PERIOD]
            qd = x.qd
            for k in range(c.nsub):
                if k > 0:
                    qk = x.q + qd * (F(k) * c.h)
                    tau1, tau2, stiff, damp, ld1, ld2, kl1, kl2, cl1, cl2, d1, d2, clamped, bad2 = (
                        elastic_at(s, p, c, qk, qd)
                    )
                    if bad2 != 0 and code == OK:
                        code = int(ERR_RANGE)
                timer = s[i, j, CTRL_TIMER]
                tick = period == F(0.0) or timer <= F(tick_tolerance) * c.h
                motor_substep(s, p, c, 0, tick, t0, ff, ld1, kl1, cl1, kl1 * qd)
                if c.nmotor == 2:
                    motor_substep(s, p, c, 1, tick, t1, F(0.0), ld2, kl2, cl2, kl2 * qd)
                if period > F(0.0):
                    nxt = timer + period
                    if tick:
                        timer = F(0.0)
                        if nxt > F(0.0):
                            timer = nxt
                    s[i, j, CTRL_TIMER] = timer - c.h
        return tau, code

    @wp.func
    def joint_compute(s: P3, p: P3, c: Ctx, x: Inputs) -> int:
        """joint_compute: one step of joint c.j of instance c.i in place; returns its status."""
        i = c.i
        r = c.r
        j = c.j
        s[i, j, Q] = x.q
        s[i, j, QD] = x.qd
        s[i, j, REF1] = x.r1
        s[i, j, REF2] = x.r2
        s[i, j, TAU_EXT] = x.ext
        code = int(OK)
        tau_link = x.r1
        if c.mode == LINK_PID:
            lim = p[r, j, P_LINK_TAU_MAX]
            kp = p[r, j, P_LINK_KP]
            ki = p[r, j, P_LINK_KI]
            kd = p[r, j, P_LINK_KD]
            e = x.r1 - x.q
            u, integral = pid(kp, ki, kd, lim, lim, e, x.qd, F(0.0), c.dt, s[i, j, INTQ], True)
            s[i, j, INTQ] = integral
            tau_link = S.sat(u, lim)
        elif c.mode != LINK_TORQUE:
            tau_link, code = compliant_step(s, p, c, x)
        z_link = p[r, j, P_LINK_FRICTION] / p[r, j, P_LINK_FRICTION_K]
        wq, tau_fq = M.friction(s[i, j, WQ], x.q, z_link, p[r, j, P_LINK_FRICTION_K])
        s[i, j, WQ] = wq
        tau_link = tau_link - tau_fq
        s[i, j, TAU_FQ] = tau_fq
        s[i, j, TAU_LINK] = tau_link
        s[i, j, TAU_JOINT] = tau_link + x.ext
        if code == OK:
            for k in range(NCHECKED):
                if not wp.isfinite(s[i, j, k]):
                    code = int(ERR_NONFINITE)
        return code

    @wp.struct
    class Arrays:
        """A batch's device arrays: state (N, J, n_fields); parameters (rows, J, n_param), row
        i * prow_stride of instance i; per joint (J,): spring kind, mode, motor count, th2
        kinematic; per instance (N,): status code, failing joint, failing step; the step
        count (1,)."""

        state: wp.array3d(dtype=F)
        params: wp.array3d(dtype=F)
        prow_stride: int
        kinds: wp.array(dtype=wp.int32)
        modes: wp.array(dtype=wp.int32)
        nmotors: wp.array(dtype=wp.int32)
        kin_th2: wp.array(dtype=wp.int32)
        scheme: int
        code: wp.array(dtype=wp.int32)
        bad_joint: wp.array(dtype=wp.int32)
        bad_step: wp.array(dtype=wp.int64)
        count: wp.array(dtype=wp.int64)

    @wp.kernel(module="unique", module_options=options)
    def step(
        b: Arrays,
        q: wp.array2d(dtype=F),
        qd: wp.array2d(dtype=F),
        refs: wp.array3d(dtype=F),
        tau_ext: wp.array2d(dtype=F),
        tau_ff: wp.array2d(dtype=F),
        dt: F,
        h: F,
        nsub: int,
    ):
        """One step of instance wp.tid() (see the module doc)."""
        i = wp.tid()
        if b.code[i] != OK:
            return  # frozen: its torques were zeroed when it stopped
        r = i * b.prow_stride
        nj = b.state.shape[1]
        c = Ctx()
        c.i = i
        c.r = r
        c.nsub = nsub
        c.scheme = b.scheme
        c.dt = dt
        c.h = h
        x = Inputs()
        frozen = int(OK)
        for j in range(nj):
            c.j = j
            c.kind = int(b.kinds[j])
            c.mode = int(b.modes[j])
            c.nmotor = int(b.nmotors[j])
            c.kin_th2 = int(b.kin_th2[j])
            x.q = q[i, j]
            x.qd = qd[i, j]
            x.r1 = refs[i, j, 0]
            x.r2 = refs[i, j, 1]
            x.ext = tau_ext[i, j]
            x.tff = tau_ff[i, j]
            links = wp.isfinite(x.q) and wp.isfinite(x.qd)
            refs_ok = wp.isfinite(x.r1) and wp.isfinite(x.r2)
            if not (links and refs_ok and wp.isfinite(x.ext) and wp.isfinite(x.tff)):
                frozen = int(ERR_INPUT)
            elif wp.abs(x.qd) > b.params[r, j, P_LINK_VEL_MAX]:
                b.state[i, j, Q] = x.q
                b.state[i, j, QD] = x.qd
                b.state[i, j, REF1] = x.r1
                b.state[i, j, REF2] = x.r2
                b.state[i, j, TAU_EXT] = x.ext
                frozen = int(ERR_DIVERGED)
            else:
                frozen = joint_compute(b.state, b.params, c, x)
            if frozen != OK:
                b.code[i] = wp.int32(frozen)
                b.bad_joint[i] = wp.int32(j)
                b.bad_step[i] = b.count[0]
                for jj in range(nj):  # a frozen instance applies no torque
                    b.state[i, jj, TAU_JOINT] = F(0.0)
                    b.state[i, jj, TAU_LINK] = F(0.0)
                break

    @wp.kernel(module="unique", module_options=options)
    def count(b: Arrays):
        b.count[0] = b.count[0] + wp.int64(1)

    @wp.kernel(module="unique", module_options=options)
    def reset(
        b: Arrays,
        mask: wp.array(dtype=wp.bool),
        q0: wp.array2d(dtype=F),
        refs: wp.array3d(dtype=F),
        with_refs: int,
    ):
        """batch.c reset_instance for the instances of mask: zero state and status, the link
        at q0, the motors where refs put them in the joint's mode, else at zero deflection. A
        reference that is not finite, or that the map refuses, stops the instance (status
        ASR_ERR_INPUT, ASR_ERR_RANGE; asr.Batch.reset raises instead)."""
        i = wp.tid()
        if not mask[i]:
            return
        r = i * b.prow_stride
        nj = b.state.shape[1]
        b.code[i] = wp.int32(OK)
        b.bad_joint[i] = -1
        b.bad_step[i] = wp.int64(-1)
        for j in range(nj):
            for k in range(NFIELD):
                b.state[i, j, k] = F(0.0)
            q = q0[i, j]
            th1 = q
            th2 = F(0.0)
            if b.nmotors[j] == 2:
                th2 = q
            mode = int(b.modes[j])
            if with_refs != 0 and mode >= MOTOR_POS and mode != MOTOR_TORQUE:
                r1 = refs[i, j, 0]
                r2 = refs[i, j, 1]
                th1 = r1
                th2 = r2
                if not (wp.isfinite(r1) and wp.isfinite(r2)):
                    b.code[i] = wp.int32(ERR_INPUT)
                    b.bad_joint[i] = wp.int32(j)
                elif mode == EQ_PRESET or mode == EQ_PRESET_PID:
                    th1, th2, bad = S.refmap(int(b.kinds[j]), b.params, r, j, r1, r2)
                    if bad != 0 or not (wp.isfinite(th1) and wp.isfinite(th2)):
                        b.code[i] = wp.int32(ERR_RANGE)
                        b.bad_joint[i] = wp.int32(j)
            b.state[i, j, TH1] = th1
            b.state[i, j, TH2] = th2
            b.state[i, j, W1] = th1
            b.state[i, j, W2] = th2
            b.state[i, j, WQ] = q
            b.state[i, j, Q] = q

    ns = types.SimpleNamespace(Arrays=Arrays, step=step, count=count, reset=reset)
    _BUILT[F] = ns
    return ns
