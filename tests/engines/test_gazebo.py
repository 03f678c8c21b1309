"""asr.Sim(engine="gazebo"): the asr core on Gazebo's physics (gz-physics 5 with DART) through
the shim csrc/gz (asr/_asr_gz.so), on the fixture tests/data/robots/gz_pendulum (the 1-DOF rig of
[Mengacci2021] fig. 7 as MJCF and as SDF, qbmove_advanced in mode 3). References: MuJoCo on the
MJCF twin, the closed-form static equilibrium (brentq) and the pendulum's ODE (solve_ivp).
With CI set, a missing shim or missing Gazebo libraries fail these tests instead of skipping."""

import dataclasses
import os
import re
import shutil
import subprocess
import sys

import cffi
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

import asr
from asr.engines import gz_shim as gazebo
from tests.conftest import need_gazebo
from tests.support.paths import TESTS  # noqa: E402

pytestmark = pytest.mark.gazebo

HERE = str(TESTS)
ROOT = os.path.dirname(HERE)
FIXTURE = os.path.join(HERE, "data", "robots", "gz_pendulum")
M, L, G, DAMPING = 0.2, 0.04, 9.81, 0.01  # 0.2 kg at 0.04 m, q = 0 horizontal
INERTIA = M * L**2 + 1e-7  # about the joint axis, kg m^2
GZ_PKGS = [
    "ignition-physics5",
    "ignition-physics5-sdf",
    "ignition-plugin1-loader",
    "sdformat12",
    "ignition-common4-profiler",
]  # as the Makefile's


def qbmove_tau(q, th1, th2, k=0.0019, a=8.9992):
    """qbmove_advanced link torque of docs/models.md (no clamp reached here)."""
    return -k * np.sinh(a * (q - th1)) - k * np.sinh(a * (q - th2))


def static_q(eq, preset):
    """Closed form: tau_elastic(q) - m g l cos(q) = 0 near the reference."""
    f = lambda q: qbmove_tau(q, eq + preset, eq - preset) - M * G * L * np.cos(q)
    return brentq(f, eq - 1.2, eq + 0.3, xtol=1e-14)


def robot(folder=FIXTURE):
    return asr.load_robot(folder)


def rig_with_step(tmp_path, dt):
    """A copy of the fixture with both time steps (MJCF and SDF) set to dt."""
    folder = tmp_path / f"gz_pendulum_{dt:g}"
    shutil.copytree(FIXTURE, folder)
    for name, old, new in (
        ("pendulum.xml", 'timestep="0.0001"', f'timestep="{dt!r}"'),
        ("pendulum.sdf", "<max_step_size>0.0001<", f"<max_step_size>{dt!r}<"),
    ):
        text = (folder / name).read_text()
        assert old in text
        (folder / name).write_text(text.replace(old, new))
    return robot(str(folder))


def test_shim_builds_and_loads(tmp_path):
    need_gazebo()
    if (
        shutil.which("g++") is None
        or subprocess.run(["pkg-config", "--exists", *GZ_PKGS]).returncode
    ):
        pytest.fail("g++ or Gazebo's development files missing although the shim is installed")
    flags = subprocess.run(
        ["pkg-config", "--cflags", "--libs", *GZ_PKGS], check=True, capture_output=True, text=True
    ).stdout.split()
    out = tmp_path / "asr_gz.so"
    subprocess.run(
        [
            "g++",
            "-std=c++17",
            "-O0",
            "-fPIC",
            "-shared",
            "-Wall",
            "-Wextra",
            "-Werror",
            os.path.join(ROOT, "csrc", "gz", "asr_gz.cc"),
            "-o",
            str(out),
            *flags,
        ],
        check=True,
    )
    assert out.stat().st_size > 0
    ffi, lib = gazebo.load_shim()
    sim = asr.Sim(robot(), 1, engine="gazebo")
    assert sim.engine == "gazebo" and sim.dt == 1e-4 and sim.models == () and sim.datas == ()
    assert list(sim.qpos_adr) == [0] and list(sim.dof_adr) == [0]


@pytest.mark.parametrize("case", ["missing", "malformed", "joint", "no_sdf"])
def test_bad_sdf_is_a_clear_value_error(tmp_path, case):
    need_gazebo()
    r = robot()
    if case == "missing":
        r, match = dataclasses.replace(r, sdf=str(tmp_path / "absent.sdf")), r"absent\.sdf.*no such"
    elif case == "malformed":
        (tmp_path / "broken.sdf").write_text("<sdf version='1.9'><world name='w'><model")
        r, match = dataclasses.replace(r, sdf=str(tmp_path / "broken.sdf")), r"broken\.sdf"
    elif case == "joint":
        text = open(r.sdf).read().replace('<joint name="joint"', '<joint name="hinge"')
        (tmp_path / "renamed.sdf").write_text(text)
        r = dataclasses.replace(r, sdf=str(tmp_path / "renamed.sdf"))
        match = r"renamed\.sdf.*no joint named 'joint'"
    else:
        r, match = dataclasses.replace(r, sdf=None), "no SDF file"
    with pytest.raises(ValueError, match=match):
        asr.Sim(r, 2, engine="gazebo")


def test_engine_choice_and_mujoco_only_features():
    need_gazebo()
    with pytest.raises(ValueError, match="engine: got 'bullet', valid: 'mujoco', 'gazebo'"):
        asr.Sim(robot(), 1, engine="bullet")
    with pytest.raises(ValueError, match="mujoco_params.*engine='gazebo'"):
        asr.Sim(robot(), 1, engine="gazebo", mujoco_params={"body_mass": {"link": 0.3}})


def test_static_equilibrium_equals_mujoco_and_closed_form():
    need_gazebo()
    presets = [0.2, 0.4, 0.6]
    refs = np.array([[[0.8, p]] for p in presets])
    final = {}
    for engine in ("mujoco", "gazebo"):
        sim = asr.Sim(robot(), 3, engine=engine)
        sim.reset(q0=0.0, refs=[[0.0, 0.2]])
        # damping 0.01 N m s/rad on 3.2e-4 kg m^2: the step response decays as e^(-15.6 t)
        final[engine] = sim.rollout(25000, refs, record=("q",))["q"][:, -1, 0]
    closed = np.array([static_q(0.8, p) for p in presets])
    print(
        f"\nstatic q (rad): DART {final['gazebo']}, MuJoCo {final['mujoco']}, "
        f"closed form {closed}; "
        f"|DART - MuJoCo| {np.abs(final['gazebo'] - final['mujoco']).max():.2e}, "
        f"|DART - closed form| {np.abs(final['gazebo'] - closed).max():.2e}"
    )
    assert np.abs(final["gazebo"] - final["mujoco"]).max() < 1e-9
    assert np.abs(final["gazebo"] - closed).max() < 1e-9
    assert 0.8 - final["gazebo"][0] > 0.2 and 0.8 - final["gazebo"][2] < 0.02  # soft sags


def ode_reference(t_end, q0, eq, preset, n):
    """The pendulum's equation of motion, integrated to 1e-12: q at n equal times up to t_end."""

    def rhs(_, y):
        tau = qbmove_tau(y[0], eq + preset, eq - preset) - M * G * L * np.cos(y[0]) - DAMPING * y[1]
        return [y[1], tau / INERTIA]

    t = np.linspace(0.0, t_end, n + 1)[1:]
    sol = solve_ivp(rhs, (0.0, t_end), [q0, 0.0], t_eval=t, rtol=1e-12, atol=1e-13, method="DOP853")
    return sol.y[0]


def test_free_oscillation_matches_mujoco_and_converges_first_order(tmp_path):
    need_gazebo()
    t_end, q0, eq, preset = 0.2, 0.3, 0.0, 0.3  # deflections stay below max_def
    errors, gaps = [], []
    for dt in (1e-4, 5e-5):
        r = rig_with_step(tmp_path, dt)
        steps = int(round(t_end / dt))
        q = {}
        for engine in ("mujoco", "gazebo"):
            sim = asr.Sim(r, 1, engine=engine)
            sim.reset(q0=q0, refs=[[eq, preset]])
            q[engine] = sim.rollout(steps, [[eq, preset]], record=("q",))["q"][0, :, 0]
        ref = ode_reference(t_end, q0, eq, preset, steps)
        errors.append(np.abs(q["gazebo"] - ref).max())
        gaps.append(np.abs(q["gazebo"] - q["mujoco"]).max())
        assert np.ptp(q["gazebo"]) > 0.3  # it does oscillate
    print(
        f"\nfree oscillation over {t_end} s: max |DART - ODE| {errors[0]:.3e} rad at dt 1e-4, "
        f"{errors[1]:.3e} at 5e-5 (ratio {errors[0] / errors[1]:.3f}); max |DART - MuJoCo| "
        f"{gaps[0]:.2e}, {gaps[1]:.2e} rad"
    )
    assert 1.7 < errors[0] / errors[1] < 2.3  # first order
    assert max(gaps) < 1e-3 * min(errors)  # same scheme: far below the integrator error


def test_threads_do_not_change_results():
    need_gazebo()
    refs = np.array([[[0.5, p]] for p in (0.1, 0.2, 0.4, 0.6)])
    outs = []
    for threads in (1, 2, 4):
        sim = asr.Sim(robot(), 4, engine="gazebo", threads=threads)
        outs.append(sim.rollout(3000, refs))
    for out in outs[1:]:
        for f in outs[0]:
            np.testing.assert_array_equal(out[f], outs[0][f])


def test_records_match_mujoco_fields_and_shapes():
    need_gazebo()
    fields = asr.core.batch.FIELDS
    res = {}
    for engine in ("mujoco", "gazebo"):
        sim = asr.Sim(robot(), 2, engine=engine)
        res[engine] = (
            sim.rollout(500, [[0.3, 0.4]], record=fields),
            sim.rollout(7, [[0.3, 0.4]]),
            sim.step([[0.3, 0.4]]),
            sim.q.shape,
            sim.qd.shape,
            sim.time,
        )
    for a, b in zip(res["mujoco"][:3], res["gazebo"][:3]):
        assert list(a) == list(b) and all(a[f].shape == b[f].shape for f in a)
        for f in ("q", "qd", "tau_joint", "th1", "th2"):
            np.testing.assert_allclose(b[f], a[f], rtol=0, atol=1e-9)
    assert res["mujoco"][3:5] == res["gazebo"][3:5] == ((2, 1), (2, 1))
    assert res["gazebo"][5] == pytest.approx(res["mujoco"][5], abs=1e-12)


def test_reset_of_some_instances():
    need_gazebo()
    sim = asr.Sim(robot(), 2, engine="gazebo")
    sim.rollout(100, [[0.5, 0.2]])
    moved = sim.q.copy()
    sim.reset(q0=[[0.1], [0.2]], instances=[1])
    assert sim.q[0, 0] == moved[0, 0] and sim.q[1, 0] == 0.2 and sim.qd[1, 0] == 0.0


def test_shim_declarations_come_from_the_header():
    """asr.engines.gz_shim declares the shim's functions from csrc/gz/asr_gz.h itself (no copy to
    drift):
    every function the header declares, and every asr_gz_* symbol the built shim exports, is in
    the loaded ffi with the header's signature."""
    ffi, lib = need_gazebo()
    header = os.path.join(ROOT, "csrc", "gz", "asr_gz.h")
    assert gazebo.header_path() == header  # the source tree's, not a stale copy
    text = open(header).read()
    declared = set(re.findall(r"\b(asr_gz_\w+)\(", re.sub(r"/\*.*?\*/", "", text, flags=re.S)))
    nm = subprocess.run(
        ["nm", "-D", "--defined-only", gazebo.shim_path()], capture_output=True, text=True
    )
    assert nm.returncode == 0, nm.stderr
    exported = {w for line in nm.stdout.splitlines() for w in line.split()[2:3]}
    exported = {s for s in exported if s.startswith("asr_gz_")}
    assert exported == declared  # the shim exports what the header declares
    assert {n for n in dir(lib) if n.startswith("asr_gz_")} == declared
    ref = cffi.FFI()  # the header through the C preprocessor, as the build reads asr.h
    ref.cdef(
        subprocess.run(
            ["cc", "-E", "-P", "-x", "c", header], capture_output=True, text=True, check=True
        ).stdout
    )
    ref_lib = ref.dlopen(gazebo.shim_path())
    for name in declared:
        assert ffi.typeof(getattr(lib, name)).cname == ref.typeof(getattr(ref_lib, name)).cname


CPP_GUARDED = """/* a comment with #ifdef and extern "C" { in it */
#ifndef X_H
#define X_H
#ifdef __cplusplus
extern "C" {
#endif
typedef struct x_world x_world;  // opaque
#ifdef __cplusplus
#  if __cplusplus > 201103L
int x_cpp_only(void);
#  endif
}
#else
int x_c_only(const x_world* w);
#endif
double x_dt(const x_world* w, /* s */ int k);
#endif
"""


def test_header_cdef_keeps_what_a_c_compiler_sees():
    """header_cdef drops comments, C++-only blocks (nested ones too) and preprocessor lines; a
    header cffi could then parse wrongly is refused with the line named."""
    cdef = gazebo.header_cdef(CPP_GUARDED)
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    assert "extern" not in cdef and "x_cpp_only" not in cdef and "#" not in cdef
    declared = ffi.dlopen(None)  # the process itself: the names cffi parsed, none looked up
    assert sorted(n for n in dir(declared) if n.startswith("x_")) == ["x_c_only", "x_dt"]
    assert len(cdef.splitlines()) == len(CPP_GUARDED.splitlines())  # cffi's line numbers hold
    with pytest.raises(ValueError, match="line 3: cannot decide #else"):
        gazebo.header_cdef("#if FOO\nint a;\n#else\nint b;\n#endif\n")


@pytest.mark.slow
def test_built_package_ships_the_header(tmp_path):
    """setup.py's build_py puts asr_gz.h next to the shim in the built package (the wheel), where
    asr.engines.gz_shim reads it before the source tree's."""
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(tmp_path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    shipped = tmp_path / "asr" / "asr_gz.h"
    assert shipped.read_text() == open(os.path.join(ROOT, "csrc", "gz", "asr_gz.h")).read()
    out = subprocess.run(
        [sys.executable, "-c", "from asr.engines import gz_shim; print(gz_shim.header_path())"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert out.stdout.strip() == str(shipped), out.stderr


# ------------------------------------------------ [Mengacci2021] fig. 7 step, both engines

PENDULUM_1DOF = os.path.join(ROOT, "robots", "pendulum_1dof")
FIG7_STEP_T = 0.15  # s after the 0.8 rad equilibrium step
# time steps dt, dt/2 per variant: the stiff AwAS-II (3.6e3 N m/rad on 3.2e-4 kg m^2, 3.3e3
# rad/s) at 0.1 ms has omega dt = 0.33, outside the asymptotic range (errors 0.17 -> 0.049 rad,
# ratio 3.5, the Euler phase drift); at 20 us it is first order like the others
FIG7_DTS = {
    "sea": (1e-4, 5e-5),
    "awas2": (2e-5, 1e-5),
    "bavs": (1e-4, 5e-5),
    "qbmove_advanced": (1e-4, 5e-5),
}


def pendulum_1dof_with_step(tmp_path, variant, dt):
    """robots/pendulum_1dof `variant` from a copy whose MJCF timestep and SDF max_step_size
    are dt."""
    folder = tmp_path / f"pendulum_1dof_{dt:g}"
    if not folder.exists():
        shutil.copytree(PENDULUM_1DOF, folder)
        for name, old, new in (
            ("pendulum.xml", 'timestep="0.0001"', f'timestep="{dt!r}"'),
            ("pendulum.sdf", "<max_step_size>0.0001<", f"<max_step_size>{dt!r}<"),
        ):
            text = (folder / name).read_text()
            assert old in text
            (folder / name).write_text(text.replace(old, new))
    return asr.load_robot(str(folder), variant)


def fig7_step_reference(tau_el, q0, eq, preset, n, dt):
    """The rig's equation of motion I qdd = tau_el(q) - m g l cos q - c qd with the closed-form
    spring of docs/models.md (mengacci2021's), integrated to 1e-12: q at the n step ends."""

    def rhs(_, y):
        return [
            y[1],
            (tau_el(y[0], eq, preset) - M * G * L * np.cos(y[0]) - DAMPING * y[1]) / INERTIA,
        ]

    t = np.arange(1, n + 1) * dt
    sol = solve_ivp(rhs, (0.0, t[-1]), [q0, 0.0], t_eval=t, rtol=1e-12, atol=1e-13, method="DOP853")
    return sol.y[0]


def test_fig7_step_both_engines_first_order(tmp_path):
    """[Mengacci2021] fig. 7 rig (robots/pendulum_1dof, four actuators soft and stiff, mode 3),
    the 0.8 rad equilibrium step from the static equilibrium at eq = 0: DART and MuJoCo take the
    same steps (difference far below the integration error), and each one's error against the
    ODE reference halves when the time step does (first order)."""
    from asr.experiments import mengacci2021 as paper

    need_gazebo()
    rows = []
    for variant, cases in paper.FIG7_PRESETS.items():
        presets = np.array([c[0] for c in cases])
        errors, gaps = {}, []
        for dt in FIG7_DTS[variant]:
            r = pendulum_1dof_with_step(tmp_path, variant, dt)
            joint = r.joints[0]
            jparams = [
                dict(joint.params, **({"k": c[1]} if c[1] is not None else {})) for c in cases
            ]
            params = (
                {joint.name: {"k": np.array([c[1] for c in cases])}} if variant == "sea" else None
            )
            link = paper.pendulum_link(r.mjcf, joint.name)
            assert link["inertia"] == pytest.approx(INERTIA, rel=1e-12)
            q0 = np.array(
                [
                    paper.static_equilibrium(joint.model, jp, 0.0, p, link)
                    for jp, p in zip(jparams, presets)
                ]
            )
            refs = np.zeros((2, 1, 2))
            refs[:, 0, 1] = presets
            refs[:, 0, 0] = paper.STEP
            n = int(round(FIG7_STEP_T / dt))
            q = {}
            for engine in ("mujoco", "gazebo"):
                sim = asr.Sim(r, 2, engine=engine, params=params)
                assert sim.dt == dt
                sim.reset(q0=q0[:, None], refs=refs)
                q[engine] = sim.rollout(n, refs, record=("q",))["q"][:, :, 0]
            ref = np.array(
                [
                    fig7_step_reference(
                        paper.spring(joint.model, jp), q0[i], paper.STEP, presets[i], n, dt
                    )
                    for i, jp in enumerate(jparams)
                ]
            )
            for engine in q:
                errors.setdefault(engine, []).append(np.abs(q[engine] - ref).max(axis=1))
            gaps.append(np.abs(q["gazebo"] - q["mujoco"]).max())
            assert (q["gazebo"].max(axis=1) > 0.5).all()  # the link does follow the step
        for engine, (e1, e2) in errors.items():
            for i, label in enumerate(("soft", "stiff")):
                rows.append(
                    (variant, label, engine, e1[i], e2[i], e1[i] / e2[i], FIG7_DTS[variant][0])
                )
                assert 1.7 < e1[i] / e2[i] < 2.3, (variant, label, engine, e1[i], e2[i])
        assert max(gaps) < 1e-3 * min(errors["gazebo"][1].min(), errors["mujoco"][1].min()), (
            variant,
            gaps,
        )
        rows.append((variant, "gap", max(gaps)))
    lines = [
        f"\n[Mengacci2021] fig. 7 rig, 0.8 rad step, {FIG7_STEP_T} s: max |q - ODE| (rad)",
        f"{'variant':<16} {'preset':<6} {'engine':<7} {'dt':>7} {'at dt':>10} {'at dt/2':>10} "
        f"{'ratio':>6}",
    ]
    for row in rows:
        if row[1] == "gap":
            lines.append(f"{row[0]:<16} max |DART - MuJoCo| over both dt: {row[2]:.2e} rad")
        else:
            name = "DART" if row[2] == "gazebo" else "MuJoCo"
            lines.append(
                f"{row[0]:<16} {row[1]:<6} {name:<7} {row[6]:7.0e} {row[3]:10.3e} "
                f"{row[4]:10.3e} {row[5]:6.3f}"
            )
    print("\n".join(lines))
