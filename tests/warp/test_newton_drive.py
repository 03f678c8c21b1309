"""asr's actuators as a Newton drive (asr.warp.newton.AsrDrive), on Warp's CPU device.

The drive inside Newton's own Actuator, on prescribed link motion, against asr.Batch (the C core)
given the same inputs: asr's state in float64 within 1e-12 (relative to each field's scale over
the run), Newton's float32 force the float32 rounding of that torque; reset masks; a NaN reference
stopping only its DOF. Then a Newton model (ModelBuilder, Featherstone on the CPU device) with a
qbmove and an SEA pendulum: the SEA pendulum against the closed form of the linearised pendulum,
the qbmove's torques against asr.Batch replaying the link motion Newton produced.
"""

import types
import warnings

import numpy as np
import pytest

from tests.conftest import require

wp = require("warp")
newton = require("newton")

from asr.core import FIELDS, Batch, Joint  # noqa: E402
from asr.warp.newton import REF2_INPUT, USD_SCHEMA, AsrDrive, register_usd  # noqa: E402

DT = 1e-3
N = 3  # DOFs (worlds) per drive
QB = {"model": "qbmove", "mode": 6, "k": 0.03, "a": 7.0}
SEA = {"model": "sea", "mode": 6, "k": 40.0}
CHECKED = ("tau_joint", "tau_link", "stiffness", "th1", "th2", "th1d", "th2d", "int1", "int2")


def f32(x):
    return np.asarray(x, dtype=np.float32)


def motion(n, steps):
    """Prescribed link angles, velocities (steps, n) and references (steps, n, 2), rounded to
    float32 as Newton holds them: each DOF its own phase and preset."""
    t = DT * np.arange(steps)[:, None]
    ph = np.linspace(0.0, 2.0, n)[None, :]
    q = f32(0.4 * np.sin(2 * np.pi * 1.3 * t + ph))
    qd = f32(0.4 * 2 * np.pi * 1.3 * np.cos(2 * np.pi * 1.3 * t + ph))
    refs = np.empty((steps, n, 2), dtype=np.float32)
    refs[..., 0] = 0.3 * np.sin(2 * np.pi * 0.7 * t + 2 * ph)
    refs[..., 1] = np.linspace(0.1, 0.5, n)[None, :]
    return q, qd, refs


class Rig:
    """An AsrDrive in a newton.actuators.Actuator over N DOFs, with the state and control
    containers the Actuator reads (float32, as Newton's)."""

    def __init__(self, desc, n=N, **extra):
        self.drive = AsrDrive(**desc, **extra)
        idx = wp.array(np.arange(n, dtype=np.uint32), device="cpu")
        self.act = newton.actuators.Actuator(indices=idx, drive=self.drive)
        self.state = types.SimpleNamespace(
            joint_q=wp.zeros(n, dtype=wp.float32, device="cpu"),
            joint_qd=wp.zeros(n, dtype=wp.float32, device="cpu"),
        )
        self.control = types.SimpleNamespace(
            joint_target_q=wp.zeros(n, dtype=wp.float32, device="cpu"),
            joint_target_qd=wp.zeros(n, dtype=wp.float32, device="cpu"),
            joint_act=None,
            joint_f=wp.zeros(n, dtype=wp.float32, device="cpu"),
            **{REF2_INPUT: wp.zeros(n, dtype=wp.float32, device="cpu")},
        )
        self.s0, self.s1 = self.act.state(), self.act.state()

    def reset(self, q0, refs, mask=None):
        self.s0.drive_state.reset(mask, q0=q0, refs=refs)

    def step(self, q, qd, refs, ff=None):
        self.control.joint_act = None if ff is None else wp.array(f32(ff), device="cpu")
        self.state.joint_q.assign(f32(q))
        self.state.joint_qd.assign(f32(qd))
        self.control.joint_target_q.assign(f32(refs[:, 0]))
        getattr(self.control, REF2_INPUT).assign(f32(refs[:, 1]))
        self.control.joint_f.zero_()
        self.act.step(self.state, self.control, self.s0, self.s1, DT)
        self.s0, self.s1 = self.s1, self.s0
        return self.control.joint_f.numpy()

    def field(self, name):
        return self.s0.drive_state.fields.numpy()[:, 0, FIELDS.index(name)]

    @property
    def status(self):
        return self.s0.drive_state.status.numpy()


def reference_batch(desc, n=N):
    d = dict(desc)
    return Batch([Joint(d.pop("model"), d.pop("mode"), d)], n)


def assert_state_matches(rig, ref, scale, where, rows=slice(None)):
    for name in CHECKED:
        got, want = rig.field(name)[rows], np.asarray(ref.field(name))[rows, 0]
        np.testing.assert_allclose(
            got, want, rtol=0, atol=1e-12 * scale[name], err_msg=f"{name} at {where}"
        )


@pytest.mark.parametrize("desc", [QB, SEA], ids=["qbmove", "sea"])
def test_drive_matches_the_c_core_on_prescribed_motion(desc):
    steps = 150
    q, qd, refs = motion(N, steps)
    rig, ref = Rig(desc), reference_batch(desc)
    rig.reset(q[0], refs[0])
    ref.reset(q[0].astype(float)[:, None], refs[0].astype(float)[:, None, :])
    # scales of the fields over the run, for the relative bound
    probe = reference_batch(desc)
    probe.reset(q[0].astype(float)[:, None], refs[0].astype(float)[:, None, :])
    scale = dict.fromkeys(CHECKED, 0.0)
    for k in range(steps):
        probe.step(q[k, :, None], qd[k, :, None], refs[k, :, None, :], DT)
        for name in CHECKED:
            scale[name] = max(scale[name], float(np.abs(probe.field(name)).max()))
    assert scale["tau_joint"] > 0.1  # the motion loads the spring
    for k in range(steps):
        forces = rig.step(q[k], qd[k], refs[k])
        tau = ref.step(q[k, :, None], qd[k, :, None], refs[k, :, None, :], DT)
        assert_state_matches(rig, ref, scale, f"step {k}")
        # Newton's force: asr's torque rounded to float32, nothing else
        np.testing.assert_array_equal(forces, f32(rig.field("tau_joint")))
        np.testing.assert_allclose(forces, tau[:, 0], rtol=1e-6, atol=1e-6 * scale["tau_joint"])
    assert not rig.status.any()


def test_per_dof_parameters_through_the_batch():
    # a sweep across DOFs (worlds): the drive's WarpBatch takes (N,) parameter arrays
    steps = 50
    q, qd, refs = motion(N, steps)
    k = np.array([20.0, 40.0, 80.0])
    rig, ref = Rig(SEA), reference_batch(SEA)
    rig.drive.batch.set_param(0, "k", k)
    ref.set_param(0, "k", k)
    rig.reset(q[0], refs[0])
    ref.reset(q[0].astype(float)[:, None], refs[0].astype(float)[:, None, :])
    for n in range(steps):
        rig.step(q[n], qd[n], refs[n])
        ref.step(q[n, :, None], qd[n, :, None], refs[n, :, None, :], DT)
        np.testing.assert_array_equal(rig.field("tau_joint"), ref.tau_joint[:, 0])
    np.testing.assert_array_equal(rig.field("stiffness"), k)


def test_float32_drive_stays_near_the_c_core():
    steps = 150
    q, qd, refs = motion(N, steps)
    rig, ref = Rig(QB, dtype="float32"), reference_batch(QB)
    rig.reset(q[0], refs[0])
    ref.reset(q[0].astype(float)[:, None], refs[0].astype(float)[:, None, :])
    worst = scale = 0.0
    for k in range(steps):
        forces = rig.step(q[k], qd[k], refs[k])
        tau = ref.step(q[k, :, None], qd[k, :, None], refs[k, :, None, :], DT)
        worst = max(worst, float(np.abs(forces - tau[:, 0]).max()))
        scale = max(scale, float(np.abs(tau).max()))
    # float32 kernels: within 1e-5 of the run's torque scale (measured 6e-7 here)
    assert scale > 1.0 and worst <= 1e-5 * scale, (worst, scale)


@pytest.mark.parametrize("desc", [SEA, QB], ids=["sea", "qbmove"])
def test_feed_forward_reaches_single_motor_joints_only(desc):
    steps = 60
    q, qd, refs = motion(N, steps)
    ff = f32(0.2 * np.sin(np.linspace(0.0, 6.0, steps)))[:, None] * np.ones((1, N), np.float32)
    single = desc["model"] == "sea"
    rig, ref = Rig(desc), reference_batch(desc)
    rig.reset(q[0], refs[0])
    ref.reset(q[0].astype(float)[:, None], refs[0].astype(float)[:, None, :])
    for k in range(steps):
        forces = rig.step(q[k], qd[k], refs[k], ff=ff[k])
        tau_ff = ff[k, :, None].astype(float) if single else None
        tau = ref.step(q[k, :, None], qd[k, :, None], refs[k, :, None, :], DT, tau_ff=tau_ff)
        np.testing.assert_array_equal(rig.field("tau_joint"), tau[:, 0])
        np.testing.assert_array_equal(forces, f32(tau[:, 0]))
    if single:  # the feed-forward torque changed the motion of the motor
        plain = reference_batch(desc)
        plain.reset(q[0].astype(float)[:, None], refs[0].astype(float)[:, None, :])
        for k in range(steps):
            plain.step(q[k, :, None], qd[k, :, None], refs[k, :, None, :], DT)
        assert np.abs(np.asarray(plain.th1) - ref.th1).max() > 1e-6


def test_reset_mask_resets_only_its_dofs():
    steps = 60
    q, qd, refs = motion(N, steps)
    rig = Rig(QB)
    rig.reset(q[0], refs[0])
    for k in range(steps):
        rig.step(q[k], qd[k], refs[k])
    before = rig.s0.drive_state.fields.numpy().copy()
    mask = wp.array([False, True, False], dtype=wp.bool, device="cpu")
    q0 = np.array([0.0, -0.2, 0.0])
    r0 = np.array([[0.0, 0.0], [0.1, 0.4], [0.0, 0.0]])
    rig.reset(q0, r0, mask=mask)
    after = rig.s0.drive_state.fields.numpy()
    np.testing.assert_array_equal(after[[0, 2]], before[[0, 2]])
    fresh = reference_batch(QB, 1)
    fresh.reset([[-0.2]], [[[0.1, 0.4]]])
    want = np.array([fresh.field(name)[0, 0] for name in FIELDS])
    np.testing.assert_array_equal(after[1, 0], want)
    assert not np.array_equal(after[1], before[1])


def test_nan_reference_stops_only_its_dof():
    steps = 40
    q, qd, refs = motion(N, steps)
    rig, ref = Rig(SEA), reference_batch(SEA)
    rig.reset(q[0], refs[0])
    ref.reset(q[0].astype(float)[:, None], refs[0].astype(float)[:, None, :])
    scale = dict.fromkeys(CHECKED, 1.0)
    bad = refs.copy()
    bad[10:, 1, 0] = np.nan
    for k in range(steps):
        forces = rig.step(q[k], qd[k], bad[k])
        ref.step(q[k, :, None], qd[k, :, None], refs[k, :, None, :], DT)  # finite for all
        if k >= 10:
            assert rig.status[1] != 0 and forces[1] == 0.0, k
        assert_state_matches(rig, ref, scale, f"step {k}", rows=[0, 2])
    assert rig.status[0] == 0 and rig.status[2] == 0
    mask = wp.array([False, True, False], dtype=wp.bool, device="cpu")
    rig.reset(q[-1], refs[-1], mask=mask)
    assert not rig.status.any()
    forces = rig.step(q[-1], qd[-1], refs[-1])
    assert np.isfinite(forces).all() and not rig.status.any()


def test_assign_copies_the_state():
    rig = Rig(SEA)
    q, qd, refs = motion(N, 5)
    rig.reset(q[0], refs[0])
    for k in range(5):
        rig.step(q[k], qd[k], refs[k])
    rig.s1.assign(rig.s0)
    np.testing.assert_array_equal(
        rig.s1.drive_state.fields.numpy(), rig.s0.drive_state.fields.numpy()
    )
    assert rig.s1.drive_state.fields.ptr != rig.s0.drive_state.fields.ptr


def test_arguments_are_checked_by_asr():
    with pytest.raises(ValueError, match="'model' is required"):
        AsrDrive.resolve_arguments({"k": 1.0})
    with pytest.raises(ValueError, match="unknown"):
        AsrDrive.resolve_arguments({"model": "nope"})
    with pytest.raises(ValueError, match="no parameter 'spring'"):
        AsrDrive.resolve_arguments({"model": "sea", "spring": 1.0})
    with pytest.raises(ValueError, match=r"k.*-1"):
        AsrDrive.resolve_arguments({"model": "sea", "k": -1.0})
    with pytest.raises(ValueError, match="mode"):
        AsrDrive.resolve_arguments({"model": "rigid", "mode": 6})
    with pytest.raises(ValueError, match="k must be a real number"):
        AsrDrive.resolve_arguments({"model": "sea", "k": "stiff"})
    with pytest.raises(ValueError, match="motor_scheme"):
        AsrDrive.resolve_arguments({"model": "sea", "motor_scheme": "rk4"})
    with pytest.raises(ValueError, match="ref2"):  # AwAS-II's pivot lies in [0, L)
        AsrDrive.resolve_arguments({"model": "awas2", "ref2": 10.0})
    with pytest.raises(ValueError, match="dtype"):
        AsrDrive.resolve_arguments({"model": "sea", "dtype": "float16"})
    # USD's snake case lowers asr's capitals: motor_J authored as newton:motorJ reads motor_j
    # (the names are kept as given, so that Newton's builder sees every argument used)
    got = AsrDrive.resolve_arguments({"model": "sea", "motor_j": 2e-4, "motor_kt": 0.05})
    assert got["motor_j"] == 2e-4 and got["mode"] == 6
    drive = AsrDrive(**got)
    assert drive.params == {"motor_J": 2e-4, "motor_Kt": 0.05}
    assert drive.joint().params == drive.params


USD_PENDULUM = """#usda 1.0
(
    defaultPrim = "World"
    metersPerUnit = 1.0
    upAxis = "Z"
)
def Xform "World"
{
    def PhysicsScene "PhysicsScene" {}
    def Xform "Robot" (prepend apiSchemas = ["PhysicsArticulationRootAPI"])
    {
        def Xform "Link" (prepend apiSchemas = ["PhysicsRigidBodyAPI", "PhysicsMassAPI"])
        {
            float physics:mass = 1.0
            float3 physics:diagonalInertia = (0.01, 0.01, 0.01)
        }
        def PhysicsRevoluteJoint "Joint"
        {
            rel physics:body1 = </World/Robot/Link>
            uniform token physics:axis = "Y"
        }
        def NewtonActuator "JointActuator" (prepend apiSchemas = ["AsrActuatorAPI"])
        {
            rel newton:targets = [</World/Robot/Joint>]
            string newton:model = "sea"
            int newton:mode = 2
            double newton:k = 40.0
            double newton:motorJ = 2e-4
        }
    }
}
"""


@pytest.mark.slow  # OpenUSD and Newton's importer: seconds
def test_usd_actuator_prim_becomes_an_asr_drive(tmp_path):
    require("pxr")  # OpenUSD (usd-core) and Newton's schemas: Newton's USD importer needs both
    require("newton_usd_schemas")
    register_usd()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        register_usd()  # Newton warns when a registered schema is registered again
    assert any(USD_SCHEMA in str(w.message) for w in seen)
    path = tmp_path / "pendulum.usda"
    path.write_text(USD_PENDULUM)
    b = newton.ModelBuilder()
    with warnings.catch_warnings():
        warnings.simplefilter("error", newton.NewtonWarning)  # every attribute used
        assert b.add_usd(str(path))["actuator_count"] == 1
    model = b.finalize(device="cpu")
    (act,) = model.actuators
    assert isinstance(act.drive, AsrDrive)
    assert (act.drive.model, act.drive.mode) == ("sea", 2)
    assert act.drive.params == {"k": 40.0, "motor_J": 2e-4}
    # a deflected spring: the drive's torque is the C core's for the same joint and input
    dof = int(act.indices.numpy()[0])
    state, control = model.state(), model.control()
    q = np.zeros(model.joint_coord_count, dtype=np.float32)
    q[int(act.pos_indices.numpy()[0])] = 0.1
    state.joint_q.assign(q)
    s0, s1 = act.state(), act.state()
    s0.drive_state.reset(q0=0.1)
    control.joint_f.zero_()
    act.step(state, control, s0, s1, DT)
    ref = Batch([Joint("sea", 2, {"k": 40.0, "motor_J": 2e-4})], 1)
    ref.reset([[0.1]])
    want = ref.step(f32(0.1).astype(float), 0.0, [0.0, 0.0], DT)[0, 0]
    assert abs(want) > 1.0  # k * deflection: 40 N m/rad x 0.1 rad
    assert control.joint_f.numpy()[dof] == f32(want)


# ------------------------------------------------------------ a Newton model


def pendulum(builder, x, mass, lever, inertia):
    """A link hanging from a revolute joint about y at (x, 0, 0), its centre of mass `lever`
    below the axis; returns the joint's DOF index in `builder`."""
    link = builder.add_link(
        xform=wp.transform(wp.vec3(x, 0.0, 0.0), wp.quat_identity()),
        mass=mass,
        com=wp.vec3(0.0, 0.0, -lever),
        inertia=wp.mat33(inertia, 0.0, 0.0, 0.0, inertia, 0.0, 0.0, 0.0, inertia),
    )
    j = builder.add_joint_revolute(
        parent=-1,
        child=link,
        axis=newton.Axis.Y,
        parent_xform=wp.transform(wp.vec3(x, 0.0, 0.0), wp.quat_identity()),
    )
    builder.add_articulation([j])
    return builder.joint_qd_start[j]


@pytest.mark.slow  # 2 s warm; 45 s of Newton's kernel compilation on a cold cache
def test_newton_pendulums_with_asr_joints():
    m, lever, ic, k = 1.0, 0.3, 0.01, 50.0
    qb_world, sea_world = newton.ModelBuilder(), newton.ModelBuilder()
    qb_world.add_actuator(AsrDrive, index=pendulum(qb_world, 0.0, m, lever, ic), **QB)
    # the SEA's motor an ideal position source (mode 2) at 0: a linear torsion spring
    sea_world.add_actuator(
        AsrDrive, index=pendulum(sea_world, 0.0, m, lever, ic), model="sea", mode=2, k=k
    )
    b = newton.ModelBuilder()
    b.replicate(qb_world, 2)  # worlds 0 and 1: equal descriptions, one Actuator for both
    b.add_world(sea_world)  # world 2
    model = b.finalize(device="cpu")
    qb_dofs, sea_dof = [0, 1], 2
    assert len(model.actuators) == 2
    qb_act, sea_act = model.actuators
    assert list(qb_act.indices.numpy()) == qb_dofs and list(sea_act.indices.numpy()) == [sea_dof]
    solver = newton.solvers.SolverFeatherstone(model)
    s0, s1, control = model.state(), model.state(), model.control()
    assert hasattr(control, REF2_INPUT)  # registered by finalize as a per-DOF Control input
    a0 = [a.state() for a in model.actuators]
    a1 = [a.state() for a in model.actuators]
    amp = 0.01
    q_init = np.zeros(model.joint_coord_count, dtype=np.float32)
    q_init[sea_dof] = amp
    q_init[qb_dofs] = [0.2, -0.1]
    s0.joint_q.assign(q_init)
    newton.eval_fk(model, s0.joint_q, s0.joint_qd, s0)
    qb_refs = np.array([[0.3, 0.2], [-0.2, 0.5]])
    target = np.zeros(model.joint_dof_count, dtype=np.float32)
    target[qb_dofs] = qb_refs[:, 0]
    ref2 = np.zeros(model.joint_dof_count, dtype=np.float32)
    ref2[qb_dofs] = qb_refs[:, 1]
    control.joint_target_q.assign(target)
    getattr(control, REF2_INPUT).assign(ref2)
    a0[0].drive_state.reset(q0=q_init[qb_dofs], refs=qb_refs.astype(np.float32))
    a0[1].drive_state.reset(q0=amp, refs=[[0.0, 0.0]])

    steps = 400
    qs, qds, taus = [], [], []
    for _ in range(steps):
        qs.append(s0.joint_q.numpy().copy())
        qds.append(s0.joint_qd.numpy().copy())
        control.joint_f.zero_()
        for act, x0, x1 in zip(model.actuators, a0, a1):
            act.step(s0, control, x0, x1, DT)
        taus.append(control.joint_f.numpy().copy())
        solver.step(s0, s1, control, None, DT)
        s0, s1 = s1, s0
        a0, a1 = a1, a0
    qs, qds, taus = np.array(qs), np.array(qds), np.array(taus)

    # the SEA pendulum: I q'' = -(k + m g l) q for small angles (measured 1.2 % of the
    # amplitude over 0.4 s: Featherstone's step with the torque held over it, float32)
    t = DT * np.arange(steps)
    w = np.sqrt((k + m * 9.81 * lever) / (ic + m * lever**2))
    err = np.abs(qs[:, sea_dof] - amp * np.cos(w * t)).max()
    assert err < 0.02 * amp, err

    # the qbmoves: the C core replaying the link motion Newton produced gives their torques
    ref = reference_batch(QB, 2)
    ref.reset(q_init[qb_dofs].astype(float)[:, None], qb_refs.astype(np.float32)[:, None, :])
    r = np.broadcast_to(qb_refs.astype(np.float32).astype(float)[:, None, :], (2, 1, 2))
    for n in range(steps):
        tau = ref.step(qs[n, qb_dofs][:, None], qds[n, qb_dofs][:, None], r, DT)
        np.testing.assert_allclose(taus[n, qb_dofs], tau[:, 0], rtol=1e-6, atol=1e-7)
    fields = a0[0].drive_state.fields.numpy()[:, 0]
    for name in CHECKED:
        want = np.asarray(ref.field(name))[:, 0]
        np.testing.assert_allclose(
            fields[:, FIELDS.index(name)], want, rtol=1e-12, atol=1e-12, err_msg=name
        )
    assert np.ptp(qs[:, qb_dofs], axis=0).min() > 0.03  # the qbmoves moved their links
