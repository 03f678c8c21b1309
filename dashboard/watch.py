"""The RL watch on the live simulation (PROTOCOL.md "RL"): a
dashboard.policy_watch.PolicyWatcher chooses the Session's references instead of the manual
controls. Runs on the runner thread."""

import numpy as np

from .frames import RECORD, build_frame, rollout
from .references import preset_spec


def start(session, watcher):
    """Load the watcher's task robot (with the task's timestep) and let the policy choose the
    references from now on."""
    from asr.envs.vector import with_timestep  # gymnasium: imported when a policy is watched

    session.load(watcher.robot, watcher.variant)
    if watcher.timestep is not None and abs(session.sim.dt - watcher.timestep) > 1e-12:
        session.robot = with_timestep(session.robot, watcher.timestep)
        session.build_sim()
    session.watcher, session.watch_state = watcher, None


def stop(session):
    """Back to manual control: every joint holds the policy's last equilibrium and preset (the
    ones in effect when watch stops, so that the arm does not jump)."""
    last = session.effective_presets()
    w, session.watcher = session.watcher, None
    if w is not None and w.held is not None:
        model_of = dict(zip(session.joint_names, session.models))  # compliance model names
        for name, values in last.items():
            if values and values[0] is not None:
                spec = preset_spec(model_of[name])
                session.presets[name] = float(np.clip(values[0], spec["lo"], spec["hi"]))
        session.apply_presets()
        for k, name in enumerate(session.joint_names):
            session.reference[name] = dict(
                session.reference[name],
                kind="hold",
                offset=float(np.clip(w.held[0, k, 0], -10, 10)),
            )
            session.ref_t0[name] = session.time


def info(session):
    """The watched policy's {task, run, target, env_step}, or None (any thread)."""
    w = session.watcher
    return w.info() if w is not None else None


def advance(session, steps):
    """frames.advance with the watched policy's references: one rollout per (part of an) env
    step, each env step's action from the link state at its start (as the task builds it)."""
    w, sim = session.watcher, session.sim
    n, parts, done = sim.n_instances, [], 0
    while done < steps:
        if w.left == 0 or w.held is None or w.held.shape[0] != n:
            st = session.watch_state
            if st is None or st[0].shape[0] != n:
                st = (sim.q, sim.qd)
            w.act(*st)
        m = min(w.left, steps - done)
        refs = np.ascontiguousarray(np.broadcast_to(w.held[:, None], (n, m) + w.held.shape[1:]))
        # a push acts during watch too: the policy sees its effect at its next env step
        out = rollout(sim, m, refs, session.take_push(m), RECORD + ("qd",))  # a free base too
        w.left -= m
        done += m
        session.watch_state = (out["q"][:, -1].copy(), out["qd"][:, -1].copy())
        parts.append(dict(out, eq=refs[..., 0]))
    t = session.time + sim.dt * np.arange(steps)
    session.time += steps * sim.dt
    cat = {k: np.concatenate([p[k] for p in parts], axis=1) for k in parts[0] if k != "qd"}
    return build_frame(t, sim.dt, cat, cat["eq"])
