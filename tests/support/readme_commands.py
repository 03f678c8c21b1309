"""The shell commands a README gives (its indented code lines), by section, and a fresh virtual
environment that sees .venv-ros2's ROS 2 wheels, in which an exported package's README commands
run as its reader would run them (tests/ros/test_ros2_export_readme.py)."""

import glob
import os
import subprocess
from pathlib import Path


def readme_commands(text):
    """{section heading ('' before the first): [command, ...]}: the lines of the markdown's
    indented code blocks (four spaces, after a blank line or another such line)."""
    out, heading, in_code, blank = {"": []}, "", False, True
    for line in text.splitlines():
        if line.startswith("## "):
            heading, in_code = line.strip(), False
            out[heading] = []
        elif line.startswith("    ") and line.strip() and (blank or in_code):
            out[heading].append(line.strip())
            in_code = True
        elif line.strip():
            in_code = False
        blank = not line.strip()
    return out


def overlay_venv(folder, ros2_python):
    """A new virtual environment at `folder` made by .venv-ros2's Python (its base Python),
    which sees .venv-ros2's packages after its own (a .pth: site.addsitedir, so the wheels'
    bootstrap .pth runs too): the ROS 2 wheels count as installed there, and what `pip install`
    puts in goes into `folder`, not into .venv-ros2. Returns the environment variables of a
    shell that activated it (on top of `base`: call activate_env)."""
    folder = Path(folder)
    subprocess.run([ros2_python, "-m", "venv", str(folder)], check=True, timeout=120)
    ros2_prefix = Path(ros2_python).parent.parent
    ros2_site = next(ros2_prefix.glob("lib/python3*/site-packages"))
    (own_site,) = folder.glob("lib/python3*/site-packages")
    (own_site / "zz_ros2_wheels.pth").write_text(
        f"import site; site.addsitedir({str(ros2_site)!r})\n"
    )
    return folder, ros2_prefix, ros2_site


def activate_env(base, venv):
    """`base` as `. venv/bin/activate` leaves it, plus the wheels' shared libraries (the
    bootstrap of the ROS 2 wheels looks for them under the running Python's prefix, which is
    now the overlay's: the ones of .venv-ros2 are named here)."""
    folder, ros2_prefix, ros2_site = venv
    env = dict(base)
    env["VIRTUAL_ENV"] = str(folder)
    env["PATH"] = os.pathsep.join([str(folder / "bin"), env.get("PATH", os.defpath)])
    libs = [str(ros2_prefix / "lib")] + sorted(glob.glob(str(ros2_site / "ros_*.libs")))
    env["LD_LIBRARY_PATH"] = os.pathsep.join(libs + [env.get("LD_LIBRARY_PATH", "")]).rstrip(
        os.pathsep
    )
    env.pop("_ROS_WHEELS_BOOTSTRAP_COMPLETE", None)
    return env
