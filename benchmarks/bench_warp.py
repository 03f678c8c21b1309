"""asr on Warp: the engines' own difference first, then throughput (docs/gpu.md).

Sections (each writes its figures into benchmarks/results/warp.json, one flat object, with the
Warp device's name and the machine's description):

- bare (the tolerance basis of tests/warp/test_mujoco_warp.py): bare MuJoCo Warp against bare
  MuJoCo (C, float64) on asr's robots whose MJCF MuJoCo Warp loads, no asr actuator in either.
  Both start from the robot's [initial] q (else qpos0) at rest and get the same prescribed joint
  torques as MjData.qfrc_applied at the actuated joints' dof addresses, as asr's MuJoCo engine
  applies asr's torques: tau_j(t) = A_j (1 + j / 2) sin(2 pi (1 + j / 2) t + 2 pi w / W) N m for
  joint j of world w of W, A_j = 10 rad/s^2 times the joint's diagonal entry of the mass matrix
  at q0 (t: the step's start time, held over the step). The robot's own MJCF timestep and
  integrator; MuJoCo Warp runs in float32 (its only precision), MuJoCo in float64. Figures:
  bare_max_dq_rad_<robot>_<variant> and bare_max_dqd_rad_s_<...>: the largest |q_warp -
  q_mujoco| (rad) and |qd_warp - qd_mujoco| (rad/s) over every step, joint and world of SECONDS
  s of simulated time; bare_max_contacts_<...>: the most contacts MuJoCo had in a world (MuJoCo
  Warp then gets room for twice its contacts and constraint rows: nconmax, njmax).
- actuators: actuator steps per second of asr.warp.WarpBatch (Warp kernels, float64 and float32)
  against the C core asr.Batch, side by side in this process, on the same workload: N
  instances of qbmove_advanced in mode 6 (preset 0.2 rad) with the link prescribed, q = 0.3
  sin(2 pi t + 2 pi i / N) rad and its derivative, references equilibrium 0.2 sin(...) rad,
  dt 1 ms, STEPS steps; asr.Batch.rollout (one C call, 1 thread) against a loop of
  WarpBatch.launch_step over inputs already on the device (one synchronisation at the end).
  Rate = N x steps / wall time (median of REPS); ratio_warp_vs_c_<dtype> = Warp rate / C rate.
  On CUDA also N = 1e6 float32 (actuator_steps_per_s_cuda_n1000000; goal >= 1e9 on an H100).
- coupled: env-steps per second (worlds x steps / s) of asr.warp.mujoco.MjwSim (MuJoCo Warp +
  asr, float32 actuators, references per step as a device array) against bare MuJoCo Warp (a
  loop of mujoco_warp.step with constant qfrc_applied) on qbmove_arm_2dof (vertical), same
  worlds and steps, on the default Warp device; coupled_overhead = coupled time / bare time
  (goal <= 1.10 on a GPU). On CUDA both are captured as CUDA graphs.

Every timing starts from a state stepped once (kernels loaded); wall-clock figures on a shared
machine are noisy. --quick: small sizes for the CPU device.
"""

import argparse
import os
import sys
import time

import mujoco
import mujoco_warp as mjw
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from bench_mujoco_plugin import machine as cpu_machine  # noqa: E402
from results_file import report_and_write  # noqa: E402

import asr  # noqa: E402
from asr.robots.robot import joint_addresses  # noqa: E402
from asr.warp.batch import WarpBatch  # noqa: E402
from asr.warp.mujoco import MjwSim, torque_rollout  # noqa: E402
from asr.warp.runtime import warp  # noqa: E402

wp = warp()  # initialised with asr's kernel cache (build/warp-cache)

DEFAULT_OUT = os.path.join(HERE, "results", "warp.json")
# (robot, variant) of the bare comparison: asr's robots (their MJCFs all load in MuJoCo Warp),
# the last two with contacts. qbmove_snake is left out: these prescribed torques make MuJoCo
# itself unstable on it within 0.2 s (its QACC warnings), so there is nothing to compare
BARE_ROBOTS = (
    ("pendulum_1dof", "qbmove_advanced"),
    ("rrbot_sea", "k188"),
    ("qbmove_arm_2dof", "vertical"),
    ("qbmove_3r", "vertical"),
    ("qbmove_arm_5dof", "soft"),
    ("ur10", "rigid"),
)
ACCEL = 10.0  # rad/s^2: the prescribed torques' amplitude over each joint's own inertia
SECONDS = 1.0  # simulated time of the bare comparison, s
NWORLD_BARE = 4
SECTIONS = ("bare", "actuators", "coupled")


def prescribed_torques(robot, model, data, steps, nworld):
    """(steps, nworld, J) joint torques of the bare comparison, N m (see the module docstring);
    data: an MjData at q0 after mj_forward."""
    _, dof = joint_addresses(model, robot.joint_names)
    mujoco.mj_forward(model, data)
    full = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, full)
    a = ACCEL * np.diag(full)[dof][None, None, :]
    t = np.arange(steps)[:, None, None] * model.opt.timestep
    j = np.arange(len(dof))[None, None, :]
    w = np.arange(nworld)[None, :, None]
    f = 1.0 + 0.5 * j
    return a * f * np.sin(2 * np.pi * f * t + 2 * np.pi * w / nworld)


def bare_difference(name, variant, seconds=SECONDS, nworld=NWORLD_BARE):
    """Bare MuJoCo Warp against bare MuJoCo under the same prescribed torques: (max |dq| rad,
    max |dqd| rad/s, steps, the most contacts MuJoCo had in a world) over every step, joint and
    world."""
    robot = asr.load_robot(name, variant)
    model = robot.mj_model()
    qadr, dof = joint_addresses(model, robot.joint_names)
    start = mujoco.MjData(model)
    if robot.initial_q is not None:
        start.qpos[qadr] = robot.initial_q
    mujoco.mj_forward(model, start)
    steps = int(round(seconds / model.opt.timestep))
    tau = prescribed_torques(robot, model, start, steps, nworld)
    # MuJoCo, float64, one MjData per world
    ref_q = np.empty((nworld, steps, len(dof)))
    ref_qd = np.empty_like(ref_q)
    ncon = nefc = 0
    for w in range(nworld):
        d = mujoco.MjData(model)
        d.qpos[:] = start.qpos
        mujoco.mj_forward(model, d)
        for t in range(steps):
            d.qfrc_applied[dof] = tau[t, w]
            mujoco.mj_step(model, d)
            ref_q[w, t], ref_qd[w, t] = d.qpos[qadr], d.qvel[dof]
            ncon, nefc = max(ncon, d.ncon), max(nefc, d.nefc)
    # MuJoCo Warp, float32, nworld worlds on Warp's default device; with contacts, room for
    # twice the contacts and constraint rows MuJoCo had
    sizes = {"nconmax": max(2 * ncon, 16), "njmax": max(2 * nefc, 64)} if ncon else {}
    q, qd = torque_rollout(robot, np.moveaxis(tau, 0, 1), **sizes)
    dq, dqd = float(np.max(np.abs(q - ref_q))), float(np.max(np.abs(qd - ref_qd)))
    return dq, dqd, steps, ncon


def machine():
    """The machine and versions (bench_mujoco_plugin's) and Warp's: the results file's strings
    and numbers."""
    device = wp.get_device()
    return {
        **cpu_machine(),
        "mujoco_warp_version": getattr(mjw, "__version__", "unknown"),
        "warp_version": wp.__version__,
        "warp_device": f"{device.alias} ({device.name})",
        "cuda_available": int(wp.is_cuda_available()),
    }


def bench_bare(fig, robots=BARE_ROBOTS, seconds=SECONDS, say=print):
    for name, variant in robots:
        t0 = time.perf_counter()
        dq, dqd, steps, ncon = bare_difference(name, variant, seconds)
        tag = f"{name}_{variant}"
        fig[f"bare_max_dq_rad_{tag}"] = dq
        fig[f"bare_max_dqd_rad_s_{tag}"] = dqd
        fig[f"bare_steps_{tag}"] = steps
        fig[f"bare_max_contacts_{tag}"] = ncon
        say(
            f"bare {tag}: {steps} steps, max |dq| {dq:.3e} rad, max |dqd| {dqd:.3e} rad/s "
            f"({time.perf_counter() - t0:.1f} s)"
        )


def _median_time(fn, reps):
    """Median wall time of fn() over reps runs (fn synchronises before returning), s."""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def actuator_inputs(n, steps, dt=1e-3):
    """The actuator workload: q, qd (steps, N, 1) rad, rad/s; refs (steps, N, 1, 2)."""
    t = np.arange(steps)[:, None, None] * dt
    phase = 2 * np.pi * np.arange(n)[None, :, None] / n
    q = 0.3 * np.sin(2 * np.pi * t + phase)
    qd = 0.3 * 2 * np.pi * np.cos(2 * np.pi * t + phase)
    refs = np.empty((steps, n, 1, 2))
    refs[..., 0] = 0.2 * np.sin(2 * np.pi * t + phase)
    refs[..., 1] = 0.2
    return q, qd, refs


def _joint():
    return asr.Joint("qbmove_advanced", 6)


def c_rate(n, steps, reps, dt=1e-3):
    """asr.Batch actuator steps per second on the workload (one C call per run)."""
    q, qd, refs = actuator_inputs(n, steps, dt)
    b = asr.Batch([_joint()], n, threads=1)
    args = (np.moveaxis(refs, 0, 1).copy(), np.moveaxis(q, 0, 1).copy())
    qd_c = np.moveaxis(qd, 0, 1).copy()

    def run():
        b.reset(args[1][:, 0], args[0][:, 0])
        b.rollout(steps, dt, args[0], args[1], qd_c, record=())

    run()
    return n * steps / _median_time(run, reps)


def warp_rate(n, steps, reps, dtype, device=None, dt=1e-3):
    """WarpBatch actuator steps per second on the workload (a launch_step loop, one sync)."""
    q, qd, refs = actuator_inputs(n, steps, dt)
    dev = wp.get_device(device)
    real = wp.float32 if dtype == "float32" else wp.float64
    b = WarpBatch([_joint()], n, dtype=dtype, device=dev)
    qs = [wp.array(q[t], dtype=real, device=dev) for t in range(steps)]
    qds = [wp.array(qd[t], dtype=real, device=dev) for t in range(steps)]
    rs = [wp.array(refs[t], dtype=real, device=dev) for t in range(steps)]

    def run():
        b.reset(q[0], refs[0])
        for t in range(steps):
            b.launch_step(dt, qs[t], qds[t], rs[t])
        wp.synchronize_device(dev)

    run()
    return n * steps / _median_time(run, reps)


def warp_rate_big(n, steps, reps, device):
    """WarpBatch float32 actuator steps per second at a large N on CUDA, held inputs, the
    loop captured as a CUDA graph."""
    dev = wp.get_device(device)
    b = WarpBatch([_joint()], n, dtype="float32", device=dev)
    q = wp.full((n, 1), 0.1, dtype=wp.float32, device=dev)
    qd = wp.zeros((n, 1), dtype=wp.float32, device=dev)
    r = wp.array(np.tile([[[0.0, 0.2]]], (n, 1, 1)), dtype=wp.float32, device=dev)
    b.reset(np.full((n, 1), 0.1), np.tile([[0.0, 0.2]], (n, 1, 1)))
    b.launch_step(1e-3, q, qd, r)
    wp.synchronize_device(dev)
    with wp.ScopedDevice(dev), wp.ScopedCapture() as cap:
        for _ in range(steps):
            b.launch_step(1e-3, q, qd, r)

    def run():
        wp.capture_launch(cap.graph)
        wp.synchronize_device(dev)

    run()
    return n * steps / _median_time(run, reps)


def bench_actuators(fig, n, steps, reps, say=print):
    fig["actuator_n"], fig["actuator_steps"] = n, steps
    c = c_rate(n, steps, reps)
    fig["actuator_steps_per_s_c"] = c
    say(f"actuators N={n} x {steps} steps: asr.Batch (C, 1 thread) {c:.3e} steps/s")
    for dtype in ("float64", "float32"):
        w = warp_rate(n, steps, reps, dtype, "cpu")
        fig[f"actuator_steps_per_s_warp_cpu_{dtype}"] = w
        fig[f"ratio_warp_vs_c_{dtype}"] = w / c
        say(f"  WarpBatch cpu {dtype}: {w:.3e} steps/s, {w / c:.3f}x the C core")
    if wp.is_cuda_available():
        big = 1_000_000
        w = warp_rate_big(big, 100, reps, "cuda:0")
        fig[f"actuator_steps_per_s_cuda_n{big}"] = w
        fig["target_actuator_steps_per_s_cuda"] = 1e9
        fig[f"target_met_actuator_steps_per_s_cuda_n{big}"] = int(w >= 1e9)
        say(f"  WarpBatch cuda float32 N={big}: {w:.3e} steps/s")


def bench_coupled(fig, nworld, steps, reps, robot=("qbmove_arm_2dof", "vertical"), say=print):
    dev = wp.get_device()
    sim = MjwSim(robot[0], nworld, variant=robot[1], dtype="float32", device=dev)
    nj = sim.n_joints
    init = np.array(sim.robot.initial_refs)
    t = np.arange(steps)[None, :, None] * sim.dt
    refs = np.empty((nworld, steps, nj, 2))
    refs[...] = init
    refs[..., 0] += 0.3 * np.sin(
        2 * np.pi * t + 2 * np.pi * np.arange(nworld)[:, None, None] / nworld
    )
    refs_w = wp.array(refs, dtype=wp.float32, device=dev)
    out = {f: wp.empty((nworld, steps, nj), dtype=wp.float32, device=dev) for f in ("q",)}
    cuda = dev.is_cuda
    sim.rollout(steps, refs_w, record=("q",), out=out, capture=cuda, on_error="flag")
    wp.synchronize_device(dev)

    def coupled():
        sim.rollout(steps, refs_w, record=("q",), out=out, capture=cuda, on_error="flag")
        wp.synchronize_device(dev)

    m, d = sim.mjw_model, sim.mjw_data
    graph = None
    if cuda:
        with wp.ScopedDevice(dev), wp.ScopedCapture() as cap:
            for _ in range(steps):
                mjw.step(m, d)
        graph = cap.graph

    def bare():
        if graph is not None:
            wp.capture_launch(graph)
        else:
            with wp.ScopedDevice(dev):
                for _ in range(steps):
                    mjw.step(m, d)
        wp.synchronize_device(dev)

    # interleaved, so both see the same background load
    tc, tb = [], []
    for _ in range(reps):
        sim.reset()
        tc.append(_median_time(coupled, 1))
        sim.reset()
        tb.append(_median_time(bare, 1))
    tag = f"{robot[0]}_n{nworld}"
    fig[f"coupled_env_steps_per_s_{tag}"] = nworld * steps / float(np.median(tc))
    fig[f"bare_mjw_env_steps_per_s_{tag}"] = nworld * steps / float(np.median(tb))
    fig[f"coupled_overhead_{tag}"] = float(np.median(tc)) / float(np.median(tb))
    fig["coupled_steps"], fig["coupled_graph"] = steps, int(cuda)
    say(
        f"coupled {tag} x {steps} steps on {dev.alias}: MjwSim "
        f"{fig[f'coupled_env_steps_per_s_{tag}']:.3e} env-steps/s, bare MuJoCo Warp "
        f"{fig[f'bare_mjw_env_steps_per_s_{tag}']:.3e}, overhead "
        f"{fig[f'coupled_overhead_{tag}']:.3f}x"
    )


def main(sections=SECTIONS, quick=False, out=DEFAULT_OUT, write=True, quiet=False):
    """Run the sections; returns the figures (also written to `out` when `write`)."""
    t_start = time.perf_counter()
    say = (lambda *a: None) if quiet else print
    fig = machine()
    fig["quick"] = int(quick)
    if "bare" in sections:
        bench_bare(fig, seconds=0.1 if quick else SECONDS, say=say)
    if "actuators" in sections:
        bench_actuators(fig, 256 if quick else 4096, 50 if quick else 200, 3, say=say)
    if "coupled" in sections:
        n = 4096 if fig["cuda_available"] else (4 if quick else 64)
        bench_coupled(fig, n, 20 if quick else 200, 3, say=say)
    fig["bench_wall_s"] = time.perf_counter() - t_start
    report_and_write(fig, out, say, write, note=f"Warp device {fig['warp_device']}; ")
    return fig


def _cli(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", nargs="+", default=list(SECTIONS))
    ap.add_argument("--quick", action="store_true", help="small sizes (CPU device, CI)")
    ap.add_argument("--out", default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    main(tuple(a.sections), a.quick, a.out)


if __name__ == "__main__":
    _cli()
