"""Stopping a training never stalls the dashboard: TrainingManager.stop waits for the trainer to
exit (SIGTERM, SIGKILL after rl_stop_s) without holding the manager's lock, which the status,
pause and watch requests take on the server's event loop."""

import os
import signal
import sys
import threading

import pytest

from tests.conftest import require

require("fastapi")

from asr_dashboard.rl import TrainingManager  # noqa: E402
from asr_dashboard.routes.rl import RLStart  # noqa: E402
from asr_dashboard.settings import Settings  # noqa: E402
from tests.support.dashboard_server import wait_for  # noqa: E402

# A real process that stands in for a trainer slow to exit: it ignores SIGTERM, so stop() waits
# until rl_stop_s runs out or the test kills it.
STUBBORN = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "open(sys.argv[1], 'w').close()  # ready: SIGTERM is ignored from now on\n"
    "time.sleep(600)\n"
)
CFG = {
    "task": "asr/Reach2DOF-v0",
    "num_envs": 2,
    "n_steps": 32,
    "batch_size": 64,
    "total_steps": 128,
}


def test_status_answers_while_stop_waits_for_the_trainer(tmp_path):
    ready = tmp_path / "ready"
    command = [sys.executable, "-c", STUBBORN, str(ready)]
    manager = TrainingManager(Settings(rl_stop_s=300), lambda _msg: None, command=command)
    pid = None
    try:
        pid = manager.start(RLStart(**CFG).model_dump())["pid"]
        wait_for(ready.exists, 60, "the stand-in trainer to ignore SIGTERM")
        stopper = threading.Thread(target=manager.stop, daemon=True)
        stopper.start()
        got = {}

        def ask():
            got["status"] = manager.status()

        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        # ordering, not pacing: with the lock held across the wait, the status could only come
        # once the trainer is gone; it must come while the trainer still ignores SIGTERM
        asker.join(120)
        alive_then = os.path.exists(f"/proc/{pid}") and stopper.is_alive()
        assert "status" in got, "GET /api/rl/status waited for a stop in progress"
        assert alive_then, "the trainer exited before the status was asked: nothing was tested"
        assert got["status"]["running"] and got["status"]["message"] == "stopped"
        os.killpg(pid, signal.SIGKILL)  # what rl_stop_s would do, without waiting for it
        stopper.join(60)
        assert not stopper.is_alive()
        final = manager.status()
        assert not final["running"] and final["message"] == "stopped", final
    finally:
        if pid is not None and os.path.exists(f"/proc/{pid}"):
            os.killpg(pid, signal.SIGKILL)  # a failed test leaves no stand-in behind
        manager.shutdown()


@pytest.mark.parametrize("ended_first", [False, True])
def test_stop_after_the_trainer_ended_reports_its_end(ended_first):
    """stop() of a trainer that already exited (or was never started) answers at once."""
    manager = TrainingManager(
        Settings(rl_stop_s=5), lambda _msg: None, command=[sys.executable, "-c", "pass"]
    )
    try:
        if ended_first:
            manager.start(RLStart(**CFG).model_dump())
            manager._proc.wait(60)  # the child exits on its own
        st = manager.stop()
        assert not st["running"]
    finally:
        manager.shutdown()
