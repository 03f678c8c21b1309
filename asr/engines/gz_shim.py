"""Gazebo's physics for asr's link engine (asr.engines.gazebo): gz-physics 5 with its DART plugin,
from SDF worlds, through a C++ shim.

asr.Sim(robot, n, engine="gazebo") couples the unchanged C core to DART through the shim
asr/_asr_gz.so (csrc/gz, C++, built when Gazebo's libraries are installed: `make gazebo`, then
`make build`): one DART world (its own gz-physics plugin instance) per instance, loaded from the
robot's SDF file (Robot.sdf) with SDFormat, gravity, joint damping and friction taken from it.
The shim's step halves match asr_engine_fn, so the batch's engine rollout (native threads, GIL
released) runs them exactly as it runs mj_step1 / mj_step2.

DART's integrator is semi-implicit Euler with implicit joint damping, as MuJoCo's Euler
integrator; joint Coulomb friction is a constraint in DART (MuJoCo: frictionloss). Contacts are
whatever DART makes of the SDF's collision elements; asr checks none of them.
"""

import glob
import os
import re
import threading
from collections.abc import Iterable, Sequence

import numpy as np

from asr.common.validate import CData, FloatArray

HEADER = "asr_gz.h"
# asr/, where the build puts the shim (and an installed package the header next to it)
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ERR_LEN = 1024
_lock = threading.Lock()
_shim: dict[str, CData] = {}


def shim_path() -> str | None:
    """The shim's path (asr/_asr_gz.so, or setuptools' build of it), or None when not built."""
    here = PACKAGE_DIR
    found = [os.path.join(here, "_asr_gz.so")] + sorted(
        glob.glob(os.path.join(here, "_asr_gz.*.so"))
    )
    return next((p for p in found if os.path.isfile(p)), None)


def header_path() -> str:
    """csrc/gz/asr_gz.h, the shim's declarations: the copy an installed package ships next to the
    shim (setup.py's build_py), else the source tree's. FileNotFoundError naming both when
    neither is there."""
    here = PACKAGE_DIR
    found = [os.path.join(here, HEADER), os.path.join(os.path.dirname(here), "csrc", "gz", HEADER)]
    for path in found:
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"the Gazebo shim's header {HEADER} is in neither {found}")


_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_DIRECTIVE = re.compile(r"\s*#\s*(\w+)\s*(.*)")
_CPLUSPLUS = {("ifdef", "__cplusplus"): True, ("ifndef", "__cplusplus"): False}


def header_cdef(text: str) -> str:
    """A C header's declarations for cffi's cdef, as a C compiler sees them: comments removed, the
    lines under `#ifdef __cplusplus` (the extern "C" guards) left out, every other preprocessor
    line (the include guard) blanked. cdef parses no preprocessor lines, and at run time there is
    no compiler to run them through (asr/_build.py preprocesses asr.h with one at build time).
    ValueError for a conditional it cannot decide (an #else or #elif of another condition)."""
    out: list[str] = []
    blocks: list[bool | None] = []  # per open #if: True C++ only, False C only, None always kept
    skip: list[bool] = []  # per open #if: whether its current branch is left out
    for n, line in enumerate(_COMMENT.sub(lambda m: "\n" * m[0].count("\n"), text).splitlines()):
        directive = _DIRECTIVE.match(line)
        # a line left out stays as a blank one: cffi's errors name the header's line numbers
        out.append(line if directive is None and not any(skip) else "")
        if directive is None:
            continue
        word, arg = directive[1], directive[2].strip()
        if word in ("if", "ifdef", "ifndef"):
            blocks.append(_CPLUSPLUS.get((word, arg)))
            skip.append(blocks[-1] is True)
        elif word == "elif" or (word == "else" and (not blocks or blocks[-1] is None)):
            raise ValueError(f"header line {n + 1}: cannot decide #{word} {arg} for the cdef")
        elif word == "else":
            skip[-1] = not skip[-1]
        elif word == "endif" and blocks:
            blocks.pop()
            skip.pop()
    return "\n".join(out) + "\n"


def load_shim() -> tuple[CData, CData]:
    """(ffi, lib) of the shim, loaded once (cffi ABI mode). ImportError when it is not built or
    Gazebo's libraries are missing, saying how to get them."""
    with _lock:
        if not _shim:
            import cffi

            path = shim_path()
            if path is None:
                raise ImportError(
                    "asr's Gazebo engine shim (asr/_asr_gz.so) is not built: install "
                    "Gazebo's libraries (`make gazebo`, Debian packages "
                    "libignition-physics-dev libignition-physics5-dartsim-plugin5 "
                    "libsdformat-dev) and run `make build`"
                )
            ffi = cffi.FFI()
            with open(header_path(), encoding="utf-8") as f:
                ffi.cdef(header_cdef(f.read()))
            try:
                lib = ffi.dlopen(path)
            except OSError as exc:
                raise ImportError(
                    f"cannot load asr's Gazebo engine shim {path}: {exc} (are "
                    "Gazebo's libraries installed? `make gazebo`)"
                ) from exc
            _shim.update(ffi=ffi, lib=lib)
    return _shim["ffi"], _shim["lib"]


def available() -> bool:
    """True when the Gazebo engine can be used (the shim built and loadable)."""
    try:
        load_shim()
    except ImportError:
        return False
    return True


class GazeboWorlds:
    """n DART worlds of one SDF file with the named 1-DOF joints actuated (driven by asr's link
    engine asr.engines.gazebo). dt: step length, s (None: the SDF's max_step_size)."""

    def __init__(
        self,
        sdf: str | os.PathLike[str],
        joint_names: Iterable[str],
        n: int,
        dt: float | None = None,
        model: str | None = None,
        label: str | None = None,
    ) -> None:
        gffi, glib = load_shim()
        self._ffi, self._lib = gffi, glib
        if not isinstance(sdf, (str, os.PathLike)):
            raise TypeError(
                f"sdf: expected the path of an SDF file (str), got {type(sdf).__name__}"
            )
        self.sdf = os.fspath(sdf)
        self.joint_names = tuple(joint_names)
        names = [gffi.new("char[]", j.encode()) for j in self.joint_names]
        c_names = gffi.new("char*[]", names) if names else gffi.NULL
        err = gffi.new("char[]", _ERR_LEN)
        self._worlds: list[CData] = []
        try:
            for _ in range(n):
                w = glib.asr_gz_create(
                    self.sdf.encode(),
                    model.encode() if model else gffi.NULL,
                    c_names,
                    len(names),
                    0.0 if dt is None else float(dt),
                    err,
                    _ERR_LEN,
                )
                if w == gffi.NULL:
                    msg = gffi.string(err).decode(errors="replace")
                    raise ValueError(f"{label}: {msg}" if label else msg)
                self._worlds.append(w)
        except BaseException:
            self.close()
            raise
        self.dt: float | None = float(glib.asr_gz_dt(self._worlds[0])) if n else None
        j = len(self.joint_names)
        self._q = [gffi.buffer(glib.asr_gz_qpos(w), 8 * j) for w in self._worlds]
        self._qd = [gffi.buffer(glib.asr_gz_qvel(w), 8 * j) for w in self._worlds]

    def addresses(self) -> dict[str, Sequence[int]]:
        """{name: addresses (ints)} the link engine's C struct needs: step (the shim's two step
        halves), and per world: world, qpos, qvel, qfrc."""
        g = self._lib

        def addr(cdata: CData) -> int:
            return int(self._ffi.cast("uintptr_t", cdata))

        out: dict[str, Sequence[int]] = {
            "step": (addr(g.asr_gz_step1), addr(g.asr_gz_step2)),
            "world": [addr(w) for w in self._worlds],
        }
        for field, fn in (
            ("qpos", g.asr_gz_qpos),
            ("qvel", g.asr_gz_qvel),
            ("qfrc", g.asr_gz_qfrc),
        ):
            out[field] = [addr(fn(w)) for w in self._worlds]
        return out

    def set_state(
        self, i: int, q: Iterable[float] | None = None, qd: Iterable[float] | None = None
    ) -> None:
        """Reset world i: joint angles q and velocities qd ((J,), None: keep), time 0."""
        gffi = self._ffi
        err = gffi.new("char[]", _ERR_LEN)
        arrays = [
            gffi.NULL if v is None else gffi.new("double[]", [float(x) for x in v]) for v in (q, qd)
        ]
        if self._lib.asr_gz_set_state(self._worlds[i], arrays[0], arrays[1], err, _ERR_LEN):
            raise ValueError(f"{self.sdf}: {gffi.string(err).decode(errors='replace')}")

    def q(self) -> FloatArray:
        """(N, J) joint angles, rad."""
        return np.array([np.frombuffer(b, dtype=np.float64) for b in self._q]).reshape(
            len(self._worlds), len(self.joint_names)
        )

    def qd(self) -> FloatArray:
        """(N, J) joint velocities, rad/s."""
        return np.array([np.frombuffer(b, dtype=np.float64) for b in self._qd]).reshape(
            len(self._worlds), len(self.joint_names)
        )

    def time(self, i: int = 0) -> float:
        return float(self._lib.asr_gz_time(self._worlds[i]))

    def close(self) -> None:
        """Destroy the worlds (also when garbage-collected)."""
        worlds, self._worlds = getattr(self, "_worlds", []), []
        for w in worlds:
            self._lib.asr_gz_destroy(w)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


__all__ = ["GazeboWorlds", "available", "load_shim", "shim_path"]
