"""asr's actuators on Warp (the extra [warp]: pip install 'asr-sim[warp]'): the actuator step of
the C core in Warp kernels, for every built-in compliance model, the motors with friction, the
PID and the seven operation modes, with sub-steps, in float64 or float32, on any Warp device.

WarpBatch mirrors asr.Batch; its launch_step takes and returns device arrays without a host
synchronisation, for couplings to GPU simulators. The kernels are a hand-kept port of the C core
(csrc/core/joint_kernel.h, springs.h, motor.h): tests/warp/test_kernels.py compares them with
asr.Batch on random states for every model and mode. Kernels are cached on disk
(asr.warp.runtime: ASR_WARP_CACHE, else build/warp-cache in a source tree, else Warp's default).

The routes into GPU simulators are submodules, imported on demand (each needs its simulator):
asr.warp.mujoco.MjwSim (MuJoCo Warp: asr.Sim's API for nworld worlds on the device) and
asr.warp.newton.AsrDrive (a newton.actuators drive). docs/gpu.md has the three routes, the
precision and the measured figures.

Importing asr.warp without warp-lang raises an ImportError naming the extra.
"""

from asr.warp.runtime import warp as _warp

_warp()  # the clear ImportError when warp-lang is missing; Warp initialised with asr's cache

from asr.warp.batch import DTYPES, WarpBatch  # noqa: E402

__all__ = ["DTYPES", "WarpBatch"]
