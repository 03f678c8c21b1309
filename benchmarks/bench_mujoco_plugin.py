"""MuJoCo plugin throughput: robots exported with asr's actuators as the MuJoCo engine plugin
"asr.actuator" (asr.export_mjcf), stepped by MuJoCo's own batch and rollout, against the same
robots with MuJoCo's plain motors and against asr.Sim, measured side by side in this process.

Workload: robots/qbmove_arm_2dof (default variant "vertical": gravity loads both joints, no
contacts), robots/qbmove_arm_5dof (default variant "soft": five joints, the box on the floor,
contacts), every joint qbmove_advanced in mode 6, and robots/qbmove_snake (twelve qbmove joints in
mode 6, a free base on the floor, contacts; its references below keep the preset 0.3 and swing
every equilibrium by 0.3 rad, a gait-sized excitation), MJCF timestep (1 ms, Euler), 0.5 s of
simulated time (500 steps) from the exported key "asr_initial" (the robot's [initial] pose).
References per instance i and joint j: equilibrium eq0_j + 0.3 sin(2 pi t + 2 pi i / N) rad, the
robot's preset (benchmarks/coupled_workload.make_refs, as bench_coupled.py). N = 64 and 1024
instances, the same thread count for every case (default 1; the machine's CPU count is recorded).
Rates are instance-steps per second of the whole batch.

- plugin batch: `mujoco.batch.Batch(exported model, N, nthread)` and one
  `Batch.rollout(steps, control, control_spec=mjSTATE_CTRL, record=("qpos",))` per timing, the
  references as ctrl (N, steps, 2 J) set before every step (MuJoCo's C loop).
- bare batch (the floor): the same exported MJCF with every plugin actuator turned into MuJoCo's
  own motor (`<general>` with gain 1 and gear 1, i.e. `<motor gear="1"/>`, two per joint in the
  same order, no ctrlrange, the plugin instances and their sensors removed), stepped the same way.
  The plugin's model keeps the sensors export_mjcf writes (<joint>_asr), so their cost is part of
  the plugin's. Its ctrl
  replays, per step, the joint torques the plugin applied in a recorded run (the second motor of
  each joint 0), so the links follow the plugin's trajectories (checked:
  `bare_replay_max_dq_rad_*`) and MuJoCo does the same work, contacts included; only the asr
  actuator model is missing. A motor with held ctrl would make the links fall or drift and
  change the contact work.
- compact batch: the robot exported in the compact form (`asr.export_mjcf(compact=True)`: one
  plugin instance per set of joints with the same model, mode and parameters, its sensor a row
  per joint; the same actuators, ctrl and steps bit for bit: checked, `compact_max_dq_rad_*`),
  stepped as the plugin batch. MuJoCo loops over the plugin instances in several places of every
  step (actuator forces, sensors of three stages, passive forces, advance), so fewer instances
  cost less.
- asr.Sim: `asr.Sim(robot, N, threads).rollout(steps, refs (N, steps, J, 2), record=())`, asr's
  own coupled loop (mj_step1 -> actuators -> qfrc_applied -> mj_step2 per instance and step, C
  over native threads). It ends where the plugin ends (checked: `sim_max_dq_rad_*`).
- plugin rollout, N = 64 only: `mujoco.rollout.Rollout(nthread).rollout(...)` of the exported
  model from the key's full physics state (mjSTATE_FULLPHYSICS: the plugin state included) with
  the same controls; MuJoCo's rollout writes every step's full state (preallocated outside the
  timing), which at N = 1024 would take 1-2 GB.

Every timing starts from the same reset state (resets are not timed). Each figure is the median
of `reps` repetitions (time.perf_counter), the repetitions of all cases of one robot and N
interleaved so that they see the same background load, after one untimed warm-up each. Ratios
are times: `plugin_vs_bare_*` = plugin batch / bare batch (the plugin's overhead; target <= 1.10
at N = 1024, on both arms), `compact_vs_bare_*` the same for the compact form,
`plugin_vs_sim_*` = plugin batch / asr.Sim, `rollout_vs_batch_*` = plugin rollout / plugin batch.
`plugin_ns_per_joint_step_*` = (plugin - bare) time per joint and step.

Cost against the instance count (`scale_*`): n = 250, 1000 and 3000 pendulums on the world, each
hinge driven by a sea instance (mode 3), "separate" (every instance a group of its own: its
max_substep differs) or "shared" (instances that share groups), and "bare" (two MuJoCo motors per
hinge, ctrl 0): compiling the MJCF, making an MjData, its first step (s) and a later step per
joint (ns, 50 steps), medians of 3. Linear cost keeps the per-joint figures flat as n grows.

Prints a table and writes benchmarks/results/mujoco_plugin.json: one flat object of figures
(numbers) plus the machine's description (CPU model, flags, versions: strings). Benchmarks
report; they do not assert. Wall-clock figures on a shared machine are noisy.

--ir (instead of the timings; minutes: valgrind's callgrind is slow) gives instruction counts,
which a loaded machine does not change: MuJoCo's mj_step of IR_N instances of each robot under
mujoco.rollout, plugin and bare (the bare model replaying the plugin's torques), per joint and
step (`ir_<kind>_per_joint_step_<robot>` for kind plugin, compact and bare,
`ir_plugin_vs_bare_<robot>`, `ir_compact_vs_bare_<robot>`), written to
benchmarks/results/mujoco_plugin_ir.json (--out to change).
"""

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import mujoco
import mujoco.batch
import mujoco.rollout
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from coupled_workload import make_refs  # noqa: E402
from results_file import report_and_write  # noqa: E402

import asr  # noqa: E402
import asr.mujoco.plugin  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "results", "mujoco_plugin.json")
DEFAULT_IR_OUT = os.path.join(HERE, "results", "mujoco_plugin_ir.json")  # --ir
ROBOTS = ("qbmove_arm_2dof", "qbmove_arm_5dof", "qbmove_snake")
SIZES = (64, 1024)
ROLLOUT_MAX_N = 64  # mujoco.rollout records every step's full state: N x steps x nstate doubles
SIM_TIME_S = 0.5  # s of simulated time per timing
SCALE_SIZES = (250, 1000, 3000)  # instances of the cost-against-count section
TARGET_OVERHEAD_N1024 = 1.10  # plugin batch time / bare batch time at N = 1024 (<=)
CTRL = mujoco.mjtState.mjSTATE_CTRL.value
FULLPHYSICS = mujoco.mjtState.mjSTATE_FULLPHYSICS
KEY = "asr_initial"
CPU_FLAGS = ("avx2", "fma", "avx512f")
IR_STEPS = (100, 300)  # --ir: two step counts, whose difference cancels the setup
IR_N = 4  # --ir: instances


# ---------------------------------------------------------------- models


def exported_models(robot, folder):
    """The robot exported with asr's plugin actuators (asr.export_mjcf) into folder, the same
    file with MuJoCo's own motors in place of the plugin actuators, and the robot exported in the
    compact form (export_mjcf(compact=True): one instance per set of joints alike): (plugin
    model, bare model, compact model)."""
    path = asr.export_mjcf(robot, None, os.path.join(folder, f"{robot.name}.xml"))
    compact = asr.export_mjcf(
        robot, None, os.path.join(folder, f"{robot.name}_compact.xml"), compact=True
    )
    plugin = mujoco.MjModel.from_xml_path(path)
    spec = mujoco.MjSpec.from_file(path)
    for act in spec.actuators:
        act.plugin.active = False
        act.plugin.plugin_name = ""
        act.set_to_motor()  # actuator_force = ctrl, through gear 1
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE  # torques, not references
    for sensor in list(spec.sensors):  # the plugin's sensors (<joint>_asr) go with it
        if sensor.type == mujoco.mjtSensor.mjSENS_PLUGIN:
            spec.delete(sensor)
    for instance in list(spec.plugins):
        spec.delete(instance)
    return plugin, spec.compile(), mujoco.MjModel.from_xml_path(compact)


def controls(refs):
    """(N, steps, J, 2) references as the plugin's ctrl rows (N, steps, 2 J)."""
    n, steps = refs.shape[:2]
    return np.ascontiguousarray(refs.reshape(n, steps, -1))


# ---------------------------------------------------------------- cases


class Clock:
    """Wall time (perf_counter) and the calling thread's CPU time (thread_time) of a block, s.
    With one thread every case runs on the calling thread, so its CPU time leaves out the time
    the shared machine's other processes took from it."""

    def __enter__(self):
        self.wall, self.cpu = -time.perf_counter(), -time.thread_time()
        return self

    def __exit__(self, *exc):
        self.wall += time.perf_counter()
        self.cpu += time.thread_time()


class BatchCase:
    """mujoco.batch.Batch of n simulations of model from the key, stepped by Batch.rollout with
    control (n, steps, nu) set before every step; records qpos (preallocated)."""

    def __init__(self, model, control, threads, record=("qpos",)):
        n, self.steps = control.shape[:2]
        self.key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, KEY)
        self.batch = mujoco.batch.Batch(model, n, nthread=threads)
        self.control = control
        self.record = tuple(record)
        self.out = None

    def run(self):
        self.batch.reset(keyframe=self.key)
        with Clock() as clock:
            self.out = self.batch.rollout(
                self.steps, self.control, control_spec=CTRL, record=self.record, out=self.out
            )
        return clock

    def q_end(self, qpos_adr):
        """(n, J) link angles after the last step."""
        return self.out["qpos"][:, -1][:, qpos_adr]


class SimCase:
    """asr.Sim(robot, n, threads).rollout(steps, refs, record=()) after Sim.reset() with the
    first step's references, which the plugin places its motors with."""

    def __init__(self, robot, refs, threads):
        self.sim = asr.Sim(robot, refs.shape[0], threads=threads)
        self.refs = refs

    def run(self):
        self.sim.reset(refs=self.refs[:, 0])
        with Clock() as clock:
            self.sim.rollout(self.refs.shape[1], self.refs, record=())
        return clock

    def q_end(self, qpos_adr):
        return self.sim.q.copy()


class RolloutCase:
    """mujoco.rollout's persistent Rollout of model from the key's full physics state (plugin
    state included), control (n, steps, nu) as ctrl; every step's state preallocated."""

    def __init__(self, model, control, threads):
        n, self.steps = control.shape[:2]
        d = mujoco.MjData(model)
        mujoco.mj_resetDataKeyframe(
            model, d, mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, KEY)
        )
        x0 = np.empty(mujoco.mj_stateSize(model, FULLPHYSICS))
        mujoco.mj_getState(model, d, x0, FULLPHYSICS)
        self.x0 = np.tile(x0, (n, 1))
        nthread = threads if threads > 1 else 0  # 0: on the calling thread
        self.pool = mujoco.rollout.Rollout(nthread=nthread)
        self.model, self.control = model, control
        self.datas = [mujoco.MjData(model) for _ in range(max(1, nthread))]
        self.state = np.empty((n, self.steps, x0.size))

    def run(self):
        pool, m, ctrl, steps = self.pool, self.model, self.control, self.steps
        with Clock() as clock:
            pool.rollout(
                m, self.datas, self.x0, ctrl, control_spec=CTRL, nstep=steps, state=self.state
            )
        return clock

    def q_end(self, qpos_adr):
        return self.state[:, -1, 1 + np.asarray(qpos_adr)]  # state: time, qpos, ...

    def close(self):
        self.pool.close()


# ---------------------------------------------------------------- one robot and N


def bench_robot_n(robot, models, n, threads, reps):
    """Every case at one robot and N: ({"wall" / "cpu": {case: median s}}, {case: largest
    |q - q_plugin| at the end, rad}, steps)."""
    plugin, bare, compact = models
    dt = float(plugin.opt.timestep)
    steps = int(round(SIM_TIME_S / dt))
    refs = make_refs(robot, n, steps, dt)
    ctrl = controls(refs)
    qpos_adr, _ = asr.robots.robot.joint_addresses(plugin, robot.joint_names)
    # the plugin's joint torques over those steps, replayed by the bare motors
    recorder = BatchCase(plugin, ctrl, threads, record=("qpos", "actuator_force"))
    recorder.run()
    torques = np.ascontiguousarray(recorder.out["actuator_force"])
    q_plugin = recorder.q_end(qpos_adr)
    del recorder
    cases = {
        "plugin": BatchCase(plugin, ctrl, threads),
        "compact": BatchCase(compact, ctrl, threads),
        "bare": BatchCase(bare, torques, threads),
        "sim": SimCase(robot, refs, threads),
    }
    if n <= ROLLOUT_MAX_N:
        cases["rollout"] = RolloutCase(plugin, ctrl, threads)
    clocks = {name: [] for name in cases}
    for case in cases.values():  # warm-up, untimed
        case.run()
    for _ in range(reps):
        for name, case in cases.items():
            clocks[name].append(case.run())
    dev = {}
    for name, case in cases.items():
        if name != "plugin":
            dev[name] = float(np.max(np.abs(case.q_end(qpos_adr) - q_plugin)))
        if isinstance(case, RolloutCase):
            case.close()
    times = {
        kind: {k: statistics.median(getattr(c, kind) for c in v) for k, v in clocks.items()}
        for kind in ("wall", "cpu")
    }
    return times, dev, steps


def figures_for(fig, tag, n, times, dev, steps, nj):
    """Figures of one robot and N into fig (tag: the robot's name and N, e.g. arm_n64): rates
    and ratios of the wall-clock medians, and the same ratios of the CPU-time medians (_cpu)."""
    fig[f"steps_{tag}"] = steps
    for name, t in times["wall"].items():
        fig[f"{name}_s_{tag}"] = t
        fig[f"{name}_cpu_s_{tag}"] = times["cpu"][name]
        fig[f"{name}_steps_per_s_{tag}"] = n * steps / t
    for kind, sfx in (("wall", ""), ("cpu", "_cpu")):
        t = times[kind]
        fig[f"plugin_vs_bare{sfx}_{tag}"] = t["plugin"] / t["bare"]
        fig[f"compact_vs_bare{sfx}_{tag}"] = t["compact"] / t["bare"]
        fig[f"plugin_vs_sim{sfx}_{tag}"] = t["plugin"] / t["sim"]
        fig[f"sim_vs_bare{sfx}_{tag}"] = t["sim"] / t["bare"]
        if "rollout" in t:
            fig[f"rollout_vs_batch{sfx}_{tag}"] = t["rollout"] / t["plugin"]
        # what the plugin adds to MuJoCo's step, per joint and step
        fig[f"plugin_ns_per_joint_step{sfx}_{tag}"] = (
            (t["plugin"] - t["bare"]) / (n * steps * nj) * 1e9
        )
    for name, d in dev.items():
        fig[f"{'bare_replay' if name == 'bare' else name}_max_dq_rad_{tag}"] = d


# ---------------------------------------------------------------- machine


def machine():
    """The machine and software the figures were measured with (numbers and strings)."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    info = {
        "cpu_count": os.cpu_count() or 0,
        "cpu_model": model,
        "python_version": platform.python_version(),
        "mujoco_version": mujoco.__version__,
        "numpy_version": np.__version__,
        "asr_version": asr.__version__,
        "asr_simd": asr.Batch("sea", 1).simd,
    }
    for flag in CPU_FLAGS:
        info[f"cpu_{flag}"] = int(flag in flags)
    return info


# ---------------------------------------------------------------- report


def _rate(x):
    return f"{x / 1e3:8.1f} k"


def print_table(fig, rows, threads, say):
    say(
        "asr's MuJoCo plugin (mujoco.batch of asr.export_mjcf's model) against MuJoCo motors "
        f"replaying its torques and asr.Sim; {threads} thread(s), median of the repetitions; "
        "instance-steps/s; ratios of wall-clock (CPU) times"
    )
    say(
        f"{'robot':<16} {'N':>5} {'plugin':>10} {'bare':>10} {'asr.Sim':>10} {'rollout':>10} "
        f"{'plugin/bare':>13} {'compact/bare':>13} {'plugin/Sim':>13} {'ns/joint-step':>13}"
    )
    ratio = "{:.3f} ({:.3f})".format
    for name, n, tag in rows:

        def get(k, tag=tag):
            return fig.get(f"{k}_{tag}")

        rollout = get("rollout_steps_per_s")
        say(
            f"{name:<16} {n:>5} {_rate(get('plugin_steps_per_s')):>10} "
            f"{_rate(get('bare_steps_per_s')):>10} {_rate(get('sim_steps_per_s')):>10} "
            f"{_rate(rollout) if rollout else '':>10} "
            f"{ratio(get('plugin_vs_bare'), get('plugin_vs_bare_cpu')):>13} "
            f"{ratio(get('compact_vs_bare'), get('compact_vs_bare_cpu')):>13} "
            f"{ratio(get('plugin_vs_sim'), get('plugin_vs_sim_cpu')):>13} "
            f"{get('plugin_ns_per_joint_step'):6.0f} ({get('plugin_ns_per_joint_step_cpu'):4.0f})"
        )
    say(
        f"({fig[f'steps_{rows[0][2]}']} steps of {SIM_TIME_S} s; plugin/bare: plugin batch / "
        "bare batch; compact/bare: the compact form's batch / bare batch; plugin/Sim: plugin "
        "batch / asr.Sim; ns/joint-step: (plugin - bare) time per joint and step; CPU: the "
        "calling thread's)"
    )


# ---------------------------------------------------------------- cost against the instance count


def pendulums_mjcf(n, kind):
    """n pendulums on the world (a 0.2 kg capsule of 0.1 m on a hinge each, gravity), each hinge
    driven by: kind "separate", a sea instance (mode 3) in a group of its own (max_substep
    differs); "shared", sea instances that share groups; "bare", two MuJoCo motors (gear 1)."""
    body = '<body pos="{x} 0 0"><joint name="j{i}" axis="1 0 0"/>'
    body += '<geom type="capsule" fromto="0 0 0 0 0.1 0" size="0.01" mass="0.2"/></body>'
    parts = {"body": [], "inst": [], "act": []}
    for i in range(n):
        parts["body"].append(body.format(x=0.3 * i, i=i))
        if kind == "bare":
            parts["act"].append(f'<motor joint="j{i}" gear="1"/><motor joint="j{i}" gear="1"/>')
            continue
        sub = 1e-3 * (1.0 - 1e-6 * i) if kind == "separate" else 1e-3
        keys = {"model": "sea", "mode": 3, "k": 50.0 + i % 10, "max_substep": repr(sub)}
        config = "".join(f'<config key="{k}" value="{v}"/>' for k, v in keys.items())
        parts["inst"].append(f'<instance name="j{i}">{config}</instance>')
        parts["act"].append("".join(f'<plugin joint="j{i}" instance="j{i}"/>' for _ in "12"))
    extension = (
        f'<extension><plugin plugin="asr.actuator">{"".join(parts["inst"])}</plugin></extension>'
    )
    return (
        f'<mujoco><option gravity="0 0 -9.81"/>{extension if parts["inst"] else ""}'
        f"<worldbody>{''.join(parts['body'])}</worldbody><actuator>{''.join(parts['act'])}"
        "</actuator></mujoco>"
    )


def bench_scale(fig, sizes=SCALE_SIZES, steps=50, reps=3):
    """Per n and kind: compile, MjData and first-step times (s) and a later step's time per
    joint (ns), medians of `reps`, into fig as scale_<kind>_n<n>_<what>."""
    for n in sizes:
        for kind in ("separate", "shared", "bare"):
            xml = pendulums_mjcf(n, kind)
            rows = []
            for _ in range(reps):
                t = [time.perf_counter()]
                m = mujoco.MjModel.from_xml_string(xml)
                t.append(time.perf_counter())
                d = mujoco.MjData(m)
                t.append(time.perf_counter())
                d.ctrl[:] = 0.2 if kind != "bare" else 0.0
                mujoco.mj_step(m, d)
                t.append(time.perf_counter())
                mujoco.mj_step(m, d, nstep=steps)
                t.append(time.perf_counter())
                rows.append([b - a for a, b in zip(t, t[1:])])
            med = [statistics.median(c) for c in zip(*rows)]
            tag = f"scale_{kind}_n{n}"
            fig[tag + "_compile_s"], fig[tag + "_makedata_s"] = med[0], med[1]
            fig[tag + "_first_step_s"] = med[2]
            fig[tag + "_ns_per_joint_step"] = 1e9 * med[3] / steps / n


def print_scale(fig, sizes, say):
    say("\ninstances  kind       compile s  MjData s  first step s  ns/joint-step")
    for n in sizes:
        for kind in ("separate", "shared", "bare"):
            t = f"scale_{kind}_n{n}"
            say(
                f"{n:9d}  {kind:9s}  {fig[t + '_compile_s']:9.3f}  {fig[t + '_makedata_s']:8.4f}  "
                f"{fig[t + '_first_step_s']:12.4f}  {fig[t + '_ns_per_joint_step']:13.0f}"
            )


# ---------------------------------------------------------------- instruction counts (--ir)


def ir_child(robot_name, kind, steps, folder):
    """Under callgrind: IR_N instances of the robot's plugin or bare model (exported_models) from
    the key, `steps` steps of mujoco.rollout on the calling thread with the controls ir_counts
    saved in folder (references, or the plugin's torques for the bare model)."""
    asr.mujoco.plugin.load()
    plugin, bare, compact = exported_models(asr.load_robot(robot_name), folder)
    model = {"plugin": plugin, "bare": bare, "compact": compact}[kind]
    control = np.load(os.path.join(folder, f"{kind}_control.npy"))[:, :steps]
    case = RolloutCase(model, np.ascontiguousarray(control), 1)
    case.run()
    case.close()


def ir_main(robots, out):
    """--ir: the instruction counts alone (no timings), printed and written to `out` (by default
    benchmarks/results/mujoco_plugin_ir.json)."""
    t_start = time.perf_counter()
    asr.mujoco.plugin.load()
    fig = machine()
    fig["ir_instances"], fig["ir_steps_from"], fig["ir_steps_to"] = IR_N, *IR_STEPS
    print(f"instruction counts (callgrind: mj_step of {IR_N} instances under mujoco.rollout)")
    with tempfile.TemporaryDirectory() as folder:
        ir_counts(fig, robots, folder, print)
    fig["bench_wall_s"] = time.perf_counter() - t_start
    report_and_write(fig, out, print, True)


def ir_counts(fig, robots, folder, say):
    """Instructions (callgrind's Ir, which the machine's load does not change) of MuJoCo's mj_step
    per joint and step, plugin and bare, IR_N instances under mujoco.rollout: the difference of
    two runs of IR_STEPS steps, so that the setup cancels. Into fig as ir_<kind>_per_joint_step_
    <robot> and ir_plugin_vs_bare_<robot>."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        say("--ir: valgrind not found, no instruction counts")
        return
    for name in robots:
        robot = asr.load_robot(name)
        plugin = exported_models(robot, folder)[0]
        steps = max(IR_STEPS)
        ctrl = controls(make_refs(robot, IR_N, steps, float(plugin.opt.timestep)))
        recorder = BatchCase(plugin, ctrl, 1, record=("actuator_force",))
        recorder.run()
        np.save(os.path.join(folder, "plugin_control.npy"), ctrl)
        np.save(os.path.join(folder, "compact_control.npy"), ctrl)
        np.save(os.path.join(folder, "bare_control.npy"), recorder.out["actuator_force"])
        ir = {}
        for kind in ("plugin", "compact", "bare"):
            total = []
            for n_steps in IR_STEPS:
                out = os.path.join(folder, f"callgrind.{kind}.{n_steps}")
                cmd = [valgrind, "--tool=callgrind", f"--callgrind-out-file={out}"]
                cmd += ["--collect-atstart=no", "--toggle-collect=mj_step", sys.executable]
                cmd += [os.path.abspath(__file__), "--ir-child", name, kind, str(n_steps), folder]
                subprocess.run(cmd, check=True, capture_output=True)
                with open(out) as f:
                    total += [int(ln.split()[1]) for ln in f if ln.startswith("totals:")]
            span = (IR_STEPS[1] - IR_STEPS[0]) * IR_N * len(robot.joints)
            ir[kind] = (total[1] - total[0]) / span
            fig[f"ir_{kind}_per_joint_step_{name}"] = ir[kind]
        fig[f"ir_plugin_vs_bare_{name}"] = ir["plugin"] / ir["bare"]
        fig[f"ir_compact_vs_bare_{name}"] = ir["compact"] / ir["bare"]
        say(
            f"{name:<16} Ir per joint-step: plugin {ir['plugin']:.0f}, compact "
            f"{ir['compact']:.0f}, bare {ir['bare']:.0f}; plugin/bare "
            f"{ir['plugin'] / ir['bare']:.3f}, compact/bare {ir['compact'] / ir['bare']:.3f}"
        )


def main(robots=ROBOTS, sizes=SIZES, threads=1, reps=5, out=DEFAULT_OUT, write=True, quiet=False):
    """Run the benchmark; returns the figures (also written to `out` when `write`)."""
    t_start = time.perf_counter()
    say = (lambda *a: None) if quiet else print
    asr.mujoco.plugin.load()
    fig = machine()
    fig["threads"] = threads
    fig["sim_time_s"] = SIM_TIME_S
    fig["reps"] = reps
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in robots:
            robot = asr.load_robot(name)
            models = exported_models(robot, folder)
            for n in sizes:
                times, dev, steps = bench_robot_n(robot, models, n, threads, reps)
                tag = f"{name}_n{n}"
                figures_for(fig, tag, n, times, dev, steps, len(robot.joints))
                rows.append((name, n, tag))
    fig["target_plugin_vs_bare_n1024"] = TARGET_OVERHEAD_N1024
    targets = []
    for name in robots:
        for form in ("plugin", "compact"):
            key = f"{form}_vs_bare_{name}_n1024"
            if key not in fig:
                continue
            fig["target_met_" + key] = int(fig[key] <= TARGET_OVERHEAD_N1024)
            what = "long form" if form == "plugin" else "compact form"
            targets.append(
                (
                    key,
                    f"<= {TARGET_OVERHEAD_N1024}x bare MuJoCo time at N = 1024 ({name}, {what})",
                    lambda v: f"{v:.3f}x",
                )
            )
    bench_scale(fig)
    fig["bench_wall_s"] = time.perf_counter() - t_start
    print_table(fig, rows, threads, say)
    print_scale(fig, SCALE_SIZES, say)
    worst = max(v for k, v in fig.items() if "max_dq_rad" in k)
    note = (
        f"{fig['cpu_model']}, {threads} thread(s); each case ends {worst:.1e} rad from the plugin; "
    )
    report_and_write(fig, out, say, write, targets, note=note)
    return fig


def _cli(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="+", default=list(ROBOTS))
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--threads", type=int, default=1, help="threads of every case")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument(
        "--ir", action="store_true", help="count instructions under valgrind instead (minutes)"
    )
    ap.add_argument("--ir-child", nargs=4, metavar=("ROBOT", "KIND", "STEPS", "FOLDER"))
    a = ap.parse_args(argv)
    if a.ir_child:
        name, kind, steps, folder = a.ir_child
        ir_child(name, kind, int(steps), folder)
        return
    if a.ir:
        ir_main(tuple(a.robots), DEFAULT_IR_OUT if a.out == DEFAULT_OUT else a.out)
        return
    main(tuple(a.robots), tuple(a.sizes), a.threads, a.reps, a.out)


if __name__ == "__main__":
    _cli()
