"""Coupled throughput: whole robots (MuJoCo links + asr actuators) against bare MuJoCo and against
the best a user can write in Python, measured side by side in this process.

Workload: robots/qbmove_arm_2dof (default variant "vertical": gravity loads both joints), two
qbmove_advanced joints in mode 6 with the robot's parameters, MJCF timestep (1 ms, Euler),
starting from the robot's [initial] pose. References per instance i and joint j: equilibrium
eq0_j + 0.3 sin(2 pi t + 2 pi i / N) rad, the robot's preset (0.2 rad). N = 1, 64, 1024
instances, 1 and 2 threads. Rates are instance-steps per second of the whole batch.

- asr (coupled): one `asr.Sim.rollout(steps, refs (N, steps, J, 2), record=())` per timing: C
  over native threads, per instance and step mj_step1 -> actuators -> qfrc_applied -> mj_step2.
  The time includes Sim.rollout's Python-side checks.
- bare MuJoCo (the floor): `mujoco.rollout` (the Rollout class of mujoco/rollout.py, i.e.
  `mujoco.rollout.rollout` with a persistent thread pool, one MjData per thread) stepping the
  same links with no actuator model. It replays, as open-loop qfrc_applied controls
  (control_spec = mjSTATE_QFRC_APPLIED), the joint torques asr applied in a recorded run of the
  same steps, so the links follow the same trajectories bit for bit (the benchmark checks this:
  `bare_replay_max_dq_rad_n*`) and the engine does the same work; only the actuator model is
  missing. MuJoCo's rollout also writes the full physics state of every step (asr records
  nothing): preallocated outside the timing.
- Python loop (the best a user can write in Python): a loop over steps calling the bindings'
  mujoco.mj_step1 / mj_step2 per instance, the actuators of all instances and joints computed at
  once in NumPy by benchmarks/numpy_reference.py (QbmoveAdvancedMode6, N x J joints), link
  state copied from each MjData's qpos/qvel views, torques written into qfrc_applied. One
  thread. tests/benchmarks/test_bench_coupled.py checks it gives asr.Sim's trajectories.
- mj_step loop, N = 1 only: `for _ in range(steps): mujoco.mj_step(m, d)` from the same start,
  no torques (a sanity reference for the bindings' per-call cost).
- 5-DOF arm with the box (robots/qbmove_arm_5dof, default variant, N = 1, one thread): joint1's
  equilibrium swept -0.6 -> +0.4 -> -0.6 rad every 4 s (the pusher sweeps into the box), the
  other joints held at [initial]; real-time factor = simulated seconds per wall second.

- Gazebo engine (`asr.Sim(..., engine="gazebo")`: gz-physics 5 with DART on the robot's SDF
  twin), one thread, N = 1 and 64, on qbmove_arm_2dof (the variant above) and
  robots/pendulum_1dof (default variant, qbmove_advanced in mode 3, 0.1 ms), the references
  above. Measured side by side: asr + DART (`Sim.rollout`), bare DART (the shim's
  asr_gz_step_replay: the same step1 / step2 calls per world and step, no actuator model,
  replaying as joint forces the torques asr applied, so the links follow asr's trajectories:
  `bare_dart_replay_max_dq_rad_*`), asr + MuJoCo (`Sim.rollout`) and bare MuJoCo
  (`mujoco.rollout` replaying asr + MuJoCo's torques, as above). DART's cost per step depends
  on the motion (the pendulum held at rest steps about 1.6 times faster than the swinging one),
  hence the replay rather than zero torques. Ratios are times: `overhead_vs_bare_dart_*` =
  asr + DART / bare DART, `dart_vs_mujoco_*` = asr + DART / asr + MuJoCo,
  `bare_dart_vs_bare_mujoco_*` = bare DART / bare MuJoCo. `dart_vs_mujoco_max_dq_rad_*`: how
  far apart asr + DART and asr + MuJoCo end; rounding on the pendulum, about 1e-3 rad on
  qbmove_arm_2dof, whose joints' static friction is a soft constraint in MuJoCo
  (frictionloss) and a hard one in DART (with the friction removed from both files they agree
  to 4e-16 rad).

Every timing starts from the same reset state (resets are not timed). Each figure is the best of
`reps` repetitions (time.perf_counter), the repetitions of all configurations of one N
interleaved so that they see the same background load; a timing lasts about target_s.

Prints a table and writes benchmarks/results/coupled.json, one flat {figure_name: number}
object. Benchmarks report; they do not assert. Wall-clock figures on a shared machine are noisy.
"""

import argparse
import os
import sys
import time

import mujoco

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from coupled_timings import GZ_ROBOTS, bench_gazebo, bench_size, realtime_5dof  # noqa: E402

# PythonLoop and make_refs: re-exported for tests/benchmarks/test_bench_coupled.py
from coupled_workload import ROBOT, ROBOT_5DOF, PythonLoop, make_refs  # noqa: E402, F401
from results_file import report_and_write  # noqa: E402

import asr  # noqa: E402
import asr.engines.gz_shim  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "results", "coupled.json")

# Targets of the issue (reported, not asserted).
TARGET_OVERHEAD_N1024 = 1.10  # coupled time / bare MuJoCo time, N = 1024, one thread (<=)
TARGET_SPEEDUP_PY_N64 = 5.0  # coupled (1 thread) / Python loop, N = 64 (>=)
TARGET_THREAD_SPEEDUP = 1.8  # asr 2 threads / 1 thread, N = 1024 (>=)


def _fmt_rate(x):
    return f"{x / 1e3:9.1f} k"


def main(
    sizes=(1, 64, 1024),
    threads=(1, 2),
    variant=None,
    target_s=0.4,
    python_target_s=0.3,
    realtime_target_s=0.4,
    reps=3,
    realtime=True,
    out=DEFAULT_OUT,
    write=True,
    quiet=False,
    gazebo_sizes=(1, 64),
    gazebo_target_s=None,
):
    """Run the benchmark; returns the flat {figure_name: number} dict (also written to `out`
    when `write`). variant: of qbmove_arm_2dof (None: its default, "vertical"). gazebo_sizes:
    N of the Gazebo-engine figures (() or no Gazebo engine built: none); gazebo_target_s:
    seconds per timing there (None: target_s)."""
    t_start = time.perf_counter()
    say = (lambda *a: None) if quiet else print
    threads = tuple(threads)
    fig = {}
    rows = []
    for n in sizes:
        tm, dev, nj = bench_size(n, threads, variant, target_s, python_target_s, reps)
        py = tm[("python", 1)].rate
        fig[f"python_loop_steps_per_s_n{n}"] = py
        fig[f"rollout_steps_python_loop_n{n}"] = tm[("python", 1)].steps
        fig[f"bare_replay_max_dq_rad_n{n}"] = dev
        if ("mj_step", 1) in tm:
            fig[f"mj_step_loop_steps_per_s_n{n}"] = tm[("mj_step", 1)].rate
        # the most any coupling could gain on the Python loop: a free actuator model on top of
        # bare MuJoCo, one thread (bare time / Python-loop time)
        fig[f"speedup_ceiling_vs_python_loop_n{n}"] = tm[("bare", threads[0])].rate / py
        for th in threads:
            c, b = tm[("asr", th)].rate, tm[("bare", th)].rate
            fig[f"coupled_steps_per_s_n{n}_t{th}"] = c
            fig[f"bare_mujoco_steps_per_s_n{n}_t{th}"] = b
            fig[f"rollout_steps_n{n}_t{th}"] = tm[("asr", th)].steps
            fig[f"overhead_vs_bare_n{n}_t{th}"] = b / c
            if th == 1:
                # what the coupling adds per joint and step (actuator + gather/scatter), ns
                fig[f"coupling_ns_per_joint_step_n{n}_t1"] = (1.0 / c - 1.0 / b) / nj * 1e9
            fig[f"speedup_vs_python_loop_n{n}" + ("" if th == 1 else f"_t{th}")] = c / py
            if th != threads[0]:
                sfx = "" if th == 2 else f"_t{th}"
                fig[f"thread_speedup_n{n}{sfx}"] = c / tm[("asr", threads[0])].rate
                fig[f"bare_thread_speedup_n{n}{sfx}"] = b / tm[("bare", threads[0])].rate
            rows.append(
                (
                    n,
                    th,
                    c,
                    b,
                    py if th == threads[0] else None,
                    b / c,
                    c / py,
                    fig.get(f"thread_speedup_n{n}") if th == 2 else None,
                )
            )
        extra = tm.get(("mj_step", 1))
        if extra is not None:
            rows.append((n, "mj_step", None, extra.rate, None, None, None, None))
    gz_rows = []
    if gazebo_sizes and not asr.engines.gz_shim.available():
        say("Gazebo engine not built (asr/_asr_gz.so): no DART figures")
        gazebo_sizes = ()
    for name in GZ_ROBOTS if gazebo_sizes else ():
        for n in gazebo_sizes:
            tm, dev = bench_gazebo(name, n, variant, gazebo_target_s or target_s, reps)
            sfx = f"{name}_n{n}"
            c_gz, b_gz = tm[("gazebo", "asr")].rate, tm[("gazebo", "bare")].rate
            c_mj, b_mj = tm[("mujoco", "asr")].rate, tm[("mujoco", "bare")].rate
            fig[f"coupled_dart_steps_per_s_{sfx}"] = c_gz
            fig[f"bare_dart_steps_per_s_{sfx}"] = b_gz
            fig[f"coupled_mujoco_steps_per_s_{sfx}"] = c_mj
            fig[f"bare_mujoco_steps_per_s_{sfx}"] = b_mj
            fig[f"overhead_vs_bare_dart_{sfx}"] = b_gz / c_gz
            fig[f"overhead_vs_bare_mujoco_{sfx}"] = b_mj / c_mj
            fig[f"dart_vs_mujoco_{sfx}"] = c_mj / c_gz
            fig[f"bare_dart_vs_bare_mujoco_{sfx}"] = b_mj / b_gz
            for k, v in dev.items():
                fig[f"{k}_max_dq_rad_{sfx}"] = v
            fig[f"rollout_steps_dart_{sfx}"] = tm[("gazebo", "asr")].steps
            gz_rows.append((name, n, c_gz, b_gz, c_mj, b_mj, dev))
    if realtime:
        rtf, rt_steps, _ = realtime_5dof(realtime_target_s, reps)
        fig["realtime_factor_5dof_t1"] = rtf
        fig["rollout_steps_5dof"] = rt_steps

    def met(key, target, at_most=False):
        if key in fig:
            fig["target_met_" + key] = int(fig[key] <= target if at_most else fig[key] >= target)
            fig["target_" + key] = target

    met("overhead_vs_bare_n1024_t1", TARGET_OVERHEAD_N1024, at_most=True)
    met("speedup_vs_python_loop_n64", TARGET_SPEEDUP_PY_N64)
    met("thread_speedup_n1024", TARGET_THREAD_SPEEDUP)
    fig["cpu_count"] = os.cpu_count() or 0
    fig["dt_s"] = float(
        mujoco.MjModel.from_xml_path(asr.load_robot(ROBOT, variant).mjcf).opt.timestep
    )
    fig["bench_wall_s"] = time.perf_counter() - t_start

    robot = asr.load_robot(ROBOT, variant)
    say(
        f"asr coupled rollout: {ROBOT} ({robot.variant}), {len(robot.joints)} x qbmove_advanced "
        f"mode 6, dt = {fig['dt_s']:g} s; best of {reps}; instance-steps/s of the whole batch"
    )
    say(
        f"{'N':>5} {'threads':>7} {'asr':>11} {'bare MuJoCo':>11} {'Python':>11} "
        f"{'asr/bare t':>10} {'asr/Python':>10} {'thread x':>8}"
    )
    for n, th, c, b, py, ovh, sp, tx in rows:

        def f(x, fmt):
            return format(x, fmt) if x is not None else ""

        if th == "mj_step":
            say(
                f"{n:>5} {'':>7} {'':>11} {_fmt_rate(b):>11} {'':>11}   (plain Python loop "
                "over mujoco.mj_step, no torques)"
            )
            continue
        say(
            f"{n:>5} {th:>7} {_fmt_rate(c):>11} {_fmt_rate(b):>11} "
            f"{_fmt_rate(py) if py is not None else '':>11} {f(ovh, '10.3f')} {f(sp, '10.1f')} "
            f"{f(tx, '8.2f')}"
        )
    say(
        "(asr/bare t: coupled time / bare MuJoCo time, 1.0 = no actuator cost; Python: "
        "mj_step1/mj_step2 per instance + NumPy actuators, one thread)"
    )
    for n in sizes:
        say(
            f"N = {n:>4}: coupling cost {fig[f'coupling_ns_per_joint_step_n{n}_t1']:7.0f} ns "
            "per joint-step over bare MuJoCo (1 thread); a free actuator model would be "
            f"{fig[f'speedup_ceiling_vs_python_loop_n{n}']:.1f}x the Python loop"
        )
    if gz_rows:
        say(
            "Gazebo engine (DART on the SDF twin) vs MuJoCo, 1 thread, instance-steps/s; "
            "ratios are times"
        )
        say(
            f"{'robot':<16} {'N':>4} {'asr+DART':>11} {'bare DART':>11} {'asr+MuJoCo':>11} "
            f"{'bare MuJoCo':>11} {'asr/bare DART':>13} {'DART/MuJoCo':>11} {'bare D/M':>8}"
        )
        for name, n, c_gz, b_gz, c_mj, b_mj, _dev in gz_rows:
            say(
                f"{name:<16} {n:>4} {_fmt_rate(c_gz):>11} {_fmt_rate(b_gz):>11} "
                f"{_fmt_rate(c_mj):>11} {_fmt_rate(b_mj):>11} {b_gz / c_gz:13.3f} "
                f"{c_mj / c_gz:11.2f} {b_mj / b_gz:8.2f}"
            )
        say(
            "(asr/bare DART: asr + DART time / bare DART time; DART/MuJoCo: asr + DART time / "
            "asr + MuJoCo time; bare D/M: bare DART time / bare MuJoCo time; the bare engines "
            "replay asr's torques and end at most "
            f"{max(max(r[6]['bare_dart_replay'], r[6]['bare_mujoco_replay']) for r in gz_rows):.1e}"
            " rad from asr's links)"
        )
        for name, n, *_, dev in gz_rows:
            say(
                f"{name}, N = {n}: asr + DART ends {dev['dart_vs_mujoco']:.1e} rad from "
                "asr + MuJoCo"
            )
    if "realtime_factor_5dof_t1" in fig:
        say(
            f"{ROBOT_5DOF} with the box, N = 1, 1 thread: real-time factor "
            f"{fig['realtime_factor_5dof_t1']:.1f} (simulated s per wall s)"
        )
    targets = [
        (
            "overhead_vs_bare_n1024_t1",
            f"<= {TARGET_OVERHEAD_N1024}x bare MuJoCo time at N = 1024, one thread",
            lambda v: f"{v:.3f}x",
        ),
        ("speedup_vs_python_loop_n64", ">= 5x the Python loop at N = 64", lambda v: f"{v:.1f}x"),
        (
            "thread_speedup_n1024",
            ">= 1.8x from the second thread at N = 1024",
            lambda v: f"{v:.2f}x",
        ),
    ]
    replay = max(v for k, v in fig.items() if k.startswith("bare_replay"))
    report_and_write(
        fig,
        out,
        say,
        write,
        targets,
        note=f"bare replay of asr's torques ends {replay:.1e} rad from asr's links; ",
    )
    return fig


def _cli(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 64, 1024])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument(
        "--variant", default=None, help="qbmove_arm_2dof variant (vertical, horizontal)"
    )
    ap.add_argument("--target-s", type=float, default=0.4, help="seconds per timing")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-realtime", action="store_true", help="skip the 5-DOF figure")
    ap.add_argument(
        "--gazebo-sizes",
        type=int,
        nargs="*",
        default=[1, 64],
        help="N of the Gazebo-engine (DART) figures; none: skip them",
    )
    ap.add_argument("--out", default=DEFAULT_OUT)
    a = ap.parse_args(argv)
    main(
        sizes=tuple(a.sizes),
        threads=tuple(a.threads),
        variant=a.variant,
        target_s=a.target_s,
        python_target_s=min(a.target_s, 0.3),
        realtime_target_s=a.target_s,
        reps=a.reps,
        realtime=not a.no_realtime,
        out=a.out,
        gazebo_sizes=tuple(a.gazebo_sizes),
    )


if __name__ == "__main__":
    _cli()
