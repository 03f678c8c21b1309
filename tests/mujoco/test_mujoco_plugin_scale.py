"""asr's MuJoCo plugin costs time linear in the number of instances: compiling, making an MjData,
its first step and every later one. Counted, not timed: the library's work counter
(asr_mujoco_work: configuration bytes read or compared, actuators and instances scanned) for N and
4 N instances, each in a group of its own (a distinct max_substep) or all in shared groups, must
grow about 4 times, not 16 or 64 (the configuration text was once re-scanned for every member,
leader and step). benchmarks/bench_mujoco_plugin.py times the same (3000 instances)."""

import ctypes

import pytest

from tests.conftest import require

N = 200  # instances of the small model; the large one has 4 N


def flat_mjcf(n, separate):
    """n pendulums on the world, each a hinge driven by one sea instance (mode 3, two actuators);
    separate: each instance a group of its own (max_substep differs), else all alike."""
    bodies, instances, actuators = [], [], []
    for i in range(n):
        bodies.append(
            f'<body pos="{0.3 * i} 0 0"><joint name="j{i}" axis="1 0 0"/>'
            '<geom type="capsule" fromto="0 0 0 0 0.1 0" size="0.01" mass="0.2"/></body>'
        )
        substep = 1e-3 * (1.0 - 1e-6 * i) if separate else 1e-3
        instances.append(
            f'<instance name="j{i}"><config key="model" value="sea"/>'
            f'<config key="mode" value="3"/><config key="k" value="{50.0 + i % 10}"/>'
            f'<config key="max_substep" value="{substep!r}"/></instance>'
        )
        actuators.append(
            f'<plugin name="j{i}_1" joint="j{i}" instance="j{i}"/>'
            f'<plugin name="j{i}_2" joint="j{i}" instance="j{i}"/>'
        )
    return (
        '<mujoco><option gravity="0 0 -9.81"/><extension><plugin plugin="asr.actuator">'
        f"{''.join(instances)}</plugin></extension><worldbody>{''.join(bodies)}</worldbody>"
        f"<actuator>{''.join(actuators)}</actuator></mujoco>"
    )


def work_counter():
    """The plugin library's asr_mujoco_work, as a function."""
    from asr.mujoco import plugin as mujoco_plugin

    lib = ctypes.CDLL(mujoco_plugin.load())  # the loaded library: the same handle
    lib.asr_mujoco_work.restype = ctypes.c_longlong
    return lib.asr_mujoco_work


def phases(n, separate):
    """Work units of: compiling, making an MjData, its first step, the 10 steps after it."""
    mujoco = require("mujoco")
    work = work_counter()
    xml = flat_mjcf(n, separate)
    marks = [work()]
    m = mujoco.MjModel.from_xml_string(xml)
    marks.append(work())
    d = mujoco.MjData(m)
    marks.append(work())
    d.ctrl[:] = 0.2
    mujoco.mj_step(m, d)
    marks.append(work())
    mujoco.mj_step(m, d, nstep=10)
    marks.append(work())
    assert all(d.plugin_state[m.plugin_stateadr[k] + 1] == 0 for k in range(m.nplugin))
    return [b - a for a, b in zip(marks, marks[1:])]


@pytest.mark.slow
@pytest.mark.parametrize("separate", [True, False], ids=["a group each", "shared groups"])
def test_work_grows_linearly_with_the_instances(separate):
    small, large = phases(N, separate), phases(4 * N, separate)
    for name, a, b in zip(("compile", "MjData", "first step", "10 steps"), small, large):
        assert a > 0, name
        # linear: 4 times (the instances' names grow by a digit); quadratic would be 16
        assert b / a < 5.0, f"{name}: {a} work units for {N} instances, {b} for {4 * N}"
    # a later step costs about as much as the check of every instance in one pass
    assert small[3] / 10 < 3 * small[2], small
