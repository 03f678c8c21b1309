"""The `asr` command line. `asr dashboard` serves the web dashboard (dashboard/PROTOCOL.md; the
package asr_dashboard, installed from the source tree's dashboard/ folder by setup.py);
`asr ros` / `asr ros2` run a robot as a live ROS 1 / ROS 2 node (docs/ros.md); `asr train`
trains a policy with PPO (asr.rl.train, extra asr-sim[rl]), `asr eval` runs a trained policy for
N episodes (asr.rl.evaluate) and `asr export-onnx` writes it as ONNX, checked against torch
(asr.rl.export_checked); `asr export-mjcf` writes a robot as one MJCF with asr's MuJoCo plugin
actuators (asr.export_mjcf)."""

import argparse
import os
import secrets
import sys

from asr.common.optional import need
from asr.ros.node_core import DEFAULT_NAMESPACE

DEFAULT_ROBOT = "qbmove_arm_2dof"
# what `asr dashboard` imports from the extra [dashboard] (setup.cfg), checked first so that a
# missing one is named with the pip command that installs it
DASHBOARD_MODULES = ("fastapi", "uvicorn", "websockets", "plotly")
# the environment variables of Settings.robot and .variant (dashboard/settings.py)
ENV_ROBOT, ENV_VARIANT = "ASR_DASHBOARD_ROBOT", "ASR_DASHBOARD_VARIANT"
# the `asr dashboard` options that set a Settings field: {field: option}; an option given
# overrides the field's environment variable, one not given leaves it in force
SETTING_OPTIONS = {
    "host": "--host",
    "port": "--port",
    "update_hz": "--update-hz",
    "allow_origins": "--allow-origin",
    "token": "--token",
}

NETWORK_WARNING = (
    "WARNING: the dashboard listens on {host}, beyond this machine's loopback "
    "interface: anyone on the network who has the token can drive the "
    "simulation. Keep the token secret; use --host 127.0.0.1 for local use."
)


def build_parser():
    """The command line's argparse parser, every subcommand and option of `asr`, the one main()
    reads its arguments with: build_parser().parse_args(["dashboard"]) gives the options
    `asr dashboard` runs with (dashboard_settings turns them into the server's settings)."""
    p = argparse.ArgumentParser(prog="asr", description="asr: articulated soft robots")
    sub = p.add_subparsers(dest="command", metavar="command")
    d = sub.add_parser(
        "dashboard",
        help="serve the live web dashboard",
        description="Serve the live web dashboard (FastAPI + uvicorn).",
    )
    d.add_argument(
        "--host",
        default=None,
        help="interface (default $ASR_DASHBOARD_HOST, else 127.0.0.1; anything beyond "
        "loopback requires a token)",
    )
    d.add_argument(
        "--port", type=int, default=None, help="port (default $ASR_DASHBOARD_PORT, else 8000)"
    )
    d.add_argument(
        "--robot",
        default=None,
        help=f"robot name (default ${ENV_ROBOT}, else {DEFAULT_ROBOT}, else the first "
        "robot in the robots folder that loads)",
    )
    d.add_argument(
        "--variant",
        default=None,
        help="variant (default: the robot's own default variant, or "
        f"${ENV_VARIANT} when no --robot is given)",
    )
    d.add_argument(
        "--update-hz",
        type=float,
        default=None,
        help="frames per second (default $ASR_DASHBOARD_UPDATE_HZ, else 30)",
    )
    d.add_argument(
        "--allow-origin",
        action="append",
        default=None,
        metavar="ORIGIN",
        help="also accept pages from ORIGIN (e.g. http://mybox.lan:8000) on the "
        "WebSocket and the state-changing routes; repeatable (default: "
        "$ASR_DASHBOARD_ALLOW_ORIGINS, comma-separated)",
    )
    d.add_argument(
        "--token",
        default=None,
        help="require this token (16 characters or more) on every request; default "
        "$ASR_DASHBOARD_TOKEN, else none on loopback and a random one printed at start "
        "otherwise",
    )
    d.add_argument("--log-level", default="info", help="uvicorn log level (info)")
    r = sub.add_parser(
        "ros",
        help="run a robot as a live ROS 1 node",
        description="Run a robot as a ROS 1 node with the topics of the "
        "compliant-actuator toolbox (docs/ros.md). Needs a running roscore "
        "at ROS_MASTER_URI.",
    )
    _node_arguments(r, "<ns>/step")
    r.add_argument(
        "--clock-topic",
        default="/clock",
        help="where simulated time is published (rosgraph_msgs/Clock; '' for none)",
    )
    r.add_argument(
        "--master-timeout",
        type=float,
        default=5.0,
        help="seconds to wait for the ROS master at start (5)",
    )
    r2 = sub.add_parser(
        "ros2",
        help="run a robot as a live ROS 2 node",
        description="Run a robot as a ROS 2 node (rclpy) with the compliant-actuator "
        "toolbox's topics, joint_states and /clock (docs/ros.md). Needs ROS 2 Jazzy's "
        "rclpy: pip install asr-sim[ros2], or source /opt/ros/jazzy/setup.bash.",
    )
    _ros2_arguments(r2)
    pk = sub.add_parser(
        "ros2-package",
        help="write the ament_python package asr_ros2 that starts `asr ros2`",
        description="Write the ROS 2 package asr_ros2 (ament_python) into DIR/asr_ros2: "
        "`ros2 run asr_ros2 asr_node` and `ros2 launch asr_ros2 asr_node.launch.py` "
        "start `asr ros2` with its options (docs/ros.md). Build it with colcon.",
    )
    pk.add_argument("dir", metavar="DIR", help="folder to write asr_ros2 into (created)")
    t = sub.add_parser(
        "train",
        help="train a policy with PPO (Stable-Baselines3 or rsl-rl-lib)",
        description="Train a policy with PPO on an asr task (asr.rl.train). "
        "DIR gets config.json, curve.json and the backend's model files (sb3: model.zip "
        "and vecnormalize.json; rsl_rl: model.pt), each rewritten atomically after every "
        "PPO update; a run killed at any time continues with --resume.",
    )
    t.add_argument("--task", default="asr/Reach2DOF-v0", help="task id (asr/Reach2DOF-v0)")
    t.add_argument(
        "--algo",
        default="ppo",
        help="PPO backend: sb3 (Stable-Baselines3), rsl_rl (rsl-rl-lib) or ppo (the default "
        "backend; --resume: the folder's)",
    )
    t.add_argument(
        "--total-steps",
        type=int,
        default=None,
        help="env-steps over all sub-envs (the task's registered default, asr.envs."
        "TRAIN_DEFAULTS, else 500000; --resume: the folder's)",
    )
    t.add_argument(
        "--num-envs",
        type=int,
        default=None,
        help="sub-envs of the batch (the task's registered default, else 64; --resume: the "
        "folder's)",
    )
    t.add_argument("--seed", type=int, default=0, help="seed (0)")
    t.add_argument("--threads", type=int, default=1, help="torch and asr threads (1)")
    t.add_argument("--out", required=True, metavar="DIR", help="training folder")
    t.add_argument("--resume", action="store_true", help="continue the training in DIR")
    t.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a hyperparameter (asr.rl.training.HYPERPARAMETERS), e.g. "
        "learning_rate=3e-4 or net_arch=64,64; repeatable",
    )
    t.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a keyword argument of the task class (asr.rl.train's env_kwargs), the value "
        "as JSON, else a string, e.g. actuator=rigid; repeatable",
    )
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    _rl_run_arguments(sub)
    e = sub.add_parser(
        "export-mjcf",
        help="write a robot as one MJCF with asr's MuJoCo plugin actuators",
        description="Write a robot variant as one MJCF file whose actuators are asr's MuJoCo "
        "plugin asr.actuator (asr.export_mjcf): ctrl holds each joint's two references, key "
        "asr_initial the variant's initial state. Load the plugin before compiling it "
        "(asr.mujoco.plugin.load()).",
    )
    e.add_argument("robot", metavar="ROBOT", help="robot name (or a robot folder)")
    e.add_argument("--variant", default=None, help="variant (the robot's default)")
    e.add_argument("-o", "--output", required=True, metavar="PATH", help="the MJCF file to write")
    return p


def _rl_run_arguments(sub):
    """The subcommands on a training folder: `asr eval` and `asr export-onnx`."""
    texts = {
        "eval": (
            "run a trained policy for N episodes: returns and the task's metric",
            "Run the deterministic policy of a training folder (its torch model, or --onnx "
            "FILE exported from it) for N episodes of its task with its env kwargs "
            "(asr.rl.evaluate): each episode's return and the task's metric (final joint "
            "error, rad; distance thrown, m), their means with 95 % confidence intervals "
            "(Student's t).",
        ),
        "export-onnx": (
            "write a trained policy as ONNX, checked against the torch policy",
            "Write the deterministic policy of a training folder as one ONNX file "
            "(asr.rl.export_checked): observation normalisation, actor, action clipping. Both "
            "policies act on one episode's observations of 8 sub-envs first; the file is "
            "written only when their actions agree within 1e-5 (the largest difference is "
            "printed).",
        ),
    }
    p = {}
    for name, (text, description) in texts.items():
        p[name] = sub.add_parser(name, help=text, description=description)
        p[name].add_argument(
            "run_dir", metavar="RUN_DIR", help="training folder (asr train --out DIR)"
        )
    v = p["eval"]
    v.add_argument("--episodes", type=int, default=10, help="episodes, >= 1 (10)")
    v.add_argument(
        "--seed",
        type=int,
        default=None,
        help="episode k is reset with seed + k (default 1000000000: the held-out episodes "
        "of training's own evaluation)",
    )
    v.add_argument("--onnx", default=None, metavar="FILE", help="run this ONNX policy instead")
    v.add_argument("--threads", type=int, default=1, help="the vector env's threads (1)")
    v.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="replace a keyword argument of the task (the folder's env_kwargs), the value as "
        "JSON, else a string, e.g. randomization=standard: a distribution training did not "
        "see; repeatable",
    )
    v.add_argument("--json", action="store_true", help="print the result as JSON")
    p["export-onnx"].add_argument(
        "-o", "--output", required=True, metavar="FILE", help="the ONNX file to write"
    )


def _node_arguments(p, step_topic):
    """The arguments `asr ros` and `asr ros2` share (asr.ros.node_core.NodeCore's)."""
    p.add_argument("--robot", default=DEFAULT_ROBOT, help=f"robot name ({DEFAULT_ROBOT})")
    p.add_argument("--variant", default=None, help="variant (the robot's default)")
    p.add_argument(
        "--rate",
        type=float,
        default=100.0,
        help="publishing rate, Hz: the simulation advances one period per message (100)",
    )
    p.add_argument("--namespace", default=DEFAULT_NAMESPACE, help="topic namespace (none)")
    p.add_argument(
        "--engine",
        default="mujoco",
        help="link dynamics engine: mujoco (default) or gazebo (gz-physics with DART)",
    )
    p.add_argument(
        "--lockstep",
        action="store_true",
        help=f"advance one period per message on {step_topic} instead of in real time",
    )
    p.add_argument(
        "--duration",
        type=float,
        default=None,
        help="stop after this many wall seconds (default: run until Ctrl-C)",
    )


def _ros2_arguments(p):
    """The arguments of `asr ros2`: those `asr ros` shares, then ROS 2's own."""
    _node_arguments(p, "step")
    p.add_argument("--name", default="asr", help="node name (asr)")
    lean = (
        "publish no robot_description, /tf_static, /tf, actuator_states nor "
        "held_references_stamped (less time per period)"
    )
    for flag, text in (("--no-clock", "do not publish /clock"), ("--lean", lean)):
        p.add_argument(flag, action="store_true", help=text)


def ros2_parser(prog="asr_node"):
    """A parser of `asr ros2`'s options alone, the ones build_parser() gives it: what the
    package asr_ros2's launch file declares and its executable asr_node reads
    (asr.ros.ament_node)."""
    p = argparse.ArgumentParser(prog=prog, description="asr's ROS 2 node (asr ros2)")
    _ros2_arguments(p)
    return p


def ros2_node_main(argv=None):
    """The executable asr_node of the package asr_ros2 (`ros2 run asr_ros2 asr_node ARGS`):
    `asr ros2 ARGS`, less ROS 2's own arguments (--ros-args ... [--], left to rclpy in sys.argv)
    and with the launch file's --OPTION=VALUE forms read (asr.ros.ament_node.node_argv)."""
    from asr.ros.ament_node import node_argv

    args = sys.argv[1:] if argv is None else argv
    return main(["ros2", *node_argv(ros2_parser(), args)])


def ros2_package_main(args):
    """`asr ros2-package DIR`: the exit code (0 written, 2 the folder cannot be written)."""
    from asr.ros.ament_node import node_package

    try:
        path = node_package(args.dir, ros2_parser())
    except OSError as exc:
        print(f"asr ros2-package: {exc}", file=sys.stderr)
        return 2
    print(f"asr ros2-package: {path} (colcon build, then ros2 run asr_ros2 asr_node)")
    return 0


def _key_values(items, flag, example, value):
    """KEY=VALUE items of `flag` -> {key: value(text)}; ValueError naming a malformed item."""
    out = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"{flag}: got {item!r}, expected KEY=VALUE (e.g. {example})")
        out[key] = value(text.strip())
    return out


def _json_or_text(text):
    import json

    try:
        return json.loads(text)
    except ValueError:
        return text


def _hyperparameter_value(text):
    # 'a,b' (not JSON) as a list of numbers, e.g. net_arch=64,64
    value = _json_or_text(text)
    if value is text and "," in text:
        parts = [_json_or_text(x) for x in text.split(",") if x.strip()]
        if not any(isinstance(x, str) for x in parts):
            return parts
    return value


def parse_set(items):
    """--set KEY=VALUE items -> {key: value}: numbers as numbers, 'a,b' as a list of numbers."""
    return _key_values(items, "--set", "learning_rate=3e-4", _hyperparameter_value)


def parse_env(items):
    """--env KEY=VALUE items -> {key: value}: the value parsed as JSON, else kept as a string."""
    return _key_values(items, "--env", "actuator=rigid", _json_or_text)


def train_main(args):
    """`asr train`: the exit code (0 done, 1 missing dependency / simulation error, 2 bad
    arguments or a bad training folder)."""
    try:
        hp = parse_set(args.set)
        env_kwargs = parse_env(args.env)
    except ValueError as exc:
        print(f"asr train: {exc}", file=sys.stderr)
        return 2
    try:
        from asr.rl import train
    except ImportError as exc:
        print(f"asr train: {exc}", file=sys.stderr)
        return 1
    from asr.core.errors import SimulationError

    try:
        res = train(
            args.task,
            algo=args.algo,
            total_steps=args.total_steps,
            num_envs=args.num_envs,
            seed=args.seed,
            threads=args.threads,
            out_dir=args.out,
            resume=args.resume,
            progress_bar=not args.no_progress,
            env_kwargs=env_kwargs,
            **hp,
        )
    except (ValueError, TypeError) as exc:
        print(f"asr train: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:  # an extra a setting needs (tensorboard, a backend)
        print(f"asr train: {exc}", file=sys.stderr)
        return 1
    except SimulationError as exc:
        print(f"asr train: simulation error: {exc}", file=sys.stderr)
        return 1
    last = res.curve[-1] if res.curve else {}
    final = (
        ""
        if res.final_metric is None
        else f", final {res.metric.name} {res.final_metric:.4f} {res.metric.unit} "
        "on held-out episodes"
    )
    ret = last.get("return")
    print(
        f"asr train: {last.get('steps', 0)} env-steps in {last.get('wall_s', 0.0):.1f} s"
        + ("" if ret is None else f", mean return {ret:.2f}")
        + f"{final}; {args.out}",
        flush=True,
    )
    return 0


def _rl_run(command, run):
    """(exit code, result) of run(module asr.rl.evaluation) for `asr eval` / `asr
    export-onnx`: 1 a missing extra or a failed simulation / check, 2 bad arguments or a bad
    training folder (the error printed, no traceback)."""
    try:
        from asr.rl import evaluation

        return 0, run(evaluation)
    except ImportError as exc:
        print(f"asr {command}: {exc}", file=sys.stderr)
        return 1, None
    except (ValueError, TypeError, OSError) as exc:
        print(f"asr {command}: {exc}", file=sys.stderr)
        return 2, None
    except RuntimeError as exc:  # asr.core.errors.SimulationError, a failed check
        print(f"asr {command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1, None


def eval_main(args):
    """`asr eval`: the exit code (0 done, 1 missing dependency / simulation error, 2 bad
    arguments or a bad training folder)."""
    try:
        env = parse_env(args.env)
    except ValueError as exc:
        print(f"asr eval: {exc}", file=sys.stderr)
        return 2
    code, res = _rl_run(
        "eval",
        lambda ev: ev.evaluate(
            args.run_dir,
            args.episodes,
            seed=args.seed,
            onnx=args.onnx,
            threads=args.threads,
            env=env,
        ),
    )
    if res is not None:
        print(res.to_json() if args.json else res.report(), flush=True)
    return code


def export_onnx_main(args):
    """`asr export-onnx`: the exit code (0 written, 1 missing dependency / the ONNX policy does
    not match the torch policy, 2 bad arguments or a bad training folder)."""
    code, res = _rl_run("export-onnx", lambda ev: ev.export_checked(args.run_dir, args.output))
    if res is not None:
        print(
            f"asr export-onnx: {res.path} ({res.task}, {res.backend} backend); max |ONNX - "
            f"torch| action difference {res.max_abs_diff:.3g} on {res.observations} "
            f"observations (tolerance {res.tolerance:g})",
            flush=True,
        )
    return code


def export_mjcf_main(args):
    """`asr export-mjcf`: the exit code (0 written, 1 the plugin library missing or not matching
    MuJoCo, 2 bad arguments: robot, variant or output path)."""
    from asr.mujoco.export import export_mjcf
    from asr.robots.robot import load_robot

    try:
        robot = load_robot(args.robot, args.variant)
        path = export_mjcf(robot, path=args.output)
    except ImportError as exc:
        print(f"asr export-mjcf: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError, TypeError) as exc:
        print(f"asr export-mjcf: {exc}", file=sys.stderr)
        return 2
    print(
        f"asr export-mjcf: {robot.name} ({robot.variant}), {len(robot.joints)} joints, "
        f"ctrl <joint>_ref1/_ref2 per joint: {path}",
        flush=True,
    )
    return 0


def _node_kwargs(args):
    """The keyword arguments `asr ros` and `asr ros2` pass alike to their node."""
    return dict(
        rate=args.rate, namespace=args.namespace, engine=args.engine, lockstep=args.lockstep
    )


def ros_main(args):
    """`asr ros`: the exit code (0 done, 1 no ROS master / no ROS 1 / simulation failed, 2 bad
    arguments)."""
    try:
        from asr.ros.node import RosNode

        node = RosNode(
            args.robot,
            args.variant,
            **_node_kwargs(args),
            clock_topic=args.clock_topic,
            master_timeout=args.master_timeout,
        )
    except (OSError, ValueError, TypeError) as exc:
        print(f"asr ros: {exc}", file=sys.stderr)
        return 2
    try:
        node.start()
    except (RuntimeError, ImportError) as exc:
        print(f"asr ros: {exc}", file=sys.stderr)
        return 1
    mode = "lockstep on " + node.topic("step") if node.lockstep else "real time"
    print(
        f"asr ros: {node.robot.name} ({node.robot.variant}) under '{node.namespace or '/'}', "
        f"{1 / node.period:g} Hz, {mode}",
        flush=True,
    )
    try:
        return node.spin(args.duration)
    finally:
        node.shutdown()


def ros2_main(args):
    """`asr ros2`: the exit code (0 done, 1 no ROS 2 (rclpy) / simulation failed, 2 bad
    arguments)."""
    from asr.ros.ros2_node import run_ros2_node  # rclpy is imported once the arguments pass

    try:
        return run_ros2_node(
            args.robot,
            args.variant,
            **_node_kwargs(args),
            name=args.name,
            clock=not args.no_clock,
            duration=args.duration,
            lean=args.lean,
        )
    except (OSError, ValueError, TypeError) as exc:
        print(f"asr ros2: {exc}", file=sys.stderr)
        return 2
    except (ImportError, RuntimeError) as exc:
        print(f"asr ros2: {exc}", file=sys.stderr)
        return 1


def start_robot(robot=None, variant=None):
    """(name, asr.Robot, note) of the robot the dashboard starts with. A named robot loads by
    name (load_robot's errors). None: DEFAULT_ROBOT, else the first of robot_names() that loads
    in `variant` (None: each robot's default), with a note saying which and why; ValueError when
    no robot of the robots folder loads."""
    from asr.robots.robot import load_robot, robot_names, robots_dir

    if robot:
        return robot, load_robot(robot, variant, allow_path=False), None
    names = robot_names()
    errors = []
    for name in sorted(names, key=lambda n: n != DEFAULT_ROBOT):  # the default robot first
        try:
            loaded = load_robot(name, variant, allow_path=False)
        except (OSError, ValueError) as exc:
            errors.append(str(exc))
            continue
        if name == DEFAULT_ROBOT:
            return name, loaded, None
        why = "does not load" if DEFAULT_ROBOT in names else "is not in the robots folder"
        return (
            name,
            loaded,
            (
                f"asr dashboard: robot {DEFAULT_ROBOT!r} {why}; starting with "
                f"{name!r}, the first robot that loads"
            ),
        )
    where = f"the robots folder {robots_dir()}"
    if not names:
        raise ValueError(
            f"no robot in {where} (a robot is a folder with a robot.toml, see "
            f"robots/README.md); set ASR_ROBOTS to a folder of robots"
        )
    raise ValueError(
        f"no robot in {where} loads"
        + (f" in variant {variant!r}" if variant else "")
        + ": "
        + "; ".join(errors)
    )


def dashboard_settings(args):
    """(Settings, lines to print) for the parsed `asr dashboard` arguments: each setting from
    its option when given, else from its ASR_DASHBOARD_* variable, else its default
    (asr_dashboard.settings.settings_from_env). Without --robot $ASR_DASHBOARD_ROBOT, else the
    default robot, else the first one that loads (start_robot); without --variant the robot's
    own default variant ($ASR_DASHBOARD_VARIANT without --robot). Beyond loopback a token is
    always required (a random one unless --token or $ASR_DASHBOARD_TOKEN gives it); with a
    token the URL printed carries it (the only place it is shown). Raises ValueError / OSError
    with a clear message for a bad robot, origin, token or other setting."""
    from asr_dashboard.security import is_loopback, is_wildcard
    from asr_dashboard.settings import settings_from_env

    given = {field: getattr(args, field) for field in ("host", "port", "update_hz", "token")}
    given["allow_origins"] = None if args.allow_origin is None else tuple(args.allow_origin)
    base = settings_from_env({f: v for f, v in given.items() if v is not None}, SETTING_OPTIONS)
    env_variant = None if args.robot else os.environ.get(ENV_VARIANT)
    name, robot, note = start_robot(
        args.robot or os.environ.get(ENV_ROBOT), args.variant or env_variant or None
    )
    host, local = base.host, is_loopback(base.host)
    token = base.token if base.token is not None or local else secrets.token_urlsafe(24)
    settings = base.model_copy(update={"robot": name, "variant": robot.variant, "token": token})
    shown = "<this machine's address>" if is_wildcard(host) else host
    shown = f"[{shown}]" if ":" in shown else shown
    query = f"?token={token}" if token else ""
    lines = [f"asr dashboard: http://{shown}:{base.port}/{query} ({name}, {robot.variant})"]
    if not local:
        lines.insert(0, NETWORK_WARNING.format(host=host))
    if note:
        lines.append(note)
    return settings, lines


def main(argv=None):
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "ros":
        return ros_main(args)
    if args.command == "ros2":
        return ros2_main(args)
    if args.command == "ros2-package":
        return ros2_package_main(args)
    if args.command == "train":
        return train_main(args)
    if args.command == "export-mjcf":
        return export_mjcf_main(args)
    if args.command == "eval":
        return eval_main(args)
    if args.command == "export-onnx":
        return export_onnx_main(args)
    if args.command != "dashboard":
        parser.print_help()
        return 2
    try:
        for module in DASHBOARD_MODULES:
            need(module, "dashboard", "the dashboard")
        from asr_dashboard.server import serve
    except ImportError as exc:
        if getattr(exc, "name", None) == "asr_dashboard":  # a source tree, not installed
            exc = ImportError(
                "the package asr_dashboard is not installed (the source tree's dashboard/ "
                "folder): pip install -e '.[dashboard]' in the source tree, or "
                "pip install 'asr-sim[dashboard]'"
            )
        print(f"asr dashboard: {exc}", file=sys.stderr)
        return 1
    try:
        settings, lines = dashboard_settings(args)
    except (OSError, ValueError) as exc:
        print(f"asr dashboard: {exc}", file=sys.stderr)
        return 2
    for line in lines:
        print(line, file=sys.stderr if line.startswith("WARNING") else sys.stdout, flush=True)
    serve(settings, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
