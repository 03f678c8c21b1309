"""The `asr` command line. `asr dashboard` serves the web dashboard (dashboard/PROTOCOL.md)."""
import argparse
import sys


def _parser():
    p = argparse.ArgumentParser(prog="asr", description="asr: articulated soft robots")
    sub = p.add_subparsers(dest="command", metavar="command")
    d = sub.add_parser("dashboard", help="serve the live web dashboard",
                       description="Serve the live web dashboard (FastAPI + uvicorn).")
    d.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    d.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    d.add_argument("--robot", default="qbmove_arm_2dof", help="robot (default qbmove_arm_2dof)")
    d.add_argument("--variant", default="vertical",
                   help="variant (default vertical; '' for the robot's default)")
    d.add_argument("--update-hz", type=float, default=30.0, help="frames per second (30)")
    d.add_argument("--log-level", default="info", help="uvicorn log level (info)")
    return p


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
        import uvicorn

        from asr.robot import load_robot
        from dashboard.app import create_app
        from dashboard.settings import Settings
    except ImportError as exc:
        print(f"asr dashboard: missing dependency ({exc}); install fastapi and uvicorn",
              file=sys.stderr)
        return 1
    variant = args.variant or None
    try:
        load_robot(args.robot, variant)
        settings = Settings(robot=args.robot, variant=variant, update_hz=args.update_hz)
    except (OSError, ValueError) as exc:
        print(f"asr dashboard: {exc}", file=sys.stderr)
        return 2
    print(f"asr dashboard: http://{args.host}:{args.port}/ ({args.robot}, "
          f"{variant or 'default variant'})", flush=True)
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
