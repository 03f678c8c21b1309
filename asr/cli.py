"""The `asr` command line. `asr dashboard` serves the web dashboard (dashboard/PROTOCOL.md)."""
import argparse
import secrets
import sys

NETWORK_WARNING = ("WARNING: the dashboard listens on {host}, beyond this machine's loopback "
                   "interface: anyone on the network who has the token can drive the "
                   "simulation. Keep the token secret; use --host 127.0.0.1 for local use.")


def _parser():
    p = argparse.ArgumentParser(prog="asr", description="asr: articulated soft robots")
    sub = p.add_subparsers(dest="command", metavar="command")
    d = sub.add_parser("dashboard", help="serve the live web dashboard",
                       description="Serve the live web dashboard (FastAPI + uvicorn).")
    d.add_argument("--host", default="127.0.0.1",
                   help="interface (default 127.0.0.1; anything else requires a token)")
    d.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    d.add_argument("--robot", default="qbmove_arm_2dof", help="robot (default qbmove_arm_2dof)")
    d.add_argument("--variant", default="vertical",
                   help="variant (default vertical; '' for the robot's default)")
    d.add_argument("--update-hz", type=float, default=30.0, help="frames per second (30)")
    d.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                   help="also accept pages from ORIGIN (e.g. http://mybox.lan:8000) on the "
                   "WebSocket and the state-changing routes; repeatable")
    d.add_argument("--token", default=None,
                   help="require this token (16 characters or more) on every request; default: "
                   "none on loopback, a random one printed at start otherwise")
    d.add_argument("--log-level", default="info", help="uvicorn log level (info)")
    return p


def dashboard_settings(args):
    """(Settings, lines to print) for the parsed `asr dashboard` arguments. Beyond loopback a
    token is always required (a random one unless --token gives it). Raises ValueError /
    OSError with a clear message for a bad robot, origin or token."""
    from asr.robot import load_robot
    from dashboard.security import is_loopback, is_wildcard
    from dashboard.settings import settings_from_env

    variant = args.variant or None
    load_robot(args.robot, variant, allow_path=False)  # the dashboard takes robot names only
    local = is_loopback(args.host)
    token = args.token if args.token is not None or local else secrets.token_urlsafe(24)
    settings = settings_from_env(robot=args.robot, variant=variant, update_hz=args.update_hz,
                                 host=args.host, allow_origins=tuple(args.allow_origin),
                                 token=token)
    shown = "<this machine's address>" if is_wildcard(args.host) else args.host
    shown = f"[{shown}]" if ":" in shown else shown
    query = f"?token={token}" if token else ""
    lines = [f"asr dashboard: http://{shown}:{args.port}/{query} ({args.robot}, "
             f"{variant or 'default variant'})"]
    if not local:
        lines.insert(0, NETWORK_WARNING.format(host=args.host))
    return settings, lines


def main(argv=None):
    """Run the command line; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command != "dashboard":
        parser.print_help()
        return 2
    if not 0 < args.port < 65536:
        parser.error(f"--port: got {args.port}, valid range 1..65535")
    try:
        from dashboard.server import serve
    except ImportError as exc:
        print(f"asr dashboard: missing dependency ({exc}); install fastapi and uvicorn",
              file=sys.stderr)
        return 1
    try:
        settings, lines = dashboard_settings(args)
    except (OSError, ValueError) as exc:
        print(f"asr dashboard: {exc}", file=sys.stderr)
        return 2
    for line in lines:
        print(line, file=sys.stderr if line.startswith("WARNING") else sys.stdout, flush=True)
    serve(settings, args.port, args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
